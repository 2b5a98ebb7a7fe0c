"""The job ledger in DynamoDB: spec, status, listing cursor and counters that stay exact, with no hot item or key.

One table. A job's own partition holds what few writers touch; what every worker writes has partition keys of its own,
so 1,000 workers never meet on one key (DynamoDB serves about 1,000 writes/s and 3,000 reads/s per partition):
  pk=job#ID sk=job          the job: spec, status, the number of listing shards once planned (`shards`) and how many
                            of them are done (`shards_done`), the completion token
  pk=job#ID sk=count#list#NNNN  one listing shard: its key range (after, upto], its own page number and cursor, done,
                            and the counters its lister adds (scanned, listed, batches sent ...); at most 40
  pk=job#ID#count#NN sk=count  one of COUNTER_SHARDS counter items the workers add to; a batch picks its shard by a
                            hash of its id
  pk=job#ID#lease#NN sk=lease  one of COUNTER_SHARDS lease items: `working`, the invocations (workers, listers)
                            working the job now, and `stop_epoch`, when the job last stopped; a stopped job's report
                            waits for `working` to drain (DynamoLedger.hold)
  pk=job#ID#batch#BID sk=batch  a marker per finished batch, written in the same transaction as its shard's counter
                            update, so a redelivered message is never counted twice
A job's counters are the sum over its job item, its listing shards (one Query) and its counter shards (one
BatchGetItem); listing is done when `shards_done` reaches `shards`, which the job item alone says. So the check a
worker makes after each counted batch reads one item until listing is done, and every counter only after that.
`pending` is batches sent (added on the listing shards) minus batches finished (subtracted on the counter shards).

No item takes transactional writes at a high rate: workers spread theirs over the shards;
each listing shard has its own item; the job item takes only plain UpdateItems (a rare
rate change, the status) and one transaction per listing shard when it is done. DynamoDB still answers
overlapping writes with TransactionConflict, which botocore does not retry, so every write
here retries conflicts with jittered backoff; each write is idempotent (conditional on the
marker or the page number), so a retry never counts twice.
"""

from __future__ import annotations

import random
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from s3bulk.job import Job, parse_job
from s3bulk.report import Snapshot

COUNTERS = (
    "scanned",
    "listed",
    "listed_bytes",
    "skipped",
    "succeeded",
    "failed",
    "bytes",
    "batches",
    "pending",
    "extraneous",
    "retries",
    "object_retries",
    "throttled",
)
# Counters the lister adds on the job item; the rest are only ever added on shards.
LISTER_COUNTERS = ("scanned", "listed", "listed_bytes", "skipped", "failed", "batches", "pending", "extraneous")
WORKER_COUNTERS = ("succeeded", "skipped", "failed", "bytes", "retries", "object_retries", "pending", "throttled")
DEFAULT_TTL_DAYS = 30
# Enough shards that 1,000 concurrent workers finishing a batch a second each put ~30 writes/s
# on any one item (DynamoDB's per-item limit is 1,000 WCU/s, and transactions conflict far sooner).
COUNTER_SHARDS = 32
# A write that meets a TransactionConflict is retried this many times, with full jitter.
CONFLICT_ATTEMPTS = 12
CONFLICT_BASE_S = 0.02
CONFLICT_CAP_S = 2.0
# Listing shards a job may have: one transaction records them all (DynamoDB allows 100 items).
MAX_LIST_SHARDS = 99
# A job its owner cancelled, until its report is written (then CANCELLED): final, never resumed.
CANCELLING = "CANCELLING"
CANCELLED = "CANCELLED"
# The ledger's sparse index of job items (infra/stack.py): partition `kind` = JOB_KIND, sort `created_at`.
JOBS_INDEX = "Jobs"
JOB_KIND = "job"
T = TypeVar("T")
# However many workers finish a batch at once, the shared rate rises at most this often.
RISE_SPACING_S = 2.0


@dataclass(frozen=True, slots=True)
class JobRecord:
    job_id: str
    job: Job
    status: str
    listing_done: bool
    counters: dict[str, int]
    created_at: float
    shards: int | None = None  # listing shards, once planned
    report: str | None = None  # report.json's URI, once written
    stop_reason: str | None = None  # set when an endpoint outage outlasted the stack's bound (the job stops, resumable)
    execution: str | None = None  # the name of the execution that runs (or last ran) the job
    updated_at: float | None = None  # when its status last changed (a finished job's end)
    awaiting_confirmation: bool = False  # options.confirm: planned, and held until s3bulk confirm

    def snapshot(self) -> Snapshot:
        """The counts as the CLI's live line shows a local run's (report.Snapshot)."""
        c = self.counters
        return Snapshot(
            c.get("scanned", 0),
            c.get("listed", 0),
            c.get("listed_bytes", 0),
            self.listing_done,
            c.get("succeeded", 0),
            c.get("skipped", 0),
            c.get("failed", 0),
            c.get("bytes", 0),
        )

    def summary(self) -> dict[str, Any]:
        c = self.counters
        return {
            "job_id": self.job_id,
            "operation": self.job.operation,
            "status": self.status,
            "listing_done": self.listing_done,
            **{k: c.get(k, 0) for k in ("listed", "succeeded", "skipped", "failed", "bytes", "scanned", "pending", "batches")},
            **({"awaiting_confirmation": f"s3bulk confirm {self.job_id}"} if self.awaiting_confirmation else {}),
        }


@dataclass(frozen=True, slots=True)
class ListShard:
    """One listing shard's state: keys k with after < k <= upto (no bound when upto is None), listed from its own cursor."""

    index: int
    after: str
    upto: str | None
    page: int = 0
    cursor: str | None = None
    done: bool = False
    last_key: str | None = None  # the last source key this shard listed (a sync's destination range starts after it)
    sent: int = 0  # objects sent to the workers so far (the delete guard holds it to `counted` + `borrowed`)
    counted: int | None = None  # the delete guard's count of this shard's deletes (aws/guard.py), once counted
    borrowed: int = 0  # sends past its count this shard took from the job's room under max_delete (DynamoLedger.borrow)


@dataclass(frozen=True, slots=True)
class GuardShard:
    """The delete guard's pass over one listing shard (aws/guard.py): its own cursor and page, and the deletes counted."""

    index: int
    after: str
    upto: str | None
    page: int = 0
    cursor: str | None = None
    done: bool = False
    counted: int = 0


@dataclass(frozen=True, slots=True)
class BatchCounts:
    succeeded: int = 0
    skipped: int = 0
    failed: int = 0
    bytes: int = 0
    retries: int = 0  # requests the S3 client retried while working the batch
    object_retries: int = 0  # extra rounds its objects needed
    throttled: int = 0  # of `failed`, those whose error was throttling (the failure breaker leaves them out)


def job_key(job_id: str) -> dict[str, Any]:
    return {"pk": {"S": f"job#{job_id}"}, "sk": {"S": "job"}}


def _key(job_id: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": f"job#{job_id}"}, "sk": {"S": sk}}


def counter_key(job_id: str, shard: int) -> dict[str, Any]:
    """A counter shard's key: a partition of its own."""
    return {"pk": {"S": f"job#{job_id}#count#{shard:02d}"}, "sk": {"S": "count"}}


def lease_key(job_id: str, shard: int) -> dict[str, Any]:
    """A lease shard's key: how many invocations are working the job on it (see DynamoLedger.hold)."""
    return {"pk": {"S": f"job#{job_id}#lease#{shard:02d}"}, "sk": {"S": "lease"}}


def marker_key(job_id: str, batch_id: str) -> dict[str, Any]:
    """A batch marker's key: a partition of its own, so markers spread as their counter updates do."""
    return {"pk": {"S": f"job#{job_id}#batch#{batch_id}"}, "sk": {"S": "batch"}}


def list_shard_key(index: int) -> str:
    return f"count#list#{index:04d}"


def counter_shard(batch_id: str, shards: int = COUNTER_SHARDS) -> int:
    """The counter shard a batch adds to: stable per batch, spread evenly over the shards."""
    return zlib.crc32(batch_id.encode()) % shards


def is_conflict(exc: ClientError) -> bool:
    """A write that lost a race with another transaction: retryable, unlike a failed condition."""
    err = exc.response.get("Error", {}).get("Code")
    if err == "TransactionConflictException":
        return True
    if err == "TransactionCanceledException":
        reasons = [r.get("Code") for r in exc.response.get("CancellationReasons") or []]
        return "TransactionConflict" in reasons and "ConditionalCheckFailed" not in reasons
    return False


def retry_conflicts(call: Callable[[], T], *, sleep: Callable[[float], None] = time.sleep, attempts: int = CONFLICT_ATTEMPTS) -> T:
    """Run a DynamoDB write, retrying TransactionConflict with capped exponential backoff and full jitter."""
    for attempt in range(attempts):
        try:
            return call()
        except ClientError as exc:
            if not is_conflict(exc) or attempt == attempts - 1:
                raise
            sleep(random.uniform(0, min(CONFLICT_CAP_S, CONFLICT_BASE_S * 2**attempt)))
    raise AssertionError("unreachable")


@dataclass(frozen=True, slots=True)
class Progress:
    """What decides whether a job is complete: read from the job item and the counter shards."""

    listing_done: bool
    pending: int
    status: str
    token: str | None
    counters: dict[str, int] = field(default_factory=dict)  # the job's counters, as read for this check

    @property
    def complete(self) -> bool:
        return self.listing_done and self.pending <= 0


def initial_item(
    job_id: str, job: Job, now: float | None = None, ttl_days: int = DEFAULT_TTL_DAYS, *, execution: str | None = None
) -> dict[str, Any]:
    """The job's first ledger item, in DynamoDB's typed form (the state machine puts it as is, or reopens the job with it).

    `execution` names the execution running the job: the handler of an execution's end acts only on
    the job's current execution, not on one that ended after the job was submitted again.
    """
    now = time.time() if now is None else now
    item: dict[str, Any] = {
        **job_key(job_id),
        "job_id": {"S": job_id},
        "spec": {"S": job.model_dump_json(exclude_none=True)},
        "status": {"S": "RUNNING"},
        "kind": {"S": JOB_KIND},  # the key of the table's Jobs index (recent jobs, newest first): only job items have it
        "created_at": {"N": str(int(now))},
        "expires_at": {"N": str(int(now + ttl_days * 86400))},
    }
    if execution:
        item["execution"] = {"S": execution}
    for name in COUNTERS:
        item[name] = {"N": "0"}
    return item


def _listing_done(item: dict[str, Any]) -> bool:
    """Every planned listing shard is done: the job item counts them (`shards_done`, added as each one's last page is recorded)."""
    return "shards" in item and int(item.get("shards_done", {}).get("N", "0")) >= int(item["shards"]["N"])


def _conditional_failed(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


class DynamoLedger:
    def __init__(self, client: Any, table: str, *, shards: int = COUNTER_SHARDS, sleep: Callable[[float], None] = time.sleep) -> None:
        self.client = client
        self.table = table
        self.shards = shards
        self._sleep = sleep

    def _write(self, call: Callable[[], T]) -> T:
        return retry_conflicts(call, sleep=self._sleep)

    def create(self, job_id: str, job: Job) -> None:
        """Idempotent: creating the same job again is a no-op (state machine retries)."""
        try:
            self._write(
                lambda: self.client.put_item(
                    TableName=self.table, Item=initial_item(job_id, job), ConditionExpression="attribute_not_exists(pk)"
                )
            )
        except ClientError as exc:
            if not _conditional_failed(exc):
                raise

    def _job_item(self, job_id: str, projection: str | None = None) -> dict[str, Any]:
        kw: dict[str, Any] = {"ProjectionExpression": projection} if projection else {}
        r = self.client.get_item(TableName=self.table, Key=job_key(job_id), ConsistentRead=True, **kw)
        item = r.get("Item")
        if item is None:
            raise KeyError(f"job {job_id!r} is not in the ledger")
        return dict(item)

    def _list_shards(self, job_id: str) -> list[dict[str, Any]]:
        """Every listing shard of the job: one Query of the job's partition (at most 40 small items), strongly consistent."""
        items: list[dict[str, Any]] = []
        kw: dict[str, Any] = {}
        while True:
            r = self.client.query(
                TableName=self.table,
                KeyConditionExpression="pk = :pk AND begins_with(sk, :list)",
                ExpressionAttributeValues={":pk": {"S": f"job#{job_id}"}, ":list": {"S": "count#list#"}},
                ConsistentRead=True,
                **kw,
            )
            items += r.get("Items", [])
            if "LastEvaluatedKey" not in r:
                return items
            kw = {"ExclusiveStartKey": r["LastEvaluatedKey"]}

    def _counter_shards(self, job_id: str) -> list[dict[str, Any]]:
        """Every counter shard of the job (each under its own partition key): one consistent BatchGetItem."""
        return self._get_many([counter_key(job_id, i) for i in range(self.shards)], None)

    def _get_many(self, keys: list[dict[str, Any]], projection: tuple[str, ...] | None) -> list[dict[str, Any]]:
        """BatchGetItem of any number of keys, 100 at a time, strongly consistent, unprocessed keys asked again."""
        found: list[dict[str, Any]] = []
        for start in range(0, len(keys), 100):  # BatchGetItem takes 100 keys
            ask: dict[str, Any] = {"Keys": keys[start : start + 100], "ConsistentRead": True}
            if projection:
                ask["ProjectionExpression"] = ", ".join(f"#p{i}" for i in range(len(projection)))
                ask["ExpressionAttributeNames"] = {f"#p{i}": name for i, name in enumerate(projection)}
            request: dict[str, Any] = {self.table: ask}
            while request:
                r = self.client.batch_get_item(RequestItems=request)
                found += r.get("Responses", {}).get(self.table, [])
                request = r.get("UnprocessedKeys") or {}
                if request:
                    self._sleep(0.1)  # throttled keys come back unprocessed: ask again after a pause
        return found

    def _shard_items(self, job_id: str) -> list[dict[str, Any]]:
        """The listing shards and the counter shards: every item a counter is added to besides the job item."""
        return self._list_shards(job_id) + self._counter_shards(job_id)

    def _sum(self, item: dict[str, Any], shards: list[dict[str, Any]]) -> tuple[dict[str, int], bool]:
        """The job's counters (job item plus every listing and counter shard) and whether every planned listing shard is done."""
        total = {k: int(item[k]["N"]) for k in COUNTERS if k in item}
        for shard in shards:
            for k in COUNTERS:
                if k in shard:
                    total[k] = total.get(k, 0) + int(shard[k]["N"])
        return total, _listing_done(item)

    def counters(self, job_id: str) -> dict[str, int]:
        return self._sum(self._job_item(job_id), self._shard_items(job_id))[0]

    def load(self, job_id: str) -> JobRecord:
        item = self._job_item(job_id)
        counters, listing_done = self._sum(item, self._shard_items(job_id))
        return JobRecord(
            job_id,
            parse_job(item["spec"]["S"]),
            item["status"]["S"],
            listing_done,
            counters,
            float(item["created_at"]["N"]),
            int(item["shards"]["N"]) if "shards" in item else None,
            item.get("report", {}).get("S"),
            item.get("stop_reason", {}).get("S"),
            item.get("execution", {}).get("S"),
            float(item["updated_at"]["N"]) if "updated_at" in item else None,
            "confirm_token" in item,
        )

    def recent(self, limit: int = 20) -> list[str]:
        """The ids of the most recent jobs, newest first (the Jobs index: one small Query, whatever the table holds)."""
        ids: list[str] = []
        kw: dict[str, Any] = {}
        while len(ids) < limit:
            r = self.client.query(
                TableName=self.table,
                IndexName=JOBS_INDEX,
                KeyConditionExpression="kind = :job",
                ExpressionAttributeValues={":job": {"S": JOB_KIND}},
                ScanIndexForward=False,
                Limit=limit - len(ids),
                **kw,
            )
            ids += [str(i["pk"]["S"]).removeprefix("job#") for i in r.get("Items", [])]
            if "LastEvaluatedKey" not in r:
                break
            kw = {"ExclusiveStartKey": r["LastEvaluatedKey"]}
        return ids

    def status(self, job_id: str, *, consistent: bool = False) -> str:
        """The job's status alone: one read of one attribute (workers poll it to stop a stopped job)."""
        r = self.client.get_item(
            TableName=self.table,
            Key=job_key(job_id),
            ProjectionExpression="#s",
            ExpressionAttributeNames={"#s": "status"},
            ConsistentRead=consistent,
        )
        item = r.get("Item")
        if item is None:
            raise KeyError(f"job {job_id!r} is not in the ledger")
        return str(item["status"]["S"])

    def stopped_at(self, job_id: str) -> float | None:
        """When an outage stopped the job (epoch seconds), or None."""
        item = self._job_item(job_id, "stopped_at")
        return float(item["stopped_at"]["N"]) if "stopped_at" in item else None

    def spec(self, job_id: str) -> Job:
        """The job alone (what a worker needs): one small GetItem, no counters."""
        return parse_job(self._job_item(job_id, "spec")["spec"]["S"])

    def progress(self, job_id: str, *, counters: bool = False) -> Progress:
        """What decides whether the job is complete. Until listing is done that is the job item alone (it cannot be
        complete); after, every counter. `counters`: read them all anyway (the failure breaker weighs them)."""
        r = self.client.get_item(
            TableName=self.table,
            Key=job_key(job_id),
            ConsistentRead=True,
            ProjectionExpression="#s, #t, pending, shards, shards_done, failed, skipped",
            ExpressionAttributeNames={"#s": "status", "#t": "completion_token"},
        )
        item = r.get("Item")
        if item is None:
            raise KeyError(f"job {job_id!r} is not in the ledger")
        token = item.get("completion_token", {}).get("S")
        listing_done = _listing_done(item)
        if not listing_done and not counters:
            return Progress(False, -1, item["status"]["S"], token, {})
        total, _ = self._sum(item, self._shard_items(job_id))
        return Progress(listing_done, total.get("pending", 0), item["status"]["S"], token, total)

    # -- listing shards ---------------------------------------------------------------------------
    def plan(self, job_id: str, ranges: list[tuple[str, str | None]]) -> int:
        """Record the job's listing shards once, atomically; returns how many there are (a re-plan keeps the first)."""
        if not 1 <= len(ranges) <= MAX_LIST_SHARDS:
            raise ValueError(f"a job is listed in 1-{MAX_LIST_SHARDS} shards, not {len(ranges)}")
        expires = {"N": str(int(time.time() + DEFAULT_TTL_DAYS * 86400))}
        puts = []
        for i, (after, upto) in enumerate(ranges):
            item: dict[str, Any] = {**_key(job_id, list_shard_key(i)), "page": {"N": "0"}, "done": {"BOOL": False}, "expires_at": expires}
            if after:
                item["after"] = {"S": after}
            if upto is not None:
                item["upto"] = {"S": upto}
            puts.append({"Put": {"TableName": self.table, "Item": item}})
        plan = {
            "Update": {
                "TableName": self.table,
                "Key": job_key(job_id),
                "UpdateExpression": "SET shards = :k",
                "ConditionExpression": "attribute_exists(pk) AND attribute_not_exists(shards)",
                "ExpressionAttributeValues": {":k": {"N": str(len(ranges))}},
            }
        }
        try:
            self._write(lambda: self.client.transact_write_items(TransactItems=[plan, *puts]))
            return len(ranges)
        except ClientError as exc:
            reasons = exc.response.get("CancellationReasons") or []
            if reasons and reasons[0].get("Code") == "ConditionalCheckFailed":
                planned = self._job_item(job_id, "shards").get("shards")
                if planned is not None:
                    return int(planned["N"])
            raise

    def list_shard(self, job_id: str, index: int) -> ListShard:
        r = self.client.get_item(TableName=self.table, Key=_key(job_id, list_shard_key(index)), ConsistentRead=True)
        item = r.get("Item")
        if item is None:
            raise KeyError(f"job {job_id!r} has no listing shard {index}")
        return ListShard(
            index,
            item.get("after", {}).get("S", ""),
            item.get("upto", {}).get("S"),
            int(item["page"]["N"]),
            item.get("cursor", {}).get("S"),
            bool(item["done"]["BOOL"]),
            item.get("last_key", {}).get("S"),
            int(item.get("sent", {}).get("N", "0")),
            int(item["would_delete"]["N"]) if "would_delete" in item else None,
            int(item.get("borrowed", {}).get("N", "0")),
        )

    def borrow(self, job_id: str, n: int, room: int) -> bool:
        """Take n sends from the job's room under max_delete (its limit less what the shards counted), shared by every shard:
        False when less than n is left. A crash before the shard's checkpoint borrows again: the room only shrinks."""
        if n > room:
            return False
        return self._update_if(
            job_key(job_id),
            UpdateExpression="ADD borrowed :n",
            ConditionExpression="attribute_not_exists(borrowed) OR borrowed <= :most",
            ExpressionAttributeValues={":n": {"N": str(n)}, ":most": {"N": str(room - n)}},
        )

    # -- the delete guard's count (aws/guard.py): attributes of the listing shard's own item, apart from its listing --
    def guard_shard(self, job_id: str, index: int) -> GuardShard:
        r = self.client.get_item(TableName=self.table, Key=_key(job_id, list_shard_key(index)), ConsistentRead=True)
        item = r.get("Item")
        if item is None:
            raise KeyError(f"job {job_id!r} has no listing shard {index}")
        return GuardShard(
            index,
            item.get("after", {}).get("S", ""),
            item.get("upto", {}).get("S"),
            int(item.get("guard_page", {}).get("N", "0")),
            item.get("guard_cursor", {}).get("S"),
            bool(item.get("guard_done", {}).get("BOOL", False)),
            int(item.get("would_delete", {}).get("N", "0")),
        )

    def guard_checkpoint(self, job_id: str, shard: int, page: int, cursor: str | None, done: bool, counted: int) -> bool:
        """Record one counted page of a shard; False if another invocation already did."""
        values: dict[str, Any] = {
            ":page": {"N": str(page)},
            ":next": {"N": str(page + 1)},
            ":done": {"BOOL": done},
            ":n": {"N": str(counted)},
        }
        update = "SET guard_page = :next, guard_done = :done"
        if cursor is None:
            update += " REMOVE guard_cursor"
        else:
            update = "SET guard_page = :next, guard_done = :done, guard_cursor = :cursor"
            values[":cursor"] = {"S": cursor}
        update += " ADD would_delete :n"
        return self._update_if(
            _key(job_id, list_shard_key(shard)),
            UpdateExpression=update,
            ConditionExpression="attribute_not_exists(guard_page) OR guard_page = :page",
            ExpressionAttributeValues=values,
        )

    def guard_total(self, job_id: str) -> tuple[int, bool]:
        """The deletes every shard counted, and whether every planned shard is counted."""
        item = self._job_item(job_id, "shards")
        shards = self._list_shards(job_id)
        total = sum(int(s.get("would_delete", {}).get("N", "0")) for s in shards)
        done = sum(1 for s in shards if s.get("guard_done", {}).get("BOOL"))
        return total, "shards" in item and done >= int(item["shards"]["N"])

    def await_confirmation(self, job_id: str, token: str) -> None:
        """Store the token the execution waits on until its owner confirms the job (options.confirm)."""
        self._write(
            lambda: self.client.update_item(
                TableName=self.table,
                Key=job_key(job_id),
                UpdateExpression="SET confirm_token = :t",
                ExpressionAttributeValues={":t": {"S": token}},
            )
        )

    def take_confirmation(self, job_id: str) -> str | None:
        """The token a job waits on for its confirmation, removed as it is read (so it is sent once); None if none."""
        try:
            r = self._write(
                lambda: self.client.update_item(
                    TableName=self.table,
                    Key=job_key(job_id),
                    UpdateExpression="REMOVE confirm_token",
                    ConditionExpression="attribute_exists(confirm_token)",
                    ReturnValues="UPDATED_OLD",
                )
            )
        except ClientError as exc:
            if _conditional_failed(exc):
                return None
            raise
        return str(r["Attributes"]["confirm_token"]["S"])

    def await_completion(self, job_id: str, token: str) -> None:
        """Store the execution's task token; whoever sees the job complete next sends it (see completion.notify_if_complete)."""
        self._write(
            lambda: self.client.update_item(
                TableName=self.table,
                Key=job_key(job_id),
                UpdateExpression="SET #t = :t",
                ExpressionAttributeNames={"#t": "completion_token"},
                ExpressionAttributeValues={":t": {"S": token}},
            )
        )

    def checkpoint(
        self,
        job_id: str,
        shard: int,
        page: int,
        cursor: str | None,
        done: bool,
        *,
        scanned: int,
        listed: int,
        listed_bytes: int,
        skipped: int,
        batches: int,
        failed: int = 0,
        extraneous: int = 0,
        last_key: str | None = None,
        sent: int = 0,
        borrowed: int = 0,
    ) -> bool:
        """Record one fully sent page of a listing shard; False if another invocation already recorded it.

        `failed` counts entries that failed before any worker saw them (bad manifest rows,
        extraneous objects not deleted); `extraneous` the destination objects a sync deleted.
        """
        values: dict[str, Any] = {
            ":page": {"N": str(page)},
            ":next": {"N": str(page + 1)},
            ":done": {"BOOL": done},
            ":scanned": {"N": str(scanned)},
            ":listed": {"N": str(listed)},
            ":lbytes": {"N": str(listed_bytes)},
            ":skipped": {"N": str(skipped)},
            ":batches": {"N": str(batches)},
            ":failed": {"N": str(failed)},
            ":extraneous": {"N": str(extraneous)},
            ":sent": {"N": str(sent)},
            ":borrowed": {"N": str(borrowed)},
        }
        # Every name goes through a placeholder: several (cursor, page, bytes) are DynamoDB reserved words.
        names = {
            f"#{n}": n
            for n in (
                "page",
                "done",
                "scanned",
                "listed",
                "listed_bytes",
                "skipped",
                "batches",
                "pending",
                "failed",
                "extraneous",
                "sent",
                "borrowed",
            )
        }
        names["#cursor"] = "cursor"
        update = "SET #page = :next, #done = :done"
        if last_key is not None:
            names["#last_key"] = "last_key"
            values[":last_key"] = {"S": last_key}
            update += ", #last_key = :last_key"
        if cursor is None:
            remove = " REMOVE #cursor"
        else:
            update += ", #cursor = :cursor"
            values[":cursor"] = {"S": cursor}
            remove = ""
        update += (
            remove
            + " ADD #scanned :scanned, #listed :listed, #listed_bytes :lbytes, #skipped :skipped, #batches :batches, #pending :batches,"
            " #failed :failed, #extraneous :extraneous, #sent :sent, #borrowed :borrowed"
        )
        shard_update: dict[str, Any] = {
            "Key": _key(job_id, list_shard_key(shard)),
            "UpdateExpression": update,
            "ConditionExpression": "#page = :page",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        if not done:
            return self._update_if(shard_update.pop("Key"), **shard_update)
        # The shard's last page: the job item counts it done in the same transaction, so whether listing is done is one read.
        finished = {
            "TableName": self.table,
            "Key": job_key(job_id),
            "UpdateExpression": "ADD shards_done :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        }
        try:
            self._write(
                lambda: self.client.transact_write_items(
                    TransactItems=[{"Update": {"TableName": self.table, **shard_update}}, {"Update": finished}]
                )
            )
            return True
        except ClientError as exc:
            reasons = exc.response.get("CancellationReasons") or []
            if reasons and reasons[0].get("Code") == "ConditionalCheckFailed":
                return False
            raise

    def _update_if(self, key: dict[str, Any], **update: Any) -> bool:
        """UpdateItem, conflicts retried; False when its condition did not hold."""
        try:
            self._write(lambda: self.client.update_item(TableName=self.table, Key=key, **update))
            return True
        except ClientError as exc:
            if _conditional_failed(exc):
                return False
            raise

    def counted_batch(self, job_id: str, batch_id: str) -> dict[str, Any] | None:
        """The batch's marker once it was counted (with `child`, the rest it handed on, when it was split), else None."""
        r = self.client.get_item(TableName=self.table, Key=marker_key(job_id, batch_id), ConsistentRead=True)
        item = r.get("Item")
        return dict(item) if item is not None else None

    def counted_attempts(self, job_id: str, batch_ids: Sequence[str]) -> dict[str, str]:
        """The attempt each of these batches was counted from (finish_batch's `attempt`); uncounted ones are absent."""
        prefix = f"job#{job_id}#batch#"
        items = self._get_many([marker_key(job_id, b) for b in dict.fromkeys(batch_ids)], ("pk", "attempt"))
        return {str(i["pk"]["S"]).removeprefix(prefix): i.get("attempt", {}).get("S", "") for i in items}

    def finish_batch(
        self, job_id: str, batch_id: str, counts: BatchCounts, ttl_days: int = DEFAULT_TTL_DAYS, *, attempt: str = "", child: str = ""
    ) -> bool:
        """Count a finished batch exactly once, on its counter shard; False means it was already counted.

        The marker keeps `attempt` (the worker's id for this try of the batch), so the report reads only the
        failures part of the try that was counted, never one a losing duplicate wrote.
        """
        expires = {"N": str(int(time.time() + ttl_days * 86400))}
        marker = {**marker_key(job_id, batch_id), "expires_at": expires, **({"attempt": {"S": attempt}} if attempt else {})}
        if child:  # the rest of the batch goes on as a batch of its own: still pending, so the job waits for it
            marker["child"] = {"S": child}
        values = {
            ":s": counts.succeeded,
            ":k": counts.skipped,
            ":f": counts.failed,
            ":b": counts.bytes,
            ":r": counts.retries,
            ":o": counts.object_retries,
            ":t": counts.throttled,
            ":minus": 0 if child else -1,
        }
        update = {
            "TableName": self.table,
            "Key": counter_key(job_id, counter_shard(batch_id, self.shards)),
            "UpdateExpression": "ADD #s :s, #k :k, #f :f, #b :b, #r :r, #o :o, #t :t, #p :minus SET expires_at = :exp",
            "ExpressionAttributeNames": {
                "#s": "succeeded",
                "#k": "skipped",
                "#f": "failed",
                "#b": "bytes",
                "#r": "retries",
                "#o": "object_retries",
                "#t": "throttled",
                "#p": "pending",
            },
            "ExpressionAttributeValues": {**{k: {"N": str(v)} for k, v in values.items()}, ":exp": expires},
        }
        try:
            self._write(
                lambda: self.client.transact_write_items(
                    TransactItems=[
                        {"Put": {"TableName": self.table, "Item": marker, "ConditionExpression": "attribute_not_exists(pk)"}},
                        {"Update": update},
                    ]
                )
            )
            return True
        except ClientError as exc:
            reasons = exc.response.get("CancellationReasons") or []
            if (
                exc.response.get("Error", {}).get("Code") == "TransactionCanceledException"
                and reasons
                and reasons[0].get("Code") == "ConditionalCheckFailed"
            ):
                return False
            raise

    def shared_rate(self, job_id: str) -> float | None:
        """The per-worker send rate the job's workers agreed on, or None before any throttle."""
        r = self.client.get_item(TableName=self.table, Key=job_key(job_id), ProjectionExpression="send_rate")
        value = r.get("Item", {}).get("send_rate")
        return float(value["N"]) if value else None

    def publish_rate(self, job_id: str, rate: float, *, cut: bool, now: float | None = None) -> bool:
        """A cut wins when lower; a rise only over an existing rate and not sooner than RISE_SPACING_S after the last change."""
        now = time.time() if now is None else now
        if cut:
            condition = "attribute_not_exists(send_rate) OR send_rate > :r"
            values = {":r": {"N": f"{rate:.3f}"}, ":now": {"N": f"{now:.3f}"}}
        else:
            condition = "send_rate < :r AND rate_at < :stale"
            values = {":r": {"N": f"{rate:.3f}"}, ":now": {"N": f"{now:.3f}"}, ":stale": {"N": f"{now - RISE_SPACING_S:.3f}"}}
        return self._update_if(
            job_key(job_id),
            UpdateExpression="SET send_rate = :r, rate_at = :now",
            ConditionExpression=f"attribute_exists(pk) AND ({condition})",
            ExpressionAttributeValues=values,
        )

    def stop(self, job_id: str, reason: str) -> bool:
        """Mark a RUNNING job STOPPING (its endpoint is gone for good, or its owner stopped its execution); True for the
        one call that did.

        Workers then hand its batches back uncounted (kept for the resume, not cancelled), listers send no more
        pages, and its report says stopped. Submitting the job again (ReopenJob) makes it RUNNING and removes the reason.
        """
        now = time.time()
        try:
            self._write(
                lambda: self.client.update_item(
                    TableName=self.table,
                    Key=job_key(job_id),
                    UpdateExpression="SET #s = :stopping, stop_reason = :r, stopped_at = :t",
                    ConditionExpression="#s = :running",
                    ExpressionAttributeNames={"#s": "status"},
                    ExpressionAttributeValues={
                        ":stopping": {"S": "STOPPING"},
                        ":running": {"S": "RUNNING"},
                        ":r": {"S": reason[:1000]},
                        ":t": {"N": f"{now:.3f}"},
                    },
                )
            )
        except ClientError as exc:
            if not _conditional_failed(exc):
                raise
            return False
        self.mark_stopped(job_id, now)
        return True

    # -- leases: who is working the job now, so a stopped job's report waits for the work in flight ----------------
    def hold(self, job_id: str, holder: str) -> float:
        """An invocation starts working the job (a worker's batch, a lister's call): one more on the holder's lease
        shard. Returns that shard's stop epoch: newer than the one the caller last saw means the job was stopped since,
        whatever a cached status says. Release it when done, whatever happens."""
        expires = {"N": str(int(time.time() + DEFAULT_TTL_DAYS * 86400))}
        r = self._write(
            lambda: self.client.update_item(
                TableName=self.table,
                Key=lease_key(job_id, counter_shard(holder, self.shards)),
                UpdateExpression="ADD working :one SET expires_at = :exp",
                ExpressionAttributeValues={":one": {"N": "1"}, ":exp": expires},
                ReturnValues="ALL_NEW",
            )
        )
        return float(r.get("Attributes", {}).get("stop_epoch", {}).get("N", "0"))

    def release(self, job_id: str, holder: str) -> None:
        self._write(
            lambda: self.client.update_item(
                TableName=self.table,
                Key=lease_key(job_id, counter_shard(holder, self.shards)),
                UpdateExpression="ADD working :minus",
                ExpressionAttributeValues={":minus": {"N": "-1"}},
            )
        )

    def mark_stopped(self, job_id: str, epoch: float) -> None:
        """Every lease shard learns the stop (idempotent: the epoch is the stop's time). A hold after this sees it, so
        no invocation starts work on a stale cached status once `working` has been read."""
        for shard in range(self.shards):
            key = lease_key(job_id, shard)
            self._update_if(key, UpdateExpression="SET stop_epoch = :e", ExpressionAttributeValues={":e": {"N": f"{epoch:.3f}"}})

    def working(self, job_id: str) -> int:
        """Invocations working the job now (an invocation Lambda ended leaves its hold behind: callers bound the wait)."""
        leases = self._get_many([lease_key(job_id, i) for i in range(self.shards)], ("working",))
        return sum(int(i.get("working", {}).get("N", "0")) for i in leases)

    def cancel(self, job_id: str, reason: str) -> str | None:
        """End a job for good (its owner's s3bulk cancel): CANCELLING until its report is written, then CANCELLED.
        Returns the status it had, or None when it had ended already (SUCCEEDED, FAILED, CANCELLED).

        Every lease shard learns of it at once, so no batch starts after this returns; workers drop its queued batches
        uncounted and listers send no more pages."""
        now = time.time()
        try:
            r = self._write(
                lambda: self.client.update_item(
                    TableName=self.table,
                    Key=job_key(job_id),
                    UpdateExpression="SET #s = :cancelling, stop_reason = :r, stopped_at = :t",
                    ConditionExpression="#s IN (:running, :stopping, :stopped)",
                    ExpressionAttributeNames={"#s": "status"},
                    ExpressionAttributeValues={
                        ":cancelling": {"S": CANCELLING},
                        ":running": {"S": "RUNNING"},
                        ":stopping": {"S": "STOPPING"},
                        ":stopped": {"S": "STOPPED"},
                        ":r": {"S": reason[:1000]},
                        ":t": {"N": f"{now:.3f}"},
                    },
                    ReturnValues="UPDATED_OLD",
                )
            )
        except ClientError as exc:
            if not _conditional_failed(exc):
                raise
            return None
        self.mark_stopped(job_id, now)
        return str(r["Attributes"]["status"]["S"])

    def set_status(self, job_id: str, status: str, **extra: str) -> None:
        names = {"#s": "status"}
        values: dict[str, Any] = {":s": {"S": status}, ":now": {"N": str(int(time.time()))}}
        sets = ["#s = :s", "updated_at = :now"]  # when a job last changed status: s3bulk jobs shows how long it ran
        for i, (k, v) in enumerate(extra.items()):
            names[f"#e{i}"] = k
            values[f":e{i}"] = {"S": v}
            sets.append(f"#e{i} = :e{i}")
        self._write(
            lambda: self.client.update_item(
                TableName=self.table,
                Key=job_key(job_id),
                UpdateExpression="SET " + ", ".join(sets),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        )
