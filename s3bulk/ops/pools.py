"""How many threads and connections a batch runs on, from measurements (bench/concurrency_sweep.py, docs/architecture.md):
the object pool, the part pool beside it, and the HTTP connections both need."""

from __future__ import annotations

from s3bulk.ops.executor import BoundedExecutor

# On the fast request path 64 threads give 95% of the best copies/s both direct and at
# +20 ms (128 is ~5% faster but costs more CPU per object); 32 gives 84-87%.
# Measured with bench/concurrency_sweep.py; see docs/architecture.md. The local default;
# the Lambda worker's come from the stack (worker_request_threads, and worker_threads for relay and process).
DEFAULT_CONCURRENCY = 64
# Part copies of large objects run on their own small pool so they never wait
# behind (or deadlock with) the object tasks that submit them. 8 stays (issue 29): copying
# 1 GiB in 64 MiB parts on SeaweedFS, 12 workers gave 0.93x and 16 gave 0.72x the throughput
# of 8 (10 interleaved rounds each); s3transfer's copy() uses 10 threads.
PART_WORKERS = 8


def connections_needed(concurrency: int) -> int:
    """max_pool_connections for the client: one per object worker and per part worker."""
    return concurrency + PART_WORKERS


def part_pool() -> BoundedExecutor:
    """The pool a BatchRunner copies large objects' parts on, apart from the object pool so neither starves the other."""
    return BoundedExecutor(PART_WORKERS, max_in_flight=4 * PART_WORKERS, name="s3bulk-part")
