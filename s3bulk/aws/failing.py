"""When a worker weighs a failing job's counts for the failure breaker: at most every few seconds per container.

The breaker weighs the whole job's counts. A batch with a failure in it is common at scale (0.1% failed objects puts
one in most 1,000-key batches: archived sources, objects deleted mid-job, a bucket policy on some prefixes), and reading
every count after each one cost a Query of every listing shard on the job's own partition key (about 133 read units
a batch at 1,000 shards, which capped such a job near 22 batches a second). So a container weighs a job at most every
WEIGH_EVERY_S, reading its job item and counter shards (a partition key each), and re-reads the listing shards' sums,
which only a lister's checkpoint changes, at most every LISTING_TTL_S. A trip is at most that much later; the job's
objects all count once either way.
"""

from __future__ import annotations

from collections.abc import Callable

from s3bulk.aws.ledger import DynamoLedger
from s3bulk.aws.ledger.counting import Progress

WEIGH_EVERY_S = 5.0
LISTING_TTL_S = 60.0


class FailureWatch:
    """One per worker container: whether a failing job is due to be weighed, and the listing sums it keeps."""

    def __init__(self, ledger: DynamoLedger, clock: Callable[[], float]) -> None:
        self.ledger = ledger
        self.clock = clock
        self._weighed: dict[str, float] = {}
        self._listing: dict[str, tuple[float, dict[str, int]]] = {}

    def counts(self, job_id: str) -> Progress | None:
        """The job's counts to weigh now, or None when this container weighed it less than WEIGH_EVERY_S ago."""
        now = self.clock()
        if now - self._weighed.get(job_id, -WEIGH_EVERY_S) < WEIGH_EVERY_S:
            return None
        self._weighed[job_id] = now
        read_at, sums = self._listing.get(job_id, (-LISTING_TTL_S, {}))
        fresh = now - read_at < LISTING_TTL_S
        progress, sums = self.ledger.weighed(job_id, sums if fresh else None)
        if not fresh:
            self._listing[job_id] = (now, sums)
        return progress
