"""What every step of the distributed job shares: its clock, the worker's time, and the two sides' stores.

Each step takes its clients and a `time_left()` callable and knows nothing about
Lambda; the handlers in functions/ adapt a Lambda context to these calls.
"""

from __future__ import annotations

from collections.abc import Callable

from s3bulk.job import Destination, Job, JobError, Source, request_options
from s3bulk.store import ObjectStore

TimeLeft = Callable[[], float]

# The worker function's timeout (infra/config.py worker_timeout_s).
WORKER_TIME_S = 600

# Builds (once) the store of a side that names another endpoint or a credentials secret.
OpenSide = Callable[[Source | Destination], ObjectStore]


def foreign(side: Source | Destination | None) -> bool:
    """Whether a side is reached with other keys or at another endpoint than the deployment's own role."""
    return side is not None and bool(side.endpoint_url or side.credentials_secret)


def job_stores(job: Job, store: ObjectStore, open_side: OpenSide | None) -> tuple[ObjectStore, ObjectStore]:
    """The source's and the destination's stores, scoped to the job's request options; the same one when neither is foreign."""
    opts = request_options(job)
    src = open_side(job.source) if open_side is not None and foreign(job.source) else store
    dst = open_side(job.destination) if open_side is not None and job.destination is not None and foreign(job.destination) else store
    if open_side is None and (foreign(job.source) or foreign(job.destination)):
        name = "source" if foreign(job.source) else "destination"
        raise JobError(f"job.{name}: this function cannot open another endpoint's or account's store; redeploy the stack")
    scoped = src.scoped(opts)
    stores = (scoped, scoped if dst is src else dst.scoped(opts))
    for s in stores:  # this job's outage window; a trip an earlier step saw stops this one at its first failure
        s.breaker.configure(job.options.outage_seconds)
        s.breaker.rearm()
    return stores
