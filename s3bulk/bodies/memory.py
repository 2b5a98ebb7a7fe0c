"""How much worker memory a job needs, and the body budget a worker of a given size can afford: one rule for both.

Relay copies and process jobs stream object bytes through the worker; every other
operation has S3 do the work and holds no bodies. A streaming worker holds the
runtime's own floor, its MemoryBudget (budget.py: prefetches and parts beyond the
first, shared), and per thread one range, one part and one write buffer that the
budget does not cap. The worker sizes its budget from what is left of its memory
(`body_budget_mb`), and Validate refuses a job whose worker could not fit even the
least budget (`check_worker_memory`), so a job at the deployment's size is never
ended by Lambda for its memory. What the user's own code allocates is beyond it.
"""

from __future__ import annotations

from dataclasses import dataclass

from s3bulk.bodies.reader import PREFETCH, RANGE_SIZE
from s3bulk.bodies.writer import PART_SIZE
from s3bulk.job import Job, JobError, relays

MiB = 1024 * 1024
# The worker before any batch: functions/worker/handler.py's imports and service() (every client built) peaked at
# 113 MiB (VmHWM, 3 runs: 112.6-112.9, Python 3.11, x86_64); 128 leaves room for Lambda's runtime client and the
# pool threads' stacks and connections. The CLI's floor with one listing is 77 MiB (docs/relay.md, bench/relay_memory.py).
RUNTIME_MB = 128
# Per streaming thread, outside the budget: one range (reader.RANGE_SIZE), one part and one write buffer
# (writer.PART_SIZE each): 24 MiB, the floor docs/process.md states and bench/cost_model.py sizes threads with.
BODY_MB_PER_THREAD = (RANGE_SIZE + 2 * PART_SIZE) // MiB
# The least budget a worker streams with: one reader's whole prefetch window at the defaults (8 MiB x 4, the
# frontier docs/benchmarks-reader.md measured), so a lone large object still reads at the measured rate.
MIN_BODY_BUDGET_MB = RANGE_SIZE * PREFETCH // MiB
# The most: a quarter of the function's memory (docs/process.md), as the worker had before this rule.
BODY_BUDGET_SHARE = 0.25


@dataclass(frozen=True, slots=True)
class WorkerSize:
    """A deployment's worker: Lambda memory and threads (infra/config.py's defaults; a unit test keeps them equal)."""

    memory_mb: int = 1024
    threads: int = 32


DEFAULT_WORKER = WorkerSize()


def streams_bodies(job: Job) -> bool:
    """Relay copies and moves, and process jobs whose code runs in the worker (a batchops_lambda runs in its own)."""
    if job.operation == "process":
        return job.process is not None and job.process.batchops_lambda is None
    return relays(job)


def memory_needed_mb(job: Job, threads: int, body_budget_mb: int = MIN_BODY_BUDGET_MB) -> int:
    """The worker memory (MB) `job` needs with `threads` threads: the runtime's, plus for a streaming job the body
    budget and each thread's range, part and write buffer."""
    if not streams_bodies(job):
        return RUNTIME_MB
    return RUNTIME_MB + body_budget_mb + threads * BODY_MB_PER_THREAD


def streaming_threads(memory_mb: int) -> int:
    """The most threads a worker of `memory_mb` can stream bodies with (at the least budget)."""
    return max(0, (memory_mb - RUNTIME_MB - MIN_BODY_BUDGET_MB) // BODY_MB_PER_THREAD)


def body_budget_mb(memory_mb: int, threads: int) -> int:
    """The worker's MemoryBudget: what its memory leaves after the runtime and every thread's own buffers, at most a
    quarter of it, never under the least (a worker left with less has its streaming jobs refused at Validate)."""
    left = memory_mb - RUNTIME_MB - threads * BODY_MB_PER_THREAD
    return max(MIN_BODY_BUDGET_MB, min(int(memory_mb * BODY_BUDGET_SHARE), left))


def check_worker_memory(job: Job, worker: WorkerSize) -> None:
    """Raise JobError (one line: the field, what it needs, the fix) when `job` cannot stream in `worker`'s memory."""
    need = memory_needed_mb(job, worker.threads)
    if not streams_bodies(job) or need <= worker.memory_mb:
        return  # a job holding no bodies needs only the runtime's floor, which is the deployment's to give
    if job.operation == "process":
        field, what = "job.process", "a process job's code runs in the worker and streams each object through it"
    else:
        field, what = "job.options.transfer", f"this {job.operation} relays each object through the worker (GET, then PUT)"
    fit = streaming_threads(worker.memory_mb)
    fewer = f" (or worker_threads to at most {fit})" if fit else ""
    raise JobError(
        f"{field}: {what}, which with {worker.threads} worker threads needs about {need} MB of worker memory and the "
        f"deployment gives {worker.memory_mb}; set worker_memory_mb to at least {need}{fewer} in deploy.json and deploy again"
    )
