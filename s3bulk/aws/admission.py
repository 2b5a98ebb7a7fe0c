"""What a queued batch may do now: one decision the worker asks once per batch, before it runs anything.

The worker's rules about a batch, apart from running it: whether there is time to start, whether the job may run on
this deployment, whether the batch was counted already (a duplicate delivery), whether its job is at the cap its
owner set (then it waits), and, under the lease it then holds, what the job's status allows (run it, drop it for a
cancel, park it for a stopped job's resume, hand it back, or report it not done). The job's spec and its status
are cached per container here, so a batch costs no read of the job's item.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from s3bulk.aws.allowlist import AllowList
from s3bulk.aws.ledger import CANCELLED, CANCELLING, AtCapacity, DynamoLedger, Lease, Room
from s3bulk.aws.messages import BatchMessage
from s3bulk.aws.steps import TimeLeft
from s3bulk.job import Job

# How long a worker container trusts the job status it read: a stopped job's queued batches are cancelled
# within this long, for one small read per container per period (never one per batch on the job's item).
STATUS_TTL_S = 30.0
# Statuses of a job stopped by an endpoint outage or its owner: its batches are kept, not cancelled.
PAUSED = frozenset({"STOPPING", "STOPPED"})
# A container that found a job at its cap parks that job's next batches at once for this long: each costs its park and
# one hold asked afterwards (for room freed meanwhile), not failed holds on CAP_TRIES lease shards first.
CAP_RECHECK_S = 10.0
# A stopped job's batches wait for it to be submitted again for at most this long: after that they are reported not
# done (JobStopped), so a forgotten job costs nothing more.
STOPPED_KEEP_S = 7 * 86400


class NotStarted(RuntimeError):
    """Too little time left to start this message; it comes back untouched."""


class Verdict(enum.Enum):
    WORK = "work"  # run it, under the lease held
    COUNTED = "counted"  # a duplicate delivery: another try counted it (its `marker` may name a child to send on)
    AT_CAP = "at-cap"  # its job runs as many batches as its owner allowed: it waits for room (no lease held)
    CANCELLED = "cancelled"  # its owner cancelled the job: dropped uncounted
    PARK = "park"  # its job is stopped: it waits off the queue for the resume
    HAND_BACK = "hand-back"  # its job is stopped and it holds a paused upload: back to the queue, so a cancel can abort it
    ENDED = "ended"  # its job ended (failed, timed out, or stopped past STOPPED_KEEP_S): its objects reported not done


@dataclass(frozen=True, slots=True)
class Admission:
    """The answer for one batch: what to do, the job, and the lease it holds (released by `Admissions.release`)."""

    verdict: Verdict
    job: Job
    lease: Lease | None = None
    status: str = ""
    reason: str = ""
    marker: dict[str, Any] | None = None


class Admissions:
    """One per worker container: the decision for each batch, and the caches it is made from."""

    def __init__(
        self,
        ledger: DynamoLedger,
        allow: AllowList,
        *,
        margin: float,
        hands_on: bool,
        clock: Callable[[], float],
        wall: Callable[[], float],
    ) -> None:
        self.ledger = ledger
        self.allow = allow
        self.margin = margin
        self.hands_on = hands_on  # there is a queue to park from and send back to
        self.clock = clock
        self.wall = wall
        self._jobs: dict[str, Job] = {}
        self._status: dict[str, tuple[str, float]] = {}
        self._failing: set[str] = set()  # jobs whose last batch counted here had failures (their status is read per batch)
        self._epochs: dict[str, float] = {}  # the newest stop epoch each job's status was read after
        self._full: dict[str, float] = {}  # jobs found at their cap, and when

    def job(self, job_id: str) -> Job:
        if job_id not in self._jobs:
            self._jobs[job_id] = self.ledger.spec(job_id)
        return self._jobs[job_id]

    def status(self, job_id: str, stop_epoch: float = 0.0) -> str:
        """The job's status as of at most STATUS_TTL_S ago; any other status than RUNNING is read afresh (a job may be
        reopened), and so is that of a job whose last batch here failed objects: the failure breaker may have stopped
        it, and a failing job must not go on failing batch after batch for the cache's lifetime. A `stop_epoch` (from
        the batch's lease) newer than the last one seen means the job stopped since: read afresh, strongly consistent."""
        status, at = self._status.get(job_id, ("", -STATUS_TTL_S))
        stopped_since = stop_epoch > self._epochs.get(job_id, 0.0)
        if status != "RUNNING" or self.clock() - at >= STATUS_TTL_S or job_id in self._failing or stopped_since:
            status = self.ledger.status(job_id, consistent=stopped_since)
            self._status[job_id] = (status, self.clock())
            self._epochs[job_id] = max(stop_epoch, self._epochs.get(job_id, 0.0))
        return status

    def forget(self, job_id: str) -> None:
        """The job's status changed here (this container stopped it): the next batch reads it afresh."""
        self._status.pop(job_id, None)

    def failing(self, job_id: str, failing: bool) -> None:
        """Whether the batch just counted for the job failed objects: then its status is read for each next batch."""
        if failing:
            self._failing.add(job_id)
        else:
            self._failing.discard(job_id)

    def admit(self, msg: BatchMessage, time_left: TimeLeft) -> Admission:
        """The batch's verdict; every verdict but COUNTED and AT_CAP holds a lease, to give back with `release`.
        Raises NotStarted with too little time left, and JobError when this deployment may not run the job."""
        if time_left() < self.margin:
            raise NotStarted(f"batch {msg.batch_id}: {time_left():.0f}s left, under the {self.margin:.0f}s margin")
        job = self.job(msg.job_id)
        self.allow.check(job)
        marker = self.ledger.counted_batch(msg.job_id, msg.batch_id)
        if marker is not None:
            return Admission(Verdict.COUNTED, job, marker=marker)
        # Held while this invocation works the batch: a stopped job's report waits until no one holds one, and a job its
        # owner capped runs at most that many batches at once. A batch sent on from its parking (`lease`: where a
        # release left room) asks the ledger whatever this container saw.
        if msg.lease is None and self.clock() - self._full.get(msg.job_id, -CAP_RECHECK_S) < CAP_RECHECK_S:
            reason = f"batch {msg.batch_id}: job {msg.job_id} was at its cap (s3bulk tune) moments ago"
            return Admission(Verdict.AT_CAP, job, reason=reason)
        holder = f"{msg.batch_id}~{uuid.uuid4().hex[:8]}"  # a try of its own: a duplicate delivery holds apart
        try:
            lease = self.ledger.hold(msg.job_id, holder, until=self.wall() + time_left() + 60, first=msg.lease)
        except AtCapacity as exc:
            self._full[msg.job_id] = self.clock()
            return Admission(Verdict.AT_CAP, job, reason=str(exc))
        try:
            status = self.status(msg.job_id, lease.epoch)
            return Admission(self._by_status(msg, status), job, lease, status)
        except BaseException:  # a failed read: the lease is given back here, as no caller holds it yet
            self.ledger.release(msg.job_id, lease)
            raise

    def _by_status(self, msg: BatchMessage, status: str) -> Verdict:
        if status in (CANCELLING, CANCELLED):  # its owner cancelled it: queued work is dropped, uncounted
            return Verdict.CANCELLED
        if status in PAUSED:
            if not msg.resume and self.hands_on:
                return Verdict.PARK
            # A batch with a paused multipart copy is handed back instead: the cancel of a job never resumed aborts its upload.
            since = self.ledger.stopped_at(msg.job_id)
            return Verdict.HAND_BACK if since is None or self.wall() - since < STOPPED_KEEP_S else Verdict.ENDED
        return Verdict.WORK if status == "RUNNING" else Verdict.ENDED

    def release(self, job_id: str, lease: Lease | None) -> Room | None:
        """Give the batch's lease back; the room it leaves, for a capped job's parked batches (None: nothing was held)."""
        return self.ledger.release(job_id, lease) if lease is not None else None
