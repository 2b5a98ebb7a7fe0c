"""Cost per million objects on AWS, from the CPU per object measured by bench.run, against S3 Batch Operations;
and the time and cost of 100 M and 1 B objects with sharded listing (at_scale).

    python -m bench.cost_model            # reads docs/benchmarks.json, writes docs/cost-model.md

Prices are AWS's published us-east-1 list prices (Lambda on arm64); check current prices for your region.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

LAMBDA_GB_S = 0.0000133334  # arm64, per GB-second
LAMBDA_REQUEST = 0.20 / 1e6
SQS_REQUEST = 0.40 / 1e6  # each 64 KB of a message is billed as one request
DDB_WRU = 0.625 / 1e6  # on-demand write request unit; a transactional write costs 2 per item-KB
DDB_RRU = 0.125 / 1e6
SFN_TRANSITION = 0.025 / 1000
BATCH_OPS_JOB = 0.25
BATCH_OPS_PER_OBJECT = 1.00 / 1e6
S3_COPY = 0.005 / 1000  # PUT/COPY/POST/LIST class
S3_LIST = 0.005 / 1000

MB_PER_VCPU = 1769  # Lambda gives one full vCPU at 1,769 MB and CPU in proportion to memory
LATENCY_S = 0.030  # a small-object CopyObject round trip on S3, typical
THREADS = 32  # the sizing table's default; the stack's own is worker_threads_for() of the measured CPU per object
KEYS_PER_MESSAGE = 1000
MESSAGE_KB = 100  # 1,000 keys of ~100 bytes as ASCII JSON
MESSAGES_PER_INVOCATION = 5
POLL_S = 20

# -- at scale: 100 M and 1 B objects (at_scale) -----------------------------------------------------
S3_PUT_PER_PREFIX = 3500  # COPY is a PUT-class request: S3 sustains about 3,500/s per partitioned prefix
LIST_PAGE_S = 0.080  # ListObjectsV2, 1,000 keys, on S3 (what bench.listing_shards' synthetic store injects)
LIST_PAGE_KEYS = 1000
LISTER_IO_S = 0.025  # per page, after the LIST: SendMessageBatch (one 1,000-key message) + the checkpoint UpdateItem
LISTER_CPU_MS_PER_PAGE = 20.0  # one full core: parse the page (8-20 ms measured by bench.listing_shards), filter, pack, sign
LISTER_MB = 512  # the stack's lister function
LISTER_RUN_S = 270.0  # a lister invocation: 5 min timeout, no new page with under 30 s left
PROBES_PER_PLAN = 400  # PlanListing's LISTs of two keys at most (`bench.listing_shards --store plan`: ~300-600 at K = 16-32 on 10-123 M keys), a rounding error either way
WORKER_MB = 1024
BODY_BUDGET_SHARE = 0.25  # a worker's MemoryBudget: a quarter of its memory (s3bulk/aws/env.py)
BODY_MB_PER_THREAD = 24  # beyond the budget, per thread: one 8 MiB range, one 8 MiB part, one 8 MiB write buffer
POLL_SECONDS = 600  # AwaitCompletion's timeout (the task-token wait), then CheckProgress
SFN_FIXED = 12  # Validate .. Finalize transitions of one job
SFN_PER_LISTER_CALL = 2  # ListShard + ShardDone? per lister invocation
SFN_PER_POLL = 3  # AwaitCompletion timeout -> CheckProgress -> AllBatchesDone?
BATCH_OPS_INVENTORY = 0.0025 / 1e6  # an S3 Inventory report as Batch Operations' manifest, per object listed


@dataclass(frozen=True)
class Sizing:
    memory_mb: int
    objects_per_s: float
    gb_seconds: float
    dollars: float


def cpu_rate(cpu_ms_per_object: float, memory_mb: int) -> float:
    """Objects/s a worker's CPU share allows."""
    return (memory_mb / MB_PER_VCPU) * 1000 / cpu_ms_per_object


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


def worker_memory_for(cpu_ms_per_object: float, threads: int, sizes: tuple[int, ...] = (512, 768, 1024, 1280, 1769, 2048, 3008)) -> int:
    """The stack's worker_memory_mb: the largest size whose worker is still CPU-bound with `threads` (the cheapest per
    object) among those whose memory holds that many threads' bodies; the smallest of those when none is CPU-bound."""
    fits = [m for m in sizes if floor_threads(m) >= threads]
    bound = [m for m in fits if cpu_rate(cpu_ms_per_object, m) <= threads / LATENCY_S]
    return max(bound) if bound else min(fits)


def worker_sizing(cpu_ms_per_object: float, memory_mb: int, threads: int = THREADS) -> Sizing:
    """A worker is bound by its CPU share or by threads/latency, whichever is lower."""
    cpu_bound = cpu_rate(cpu_ms_per_object, memory_mb)
    latency_bound = threads / LATENCY_S
    rate = min(cpu_bound, latency_bound)
    gb_s = 1e6 / rate * memory_mb / 1024
    return Sizing(memory_mb, rate, gb_s, gb_s * LAMBDA_GB_S)


def per_million(cpu_ms_per_object: float, memory_mb: int, workers: int, threads: int = THREADS) -> dict[str, float]:
    messages = 1e6 / KEYS_PER_MESSAGE
    sizing = worker_sizing(cpu_ms_per_object, memory_mb, threads)
    seconds = 1e6 / (sizing.objects_per_s * workers)
    invocations = messages / MESSAGES_PER_INVOCATION
    sqs_chunks = -(-MESSAGE_KB // 64)
    return {
        "Lambda compute (workers)": sizing.dollars,
        "Lambda requests": (invocations + 10) * LAMBDA_REQUEST,
        "SQS (send, receive, delete)": (messages * sqs_chunks * 2 + invocations) * SQS_REQUEST,
        "DynamoDB (batch transactions, checkpoints)": (messages * 4 + messages) * DDB_WRU + messages * DDB_RRU,
        "Step Functions transitions": (12 + 3 * seconds / POLL_S) * SFN_TRANSITION,
    }


def lister_keys_per_s(memory_mb: int = LISTER_MB) -> float:
    """One lister: LIST, then send and checkpoint, one page after the other, its CPU at the share its memory buys."""
    page_s = LIST_PAGE_S + LISTER_IO_S + LISTER_CPU_MS_PER_PAGE / 1000 / (memory_mb / MB_PER_VCPU)
    return LIST_PAGE_KEYS / page_s


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
    costs: dict[str, float]

    @property
    def total(self) -> float:
        return sum(self.costs.values())


def at_scale(objects: float, shards: int, concurrency: int, prefixes: int, cpu_ms_per_object: float) -> AtScale:
    """Time and cost of copying `objects` small objects with the stack: listing, workers and S3 as three rates in a row.

    Listing and copying overlap (work starts with the first batch), so the job runs at the
    lowest rate, plus one page for the pipeline to fill. Workers bill wall time: when S3 or
    listing is slower than they are, an S3-bound worker waits out SlowDown (paid), while a
    listing-bound one is simply invoked less often (an empty queue costs no invocation).
    """
    listing = shards * lister_keys_per_s()
    worker = worker_sizing(cpu_ms_per_object, WORKER_MB, worker_threads_for(cpu_ms_per_object)).objects_per_s
    workers = concurrency * worker
    s3 = prefixes * S3_PUT_PER_PREFIX
    per_s, bound = min((listing, "listing"), (workers, "workers"), (s3, "S3 PUT limit"))
    seconds = objects / per_s + LIST_PAGE_S
    list_seconds = objects / listing
    messages = objects / KEYS_PER_MESSAGE
    pages = objects / LIST_PAGE_KEYS
    # Throttled by S3, every worker the queue's backlog invokes waits out SlowDown, billed; fed by a slower
    # listing, only as many run as the messages keep busy.
    busy_workers = concurrency if bound == "S3 PUT limit" else per_s / worker
    worker_gb_s = busy_workers * seconds * WORKER_MB / 1024
    lister_calls = shards * -(-list_seconds / shards // LISTER_RUN_S) if shards else 0.0
    lister_gb_s = list_seconds * LISTER_MB / 1024  # each lister pages its share: shards x (list_seconds / shards)
    invocations = messages / MESSAGES_PER_INVOCATION
    sqs_chunks = -(-MESSAGE_KB // 64)
    costs = {
        "Lambda workers (GB-s)": worker_gb_s * LAMBDA_GB_S,
        "Lambda listers (GB-s)": lister_gb_s * LAMBDA_GB_S,
        "Lambda requests": (invocations + lister_calls + 10) * LAMBDA_REQUEST,
        "SQS (send, receive, delete)": (messages * sqs_chunks * 2 + invocations) * SQS_REQUEST,
        "DynamoDB (TransactWriteItems per batch, checkpoint per page)": (messages * 4 + pages) * DDB_WRU + messages * DDB_RRU,
        "Step Functions transitions": (SFN_FIXED + 2 * shards + SFN_PER_LISTER_CALL * lister_calls + SFN_PER_POLL * seconds / POLL_SECONDS)
        * SFN_TRANSITION,
    }
    return AtScale(objects, shards, concurrency, prefixes, listing, workers, s3, per_s, bound, seconds, costs)


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
    (99, 1000, 1000),
]


def render_at_scale(cpu_ms: float) -> list[str]:
    worker = worker_sizing(cpu_ms, WORKER_MB, worker_threads_for(cpu_ms)).objects_per_s
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
        "  S3 serves 5,500 LIST/s per prefix; K listers send about K x 6 per second.",
        f"- **workers**: MaximumConcurrency x {worker:,.0f} objects/s (a {WORKER_MB:,} MB worker, CPU-bound, from the table above).",
        f"- **S3**: {S3_PUT_PER_PREFIX:,} COPY/s (PUT class) per partitioned prefix of the destination. A new prefix starts as one",
        "  partition; S3 adds partitions under sustained load (over minutes to hours, not on request), and only where keys",
        "  differ early enough to be split. The rows show 1, 10 and 100 partitioned prefixes.",
        "",
        "Costs: workers bill wall time, so a worker slowed by S3 (SlowDown, or `adaptive_rate`) costs GB-seconds while it",
        "waits; an empty queue invokes no worker. SQS: each 1,000-key message (~100 KB) bills 2 requests to send and 2 to",
        "receive, plus one DeleteMessageBatch per invocation of 5 messages. DynamoDB on demand: one TransactWriteItems per",
        "batch of 1,000 (marker Put + counter Update: 2 items x 2 WRU) plus one GetItem, and one checkpoint UpdateItem per",
        f"lister page. Step Functions: {SFN_FIXED} fixed transitions, 2 per shard, {SFN_PER_LISTER_CALL} per lister invocation (one per {LISTER_RUN_S:.0f} s),",
        f"{SFN_PER_POLL} per {POLL_SECONDS} s of waiting for completion. S3 Batch Operations: $0.25 per job + $1.00 per million objects,",
        "plus an S3 Inventory report as its manifest ($0.0025 per million objects listed); its throughput is not published",
        "and it meets the same PUT limit, so only its fees are compared. S3's own request charges (a COPY per object, $5.00",
        "per million) are the same with either tool and are shown apart.",
        "",
        f"### Listing alone: {lister:,.0f} keys/s per lister",
        "",
        "| shards K | keys/s | 100 M listed in | 1 B listed in |",
        "|---:|---:|---:|---:|",
    ]
    for k in (1, 4, 16, 32, 99):
        rate = k * lister
        lines.append(f"| {k} | {rate:,.0f} | {_duration(1e8 / rate)} | {_duration(1e9 / rate)} |")
    lines += [
        "",
        "### The job: copy, 1 KiB objects",
        "",
        "| objects | K | MaximumConcurrency | prefixes | listing /s | workers /s | S3 /s | bound by | time | s3bulk $ | of which workers | S3 requests $ | Batch Ops fees $ |",
        "|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for objects in (1e8, 1e9):
        for k, conc, prefixes in SCALE_ROWS:
            r = at_scale(objects, k, conc, prefixes, cpu_ms)
            lines.append(
                f"| {objects / 1e6:,.0f} M | {k} | {conc:,} | {prefixes:,} | {r.listing_per_s:,.0f} | {r.workers_per_s:,.0f} | {r.s3_per_s:,.0f} | "
                f"{r.bound} | {_duration(r.seconds)} | {r.total:,.2f} | {r.costs['Lambda workers (GB-s)']:,.2f} | {s3_requests(objects):,.0f} | "
                f"{batch_operations(objects):,.2f} |"
            )
    k16 = at_scale(1e8, 16, 50, 1, cpu_ms)
    k1 = at_scale(1e8, 1, 200, 100, cpu_ms)
    lean = at_scale(1e8, 16, 4, 1, cpu_ms)
    lines += [
        "",
        f"**What limits what.** With K = 16 the listers send {k16.listing_per_s:,.0f} keys/s, so at 100 M objects listing is not the",
        f"bottleneck until the destination spans {k16.listing_per_s / S3_PUT_PER_PREFIX:.0f}+ partitioned prefixes: S3's PUT limit is. One prefix",
        f"takes {_duration(k16.seconds)} for 100 M and {_duration(at_scale(1e9, 16, 50, 1, cpu_ms).seconds)} for 1 B whatever the tool (SQS keeps messages 14 days).",
        f"With one shard (K = 1: `list_shards=1`, or a source of one page) listing ({k1.listing_per_s:,.0f}/s)",
        f"becomes the bound as soon as S3 has two partitioned prefixes: {_duration(k1.seconds)} for 100 M however many workers run.",
        "Workers are the bound in none of these rows: 50 of them copy 15 prefixes' worth of PUTs. Past S3's limit more",
        f"concurrency only costs: 100 M on one prefix costs ${k16.costs['Lambda workers (GB-s)']:,.2f} of workers at MaximumConcurrency 50 and",
        f"${lean.costs['Lambda workers (GB-s)']:,.2f} at 4 (= 3,500 / {worker:,.0f}), in the same time. Set MaximumConcurrency near",
        "prefixes x 3,500 / (objects/s per worker); a worker slowed by SlowDown or `adaptive_rate` is billed while it waits.",
        "",
        f"Against Batch Operations: its fees for 100 M objects are ${batch_operations(1e8):,.2f} and for 1 B ${batch_operations(1e9):,.2f}; s3bulk's",
        f"own cost is ${k16.total:,.2f} / ${at_scale(1e9, 16, 50, 1, cpu_ms).total:,.2f} at the default concurrency on one prefix, and",
        f"${at_scale(1e8, 16, 200, 100, cpu_ms).total:,.2f} / ${at_scale(1e9, 16, 200, 100, cpu_ms).total:,.2f} where S3 is not the bound. Both pay S3's",
        f"${s3_requests(1e8):,.0f} / ${s3_requests(1e9):,.0f} of requests, which dwarf either.",
    ]
    r = at_scale(1e8, 16, 50, 10, cpu_ms)
    lines += [
        "",
        "One row in full (100 M objects, K = 16, MaximumConcurrency 50, 10 prefixes):",
        "",
        "| item | $ |",
        "|---|---:|",
        *(f"| {k} | {v:,.2f} |" for k, v in r.costs.items()),
        f"| **s3bulk, total** | **{r.total:,.2f}** |",
        f"| S3 Batch Operations' fees (job + per object + inventory) | {batch_operations(1e8):,.2f} |",
        f"| S3 requests, either tool | {s3_requests(1e8):,.2f} |",
        "",
    ]
    return lines


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


def render(cpu_ms: float, source: str) -> str:
    threads = worker_threads_for(cpu_ms, WORKER_MB)
    memory = worker_memory_for(cpu_ms, threads)
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
        "The stack's defaults follow (`worker_threads_for`, `worker_memory_for`; infra/config.py holds them and a unit test checks",
        "them against this model and docs/benchmarks.json):",
        f"**{threads} threads**: the smallest power of two that keeps enough requests in flight for a {WORKER_MB:,} MB worker's",
        f"CPU share ({cpu_rate(cpu_ms, WORKER_MB):,.0f} objects/s x {LATENCY_S * 1000:.0f} ms = {cpu_rate(cpu_ms, WORKER_MB) * LATENCY_S:.0f} in flight),",
        f"capped at what large-body jobs (relay, process) fit: {BODY_MB_PER_THREAD} MiB per thread beyond the body budget of a quarter",
        f"of the memory, {floor_threads(WORKER_MB)} threads at {WORKER_MB:,} MB. And **{memory:,} MB**: the largest size still CPU-bound at",
        "that many threads among those that hold their bodies (the smallest of those when none is CPU-bound).",
        *(
            [
                f"At {cpu_ms:.2f} ms per object the cap binds: a {WORKER_MB:,} MB worker copying small objects is latency-bound",
                f"({threads / LATENCY_S:,.0f} objects/s, where its CPU would allow {cpu_rate(cpu_ms, WORKER_MB):,.0f}); "
                "a thread count per kind of job (copies hold no bodies) is what would use the rest.",
            ]
            if worker_sizing(cpu_ms, WORKER_MB, threads).objects_per_s < cpu_rate(cpu_ms, WORKER_MB) - 1e-6
            else []
        ),
        "**MaximumConcurrency 50** caps a job near "
        f"{50 * worker_sizing(cpu_ms, 1024, threads).objects_per_s:,.0f} objects/s. S3 sustains about 3,500 writes/s per prefix, so a job",
        f"reaches that cap only when its keys span {50 * worker_sizing(cpu_ms, 1024, threads).objects_per_s / 3500:.0f}+ prefixes; "
        "a narrower job meets S3's limit first",
        "(SlowDown, retried with backoff). 50 also leaves most of an account's default 1,000 concurrent executions free.",
        "",
        "## Per million objects (copy), 1,024 MB workers, 50 in parallel",
        "",
        "| item | $ |",
        "|---|---:|",
    ]
    lines += [f"| {k} | {v:.4f} |" for k, v in costs.items()]
    lines += [
        f"| **s3bulk orchestration, total** | **{total:.4f}** |",
        f"| S3 Batch Operations: $1.00 per million objects + $0.25 per job | {BATCH_OPS_PER_OBJECT * 1e6 + BATCH_OPS_JOB:.2f} |",
        "",
        f"s3bulk's own cost is about **{(BATCH_OPS_PER_OBJECT * 1e6 + BATCH_OPS_JOB) / total:,.0f}x lower** than Batch Operations' fees for the same million objects.",
        "",
        "## S3 request charges (the same with either tool)",
        "",
        "| operation | S3 requests per million objects | $ |",
        "|---|---|---:|",
        f"| copy | 1,000,000 COPY + 1,000 LIST | {1e6 * S3_COPY + 1000 * S3_LIST:.2f} |",
        f"| move | 1,000,000 COPY + 1,000 DeleteObjects + 1,000 LIST | {1e6 * S3_COPY + 2000 * S3_LIST:.2f} |",
        f"| delete | 1,000 DeleteObjects + 1,000 LIST (DELETE itself is free) | {2000 * S3_LIST:.2f} |",
        "",
        "Objects above the multipart threshold add HEAD, GetObjectTagging, Create/Complete and one UploadPartCopy per part.",
    ]
    lines += RESTORES.splitlines()
    lines += render_at_scale(cpu_ms)
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
