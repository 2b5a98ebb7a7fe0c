"""How fast a job runs on the deployed stack, and what holds it back: one model for the cost model (bench/cost_model.py)
and `s3bulk plan`.

A job's listing, its workers and S3 work at once (a batch is worked as soon as it is listed), so the job runs at the
lowest of their three rates. Beside them the stack meets ceilings of DynamoDB, SQS and KMS at scale; a ceiling below
the three binds instead. Each number is measured (docs/cost-model.md says where) or a limit AWS states.
"""

from __future__ import annotations

from dataclasses import dataclass

MB_PER_VCPU = 1769  # Lambda gives one full vCPU at 1,769 MB and CPU in proportion to memory
LATENCY_S = 0.030  # a small-object CopyObject round trip on S3, typical
WORKER_MB = 1024  # infra/config.py worker_memory_mb
LISTER_MB = 512  # infra/stack.py: the Lister function (PlanListing, ListShard)
# A worker's CPU per small object (a copy: sign, send, parse, count), measured by bench.run (docs/benchmarks.json);
# tests/unit/test_cost_model.py holds it to the measurement.
CPU_MS_PER_OBJECT = 0.27
LIST_PAGE_S = 0.080  # ListObjectsV2, 1,000 keys, on S3 (what bench.listing_shards' synthetic store injects)
LIST_PAGE_KEYS = 1000
LISTER_IO_S = 0.025  # per page, after the LIST: SendMessageBatch (one 1,000-key message) + the checkpoint UpdateItem
LISTER_CPU_MS_PER_PAGE = 20.0  # one full core: parse the page (8-20 ms measured by bench.listing_shards), filter, pack, sign
S3_PUT_PER_PREFIX = 3500  # S3 sustains about 3,500 PUT/COPY/POST/DELETE requests a second per partitioned prefix
S3_GET_PER_PREFIX = 5500  # ... and 5,500 GET/HEAD
# DynamoDB serves 3,000 read and 1,000 write units a second per partition key; the job item is the hottest key: 1.40
# read units per batch (tests/integration/test_stack_partitions.py measures it on the whole stack). The listing shards'
# items share the job's partition key: each step's checkpoint writes its shard's item in a transaction (2x).
PARTITION_RRU, JOB_ITEM_RRU_PER_BATCH, PARTITION_WRU = 3000, 1.40, 1000
# A new on-demand table serves up to 4,000 write and 12,000 read units a second at once (more as traffic grows); per
# batch the stack writes about 6 units (finish_batch's transaction, the lease's hold and release) and its share of its
# step's checkpoint, and reads about 3 (marker, job item, counter shard).
NEW_TABLE_WRU, NEW_TABLE_RRU = 4000, 12000
WRU_PER_BATCH, RRU_PER_BATCH = 6, 3
# A step's checkpoint (ledger.checkpoint of 8 pages: the shard's item and `pending` on the counter shards its batches
# count on, in one transaction) and the shard item's own part; bench/cost_model.py computes both from the items'
# sizes, and tests/unit/test_cost_model.py holds these to it.
CHECKPOINT_WRU_PER_STEP, SHARD_ITEM_WRU = 16.4, 1
PAGES_PER_STEP = 8  # s3bulk/aws/lister.py PAGES_PER_STEP (a test holds them equal; this module imports no AWS code)
# SQS holds at most 120,000 messages in flight per queue; a worker holds its invocation's 5 messages.
SQS_IN_FLIGHT, MESSAGES_PER_WORKER = 120_000, 5
# KMS's shared request rate for symmetric cryptographic operations, per account and Region (adjustable): 50,000/s in
# us-east-1, us-west-2 and eu-west-1, down to 5,500/s in the smallest Regions.
KMS_RATE_LARGEST, KMS_RATE_SMALLEST = 50_000, 5_500
KMS_PER_OBJECT = 2  # SSE-KMS without S3 Bucket Keys: a read decrypts, a write generates a data key


def cpu_rate(cpu_ms_per_object: float, memory_mb: int) -> float:
    """Objects/s a worker's CPU share allows."""
    return (memory_mb / MB_PER_VCPU) * 1000 / cpu_ms_per_object


def worker_rate(threads: int, memory_mb: int = WORKER_MB, cpu_ms_per_object: float = CPU_MS_PER_OBJECT) -> float:
    """One worker: bound by its CPU share or by threads / latency (requests in flight), whichever is lower."""
    return min(cpu_rate(cpu_ms_per_object, memory_mb), threads / LATENCY_S)


def lister_keys_per_s(memory_mb: int = LISTER_MB) -> float:
    """One lister: LIST, then send and checkpoint, one page after the other, its CPU at the share its memory buys."""
    page_s = LIST_PAGE_S + LISTER_IO_S + LISTER_CPU_MS_PER_PAGE / 1000 / (memory_mb / MB_PER_VCPU)
    return LIST_PAGE_KEYS / page_s


def ceilings(
    concurrency: int,
    workers_per_s: float,
    *,
    keys_per_batch: int = LIST_PAGE_KEYS,
    checkpoint_wru: float = CHECKPOINT_WRU_PER_STEP,
    shard_item_wru: float = SHARD_ITEM_WRU,
) -> list[tuple[str, float, str]]:
    """(ceiling, objects/s it allows, what it is) beside listing, workers and S3; KMS last (it binds only SSE-KMS jobs)."""
    per_batch_wru = WRU_PER_BATCH + checkpoint_wru / PAGES_PER_STEP  # a page is one batch at 1,000 keys
    step_keys = PAGES_PER_STEP * LIST_PAGE_KEYS
    return [
        ("job item's partition (reads)", PARTITION_RRU / JOB_ITEM_RRU_PER_BATCH * keys_per_batch, "3,000 RRU/s per key; 1.40 a batch"),
        (
            "job's partition (listers' checkpoints)",
            PARTITION_WRU / (2 * shard_item_wru) * step_keys,
            f"1,000 WRU/s per key; {2 * shard_item_wru:g} a step of {PAGES_PER_STEP} pages",
        ),
        (
            "new on-demand table (writes)",
            NEW_TABLE_WRU / per_batch_wru * keys_per_batch,
            f"4,000 WRU/s at first; about {per_batch_wru:.0f} a batch",
        ),
        ("new on-demand table (reads)", NEW_TABLE_RRU / RRU_PER_BATCH * keys_per_batch, "12,000 RRU/s at first; about 3 a batch"),
        ("SQS in flight", SQS_IN_FLIGHT / (concurrency * MESSAGES_PER_WORKER) * workers_per_s, "120,000 messages a queue"),
        ("KMS, SSE-KMS without Bucket Keys", KMS_RATE_LARGEST / KMS_PER_OBJECT, "50,000 requests/s (us-east-1); 2 an object"),
    ]


@dataclass(frozen=True)
class Pace:
    """A job's pace on the stack: each rate it meets (objects/s), the one that binds, and how long it takes."""

    rates: tuple[tuple[str, float], ...]  # listing, workers, S3, then the ceilings (KMS only when `kms`)
    bound: str
    per_s: float
    seconds: float


def s3_objects_per_s(put_class: float, get_class: float, prefixes: int = 1) -> float:
    """Objects/s S3 serves a job making `put_class` PUT/COPY/POST/DELETE and `get_class` GET/HEAD requests an object,
    over `prefixes` partitioned prefixes (a new prefix is one until S3 splits it under load)."""
    limits = [S3_PUT_PER_PREFIX / put_class] if put_class else []
    limits += [S3_GET_PER_PREFIX / get_class] if get_class else []
    return prefixes * min(limits, default=float("inf"))


def pace(objects: float, *, shards: int, concurrency: int, threads: int, s3_per_s: float, kms: bool = False) -> Pace:
    """The stack's pace for `objects`: K listers, `concurrency` workers of `threads` each, what S3 serves (objects/s,
    s3_objects_per_s), and the ceilings beside them."""
    workers = concurrency * worker_rate(threads)
    rates = [("listing", shards * lister_keys_per_s()), ("workers", workers), ("S3 request rate", s3_per_s)]
    others = ceilings(concurrency, workers)
    rates += [(name, rate) for name, rate, _ in (others if kms else others[:-1])]
    bound, per_s = min(rates, key=lambda r: r[1])
    return Pace(tuple(rates), bound, per_s, objects / per_s + LIST_PAGE_S if objects else 0.0)
