"""Cost per million objects on AWS, from the CPU per object measured by bench.run, against S3 Batch Operations;
the time and cost of 100 M and 1 B objects with sharded listing (at_scale); and the stack's fixed monthly cost.

    python -m bench.cost_model            # reads docs/benchmarks.json, writes docs/cost-model.md

Prices come from s3bulk/data/prices.json (AWS's published us-east-1 list prices, Lambda on arm64), the file
`s3bulk plan` reads; check current prices for your region. Every count below names the code that makes the
request, so a change there shows where the model must follow.
"""

from __future__ import annotations

import gzip
import json
import math
import random
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from infra.config import MAX_INLINE_MAP, DeployConfig
from s3bulk import metrics, pace
from s3bulk.aws.admission import STATUS_TTL_S
from s3bulk.aws.history import HISTORY_LIMIT, RENEW_AT
from s3bulk.aws.ledger import (
    COUNTER_SHARDS,
    LISTER_COUNTERS,
    MAX_LIST_SHARDS,
    WORKER_COUNTERS,
    counter_key,
    counter_shard,
    initial_item,
    list_shard_key,
    marker_key,
)
from s3bulk.aws.lister import LIST_MARGIN_S, PAGES_PER_STEP
from s3bulk.aws.messages import pack
from s3bulk.aws.reportbucket import KEY_LOG_TAG, KEYS_GZIP_LEVEL
from s3bulk.job import parse_job
from s3bulk.pace import (
    KMS_RATE_LARGEST,
    KMS_RATE_SMALLEST,
    LATENCY_S,
    LIST_PAGE_KEYS,
    LIST_PAGE_S,
    LISTER_CPU_MS_PER_PAGE,
    LISTER_IO_S,
    LISTER_MB,
    MB_PER_VCPU,
    S3_PUT_PER_PREFIX,
    WORKER_MB,
    cpu_rate,
    lister_keys_per_s,
)
from s3bulk.report.keylog import KeyRecord
from s3bulk.store import ObjectInfo

ROOT = Path(__file__).resolve().parent.parent
PRICES: dict[str, Any] = json.loads((ROOT / "s3bulk" / "data" / "prices.json").read_text())


def _price(name: str, per: float = 1.0) -> float:
    return float(PRICES[name]) / per


LAMBDA_GB_S = _price("lambda_gb_second")  # arm64, per GB-second
LAMBDA_REQUEST = _price("lambda_request_per_million", 1e6)
SQS_REQUEST = _price("sqs_request_per_million", 1e6)  # each 64 KB of a call's payload is billed as one request
DDB_WRU = _price("dynamodb_write_unit_per_million", 1e6)  # on-demand; a transactional write costs 2 per item-KB
DDB_RRU = _price("dynamodb_read_unit_per_million", 1e6)  # a consistent read of 4 KB; an eventually consistent one is half
SFN_TRANSITION = _price("step_functions_transition_per_1000", 1000)
BATCH_OPS_JOB = _price("batch_operations_job")
BATCH_OPS_PER_OBJECT = _price("batch_operations_per_million_objects", 1e6)
BATCH_OPS_INVENTORY = _price("s3_inventory_per_million_objects", 1e6)  # an S3 Inventory report as Batch Operations' manifest
S3_COPY = _price("s3_put_copy_post_list_per_1000", 1000)  # PUT/COPY/POST/LIST class
S3_LIST = S3_COPY
S3_PUT = S3_COPY
KMS_REQUEST = _price("kms_request_per_10000", 10_000)  # a request to a symmetric key, which S3 makes for the caller
S3_DELETE = _price("s3_delete_per_1000", 1000)  # DeleteObjects, as `s3bulk plan` prices it
S3_GET = _price("s3_get_head_per_1000", 1000)  # GET/HEAD class: GetObjectTagging and HeadObject
S3_GB_MONTH = _price("s3_standard_gb_month")
S3_TAG_MONTH = _price("s3_object_tags_per_10000_month", 10_000)
CW_DASHBOARD_MONTH = _price("cloudwatch_dashboard_month")
CW_METRIC_HOUR = _price("cloudwatch_custom_metric_month", 730)  # custom metrics are prorated by the hours they are sent
CW_ALARM_MONTH = _price("cloudwatch_alarm_standard_month")
CW_LOGS_GB = _price("cloudwatch_logs_ingest_per_gb")
XRAY_TRACE = _price("xray_traces_recorded_per_million", 1e6)
TRACING = False  # the stack's default (infra/config.py `tracing`)
SNS_TOPIC_MONTH = _price("sns_topic_month")

# Prices as AWS states them, where the worked tables show them per unit of another size
METRIC_PRICE = f"${PRICES['cloudwatch_custom_metric_month']:.2f} per metric-month, by the hour"
GB_S_PRICE = f"${LAMBDA_GB_S:.10f}".rstrip("0") + " per GB-s"
TAG_PRICE = f"${PRICES['s3_object_tags_per_10000_month']:.2f} per 10,000 tags a month"

HOURS_PER_MONTH = 730  # AWS's month for monthly prices
DAYS_PER_MONTH = HOURS_PER_MONTH / 24
GB = 1024**3

THREADS = 32  # the sizing table's default; the stack's own is worker_threads_for() of the measured CPU per object

# -- the stack as deployed (infra/config.py defaults, infra/stack.py, infra/state_machine.py) ------------------------
STACK = DeployConfig(read_buckets=(), write_buckets=(), delete_buckets=())
LIST_SHARDS = STACK.list_shards  # -c list_shards: listing shards per job
MESSAGES_PER_INVOCATION = STACK.worker_batch_size  # the worker's SqsEventSource batch_size
POLL_SECONDS = STACK.poll_seconds  # AwaitCompletion's timeout (the task-token wait), then CheckProgress
KEEP_KEY_LOGS_DAYS = STACK.keep_key_logs_days  # infra/stack.py ExpireKeyLogs: key-log parts expire after this many days
NONCURRENT_DAYS = 30  # the report bucket is versioned: an expired part stays 30 more days as a noncurrent version
LISTER_TIMEOUT_S = 300.0  # its timeout (5 min); list_step starts no page with LIST_MARGIN_S or less left
LISTER_RUN_S = LISTER_TIMEOUT_S - LIST_MARGIN_S
# The other steps' functions (infra/stack.py) and how long one call takes, assumed: a few DynamoDB calls each.
VALIDATE_MB, VALIDATE_S = 256, 1.0  # validation.validate
PLAN_S = 2.0  # PlanListing (lister.plan_step): a few hundred 20 ms probes on 16 threads (docs/benchmarks-listing.md)
PROGRESS_MB, PROGRESS_S = 256, 0.5  # AwaitCompletion (completion.await_step) and CheckProgress (completion.progress_step)
FINALIZE_MB, FINALIZE_S = 1024, 2.0  # finish.finalize: lists the failures parts, writes report.json and failures.jsonl

# -- messages and key-log parts, measured on the code with 50-character keys ------------------------------------
KEYS_PER_MESSAGE = 1000  # options.batch_size: a 1,000-key page packs into one message (messages.pack)
SAMPLE_KEY = "data/2024/05/17/part-000123/object-0001234567.json"
SAMPLE_ETAG = '"' + "0123456789abcdef" * 2 + '"'
SAMPLE_JOB = parse_job(
    json.dumps({"operation": "copy", "source": {"bucket": "source-bucket", "prefix": "data/"}, "destination": {"bucket": "dest-bucket"}})
)
SAMPLE_JOB_ID = "copy-0f8fad5b-d9cb-469f-a165-70867728950e"  # new_job_id of an execution named by a UUID
SQS_CHUNK = 64 * 1024  # SQS bills each 64 KB of a call's payload as one request


def _sample_objects(n: int) -> list[ObjectInfo]:
    return [ObjectInfo(f"{SAMPLE_KEY[:-15]}{i:010d}.json", 1024, SAMPLE_ETAG) for i in range(n)]


def message_bytes() -> int:
    """One batch message of KEYS_PER_MESSAGE keys as the lister sends it (messages.pack, BatchMessage.encode)."""
    [message] = pack(SAMPLE_JOB_ID, "0003-000000012", _sample_objects(KEYS_PER_MESSAGE), KEYS_PER_MESSAGE)
    return len(message.encode().encode("utf-8"))


def key_log_line_bytes() -> int:
    """One copied object's key-log line (keys.KeyRecord.line, as ops/batch.py _log writes it)."""
    obj = _sample_objects(1)[0]
    return len(KeyRecord(obj.key, "succeeded", obj.size, obj.etag, f"backup/{obj.key}", obj.etag).line(SAMPLE_JOB_ID, "copy"))


MESSAGE_BYTES = message_bytes()


def held_once(batches: int) -> float:
    """A stopped job's batches parked and sent again once (aws/held.py): a receive, a PUT and a delete per batch while
    stopped; a LIST page per 100, a GET, a send and an emptying PUT on the resume."""
    sqs = batches * (2 * math.ceil(MESSAGE_BYTES / SQS_CHUNK) + 1) * SQS_REQUEST
    s3 = 2 * batches * S3_COPY + batches / 100 * S3_COPY + batches * S3_GET
    return sqs + s3


def capped_once(batches: int) -> float:
    """A capped job's batches over its cap parked and sent on once (aws/held.py, ledger/parking.py): one more receive,
    send and delete of each through SQS, a PUT and a GET in the report bucket, and in the ledger its entry's Put, claim
    and delete (1 WRU each), the parking's second hold and release (2 WRU) and the sender's Query (0.5 RRU)."""
    sqs = batches * (2 * math.ceil(MESSAGE_BYTES / SQS_CHUNK) + 1) * SQS_REQUEST
    s3 = batches * (S3_COPY + S3_GET)
    ddb = batches * (5 * DDB_WRU + 0.5 * DDB_RRU)
    return sqs + s3 + ddb


def held_per_day(batches: int) -> float:
    """The parked batches' storage, per day they wait."""
    return batches * MESSAGE_BYTES / GB * S3_GB_MONTH / DAYS_PER_MONTH


KEY_LOG_LINE_BYTES = key_log_line_bytes()


def key_log_stored_bytes() -> float:
    """A copied object's key-log line as the stack stores it: a part of KEYS_PER_MESSAGE lines, gzip'd as
    reportbucket.put_keys does, per line; each object with an ETag of its own (random MD5s), so no line repeats another."""
    rng = random.Random(7)
    lines = []
    start = datetime(2026, 11, 28, 10, 15, tzinfo=UTC)
    for i in range(KEYS_PER_MESSAGE):
        key, etag = f"{SAMPLE_KEY[:-15]}{i:010d}.json", '"' + rng.randbytes(16).hex() + '"'
        record = KeyRecord(key, "succeeded", rng.randint(1, 1 << 20), etag, f"backup/{key}", etag)  # each of its own size
        lines.append(record.line(SAMPLE_JOB_ID, "copy", start + timedelta(milliseconds=i * rng.randint(1, 40))))  # and moment
    return len(gzip.compress("".join(lines).encode("utf-8"), KEYS_GZIP_LEVEL, mtime=0)) / KEYS_PER_MESSAGE


KEY_LOG_STORED_BYTES = key_log_stored_bytes()

# -- DynamoDB items (s3bulk/aws/ledger/), sized by DynamoDB's rules --------------------------------------------
CURSOR_CHARS = 140  # a ListObjectsV2 continuation token, assumed
TASK_TOKEN_CHARS = 700  # a Step Functions task token (the job item's completion_token), assumed


def item_bytes(item: dict[str, dict[str, Any]]) -> int:
    """An item's size as DynamoDB bills it: each attribute's name, plus a string's UTF-8 bytes, a number's
    1 byte per 2 significant digits + 1, a boolean's 1."""
    total = 0
    for name, value in item.items():
        [(kind, v)] = value.items()
        if kind == "S":
            size = len(str(v).encode("utf-8"))
        elif kind == "N":
            digits = str(v).lstrip("-").replace(".", "").strip("0") or "0"
            size = math.ceil(len(digits) / 2) + 1
        else:
            size = 1
        total += len(name.encode("utf-8")) + size
    return total


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def _key(sk: str) -> dict[str, dict[str, str]]:
    return {"pk": {"S": f"job#{SAMPLE_JOB_ID}"}, "sk": {"S": sk}}


# Values of a 100 M-object job; the counters' digits hardly move an item's size.
JOB_ITEM: dict[str, dict[str, Any]] = {
    **initial_item(SAMPLE_JOB_ID, SAMPLE_JOB, now=1.8e9, execution=SAMPLE_JOB_ID.removeprefix("copy-")),
    "shards": _n(LIST_SHARDS),
    "completion_token": {"S": "A" * TASK_TOKEN_CHARS},
}
COUNTER_ITEM: dict[str, dict[str, Any]] = {  # ledger.finish_batch's Update: WORKER_COUNTERS added on one of COUNTER_SHARDS items
    **counter_key(SAMPLE_JOB_ID, counter_shard("0003-000000012-000")),
    **{name: _n(3_125_000) for name in WORKER_COUNTERS},
    "expires_at": _n(1_800_000_000),
}
LIST_SHARD_ITEM: dict[str, dict[str, Any]] = {  # ledger.plan's Put, then ledger.checkpoint's Update after every page
    **_key(list_shard_key(3)),
    "page": _n(6250),
    "done": {"BOOL": False},
    "expires_at": _n(1_800_000_000),
    "after": {"S": SAMPLE_KEY},
    "upto": {"S": SAMPLE_KEY},
    "last_key": {"S": SAMPLE_KEY},
    "cursor": {"S": "1" * CURSOR_CHARS},
    **{name: _n(6_250_000) for name in (*LISTER_COUNTERS, "sent", "borrowed")},
}
MARKER_ITEM: dict[str, dict[str, Any]] = {
    **marker_key(SAMPLE_JOB_ID, "0003-000000012-000"),
    "expires_at": _n(1_800_000_000),
    "attempt": {"S": "0123456789ab"},
}


def wru(item: dict[str, dict[str, Any]]) -> int:
    """Write units of one plain write: 1 per KB of the item."""
    return math.ceil(item_bytes(item) / 1024)


def rru(size: int) -> int:
    """Read units of one consistent read of `size` bytes (a Query: of its items together): 1 per 4 KB."""
    return math.ceil(size / 4096)


def query_rru(shards: int) -> int:
    """ledger.progress once listing is done: a consistent Query of the K listing shards (1 RRU per 4 KB of them together)
    and a consistent BatchGetItem of the COUNTER_SHARDS counter shards, each under its own key (1 RRU per item)."""
    return rru(shards * item_bytes(LIST_SHARD_ITEM)) + COUNTER_SHARDS * rru(item_bytes(COUNTER_ITEM))


def progress_rru(shards: int) -> int:
    """ledger.progress read whole: a consistent GetItem of the job item, then every counter (CheckProgress, and a
    worker whose counter shard drained)."""
    return rru(item_bytes(JOB_ITEM)) + query_rru(shards)


def batch_check_rru() -> int:
    """ledger.progress(batch_id=) after a counted batch: the job item, then (listing done) its own counter shard, whose
    `pending` is exact; charged for every batch (a bound: until listing is done the job item alone is read)."""
    return rru(item_bytes(JOB_ITEM)) + rru(item_bytes(COUNTER_ITEM))


FINISH_BATCH_WRU = 2 * (wru(MARKER_ITEM) + wru(COUNTER_ITEM))  # TransactWriteItems: marker Put + counter Update, 2x
LEASE_WRU = 2  # ledger.hold and ledger.release: an UpdateItem each of a lease shard (well under 1 KB)


def checkpoint_wru(batches: float) -> float:
    """ledger.checkpoint of one step of pages: a transaction (2x) of the listing shard's update and `pending` on each
    counter shard the step's `batches` count on (ids spread evenly over COUNTER_SHARDS: the distinct ones expected)."""
    counters: float = COUNTER_SHARDS * (1 - (1 - 1 / COUNTER_SHARDS) ** batches)
    return 2 * (wru(LIST_SHARD_ITEM) + counters * wru(COUNTER_ITEM))


# -- Step Functions (infra/state_machine.py), for a job without the delete guard ---------------------------------
# Validate, CreateLedgerEntry, KeepIdsOnly, PlanListing, DeleteGuard?, Confirm?, ListShards, AwaitCompletion, Finalize,
# ReportWritten?, WithinTolerance?, JobSucceeded
SFN_FIXED = 12
SFN_PER_SHARD = 1  # ShardListed, the Succeed that ends each shard's iteration of the Map
SFN_PER_LISTER_CALL = 2  # ListShard + ShardDone?
SFN_PER_POLL = 3  # AwaitCompletion times out: CheckProgress, AllBatchesDone?, AwaitCompletion again

# -- CloudWatch, X-Ray and SNS (infra/monitoring.py, infra/stack.py, s3bulk/metrics.py, functions/*/handler.py) ----
DASHBOARDS = 1  # Monitoring._dashboard
# Monitoring._alarms, billed per metric an alarm reads: DeadLetters, DeadLetteredBatches, FailedExecutions, WorkerErrors
# and ExecutionEndedDeadLetters read one each; StuckWork (age, deleted) and ExecutionsEndedEarly (timed out, aborted) two;
# FunctionErrors one per other function (Validate, Lister, Progress, Finalize, ExecutionEnded, DeadLetterCounter).
ALARMS = 5 * 1 + 2 * 2 + 6
# Custom metrics, each with the one dimension service=s3bulk: one billed metric per name, for the hours it is sent.
BATCH_METRICS = (metrics.OBJECTS_SUCCEEDED, metrics.OBJECTS_FAILED, metrics.OBJECTS_SKIPPED, metrics.BYTES, metrics.RETRIES)
LISTER_METRICS = (metrics.LISTED_PAGES,)
EVENT_METRICS = (
    metrics.BATCHES_RETURNED,
    metrics.DEAD_LETTERED_BATCHES,
    metrics.DUPLICATE_BATCHES,
    metrics.UNASKED_ENDS,
)  # only when it happens
LOG_BYTES_PER_INVOCATION = 1500  # START, END and REPORT lines and the metrics' EMF record, assumed
LOG_BYTES_PER_TRANSITION = 1000  # the state machine's log group at level ALL, without execution data, assumed
XRAY_RESERVOIR_PER_S, XRAY_RATE = 1.0, 0.05  # Lambda's default sampling: 1 request a second and 5% of the rest
IDLE_POLLERS = 5  # the worker's event source polls an empty queue with 5 pollers (MaximumConcurrency keeps it at 5)
LONG_POLL_S = 20  # each a ReceiveMessage that waits 20 s

# -- at scale: 100 M and 1 B objects (at_scale) -----------------------------------------------------
PROBES_PER_PLAN = 400  # PlanListing's LISTs of two keys at most (`bench.listing_shards --store plan`: ~300-600 at K = 16-32 on 10-123 M keys), a rounding error either way
MAX_SHARDS = MAX_LIST_SHARDS  # infra/config.py: -c list_shards takes 1-1,000 (past 40, a Distributed Map: MAX_INLINE_MAP)
BODY_BUDGET_SHARE = 0.25  # a worker's MemoryBudget: a quarter of its memory (s3bulk/aws/env.py)
BODY_MB_PER_THREAD = 24  # beyond the budget, per thread: one 8 MiB range, one 8 MiB part, one 8 MiB write buffer


@dataclass(frozen=True)
class Sizing:
    memory_mb: int
    objects_per_s: float
    gb_seconds: float
    dollars: float


def floor_threads(memory_mb: int) -> int:
    """The most threads a worker of `memory_mb` can run a relay or process job with: each thread may hold one range,
    one part and one write buffer (BODY_MB_PER_THREAD) beyond the body budget, a quarter of the memory (docs/process.md)."""
    return int(memory_mb * (1 - BODY_BUDGET_SHARE) // BODY_MB_PER_THREAD)


def worker_threads_for(cpu_ms_per_object: float, memory_mb: int = WORKER_MB) -> int:
    """The stack's worker_threads: the smallest power of two (at least 8) that keeps enough CopyObjects in flight
    for the worker's CPU share (Little's law: rate x latency), but no more than large-body jobs fit in its memory."""
    needed = cpu_rate(cpu_ms_per_object, memory_mb) * LATENCY_S
    threads = 8
    while threads < needed and threads * 2 <= floor_threads(memory_mb):
        threads *= 2
    return threads


def request_threads_for(cpu_ms_per_object: float, memory_mb: int = WORKER_MB) -> int:
    """The stack's worker_request_threads, for jobs that hold no bodies (S3 moves the bytes): the smallest power of two
    (at least 8) that keeps enough requests in flight for the worker's CPU share, with no memory cap to meet."""
    needed = cpu_rate(cpu_ms_per_object, memory_mb) * LATENCY_S
    threads = 8
    while threads < needed:
        threads *= 2
    return threads


def worker_memory_for(
    cpu_ms_per_object: float,
    threads: int,
    sizes: tuple[int, ...] = (512, 768, 1024, 1280, 1769, 2048, 3008),
    request_threads: int | None = None,
) -> int:
    """The stack's worker_memory_mb: the largest size whose worker is still CPU-bound with `request_threads` (the
    cheapest per object; `threads` when not given) among those whose memory holds `threads` streaming threads' bodies;
    the smallest of those when none is CPU-bound."""
    fits = [m for m in sizes if floor_threads(m) >= threads]
    bound = [m for m in fits if cpu_rate(cpu_ms_per_object, m) <= (request_threads or threads) / LATENCY_S]
    return max(bound) if bound else min(fits)


def worker_sizing(cpu_ms_per_object: float, memory_mb: int, threads: int = THREADS) -> Sizing:
    """A worker is bound by its CPU share or by threads/latency, whichever is lower."""
    cpu_bound = cpu_rate(cpu_ms_per_object, memory_mb)
    latency_bound = threads / LATENCY_S
    rate = min(cpu_bound, latency_bound)
    gb_s = 1e6 / rate * memory_mb / 1024
    return Sizing(memory_mb, rate, gb_s, gb_s * LAMBDA_GB_S)


@dataclass(frozen=True)
class LineItem:
    """One line of a job's (or a month's) bill: a quantity the code makes, at one unit price."""

    name: str
    code: str  # where in the code the quantity comes from
    quantity: float
    unit: str  # what one unit is (singular)
    price: float  # dollars per unit
    detail: str = ""  # how the quantity adds up
    price_text: str = ""  # the price as AWS states it, when not per unit

    @property
    def units(self) -> str:
        return self.unit if self.unit.endswith("s") or self.unit == "GB" else f"{self.unit}s"

    @property
    def dollars(self) -> float:
        return self.quantity * self.price


def lister_calls_per_shard(list_seconds: float) -> int:
    """A shard's ListShard calls: each pages for LISTER_RUN_S and returns (lister.list_step), and the shard's loop in
    the ListShards Map (state_machine.shard_loop) calls it again until it answers done."""
    return max(1, math.ceil(list_seconds / LISTER_RUN_S))


def poll_timeouts(seconds: float, list_seconds: float) -> int:
    """AwaitCompletion's waits that time out: it starts when every shard is listed and waits POLL_SECONDS at a time
    until the worker that counts the last batch sends its token (completion.notify_if_complete)."""
    return int(max(0.0, seconds - list_seconds) // POLL_SECONDS)


def xray_traces(invocations: float, seconds: float) -> float:
    """Worker invocations X-Ray records under Lambda's default sampling (tracing is active on every function)."""
    reservoir = min(invocations, seconds * XRAY_RESERVOIR_PER_S)
    return reservoir + XRAY_RATE * (invocations - reservoir)


def job_items(
    objects: float,
    shards: int,
    busy_workers: float,
    seconds: float,
    list_seconds: float,
    worker_gb_s: float,
    keep_days: int = KEEP_KEY_LOGS_DAYS,
) -> list[LineItem]:
    """What one copy job of `objects` small objects costs the stack, line by line, counted as the code makes it.

    `seconds` is the job's time, `list_seconds` how long each of the `shards` listers pages its shard,
    `busy_workers` how many workers run on average and `worker_gb_s` what they bill.
    """
    batches = objects / KEYS_PER_MESSAGE  # a 1,000-key page is one message, one batch
    pages = objects / LIST_PAGE_KEYS
    # lister.PAGES_PER_STEP pages a step (one intent, one checkpoint); each lister call ends its last step early
    steps = pages / PAGES_PER_STEP + lister_calls_per_shard(list_seconds) * shards
    step_wru = checkpoint_wru(batches / pages * PAGES_PER_STEP)
    invocations = batches / MESSAGES_PER_INVOCATION
    calls = lister_calls_per_shard(list_seconds)
    lister_calls = shards * calls
    timeouts = poll_timeouts(seconds, list_seconds)
    progress_calls = 1 + 2 * timeouts  # AwaitCompletion, then CheckProgress and AwaitCompletion again per timeout
    other_calls = 2 + progress_calls + 1  # Validate, PlanListing, those, Finalize
    other_gb_s = (
        VALIDATE_MB * VALIDATE_S + LISTER_MB * PLAN_S + PROGRESS_MB * PROGRESS_S * progress_calls + FINALIZE_MB * FINALIZE_S
    ) / 1024
    transitions = SFN_FIXED + shards * (SFN_PER_SHARD + SFN_PER_LISTER_CALL * calls) + SFN_PER_POLL * timeouts

    # one SendMessageBatch per step (its messages fit QueueSender's 10 and 1 MiB a call), billed by 64 KB of payload
    send_units = math.ceil(MESSAGE_BYTES * batches / pages * PAGES_PER_STEP / SQS_CHUNK)
    receive_units = math.ceil(MESSAGES_PER_INVOCATION * MESSAGE_BYTES / SQS_CHUNK)  # one ReceiveMessage per invocation
    sqs = steps * send_units + invocations * receive_units + invocations

    job_wru = wru(JOB_ITEM)
    created = wru({k: v for k, v in JOB_ITEM.items() if k not in ("shards", "completion_token")})
    fixed_writes = created + 2 * (shards + 1) + job_wru  # CreateLedgerEntry, ledger.plan's transaction, Finalize's set_status
    writes = batches * (FINISH_BATCH_WRU + LEASE_WRU) + steps * step_wru + 2 * lister_calls + (1 + timeouts) * job_wru + fixed_writes
    status_reads = min(batches, busy_workers * seconds / STATUS_TTL_S)  # eventually consistent: half a unit each
    per_batch_rru = 1 + batch_check_rru()  # is_batch_done (the minimum: 1), then ledger.progress(batch_id=)
    # PlanListing's load and spec; Finalize's load; a full read each time a counter shard drains (about once each)
    fixed_reads = 3 + (1 + COUNTER_SHARDS) * progress_rru(shards)
    reads = batches * per_batch_rru + 0.5 * status_reads + 2 * lister_calls + progress_calls * progress_rru(shards) + fixed_reads

    months = (keep_days + NONCURRENT_DAYS) / DAYS_PER_MONTH
    key_log_gb = objects * KEY_LOG_STORED_BYTES / GB
    metric_hours = len(BATCH_METRICS) * math.ceil(seconds / 3600) + len(LISTER_METRICS) * math.ceil(list_seconds / 3600)
    log_gb = ((invocations + lister_calls + other_calls) * LOG_BYTES_PER_INVOCATION + transitions * LOG_BYTES_PER_TRANSITION) / GB
    # X-Ray only with -c tracing=true (off by default): then the execution's own trace too, its Lambda steps in it.
    traces = xray_traces(invocations, seconds) + 1 if TRACING else 0.0

    return [
        LineItem(
            "Lambda workers (GB-s)",
            "functions/worker, worker.WorkerService.work",
            worker_gb_s,
            "GB-s",
            LAMBDA_GB_S,
            f"{busy_workers:,.0f} busy workers x {WORKER_MB:,} MB x {seconds:,.0f} s of wall time",
            GB_S_PRICE,
        ),
        LineItem(
            "Lambda listers (GB-s)",
            "lister.list_step, state_machine.shard_loop",
            shards * list_seconds * LISTER_MB / 1024,
            "GB-s",
            LAMBDA_GB_S,
            f"{shards} shards x {list_seconds:,.0f} s x {LISTER_MB} MB, in {calls} call(s) of up to {LISTER_RUN_S:.0f} s each",
            GB_S_PRICE,
        ),
        LineItem(
            "Lambda, other steps (GB-s)",
            "validation.validate, plan_step, await_step, progress_step, finalize",
            other_gb_s,
            "GB-s",
            LAMBDA_GB_S,
            f"Validate, PlanListing, {progress_calls} Progress calls, Finalize",
            GB_S_PRICE,
        ),
        LineItem(
            "Lambda requests",
            "SqsEventSource batch_size; shard_loop",
            invocations + lister_calls + other_calls,
            "invocation",
            LAMBDA_REQUEST,
            f"{invocations:,.0f} worker ({MESSAGES_PER_INVOCATION} messages each) + {lister_calls:,} ListShard + {other_calls} other",
        ),
        LineItem(
            "SQS (send, receive, delete)",
            "queue.QueueSender.send; the worker's event source",
            sqs,
            "64 KB request",
            SQS_REQUEST,
            f"{steps:,.0f} SendMessageBatch x {send_units} ({PAGES_PER_STEP} messages of {MESSAGE_BYTES / 1000:,.0f} KB) + {invocations:,.0f} "
            f"ReceiveMessage x {receive_units} ({MESSAGES_PER_INVOCATION} messages) + {invocations:,.0f} DeleteMessageBatch",
        ),
        LineItem(
            "DynamoDB writes (finish_batch, checkpoint)",
            "ledger.finish_batch, ledger.checkpoint",
            writes,
            "WRU",
            DDB_WRU,
            f"{batches:,.0f} batches x {FINISH_BATCH_WRU + LEASE_WRU} (a transaction of 2 items of 1 KB, 2x, and the lease's hold and release) + {steps:,.0f} "
            f"checkpoints of {PAGES_PER_STEP} pages x {step_wru:.1f} + {(1 + timeouts) * job_wru + fixed_writes:,} for the job",
        ),
        LineItem(
            "DynamoDB reads (completion check per batch)",
            "ledger.is_batch_done, completion.notify_if_complete -> ledger.progress",
            reads,
            "RRU",
            DDB_RRU,
            f"{batches:,.0f} batches x {per_batch_rru} (marker 1 + job item {rru(item_bytes(JOB_ITEM))} + its counter shard "
            f"{rru(item_bytes(COUNTER_ITEM))}) + {status_reads:,.0f} status reads x 0.5 + "
            f"{2 * lister_calls + progress_calls * progress_rru(shards) + fixed_reads:,} other",
        ),
        LineItem(
            "Step Functions transitions",
            "infra/state_machine.py",
            transitions,
            "transition",
            SFN_TRANSITION,
            f"{SFN_FIXED} + {shards} shards x ({SFN_PER_SHARD} + {SFN_PER_LISTER_CALL} x {calls} calls) + {SFN_PER_POLL} x "
            f"{timeouts} timed-out waits",
        ),
        LineItem(
            "S3 report bucket PUTs (key-log part per batch)",
            "ReportBucket.put_keys, put_failures, put_intent; finalize",
            batches + steps + lister_calls + 4,
            "PUT",
            S3_PUT,
            f"{batches:,.0f} key-log parts (+1 failures part per batch with a failure) + {steps:,.0f} intents ({PAGES_PER_STEP} pages each) + "
            f"{lister_calls:,} intent GETs (one per lister call, at PUT price to round up) + report.json, failures.jsonl, "
            "its assembly state, 1 LIST",
        ),
        LineItem(
            "S3 key-log storage",
            "ReportBucket.put_keys; ExpireKeyLogs",
            key_log_gb * months,
            "GB-month",
            S3_GB_MONTH,
            f"{key_log_gb:,.1f} GB ({KEY_LOG_STORED_BYTES:.0f} B a key, gzip'd) for {keep_days} + {NONCURRENT_DAYS} days (noncurrent)",
        ),
        LineItem(
            "S3 key-log tags",
            "reportbucket.KEY_LOG_TAG",
            batches * months,
            "tag-month",
            S3_TAG_MONTH,
            f"{batches:,.0f} parts x 1 tag for {keep_days + NONCURRENT_DAYS} days",
            TAG_PRICE,
        ),
        LineItem(
            "CloudWatch custom metrics (hours sent)",
            "functions/worker, functions/lister handlers",
            metric_hours,
            "metric-hour",
            CW_METRIC_HOUR,
            f"{len(BATCH_METRICS)} metrics x {math.ceil(seconds / 3600)} h + {len(LISTER_METRICS)} x {math.ceil(list_seconds / 3600)} h",
            METRIC_PRICE,
        ),
        LineItem(
            "CloudWatch Logs ingestion",
            "Lambda and state machine log groups",
            log_gb,
            "GB",
            CW_LOGS_GB,
            f"{LOG_BYTES_PER_INVOCATION:,} B per invocation, {LOG_BYTES_PER_TRANSITION:,} B per transition (assumed)",
        ),
        LineItem(
            "X-Ray traces",
            "-c tracing=true: every function and the state machine",
            traces,
            "trace",
            XRAY_TRACE,
            "1 worker invocation a second and 5% of the rest, + the execution"
            if TRACING
            else "none: tracing is off unless -c tracing=true (then 1 worker invocation a second and 5% of the rest)",
        ),
    ]


def per_million(cpu_ms_per_object: float, memory_mb: int, workers: int, threads: int = THREADS) -> dict[str, float]:
    """One million objects with `workers` workers at their own speed (the destination takes their COPYs), K = LIST_SHARDS."""
    sizing = worker_sizing(cpu_ms_per_object, memory_mb, threads)
    listing = LIST_SHARDS * lister_keys_per_s()
    per_s = min(sizing.objects_per_s * workers, listing)
    items = job_items(1e6, LIST_SHARDS, per_s / sizing.objects_per_s, 1e6 / per_s + LIST_PAGE_S, 1e6 / listing, sizing.gb_seconds)
    return {i.name: i.dollars for i in items}


def fixed_monthly() -> list[LineItem]:
    """What a deployed stack costs each month with no job running."""
    return [
        LineItem("CloudWatch dashboard", "infra/monitoring.py Monitoring._dashboard", DASHBOARDS, "dashboard", CW_DASHBOARD_MONTH),
        LineItem(
            "CloudWatch alarms",
            "infra/monitoring.py Monitoring._alarms",
            ALARMS,
            "alarm metric",
            CW_ALARM_MONTH,
            "8 alarms, standard resolution, billed per metric they read (metric math alarms read several)",
        ),
        LineItem(
            "SQS: the worker's event source polls the empty queue",
            "infra/stack.py SqsEventSource(max_concurrency=...)",
            IDLE_POLLERS * HOURS_PER_MONTH * 3600 / LONG_POLL_S,
            "request",
            SQS_REQUEST,
            f"{IDLE_POLLERS} pollers x one {LONG_POLL_S} s ReceiveMessage after another x {HOURS_PER_MONTH} h",
        ),
        LineItem(
            "SQS: the dead-letter counter's event source polls the empty dead-letter queue",
            "infra/stack.py DeadLetterCounter SqsEventSource",
            IDLE_POLLERS * HOURS_PER_MONTH * 3600 / LONG_POLL_S,
            "request",
            SQS_REQUEST,
            f"{IDLE_POLLERS} pollers x one {LONG_POLL_S} s ReceiveMessage after another x {HOURS_PER_MONTH} h",
        ),
        LineItem(
            "SNS alarm topic",
            "infra/stack.py Alarms",
            1,
            "topic",
            SNS_TOPIC_MONTH,
            "no monthly fee; alarm notifications are $0.50 per million publishes",
        ),
        LineItem(
            "CloudWatch custom metrics",
            "s3bulk/metrics.py",
            0,
            "metric-hour",
            CW_METRIC_HOUR,
            f"{len(BATCH_METRICS) + len(LISTER_METRICS) + len(EVENT_METRICS)} names x 1 dimension, billed only in hours they are "
            "sent: in each job's cost",
            METRIC_PRICE,
        ),
    ]


@dataclass(frozen=True)
class AtScale:
    objects: float
    shards: int
    concurrency: int
    prefixes: int
    listing_per_s: float  # every lister together
    workers_per_s: float  # every worker at full speed
    s3_per_s: float  # S3's PUT limit over the destination's prefixes
    per_s: float  # the job: the lowest of the three
    bound: str
    seconds: float
    items: tuple[LineItem, ...]

    @property
    def costs(self) -> dict[str, float]:
        return {i.name: i.dollars for i in self.items}

    @property
    def total(self) -> float:
        return sum(self.costs.values())


def at_scale(
    objects: float, shards: int, concurrency: int, prefixes: int, cpu_ms_per_object: float, keep_days: int = KEEP_KEY_LOGS_DAYS
) -> AtScale:
    """Time and cost of copying `objects` small objects with the stack: listing, workers and S3 as three rates in a row.

    Listing and copying overlap (work starts with the first batch), so the job runs at the
    lowest rate, plus one page for the pipeline to fill. Workers bill wall time: when S3 or
    listing is slower than they are, an S3-bound worker waits out SlowDown (paid), while a
    listing-bound one is simply invoked less often (an empty queue costs no invocation).
    Each of the K listers pages its own shard for the whole listing time, so listing bills K times that.
    """
    listing = shards * lister_keys_per_s()
    worker = worker_sizing(cpu_ms_per_object, WORKER_MB, request_threads_for(cpu_ms_per_object)).objects_per_s  # a copy holds no bodies
    workers = concurrency * worker
    s3 = prefixes * S3_PUT_PER_PREFIX
    others = pace.ceilings(concurrency, workers, checkpoint_wru=checkpoint_wru(PAGES_PER_STEP), shard_item_wru=wru(LIST_SHARD_ITEM))
    rates = [(listing, "listing"), (workers, "workers"), (s3, "S3 PUT limit")] + [(rate, name) for name, rate, _ in others[:-1]]
    per_s, bound = min(rates)  # KMS (the last ceiling) only for SSE-KMS jobs: said apart
    seconds = objects / per_s + LIST_PAGE_S
    list_seconds = objects / listing  # each shard's lister pages objects / K keys at one lister's rate
    # Throttled by S3 (or DynamoDB), every worker the queue's backlog invokes waits out SlowDown (retries throttled
    # writes), billed; fed by a slower listing, only as many run as the messages keep busy.
    busy_workers = per_s / worker if bound in ("listing", "workers") else concurrency
    worker_gb_s = busy_workers * seconds * WORKER_MB / 1024
    items = job_items(objects, shards, busy_workers, seconds, list_seconds, worker_gb_s, keep_days)
    return AtScale(objects, shards, concurrency, prefixes, listing, workers, s3, per_s, bound, seconds, tuple(items))


def s3_requests(objects: float) -> float:
    """S3's request charges for a copy, the same with either tool: a COPY per object, the LIST pages and the plan's probes."""
    return objects * S3_COPY + (objects / LIST_PAGE_KEYS + PROBES_PER_PLAN) * S3_LIST


def batch_operations(objects: float) -> float:
    """Batch Operations' own fees for one job, with an S3 Inventory report as its manifest (its S3 requests come on top)."""
    return BATCH_OPS_JOB + objects * (BATCH_OPS_PER_OBJECT + BATCH_OPS_INVENTORY)


def _duration(seconds: float) -> str:
    return f"{seconds / 3600:,.1f} h" if seconds >= 5400 else f"{seconds / 60:,.0f} min"


# (shards K, MaximumConcurrency, partitioned prefixes): the stack's defaults, then more of each.
SCALE_ROWS = [
    (1, 50, 1),
    (16, 4, 1),
    (16, 50, 1),
    (16, 200, 1),
    (16, 1000, 1),
    (16, 50, 10),
    (16, 200, 10),
    (16, 1000, 10),
    (1, 200, 10),
    (16, 200, 100),
    (16, 1000, 100),
    (32, 1000, 100),
    (MAX_INLINE_MAP, 50, 30),
    (MAX_INLINE_MAP, 1000, 1000),
    (100, 1000, 1000),
    (MAX_SHARDS, 1000, 1000),
]


# -- ceilings the stack meets beside listing, workers and S3 (issue 42) --------------------------------------------------
# An account's concurrent Lambda executions by default (a new account's may be 10): one job holds K + workers + 4.
ACCOUNT_CONCURRENCY = 1000
# Step Functions history events (assumed from the event types each state writes): a Lambda task in the listing Map writes
# entered, scheduled, started, succeeded and exited, and its Choice entered and exited (7 per lister call); each shard's
# iteration starts, succeeds and ends in a Succeed state (4); a timed-out wait, a dozen (s3bulk/aws/history.py); the
# job's other steps about 40. Past RENEW_AT events the job goes on in a new execution (aws/history.py).
HISTORY_PER_LISTER_CALL, HISTORY_PER_SHARD, HISTORY_PER_POLL, HISTORY_FIXED = 7, 4, 12, 40


def history_events(row: AtScale) -> float:
    """Step Functions history events a row's job writes in all (its executions together, children too)."""
    list_seconds = row.objects / row.listing_per_s
    calls = lister_calls_per_shard(list_seconds)
    return (
        HISTORY_FIXED
        + row.shards * (HISTORY_PER_SHARD + HISTORY_PER_LISTER_CALL * calls)
        + HISTORY_PER_POLL * poll_timeouts(row.seconds, list_seconds)
    )


def executions(row: AtScale) -> str:
    """The executions a row's job runs in: its own (one more each RENEW_AT events), and past 40 shards one child per
    shard on the Distributed Map, each holding its shard's events (far under RENEW_AT: a call every ~14 minutes)."""
    if row.shards <= MAX_INLINE_MAP:
        return str(1 + int(history_events(row) // RENEW_AT))
    calls = lister_calls_per_shard(row.objects / row.listing_per_s)
    own = history_events(row) - row.shards * (HISTORY_PER_SHARD + HISTORY_PER_LISTER_CALL * calls)
    return f"{1 + int(own // RENEW_AT)} + {row.shards:,} children"


def ceilings(row: AtScale) -> list[tuple[str, float, str]]:
    """(ceiling, objects/s it allows, what it is) for one row of the at-scale table: each beside the three rates
    (s3bulk/pace.py, with this model's checkpoint write units, computed from the items' sizes)."""
    return pace.ceilings(
        row.concurrency, row.workers_per_s, checkpoint_wru=checkpoint_wru(PAGES_PER_STEP), shard_item_wru=wru(LIST_SHARD_ITEM)
    )


def ceilings_section() -> list[str]:
    """Which of the stack's other ceilings binds, for each row of the at-scale table."""
    lines = [
        "",
        "### Ceilings beside listing, workers and S3",
        "",
        "The rates above are not the only limits a job meets. Each of these allows at most so many objects a second",
        "(`ceilings`; batches of 1,000 keys); a row is slowed only where one is below its own rate. Lambda's account",
        f"concurrency is a count, not a rate: a row needs K + MaximumConcurrency + 4 executions of the account's {ACCOUNT_CONCURRENCY:,}",
        "(by default; a new account's may be 10, and `s3bulk doctor` says what to request).",
        "",
        "| ceiling | objects/s it allows | what it is |",
        "|---|---:|---|",
    ]
    sample = at_scale(1e9, MAX_SHARDS, 1000, 1000, 0.27)
    lines += [f"| {name} | {rate:,.0f} | {what} |" for name, rate, what in ceilings(sample)]
    lines += [
        "",
        "| objects | K | MaximumConcurrency | prefixes | the job's rate /s | lowest other ceiling | Lambda executions needed | history events (executions) |",
        "|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for objects in (1e8, 1e9):
        for k, conc, prefixes in SCALE_ROWS:
            row = at_scale(objects, k, conc, prefixes, 0.27)
            name, rate, _ = min(ceilings(row)[:-1], key=lambda c: c[1])  # KMS only for SSE-KMS jobs: said apart above
            needed = k + conc + 4
            over = " (over the default)" if needed > ACCOUNT_CONCURRENCY else ""
            binds = " **binds**" if rate < row.per_s else f" ({row.per_s / rate:.0%} used)"
            lines.append(
                f"| {objects / 1e6:,.0f} M | {k} | {conc:,} | {prefixes:,} | {row.per_s:,.0f} | {name}: {rate:,.0f}{binds} | {needed:,}{over} "
                f"| {history_events(row):,.0f} ({executions(row)}) |"
            )
    rows = [at_scale(1e9, k, conc, prefixes, 0.27) for k, conc, prefixes in SCALE_ROWS]
    bound = [r for r in rows if r.bound not in ("listing", "workers", "S3 PUT limit")]
    free = [r for r in rows if r not in bound]
    fastest = max(free, key=lambda r: r.per_s)
    name, rate, _ = min(ceilings(fastest)[:-1], key=lambda c: c[1])
    kms = KMS_RATE_LARGEST / 2
    n_over = sum(1 for k, conc, _ in SCALE_ROWS if k + conc + 4 > ACCOUNT_CONCURRENCY)
    longest = max(longest_execution(r) for r in rows)
    lines += [
        "",
        f"Up to K = {MAX_INLINE_MAP} none of the DynamoDB or SQS ceilings binds: the fastest such row, {fastest.per_s:,.0f} objects/s, uses",
        f"{fastest.per_s / rate:.0%} of the lowest ({name}). Past it, {len(bound)} of the 1 B rows would run faster than a",
        "**new** on-demand table takes writes at first (4,000 WRU/s), so they run at the table's pace, their workers",
        "retrying throttled writes (billed: the model counts every worker busy). DynamoDB raises a table's ceiling as its",
        "traffic grows (it serves twice its previous peak at once), and a table can be pre-warmed (`WarmThroughput`). KMS binds,",
        f"for SSE-KMS objects without S3 Bucket Keys, in every row above {kms:,.0f} objects/s; and {n_over} of the {len(SCALE_ROWS)} rows",
        "need more Lambda executions than an account has by default: ask for more before running them.",
        f"Step Functions ends an execution at {HISTORY_LIMIT:,} history events; a job past {RENEW_AT:,} goes on in a new one",
        f"(`aws/history.py`), and past {MAX_INLINE_MAP} shards each shard's events are in a child execution of its own, so history",
        f"bounds no row: the most in one execution is {longest:,.0f} events (events: `history_events`, assumed per state).",
    ]
    return lines


def longest_execution(row: AtScale) -> float:
    """The most history events any one of a row's executions holds, before a renewal splits it."""
    calls = lister_calls_per_shard(row.objects / row.listing_per_s)
    per_shard = HISTORY_PER_SHARD + HISTORY_PER_LISTER_CALL * calls
    if row.shards <= MAX_INLINE_MAP:
        return min(history_events(row), RENEW_AT)
    return min(max(history_events(row) - row.shards * per_shard, per_shard), RENEW_AT)


def _quantity(q: float) -> str:
    return f"{q:,.0f}" if q >= 100 or q == int(q) else f"{q:,.2f}"


def _money(x: float) -> str:
    """Dollars with every significant digit the price has, at least cents: 0.625, 0.0000133334, 3.00."""
    text = f"{x:,.10f}".rstrip("0")
    whole, _, cents = text.partition(".")
    return f"${whole}.{cents.ljust(2, '0')}"


def _unit_price(item: LineItem) -> str:
    if item.price_text:
        return item.price_text
    if item.price == 0:
        return f"$0 per {item.unit}"
    for scale, per in ((1, f"per {item.unit}"), (1000, f"per 1,000 {item.units}"), (1e6, f"per million {item.units}")):
        if item.price * scale >= 0.01:
            return f"{_money(item.price * scale)} {per}"
    return f"{_money(item.price * 1e6)} per million {item.units}"


def _bill(items: list[LineItem] | tuple[LineItem, ...]) -> list[str]:
    """A worked table: each line's quantity, where the code makes it, its unit price and dollars."""
    rows = [
        "| item | code | quantity | unit price | $ |",
        "|---|---|---|---:|---:|",
    ]
    for i in items:
        quantity = f"{_quantity(i.quantity)} {i.unit if i.quantity == 1 else i.units}" + (f": {i.detail}" if i.detail else "")
        rows.append(f"| {i.name} | `{i.code}` | {quantity} | {_unit_price(i)} | {i.dollars:,.4f} |")
    return rows


def render_at_scale(cpu_ms: float) -> list[str]:
    worker = worker_sizing(cpu_ms, WORKER_MB, request_threads_for(cpu_ms)).objects_per_s
    lister = lister_keys_per_s()
    lines = [
        "",
        "## At scale: 100 M and 1 B small objects",
        "",
        "Generated by `at_scale` in `bench/cost_model.py`. A job runs three stages at once (listers send batches, workers",
        "copy them, S3 takes the COPYs), so it goes as fast as the slowest of three rates:",
        "",
        f"- **listing**: K shards, one lister Lambda each ({LISTER_MB} MB). A lister pages its shard one page after the other:",
        f"  the LIST ({LIST_PAGE_S * 1000:.0f} ms for 1,000 keys on S3), then SendMessageBatch and the checkpoint",
        f"  ({LISTER_IO_S * 1000:.0f} ms together, assumed), then its CPU ({LISTER_CPU_MS_PER_PAGE:.0f} ms of one core per page, assumed from the",
        f"  8-20 ms per page `bench.listing_shards` measured on x86 for the parsing alone; {LISTER_MB} MB buys {LISTER_MB / MB_PER_VCPU:.2f} vCPU, so",
        f"  {LISTER_CPU_MS_PER_PAGE / (LISTER_MB / MB_PER_VCPU):.0f} ms). That is **{lister:,.0f} keys/s per lister**. Listers are separate Lambdas, so",
        "  K of them list about K times as fast: `bench.listing_shards` measured 94-100% efficiency for K <= 8 and 87-94% at 16",
        "  with shards of equal size at 80 ms per page (300,000 keys; [benchmarks-listing.md](benchmarks-listing.md)), and",
        "  shards of millions of keys lose less to their one overrunning last page. The stack's planner (ranges balanced by",
        "  estimated size) measured 98-99% at K = 2, 85-90% at K = 4-8 and 75-79% at 16: on that small source it cuts no finer",
        "  than 10,000 keys, so 16 ranges hold up to 20,000 keys, not 18,750; on 10-123 M keys its largest range is at most",
        "  7% over an equal share. A source whose keys all sit in one page is one shard, and then the K = 1 rows apply.",
        f"  S3 serves 5,500 LIST/s per prefix; K listers send about K x 6 per second. The stack takes K <= {MAX_SHARDS:,}",
        f"  (`-c list_shards`, infra/config.py: an inline Map up to {MAX_INLINE_MAP}, a Distributed Map past {MAX_INLINE_MAP}).",
        f"- **workers**: MaximumConcurrency x {worker:,.0f} objects/s (a {WORKER_MB:,} MB worker, from the table above).",
        f"- **S3**: {S3_PUT_PER_PREFIX:,} COPY/s (PUT class) per partitioned prefix of the destination. A new prefix starts as one",
        "  partition; S3 adds partitions under sustained load (over minutes to hours, not on request), and only where keys",
        "  differ early enough to be split. The rows show 1, 10 and 100 partitioned prefixes.",
        "",
        "Costs (`job_items`; the worked example below shows every line's count and the code that makes it):",
        "",
        "- **Lambda**: workers bill wall time, so a worker slowed by S3 (SlowDown, or `adaptive_rate`) costs GB-seconds while",
        "  it waits; an empty queue invokes no worker. Each of the K listers pages its shard for the whole listing time, in",
        f"  calls of up to {LISTER_RUN_S:.0f} s ({LISTER_TIMEOUT_S:.0f} s timeout, no new page with {LIST_MARGIN_S:.0f} s left: `lister.list_step`) that",
        "  `state_machine.shard_loop` repeats until the shard is done: K x the listing time in GB-s, K x the calls in requests.",
        f"  A worker takes {MESSAGES_PER_INVOCATION} messages per invocation (the event source's batch_size).",
        f"- **SQS**: a 1,000-key page is one message of {MESSAGE_BYTES / 1000:,.0f} KB (`messages.pack`, {len(SAMPLE_KEY)}-character keys),",
        f"  and a lister sends a step of {PAGES_PER_STEP} pages in one SendMessageBatch (`queue.QueueSender`: up to 10 messages and 1 MiB a",
        f"  call); SQS bills each 64 KB of a call's payload, so a step's send is {math.ceil(PAGES_PER_STEP * MESSAGE_BYTES / SQS_CHUNK)} requests, a worker's ReceiveMessage of {MESSAGES_PER_INVOCATION} messages",
        f"  {math.ceil(MESSAGES_PER_INVOCATION * MESSAGE_BYTES / SQS_CHUNK)}, and its DeleteMessageBatch 1.",
        "- **DynamoDB**, on demand (`s3bulk/aws/ledger/`): per batch, `finish_batch`'s TransactWriteItems (the batch",
        f"  marker's Put and its counter shard's Update, 1 KB each, at 2 WRU per KB in a transaction: {FINISH_BATCH_WRU} WRU), the",
        f"  lease the batch is worked under (`hold` and `release`, an UpdateItem each: {LEASE_WRU} WRU; a lister call holds one too; a job",
        "  capped with `s3bulk tune JOB_ID --concurrency N` adds the holder's entry in its shard's map, 1 more WRU, and each batch",
        "  refused at the cap costs about 3 WRU and 1 RRU, after which that container parks the job's batches for 10 s",
        "  without asking; a parked batch waits off the queue until a release sends it on, below), and",
        "  the completion check (`completion.notify_if_complete`): a consistent GetItem of the absent marker first",
        f"  (`is_batch_done`, 1 RRU), then `ledger.progress`, a consistent GetItem of the job item ({item_bytes(JOB_ITEM):,} B with its",
        "  completion token: 1 RRU), which until listing is done is all (the job item counts its done listing shards); after,",
        f"  its own counter shard ({item_bytes(COUNTER_ITEM)} B, 1 RRU), whose `pending` counts exactly the batches it will count, so",
        "  2 RRU whatever K, charged on every batch (a bound). Only a worker whose counter shard drained reads every",
        f"  counter: a Query of the K listing shards ({item_bytes(LIST_SHARD_ITEM)} B each: three 50-character keys, a {CURSOR_CHARS}-character",
        f"  cursor; 1 RRU per 4 KB together) and a BatchGetItem of the {COUNTER_SHARDS} counter shards (each under a partition key of its",
        f"  own, so 1,000 workers never meet on one key): {query_rru(1)} RRU at K = 1, {query_rru(MAX_SHARDS)} at {MAX_SHARDS}, about once per",
        f"  counter shard per job. Per step of {PAGES_PER_STEP} pages (`lister.PAGES_PER_STEP`), the lister's checkpoint: a transaction of its",
        f"  listing shard's update and `pending` on each counter shard its batches count on ({checkpoint_wru(PAGES_PER_STEP):.1f} WRU, where a",
        f"  checkpoint a page cost {checkpoint_wru(1):.0f}). Per container every {STATUS_TTL_S:.0f} s, an eventually consistent",
        "  read of the job's status (0.5 RRU).",
        f"- **Step Functions**: {SFN_FIXED} transitions per job (Validate, CreateLedgerEntry, KeepIdsOnly, PlanListing,",
        "  DeleteGuard?, Confirm?, ListShards, AwaitCompletion, Finalize, ReportWritten?, WithinTolerance?, JobSucceeded), per shard",
        f"  {SFN_PER_LISTER_CALL} per lister call (ListShard, ShardDone?) and {SFN_PER_SHARD} to end it (ShardListed), and {SFN_PER_POLL} for each",
        f"  {POLL_SECONDS} s wait of AwaitCompletion that times out once the listing is done (CheckProgress, AllBatchesDone?,",
        "  AwaitCompletion again); the worker that counts the last batch sends the task token that ends the wait. A delete",
        "  or move with `max_delete` adds the count pass.",
        "- **The report bucket** (`s3bulk/aws/reportbucket.py`): each counted batch PUTs its key-log part (`put_keys`), tagged",
        f"  `{KEY_LOG_TAG}` in the same PUT (no request of its own); a batch with a failure PUTs a failures part too",
        "  (`put_failures`), and a try that lost the count to a duplicate empties both (2 PUTs). Each listing step that sends",
        f"  batches ({PAGES_PER_STEP} pages) first PUTs its intent (`put_intent`: what a lister that dies before its checkpoint sends again), and each",
        "  lister call GETs its shard's. Finalize writes report.json, failures.jsonl (one multipart part per 8 MiB of",
        f"  failures) and its assembly state. A key-log line is {KEY_LOG_LINE_BYTES} B (`KeyRecord.line`), stored gzip'd a part at a time",
        f"  ({KEY_LOG_STORED_BYTES:.0f} B a line, `key_log_stored_bytes`), so a billion objects leave {1e9 * KEY_LOG_STORED_BYTES / GB:,.0f} GB of key logs",
        f"  (they were {1e9 * KEY_LOG_LINE_BYTES / GB:,.0f} GB as plain lines). The ExpireKeyLogs rule expires them after `-c keep_key_logs_days`",
        f"  ({KEEP_KEY_LOGS_DAYS} by default), but the bucket is versioned: expiry leaves a delete marker, and the part is",
        f"  deleted {NONCURRENT_DAYS} days later by the noncurrent-version rule, so it is billed for {KEEP_KEY_LOGS_DAYS + NONCURRENT_DAYS} days,",
        "  and its tag with it ($0.01 per 10,000 tags a month).",
        "- **A stopped job** (an outage, `s3bulk stop`, the failure breaker) holds its queued batches off the queue: each is",
        "  received once, PUT to `jobs/ID/parked/` in the report bucket and deleted from the queue (`aws/held.py`), and the",
        "  resume's ResumeHeld step LISTs, GETs, sends and empties (PUT) each once. For 100 M objects in 1,000-key batches",
        f"  ({100_000:,} batches of {MESSAGE_BYTES / 1000:,.0f} KB) that is ${held_once(100_000):.2f} once, and"
        f" ${held_per_day(100_000):.4f} a day of storage while it waits,",
        "  where handing them back to the queue every 15 minutes cost 96 receives a batch a day and held SQS's in-flight",
        "  limit (about 120,000 messages) against every other job on the stack. A batch with a paused multipart upload",
        "  is still handed back (15 minutes), so a cancel can abort its upload.",
        "- **A capped job** (`s3bulk tune JOB_ID --concurrency N`) parks each batch it has no room for the same way",
        "  (`jobs/ID/waiting/`, and an entry in the ledger: `ledger/parking.py`), and each worker whose hold ends sends on as",
        "  many as its lease shard has room for: each waiting batch is received, sent and deleted once more, PUT and GET",
        f"  once, and costs 5 WRU and a Query: ${capped_once(100_000):.2f} for {100_000:,} batches, whatever the wait, and the",
        "  same storage a day as a stopped job's; handed back to the queue every minute instead, each cost 1,440 receives",
        "  and Worker invocations a day, and together they held SQS's in-flight limit.",
        f"- **CloudWatch and X-Ray**: the workers send {len(BATCH_METRICS)} custom metrics with every counted batch and the listers",
        "  1 (`s3bulk/metrics.py`, one dimension: service), billed for the hours they are sent; logs and traces as assumed in",
        "  the worked example (`LOG_BYTES_PER_INVOCATION`, Lambda's default sampling).",
        "",
        "S3 Batch Operations: $0.25 per job + $1.00 per million objects, plus an S3 Inventory report as its manifest ($0.0025",
        "per million objects listed); its throughput is not published and it meets the same PUT limit, so only its fees are",
        "compared. S3's own request charges (a COPY per object, $5.00 per million) are the same with either tool and are",
        "shown apart.",
        "",
        f"### Listing alone: {lister:,.0f} keys/s per lister",
        "",
        "| shards K | keys/s | 100 M listed in | 1 B listed in |",
        "|---:|---:|---:|---:|",
    ]
    for k in (1, 4, 16, 32, MAX_INLINE_MAP, 100, MAX_SHARDS):
        rate = k * lister
        lines.append(f"| {k} | {rate:,.0f} | {_duration(1e8 / rate)} | {_duration(1e9 / rate)} |")
    lines += [
        "",
        "### The job: copy, 1 KiB objects",
        "",
        "| objects | K | MaximumConcurrency | prefixes | listing /s | workers /s | S3 /s | bound by | time | s3bulk $ | of which workers | of which key logs | S3 requests $ | Batch Ops fees $ |",
        "|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for objects in (1e8, 1e9):
        for k, conc, prefixes in SCALE_ROWS:
            r = at_scale(objects, k, conc, prefixes, cpu_ms)
            key_logs = (
                r.costs["S3 report bucket PUTs (key-log part per batch)"] + r.costs["S3 key-log storage"] + r.costs["S3 key-log tags"]
            )
            lines.append(
                f"| {objects / 1e6:,.0f} M | {k} | {conc:,} | {prefixes:,} | {r.listing_per_s:,.0f} | {r.workers_per_s:,.0f} | {r.s3_per_s:,.0f} | "
                f"{r.bound} | {_duration(r.seconds)} | {r.total:,.2f} | {r.costs['Lambda workers (GB-s)']:,.2f} | {key_logs:,.2f} | "
                f"{s3_requests(objects):,.0f} | {batch_operations(objects):,.2f} |"
            )
    k16 = at_scale(1e8, 16, 50, 1, cpu_ms)
    k1 = at_scale(1e8, 1, 200, 100, cpu_ms)
    lean = at_scale(1e8, 16, 4, 1, cpu_ms)
    wide = at_scale(1e8, 16, 200, 100, cpu_ms)
    target = at_scale(1e9, MAX_INLINE_MAP, 50, 30, cpu_ms)
    target_logs = sum(target.costs[k] for k in ("S3 key-log storage", "S3 key-log tags", "S3 report bucket PUTs (key-log part per batch)"))
    target_ddb = sum(target.costs[k] for k in ("DynamoDB writes (finish_batch, checkpoint)", "DynamoDB reads (completion check per batch)"))
    lines += [
        "",
        f"**What limits what.** With K = 16 the listers send {k16.listing_per_s:,.0f} keys/s, so at 100 M objects listing is not the",
        f"bottleneck until the destination spans {k16.listing_per_s / S3_PUT_PER_PREFIX:.0f}+ partitioned prefixes: S3's PUT limit is. One prefix",
        f"takes {_duration(k16.seconds)} for 100 M and {_duration(at_scale(1e9, 16, 50, 1, cpu_ms).seconds)} for 1 B whatever the tool (SQS keeps messages 14 days).",
        f"With one shard (K = 1: `list_shards=1`, or a source of one page) listing ({k1.listing_per_s:,.0f}/s)",
        f"becomes the bound as soon as S3 has two partitioned prefixes: {_duration(k1.seconds)} for 100 M however many workers run.",
        f"Workers are the bound in none of these rows: 50 of them copy {50 * worker / S3_PUT_PER_PREFIX:.0f} prefixes' worth of PUTs. Past S3's limit more",
        f"concurrency only costs: 100 M on one prefix costs ${k16.costs['Lambda workers (GB-s)']:,.2f} of workers at MaximumConcurrency 50 and",
        f"${lean.costs['Lambda workers (GB-s)']:,.2f} at 4 (= 3,500 / {worker:,.0f}), in the same time. Set MaximumConcurrency near",
        "prefixes x 3,500 / (objects/s per worker); a worker slowed by SlowDown or `adaptive_rate` is billed while it waits.",
        "Where S3 is not the bound, the key logs are s3bulk's largest cost: "
        f"${wide.costs['S3 key-log storage'] + wide.costs['S3 key-log tags'] + wide.costs['S3 report bucket PUTs (key-log part per batch)']:,.2f} "
        f"of ${wide.total:,.2f} for 100 M, kept {KEEP_KEY_LOGS_DAYS} + {NONCURRENT_DAYS} days; `-c keep_key_logs_days=7` makes their storage",
        f"${at_scale(1e8, 16, 200, 100, cpu_ms, keep_days=7).costs['S3 key-log storage']:,.2f}.",
        "",
        f"**A billion for $25.** 1 B objects into 30 partitioned prefixes, K = {MAX_INLINE_MAP}, MaximumConcurrency 50: {_duration(target.seconds)}",
        f"({target.bound}) for ${target.total:,.2f} of s3bulk's own cost: workers ${target.costs['Lambda workers (GB-s)']:,.2f} (a copy runs on",
        f"{request_threads_for(cpu_ms)} request threads, CPU-bound), key logs ${target_logs:,.2f} (gzip'd parts, an intent per {PAGES_PER_STEP} pages),",
        f"DynamoDB ${target_ddb:,.2f}. No other ceiling binds it (the table below). Batch Operations' fees for the same job: ${batch_operations(1e9):,.2f}.",
        "",
        f"Against Batch Operations: its fees for 100 M objects are ${batch_operations(1e8):,.2f} and for 1 B ${batch_operations(1e9):,.2f}; s3bulk's",
        f"own cost is ${k16.total:,.2f} / ${at_scale(1e9, 16, 50, 1, cpu_ms).total:,.2f} at the default concurrency on one prefix, and",
        f"${wide.total:,.2f} / ${at_scale(1e9, 16, 200, 100, cpu_ms).total:,.2f} where S3 is not the bound. Both pay S3's",
        f"${s3_requests(1e8):,.0f} / ${s3_requests(1e9):,.0f} of requests, which dwarf either. The stack's fixed monthly cost",
        f"(${sum(i.dollars for i in fixed_monthly()):,.2f}, below) comes on top, whether jobs run or not.",
    ]
    r = at_scale(1e8, 16, 50, 10, cpu_ms)
    lines += [
        "",
        f"### Worked example: 100 M objects, K = 16, MaximumConcurrency 50, 10 prefixes ({r.bound}, {_duration(r.seconds)})",
        "",
        *_bill(r.items),
        f"| **s3bulk, total** | | | | **{r.total:,.4f}** |",
        f"| S3 Batch Operations' fees (job + per object + inventory) | | | | {batch_operations(1e8):,.2f} |",
        f"| S3 requests, either tool (COPY per object, LIST per page, plan probes) | | | | {s3_requests(1e8):,.2f} |",
        "",
        "Left out as below a cent per 100 M objects: DynamoDB storage and point-in-time recovery of the ledger's",
        "items (a batch marker of ~100 B for 30 days), each worker container's first read of the job spec, the report",
        "bucket's server access logs (one line per PUT, kept 90 days), the log groups' storage (kept a month), and",
        "KMS requests for the ledger's AWS-managed key. A move adds one DeleteObjects per batch (free) and, for objects",
        "above the multipart threshold, HEADs; a sync lists the destination page by page as well.",
    ]
    fixed = fixed_monthly()
    lines += [
        "",
        "## Fixed monthly cost of a deployed stack",
        "",
        "Generated by `fixed_monthly`: what the stack costs each month with no job running; jobs add the costs above.",
        "",
        *_bill(fixed),
        f"| **fixed, per month** | | | | **{sum(i.dollars for i in fixed):,.2f}** |",
        "",
        "CloudWatch's custom metrics are billed only for the hours they are sent, so they are in each job's cost: at most",
        f"{len(BATCH_METRICS) + len(LISTER_METRICS) + len(EVENT_METRICS)} metrics x $0.30 = "
        f"${(len(BATCH_METRICS) + len(LISTER_METRICS) + len(EVENT_METRICS)) * CW_METRIC_HOUR * HOURS_PER_MONTH:,.2f} in a month in which some job sends every one of them every hour.",
        "The pollers are AWS's description, not a measurement: Lambda long-polls an idle queue and scales back to 5",
        "concurrent batches, down to 2 only for an event source without MaximumConcurrency; the stack sets one (50).",
        "AWS's free tier (3 dashboards, 10 alarm metrics, 10 metrics, 1 million SQS requests a month) would cover most",
        "of it in an account with nothing else (all but 5 alarm metrics); prices.json leaves free tiers out.",
    ]
    return lines


# Finalize at scale (aws/assembly.py): CPU per failure line, measured by `python -m bench.failure_lines` (162-byte lines, this
# machine's Python 3.11: 4.7 us), and assumed S3 latency of a small GET (tens of ms; 30 ms taken).
FAILURE_LINE_US = 4.7
FAILURE_LINE_BYTES = 162
PART_GET_S = 0.030
REPORT_READERS = 12  # s3bulk/aws/env.py reports(): parts read at once
FINALIZE_CALL_S = 14 * 60 - 60  # Finalize's timeout less the assembly's margin


def finalize_at_scale(objects: float = 1e8, failed_share: float = 0.10, batch: int = 1000) -> list[str]:
    """The arithmetic of Finalize for a giant job with many failures: parts, lines, bytes, and calls needed."""
    failures = objects * failed_share
    parts = min(objects / batch, failures)  # at worst every batch failed something: one part per batch
    read_s = parts * PART_GET_S / REPORT_READERS
    parse_s = failures * FAILURE_LINE_US / 1e6
    jsonl_gb = failures * FAILURE_LINE_BYTES / GB
    upload_parts = math.ceil(failures * FAILURE_LINE_BYTES / (8 << 20))
    total_s = read_s + parse_s
    calls = max(1, math.ceil(total_s / FINALIZE_CALL_S))
    return [
        "",
        f"## Finalize at {objects / 1e6:,.0f} M objects, {failed_share:.0%} failed",
        "",
        "Generated by `finalize_at_scale`. Finalize assembles failures.jsonl from the failure parts workers wrote (one per",
        f"batch with a failure: at worst {parts:,.0f}), reading {REPORT_READERS} at a time at an assumed {PART_GET_S * 1000:.0f} ms per GET",
        f"({read_s:,.0f} s), parsing {failures:,.0f} lines at {FAILURE_LINE_US} us each (the slowest of `python -m bench.failure_lines`",
        f"runs here, 2.8-4.7 us: {parse_s:,.0f} s), and uploading",
        f"{jsonl_gb:,.1f} GB as {upload_parts:,} parts of 8 MiB. About {total_s:,.0f} s in all: {calls} Finalize call(s) of at most",
        f"{FINALIZE_CALL_S} s, each going on from the last part the previous one uploaded (the `ReportWritten?` loop), with",
        "nothing on /tmp and memory holding one part and the reads in flight. report.json stays small: counts by code and",
        "the first 1,000 failures.",
    ]


RESTORES = """
### Restores
A `restore` job pays S3's retrieval charges, whichever tool sends the requests. Each
RestoreObject is priced as a retrieval request of its tier, not as a PUT, and each GB
restored adds the tier's per-GB fee. Both come from `restore_retrieval` in
`s3bulk/data/prices.json`, by storage class and tier. `s3bulk plan` applies them to the
GLACIER and DEEP_ARCHIVE bytes it lists and shows them as `restore_retrieval`. They are
part of both totals (stack and Batch Operations). A million 1 MiB DEEP_ARCHIVE objects
restored at Bulk cost 1,000 × $0.025 + 977 GB × $0.0025 ≈ $27.44. At Standard the same
objects cost 1,000 × $0.10 + 977 GB × $0.02 ≈ $119.53. These are list prices for us-east-1
on the date in the file.
"""  # noqa: RUF001 - the doc writes prices with a multiplication sign

UPLOADS = """
### Incomplete multipart uploads
An `abort-uploads` job makes one LIST per 1,000 uploads (ListMultipartUploads) and one AbortMultipartUpload per
upload, a DELETE request: `s3_delete_per_1000`, $0.00. `s3bulk plan` adds one ListParts per upload (LIST, $0.005
per 1,000) to read the parts' bytes, and prices what aborting saves a month at `s3_standard_gb_month` for STANDARD
uploads: 10,000 forgotten uploads of 64 MiB hold 625 GiB, $14.38 a month, found for $0.05 of ListParts
(docs/uploads.md).
"""


def filters_section() -> list[str]:
    """What source.tags and source.content_type add: one GET-class read per listed object, from prices.json."""
    one, both, copies = S3_GET * 1e6, 2 * S3_GET * 1e6, S3_COPY * 1e8
    return [
        "",
        "### Filters on tags and content type",
        "A listing does not return an object's tags or Content-Type, so `source.tags` costs one GetObjectTagging and",
        "`source.content_type` one HEAD per listed object (both GET-class, `s3_get_head_per_1000`: "
        f"{_money(S3_GET * 1000)} per 1,000), made by",
        f"the worker before it acts, whether the object matches or not. Per million listed objects: {_money(one)} for one filter, at",
        "most "
        + _money(both)
        + " for both (the second call is not made once the first has left the object out); at 100 M, "
        + f"{_money(one * 100)} to {_money(both * 100)},",
        f"against {_money(copies)} for copying them all. Where the operation HEADs the object anyway (a manifest row without a size, a",
        "multipart or relayed copy, set-storage-class, add-checksum) the filter's HEAD is the one it uses: no extra request.",
        "Each extra call also adds about one request's latency (~30 ms) to every listed object's time in the worker, so a",
        "filtered job of small objects takes up to twice the worker time of an unfiltered one over the same listing.",
        "`s3bulk plan` counts the filter's reads per listed object (shown apart as `filter_requests`), and counts everything",
        "after them as if every object matched: its object count and the rest of its requests are upper bounds.",
    ]


def kms_section() -> list[str]:
    """SSE-KMS: the KMS requests S3 makes for the caller, per object, and the rate KMS allows them."""
    per_m = 2 * 1e6 * KMS_REQUEST  # a copy: one Decrypt (the source's data key) and one GenerateDataKey (the copy's)
    ceiling_hi, ceiling_lo = KMS_RATE_LARGEST / 2, KMS_RATE_SMALLEST / 2
    return [
        "",
        "### SSE-KMS objects",
        "S3 calls KMS on the caller's behalf for each SSE-KMS object without an S3 Bucket Key: a read of its data decrypts",
        "its data key (kms:Decrypt), a write generates one (kms:GenerateDataKey), and each part of a multipart upload",
        f"decrypts the upload's. At {_money(KMS_REQUEST * 10_000)} per 10,000 requests (`kms_request_per_10000`), a copy from an SSE-KMS",
        f"source to an SSE-KMS destination costs **{_money(per_m)} per million objects** in KMS requests, "
        f"{_money(per_m * 1000):} at 1 B, more than everything else s3bulk",
        "spends on such a job, and the same under Batch Operations (the calls are S3's, made for whichever role copies).",
        "KMS also limits them: symmetric requests share one rate per account and Region, "
        f"{KMS_RATE_LARGEST:,}/s in us-east-1, us-west-2 and eu-west-1",
        f"and {KMS_RATE_SMALLEST:,}/s in the smallest Regions (adjustable), so two per object caps a job at {ceiling_hi:,.0f} to "
        f"{ceiling_lo:,.0f} objects/s, less whatever",
        "else in the account uses that key's Region. With an **S3 Bucket Key** on both buckets S3 reuses a bucket-level key",
        "for a while instead, and AWS puts the saving at up to 99%: per-object KMS requests, and their ceiling, mostly go",
        f"away ({_money(per_m / 100)} per million at that 99%). `s3bulk plan` counts them from the buckets' default encryption "
        "(`kms_requests`, priced in its totals).",
    ]


def render(cpu_ms: float, source: str) -> str:
    streaming = worker_threads_for(cpu_ms, WORKER_MB)
    threads = request_threads_for(cpu_ms, WORKER_MB)  # what a copy of small objects runs on: it holds no bodies
    memory = worker_memory_for(cpu_ms, streaming, request_threads=threads)
    sizes = [worker_sizing(cpu_ms, m, threads) for m in (512, 768, 1024, 1280, 1769, 3008)]
    costs = per_million(cpu_ms, 1024, 50, threads)
    total = sum(costs.values())
    lines = [
        "# Cost model: one million small objects",
        "",
        f"Generated by `python -m bench.cost_model` from `docs/benchmarks.json` ({source}: **{cpu_ms:.2f} ms of CPU per object**",
        "in the s3bulk process, measured on a 2-core x86_64 machine). Prices: AWS us-east-1 list prices, Lambda on arm64.",
        f"Assumed: {LATENCY_S * 1000:.0f} ms per CopyObject round trip on S3, {threads} threads per worker (derived below), "
        f"{KEYS_PER_MESSAGE:,} keys per message.",
        "",
        "## Worker memory size",
        "",
        "Lambda's CPU grows with memory (one vCPU at 1,769 MB). A worker does whichever is lower: the CPU its memory buys,",
        "or threads / latency. GB-seconds per million objects stay flat while the worker is CPU-bound and rise once it is",
        "latency-bound, so the cheapest size is the largest one that is still CPU-bound.",
        "",
        "| memory MB | objects/s per worker | bound by | GB-s per million | $ per million |",
        "|---:|---:|---|---:|---:|",
    ]
    for s in sizes:
        bound = "latency" if s.objects_per_s >= threads / LATENCY_S - 1e-6 else "CPU"
        lines.append(f"| {s.memory_mb:,} | {s.objects_per_s:,.0f} | {bound} | {s.gb_seconds:,.0f} | {s.dollars:.4f} |")
    lines += [
        "",
        "The stack's defaults follow (`request_threads_for`, `worker_threads_for`, `worker_memory_for`; infra/config.py holds them",
        "and a unit test checks them against this model and docs/benchmarks.json). A worker has two object pools:",
        f"**{threads} request threads** (`worker_request_threads`) for every job S3 moves the bytes of (copy, delete, tag ...: no",
        f"bodies held): the smallest power of two that keeps enough requests in flight for a {WORKER_MB:,} MB worker's CPU share",
        f"({cpu_rate(cpu_ms, WORKER_MB):,.0f} objects/s x {LATENCY_S * 1000:.0f} ms = {cpu_rate(cpu_ms, WORKER_MB) * LATENCY_S:.0f} in flight);",
        f"**{streaming} streaming threads** (`worker_threads`) for relay and process jobs, the same rule capped at what their bodies",
        f"fit: {BODY_MB_PER_THREAD} MiB per thread beyond the body budget of a quarter of the memory, {floor_threads(WORKER_MB)} threads at {WORKER_MB:,} MB.",
        f"And **{memory:,} MB**: the largest size still CPU-bound at {threads} request threads among those that hold {streaming} streaming",
        "threads' bodies (the smallest of those when none is CPU-bound).",
        f"A copy of small objects at {cpu_ms:.2f} ms each is then CPU-bound at {worker_sizing(cpu_ms, WORKER_MB, threads).objects_per_s:,.0f} objects/s per worker;",
        f"on {streaming} threads, as before the request pool, it was latency-bound at {worker_sizing(cpu_ms, WORKER_MB, streaming).objects_per_s:,.0f}, and paid",
        f"{worker_sizing(cpu_ms, WORKER_MB, streaming).gb_seconds / worker_sizing(cpu_ms, WORKER_MB, threads).gb_seconds:.1f}x the GB-seconds.",
        "**MaximumConcurrency 50** caps a job near "
        f"{50 * worker_sizing(cpu_ms, 1024, threads).objects_per_s:,.0f} objects/s. S3 sustains about 3,500 writes/s per prefix, so a job",
        f"reaches that cap only when its keys span {50 * worker_sizing(cpu_ms, 1024, threads).objects_per_s / 3500:.0f}+ prefixes; "
        "a narrower job meets S3's limit first",
        "(SlowDown, retried with backoff). 50 also leaves most of an account's default 1,000 concurrent executions free.",
        "",
        f"## Per million objects (copy), 1,024 MB workers, 50 in parallel, K = {LIST_SHARDS}",
        "",
        "The same lines as the worked example below (`per_million`, `job_items`), for one million objects whose",
        f"destination takes the workers' COPYs; key logs kept {KEEP_KEY_LOGS_DAYS} + {NONCURRENT_DAYS} days. The stack's fixed monthly cost is apart.",
        "",
        "| item | $ |",
        "|---|---:|",
    ]
    lines += [f"| {k} | {v:.4f} |" for k, v in costs.items()]
    lines += [
        f"| **s3bulk on AWS, total** | **{total:.4f}** |",
        f"| S3 Batch Operations: $1.00 per million objects + $0.25 per job | {BATCH_OPS_PER_OBJECT * 1e6 + BATCH_OPS_JOB:.2f} |",
        "",
        f"s3bulk's own cost is about **{(BATCH_OPS_PER_OBJECT * 1e6 + BATCH_OPS_JOB) / total:,.0f}x lower** than Batch Operations' fees for the same million objects.",
        "",
        "## S3 request charges (the same with either tool)",
        "",
        "| operation | S3 requests per million objects | $ |",
        "|---|---|---:|",
        f"| copy | 1,000,000 COPY + 1,000 LIST | {1e6 * S3_COPY + 1000 * S3_LIST:.3f} |",
        f"| move | 1,000,000 COPY + 1,000 DeleteObjects + 1,000 LIST | {1e6 * S3_COPY + 1000 * S3_DELETE + 1000 * S3_LIST:.3f} |",
        f"| delete | 1,000 DeleteObjects + 1,000 LIST (DeleteObjects at `s3_delete_per_1000`: {_money(S3_DELETE * 1000)} per 1,000) | "
        f"{1000 * S3_DELETE + 1000 * S3_LIST:.3f} |",
        "",
        "Objects above the multipart threshold add HEAD, GetObjectTagging, Create/Complete and one UploadPartCopy per part.",
    ]
    lines += RESTORES.splitlines()
    lines += UPLOADS.splitlines()
    lines += filters_section()
    lines += kms_section()
    lines += render_at_scale(cpu_ms)
    lines += ceilings_section()
    lines += finalize_at_scale()
    return "\n".join(lines) + "\n"


def measured_cpu_ms(rows: list[dict[str, Any]]) -> tuple[float, str]:
    """s3bulk's CPU ms per object from bench.run's rows: the +latency copy (closest to S3), else the direct one."""
    [row] = [r for r in rows if r["tool"] == "s3bulk" and r["workload"].startswith("copy 1 KiB, +")] or [
        r for r in rows if r["tool"] == "s3bulk" and r["workload"].startswith("copy 1 KiB")
    ]
    return float(row["cpu_s_per_1000"]), str(row["workload"])


def main(argv: list[str] | None = None) -> int:
    cpu_ms, source = measured_cpu_ms(json.loads((ROOT / "docs" / "benchmarks.json").read_text()))
    (ROOT / "docs" / "cost-model.md").write_text(render(cpu_ms, source))
    print((ROOT / "docs" / "cost-model.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
