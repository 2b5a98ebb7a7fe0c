"""Work one queued batch: run it, count it in the ledger, hand back what it could not finish."""

from __future__ import annotations

import contextlib
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from s3bulk.aws.admission import PAUSED, Admissions, NotStarted, Verdict
from s3bulk.aws.allowlist import AllowList
from s3bulk.aws.completion import Completion, notify_if_complete
from s3bulk.aws.failing import FailureWatch
from s3bulk.aws.held import send_parked
from s3bulk.aws.ledger import AtCapacity, BatchCounts, DynamoLedger, Progress, Room
from s3bulk.aws.messages import BatchMessage
from s3bulk.aws.queue import Returns
from s3bulk.aws.reportbucket import ReportBucket
from s3bulk.aws.steps import WORKER_TIME_S, OpenSide, TimeLeft, job_stores
from s3bulk.bodies.budget import MemoryBudget
from s3bulk.bodies.memory import streams_bodies
from s3bulk.breakers.failure import THROTTLING, Trip, over, ranked
from s3bulk.breakers.outage import EndpointUnreachable
from s3bulk.errors import error_code, error_message
from s3bulk.job import Job, JobError, Process
from s3bulk.ops.batch import BatchRunner
from s3bulk.ops.batchrun import Frozen
from s3bulk.ops.executor import BoundedExecutor
from s3bulk.ops.items import Item
from s3bulk.ops.pools import part_pool
from s3bulk.ops.process import ProcessCode, Processor, make_processor
from s3bulk.report import Tally
from s3bulk.report.keylog import JsonlKeyLog
from s3bulk.s3.ratecontrol import RateControl
from s3bulk.source.selection import key_mapper
from s3bulk.store import ObjectStore

# The worker submits no new object with less than this left, so copies already
# running (each bounded by the client's read timeout) finish before the Lambda does.
WORK_MARGIN_S = 150.0
# With this much left, the worker stops waiting for objects still in flight (each past the WORK_MARGIN_S it had): it
# counts what finished and hands the rest on in a child batch, instead of being ended by Lambda with nothing counted.
HARD_MARGIN_S = 10.0
# An object in flight when this many invocations had to end without it fails (WorkerTimedOut) instead of going on.
MAX_STRIKES = 2
# A record handed back comes back this soon: at once-ish when the worker only ran out of time
# (another container has it), with backoff when the batch raised (a transient fault, or a
# poison message on its way to the DLQ). Never the hour-long visibility timeout.
RETURN_NOT_STARTED_S = 2
RETURN_BASE_S = 10
RETURN_CAP_S = 300
# A stopped job's batches wait for it to be submitted again, coming back this often (not every few seconds for days),
# for at most STOPPED_KEEP_S (aws/admission.py): after that they are reported not done (JobStopped).
RETURN_STOPPED_S = 900
# How long workers hand batches back for an endpoint that gives no answer before the job is stopped (resumable).
OUTAGE_STOP_S = 900.0


def _child(msg: BatchMessage, items: list[Item], attempt: str, inflight: frozenset[int] = frozenset()) -> BatchMessage:
    """The batch's rest as a child batch: each item with its recheck answer, its paused upload and its strikes (one more
    for each item, by id(), that was in flight when its invocation had to end)."""
    checks = {j: it.recheck for j, it in enumerate(items) if it.recheck is not None}
    uploads = {j: it.upload_id for j, it in enumerate(items) if it.upload_id}
    hung = {j: it.strikes + (id(it) in inflight) for j, it in enumerate(items) if it.strikes or id(it) in inflight}
    return msg.rest([it.obj for it in items], checks, attempt, uploads, hung)


def _outlasted(strikes: int) -> tuple[str, str] | None:
    """An object too slow for the worker in MAX_STRIKES invocations fails, saying what to change."""
    if strikes < MAX_STRIKES:
        return None
    return (
        WORKER_TIMED_OUT,
        f"still in flight when {strikes} worker invocations had to end (each stops waiting {HARD_MARGIN_S:.0f} s before its "
        f"{WORKER_TIME_S} s): raise worker_timeout_s in deploy.json, then run the job again with if_exists=skip",
    )


def return_delay(attempts: int, *, not_started: bool) -> int:
    """Seconds until a returned record is visible again, by how often it has been received."""
    if not_started:
        return RETURN_NOT_STARTED_S
    return int(min(RETURN_CAP_S, RETURN_BASE_S * 2 ** max(0, attempts - 1)))


# The error code a stopped job's unworked objects are reported with.
JOB_STOPPED = "JobStopped"


class Waiting(NotStarted):
    """The job runs as many batches at once as its owner allowed (s3bulk tune JOB_ID --concurrency N) and there is no
    queue to park from (a worker built without one): the message comes back untouched."""


# The code of the objects of a batch whose worker Lambda never finished it (see WorkerService.dead_lettered).
WORKER_DIED = "WorkerDied"
# The code of an object that outlasted MAX_STRIKES invocations.
WORKER_TIMED_OUT = "WorkerTimedOut"


class WorkerTimedOut(RuntimeError):
    """Time ran out before the batch's first unfinished object could be done: nothing of it is counted, and it
    comes back whole (one object outlasting a worker's time fails with this code on the batch's last delivery)."""


class EndpointDown(RuntimeError):
    """The job's outage breaker tripped (s3bulk/breakers/outage.py), or the job was stopped by one: nothing of the batch is
    counted, and it comes back later (`stopped`: once the job is submitted again).

    Like NotStarted, never a reason to dead-letter: on its last delivery it is sent again as a new message.
    """

    def __init__(self, message: str, *, stopped: bool = False) -> None:
        super().__init__(message)
        self.stopped = stopped


class BatchReturned(RuntimeError):
    """The record goes back to the queue (a partial batch failure): it could not start, or it raised `cause`.

    `dead_lettered` holds the counts when this was its last delivery: its objects were
    reported failed and counted, and SQS moves the record to the dead-letter queue.
    """

    def __init__(self, cause: BaseException, dead_lettered: BatchCounts | None = None) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.dead_lettered = dead_lettered


@dataclass(frozen=True, slots=True)
class WorkOutcome:
    counts: BatchCounts
    counted: bool  # False: a duplicate delivery, already counted
    requeued: bool = False  # not started on its last delivery: sent again as a new message instead of dead-lettered
    cancelled: bool = False  # its job had stopped: its objects were reported failed (JobStopped), not worked
    parked: bool = False  # it waits in the report bucket (aws/held.py): for its stopped job's resume, or its capped job's room


class WorkerService:
    """One per Lambda container: pools and job specs are reused across invocations."""

    def __init__(
        self,
        *,
        ledger: DynamoLedger,
        store: ObjectStore,
        reports: ReportBucket,
        allow: AllowList,
        concurrency: int,
        margin: float = WORK_MARGIN_S,
        request_concurrency: int | None = None,
        hard_margin: float = HARD_MARGIN_S,
        rate: RateControl | None = None,
        completion: Completion | None = None,
        returns: Returns | None = None,
        max_receives: int = 5,
        clock: Callable[[], float] = time.monotonic,
        load_code: Callable[[Process], ProcessCode] | None = None,
        body_budget: int = 256 * 1024 * 1024,
        open_side: OpenSide | None = None,
        outage_stop: float = OUTAGE_STOP_S,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.ledger = ledger
        self.failures = FailureWatch(ledger, clock)
        self.open_side = open_side
        self.outage_stop = outage_stop
        self.wall = wall
        self.load_code = load_code
        self.budget = MemoryBudget(body_budget)  # one per container: every batch's readers and writers share it
        self._code: dict[str, ProcessCode] = {}
        self.completion = completion
        self.store = store
        self.reports = reports
        self.allow = allow
        self.margin = margin
        # Below the work margin whatever it is set to: an object started at the margin gets the time between the two.
        self.hard_margin = min(hard_margin, margin / 2)
        self.rate = rate  # the store's, so the job's adaptive_rate can switch it and share it
        self.returns = returns
        self.max_receives = max_receives
        self.clock = clock
        # Two object pools: streaming jobs (relay, process) hold each thread's buffers, so their threads are what the
        # memory holds (bodies/memory.py); every other job holds no bodies and takes as many as keep its CPU busy.
        self.pool = BoundedExecutor(concurrency, name="s3bulk-worker")
        self.request_pool = BoundedExecutor(request_concurrency or concurrency, name="s3bulk-request")
        self.parts = part_pool()
        # What each batch may do now (time, allow-list, duplicates, the cap, the job's status): asked once per batch.
        self.admission = Admissions(ledger, allow, margin=margin, hands_on=returns is not None, clock=clock, wall=wall)

    def job(self, job_id: str) -> Job:
        return self.admission.job(job_id)

    def handle(self, msg: BatchMessage, attempts: int, receipt: str, time_left: TimeLeft) -> WorkOutcome:
        """One SQS record, by the queue's rules: work it, or hand it back soon, or on its last delivery dead-letter it.

        A record that could not start comes back in seconds (another container has time)
        and is never dead-lettered for it: on its last delivery it is sent again as a new
        message. One whose endpoint was unreachable (the breaker tripped) comes back with
        backoff, uncounted, and is never dead-lettered for it either. One that raised comes
        back with backoff; on its last delivery its objects are reported failed and counted,
        so the job can finish, and SQS dead-letters it.
        Raises BatchReturned whenever the record must go back to the queue.
        """
        try:
            return self.work(msg, time_left)
        except (NotStarted, EndpointDown) as exc:
            if attempts >= self.max_receives and self.returns is not None:
                self.returns.requeue(msg.encode())
                return WorkOutcome(BatchCounts(), counted=False, requeued=True)
            if self.returns is not None:  # an outage backs off as an error does; a batch short of time comes back at once
                if isinstance(exc, EndpointDown) and exc.stopped:  # as often as the outage bound, at most every 15 minutes
                    delay = max(1, min(RETURN_STOPPED_S, int(self.outage_stop)))
                else:
                    delay = return_delay(attempts, not_started=isinstance(exc, NotStarted))
                self.returns.later(receipt, delay)
            raise BatchReturned(exc) from exc
        except Exception as exc:
            if attempts < self.max_receives:
                if self.returns is not None:
                    self.returns.later(receipt, return_delay(attempts, not_started=False))
                raise BatchReturned(exc) from exc
            counts = self.dead_letter(msg, exc, attempts)
            raise BatchReturned(exc, dead_lettered=counts) from exc

    def work(self, msg: BatchMessage, time_left: TimeLeft) -> WorkOutcome:
        """Ask once what the batch may do (aws/admission.py), do that, and give its lease back."""
        admitted = self.admission.admit(msg, time_left)
        if admitted.verdict is Verdict.COUNTED:
            marker = admitted.marker or {}
            if "child" in marker and self.returns is not None:
                # The try that counted this batch handed its rest on; it may have ended before sending it (the
                # child's id dedupes a second copy).
                self.returns.requeue(str(marker["child"]["S"]))
            return WorkOutcome(BatchCounts(), counted=False)
        if admitted.verdict is Verdict.AT_CAP:
            return self._wait(msg, time_left, admitted.reason)
        try:
            if admitted.verdict is Verdict.CANCELLED:  # queued work is dropped, uncounted
                if msg.resume:
                    self._abort_uploads(msg)
                return WorkOutcome(BatchCounts(), counted=False, cancelled=True)
            if admitted.verdict is Verdict.PARK:
                return self._park(msg)
            if admitted.verdict is Verdict.HAND_BACK:
                raise EndpointDown(f"job {msg.job_id} is stopped; its batches wait for s3bulk resume {msg.job_id}", stopped=True)
            if admitted.verdict is Verdict.ENDED:
                return self._cancel(msg, admitted.status)  # never submitted again: its batches drain, reported JobStopped
            return self._run(msg, admitted.job, time_left)
        finally:
            self._send_on(msg.job_id, self.admission.release(msg.job_id, admitted.lease))

    def _wait(self, msg: BatchMessage, time_left: TimeLeft, why: str) -> WorkOutcome:
        """A capped job's batch over its cap leaves the queue: parked (aws/held.py), it is sent on when a release leaves
        room. Then it asks for a hold once more: a release between the full hold and the park found nothing parked,
        and if there is room now, what is parked (this batch among them) is sent on at once."""
        if self.returns is None:
            raise Waiting(why)
        self.reports.wait(msg.job_id, msg.batch_id, msg.model_copy(update={"lease": None}).encode())
        self.ledger.park(msg.job_id, msg.batch_id)
        holder = f"{msg.batch_id}~{uuid.uuid4().hex[:8]}"
        with contextlib.suppress(AtCapacity):
            lease = self.ledger.hold(msg.job_id, holder, until=self.wall() + time_left() + 60)
            self._send_on(msg.job_id, self.ledger.release(msg.job_id, lease))
        return WorkOutcome(BatchCounts(), counted=False, parked=True)

    def _send_on(self, job_id: str, room: Room | None) -> None:
        """A capped job's hold ended: its parked batches take the room it left (one Query when none is parked)."""
        if self.returns is None or room is None or not room.capped or room.free <= 0:
            return
        try:
            send_parked(job_id, room, ledger=self.ledger, reports=self.reports, send=self.returns.requeue)
        except Exception:  # noqa: BLE001 - the batch's own outcome stands; Progress's sweep sends them on (aws/held.py)
            return

    def _run(self, msg: BatchMessage, job: Job, time_left: TimeLeft) -> WorkOutcome:
        """Run an admitted batch: the runner, its child batch of what it could not finish, its count and completion."""
        attempt = uuid.uuid4().hex[:12]  # this try's parts are named by it; the ledger keeps the counted one's
        mapper = key_mapper(job)
        checks, uploads, strikes = msg.rechecks(), msg.uploads(), msg.strikes()
        items = [
            Item(
                o,
                mapper(o.key) if mapper else "",
                recheck=checks.get(i),
                upload_id=uploads.get(i, ""),
                strikes=strikes.get(i, 0),
                problem=_outlasted(strikes.get(i, 0)),
                alone=msg.alone,
            )
            for i, o in enumerate(msg.objects())
        ]
        # An object that outlasted MAX_STRIKES invocations fails now: the upload it held open goes with it.
        if outlasted := frozenset(i for i, it in enumerate(items) if it.problem is not None and it.upload_id):
            self._abort_uploads(msg, outlasted)
        tally = Tally()
        store, dst_store = job_stores(job, self.store, self.open_side)
        stores = {id(s): s for s in (store, dst_store)}.values()
        retries_before = sum(s.retries for s in stores)
        cuts_before = self._pace(msg.job_id, job)
        # A batch's key lines (at most batch_size of them) spool to disk past 1 MiB.
        with tempfile.SpooledTemporaryFile(1024 * 1024, "w+", encoding="utf-8") as spool:
            keylog = JsonlKeyLog(spool, msg.job_id, job.operation)
            try:
                runner = BatchRunner(
                    job,
                    store,
                    self.pool_for(job),
                    self.parts,
                    keylog=keylog,
                    processor=self._processor(msg.job_id, job, store, dst_store),
                    dst_store=dst_store,
                    budget=self.budget,
                    hands_on=self.returns is not None,  # the rest of a batch goes on in a child batch, which needs the queue
                )
                window = max(0.0, time_left() - self.hard_margin)  # how long this batch may run before a freeze
                run = runner.start(items, tally, keep_going=lambda: time_left() > self.margin)
                frozen = None
                if not run.wait(window):
                    # Objects still in flight this late: count the others, hand these on. A strike goes only to an object
                    # worked for half the window or more: one taken just before (on a loaded machine, a slow request) is
                    # handed on without one, so two unlucky freezes never fail an object that was not slow itself.
                    frozen = run.freeze(strike_after=window / 2)
                    if frozen is None:  # a batch that cannot be split (a delete, a process group): Lambda ends it, the DLQ counts it
                        run.wait()
                    else:
                        self._replace_pools()
                if runner.outage is not None:
                    self._stop_if_lasting(msg.job_id, runner.outage)
                    raise EndpointDown(f"batch {msg.batch_id}: {runner.outage}; it comes back uncounted") from runner.outage
                rest: BatchMessage | None = None
                if frozen is not None:
                    rest = self._rest_of_frozen(msg, frozen, attempt)
                elif not run.complete:
                    rest = self._rest(msg, items, run.untaken(), attempt, advanced=run.paused > 0)
                self.reports.put_failures(msg.job_id, msg.batch_id, tally.failures(), attempt)
                self.reports.put_keys(msg.job_id, msg.batch_id, spool, attempt)
                retries = sum(s.retries for s in stores) - retries_before
                codes, examples = tally.codes()
                throttled = sum(n for code, n in codes.items() if code in THROTTLING)
                notes = tuple((name, n) for name, n in tally.notes.items() if n)
                counts = BatchCounts(tally.succeeded, tally.skipped, tally.failed, tally.bytes, retries, tally.retried, throttled, notes)
            finally:
                tally.close()
        counted = self.ledger.finish_batch(msg.job_id, msg.batch_id, counts, attempt=attempt, child=rest.encode() if rest else "")
        if counted and rest is not None and self.returns is not None:
            self.returns.requeue(rest.encode())  # after the count: a try that ends between the two is redelivered and sends it
        self.admission.failing(msg.job_id, counts.failed > counts.throttled)
        if counted:
            if counts.failed > counts.throttled and (weighed := self.failures.counts(msg.job_id)) is not None:
                self._break_if_failing(msg.job_id, job, weighed, codes, examples)  # aws/failing.py: at most every few s
            progress = self.ledger.progress(msg.job_id, batch_id=msg.batch_id) if self.completion is not None else None
            notify_if_complete(msg.job_id, self.ledger, self.completion, progress)
        else:  # another try of this batch was counted first: its parts, not these, are the batch's
            self.reports.discard(msg.job_id, msg.batch_id, attempt)
        if self.rate is not None and self.rate.enabled and self.rate.send_rate is not None:
            self.ledger.publish_rate(msg.job_id, self.rate.send_rate, cut=self.rate.cuts > cuts_before)
        return WorkOutcome(counts, counted)

    def _rest(
        self, msg: BatchMessage, items: list[Item], untaken: list[Item] | None, attempt: str, *, advanced: bool = False
    ) -> BatchMessage:
        """Time ran out mid-batch: what no task took goes on as a batch of its own, and what was finished is counted
        now, so a batch that needs several invocations makes progress in each instead of being redone whole. An object
        whose multipart copy paused (`advanced`) goes on in the child from its open upload."""
        if untaken is not None and len(untaken) == len(items) and not advanced:  # nothing started: as if too late to start
            raise NotStarted(f"batch {msg.batch_id}: time ran short before its first object")
        if untaken is None or not untaken or self.returns is None:
            raise WorkerTimedOut(
                f"batch {msg.batch_id} of {len(items)} objects: time ran out before an object could finish in the worker's "
                f"{WORKER_TIME_S} s less its {self.margin:.0f} s margin; raise worker_timeout_s (deploy.json) or lower options.batch_size"
            )
        return _child(msg, untaken, attempt)

    def _rest_of_frozen(self, msg: BatchMessage, frozen: Frozen, attempt: str) -> BatchMessage:
        """Objects still in flight near the invocation's end: what finished is counted now, and the rest goes on as a
        child batch, each object in flight for half the invocation or more with one more strike (MAX_STRIKES of them
        fail it), so a batch with an object that never finishes ends counted within a few invocations instead of dying
        with every delivery."""
        if self.returns is None or (not frozen.counted and not frozen.inflight and not frozen.paused):
            raise WorkerTimedOut(f"batch {msg.batch_id}: objects still in flight with {self.hard_margin:.0f} s of the worker's time left")
        return _child(msg, frozen.rest, attempt, frozenset(id(it) for it in frozen.long))

    def pool_for(self, job: Job) -> BoundedExecutor:
        """The object pool a job's batches run on: the streaming one (its threads are what the memory holds) for relay
        and process jobs, the request pool for every other."""
        return self.pool if streams_bodies(job) else self.request_pool

    def _replace_pools(self) -> None:
        """The pools' threads still working a frozen batch's objects are left to end (or to be frozen with the
        container); the next batches get threads of their own."""
        self.pool = BoundedExecutor(self.pool.max_workers, name="s3bulk-worker")
        self.request_pool = BoundedExecutor(self.request_pool.max_workers, name="s3bulk-request")
        self.parts = part_pool()

    def _break_if_failing(
        self, job_id: str, job: Job, progress: Progress, codes: dict[str, int], examples: dict[str, tuple[str, str]]
    ) -> None:
        """options.failure_breaker on the job's counts, read after this batch was counted: past it, the job stops as an
        outage stops it (batches held, listers halted, the execution resumed to report), with a line saying why."""
        c = progress.counters
        finished = c.get("succeeded", 0) + c.get("skipped", 0) + c.get("failed", 0)
        weighed = c.get("failed", 0) - c.get("throttled", 0)
        if progress.status != "RUNNING" or not over(job.options.failure_breaker, finished=finished, weighed=weighed):
            return
        top = ranked(codes)
        trip = Trip(finished, weighed, top, examples.get(top[0][0]) if top else None)
        if self.ledger.stop(job_id, trip.line(f"s3bulk resume {job_id}"), tripped=True):
            self._end_wait(job_id)

    def _end_wait(self, job_id: str) -> None:
        """The job this worker just stopped: no batch of it is admitted here, and its execution's completion wait ends.
        The token is read after the stop's write: AwaitCompletion stores its token and then reads the status, so one
        of the two sees both (completion.await_step)."""
        self.admission.forget(job_id)
        token = self.ledger.progress(job_id).token
        if token is not None and self.completion is not None:
            self.completion.send(token, job_id)

    def _stop_if_lasting(self, job_id: str, outage: EndpointUnreachable) -> None:
        """An endpoint gone for longer than `outage_stop` (this container's breaker remembers since when): stop the job.

        The one worker whose write stops it resumes the execution, which finalizes the job as stopped.
        """
        lasted = self.wall() - outage.since
        if lasted < self.outage_stop:
            return
        reason = f"{outage.outage.endpoint} gave no answer for {lasted:.0f} s: {outage.error}"
        if self.ledger.stop(job_id, reason):
            self._end_wait(job_id)

    def _processor(self, job_id: str, job: Job, store: ObjectStore, dst_store: ObjectStore) -> Processor | None:
        """A process job's code, loaded once per container and job."""
        if job.process is None:
            return None
        if job_id not in self._code:
            if self.load_code is None:
                raise JobError("job.process: this worker cannot load process code; deploy it with -c process_code=DIR")
            self._code[job_id] = self.load_code(job.process)
        return make_processor(job, job_id, self._code[job_id], store, self.parts.submit, self.budget, dst_store)

    def _pace(self, job_id: str, job: Job) -> int:
        """Start the batch at the rate all of the job's workers share, so a fresh worker does not storm a throttled prefix."""
        if self.rate is None:
            return 0
        adaptive = job.options.adaptive_rate
        self.rate.configure(adaptive, self.ledger.shared_rate(job_id) if adaptive else None)
        return self.rate.cuts

    def _park(self, msg: BatchMessage) -> WorkOutcome:
        """A stopped job's batch leaves the queue for the report bucket until its resume sends it again (aws/held.py).
        Read again after parking: a job resumed in between may have sent its parked batches before this one landed,
        so this worker sends it again itself (and empties what it parked; the batch id dedupes a second copy)."""
        self.reports.park(msg.job_id, msg.batch_id, msg.encode())
        if self.ledger.status(msg.job_id, consistent=True) not in PAUSED and self.returns is not None:
            self.returns.requeue(msg.encode())
            self.reports.empty_parked(msg.job_id, msg.batch_id)
        return WorkOutcome(BatchCounts(), counted=False, parked=True)

    def _cancel(self, msg: BatchMessage, status: str) -> WorkOutcome:
        """The job stopped (aborted, timed out, failed) while this batch was queued: report its objects, work none of them."""
        message = f"not processed: the job was {status} before this batch ran; run the job again with if_exists=skip to finish it"
        counts, counted = self._fail_all(msg, JOB_STOPPED, message)
        return WorkOutcome(counts, counted, cancelled=True)

    def dead_lettered(self, msg: BatchMessage, receives: int) -> WorkOutcome:
        """A batch SQS moved to the dead-letter queue. One that raised was counted on its last delivery; one whose
        worker Lambda ended every time (its timeout, its memory) never was, and the job would wait for it until its
        execution ran out: its objects are counted failed now, with what to change, so the job ends."""
        marker = self.ledger.counted_batch(msg.job_id, msg.batch_id)
        if marker is not None:
            if "child" in marker and self.returns is not None:  # counted, then ended before it handed its rest on
                self.returns.requeue(str(marker["child"]["S"]))
            return WorkOutcome(BatchCounts(), counted=False)
        message = (
            f"the worker Lambda working this batch was ended before it finished, on each of its {receives} deliveries: "
            "at its timeout (an object outlasting it) or at its memory; raise worker_timeout_s or worker_memory_mb "
            "(deploy.json) or lower options.batch_size, then run the job again with if_exists=skip"
        )
        counts, counted = self._fail_all(msg, WORKER_DIED, message)
        return WorkOutcome(counts, counted)

    def _abort_uploads(self, msg: BatchMessage, only: frozenset[int] | None = None) -> None:
        """Abort the batch's open multipart uploads (`only`: those of these items), so none keeps costing storage."""
        job = self.job(msg.job_id)
        if job.destination is None:
            return
        mapper = key_mapper(job)
        _, dst_store = job_stores(job, self.store, self.open_side)
        for index, upload_id in msg.resume:
            if only is not None and index not in only:
                continue
            key = msg.items[index][0]
            with contextlib.suppress(Exception):  # best effort: the failure is what the report needs
                dst_store.abort_multipart_upload(job.destination.bucket, mapper(key) if mapper else key, upload_id)

    def dead_letter(self, msg: BatchMessage, exc: BaseException, attempts: int) -> BatchCounts:
        """Last delivery: report every object of the batch as failed so the job can finish, then let SQS dead-letter it."""
        message = f"dead-lettered after {attempts} deliveries: {error_message(exc)}"
        return self._fail_all(msg, error_code(exc), message)[0]

    def _fail_all(self, msg: BatchMessage, code: str, message: str) -> tuple[BatchCounts, bool]:
        """Every object of the batch as failed with `code`, in the failures and counted once; a multipart copy an
        earlier invocation paused is aborted, so its parts stop costing storage in the destination bucket."""
        if msg.resume:
            self._abort_uploads(msg)
        failures = [{"key": key, "error": code, "message": message} for key, *_ in msg.items]
        attempt = uuid.uuid4().hex[:12]
        self.reports.put_failures(msg.job_id, msg.batch_id, failures, attempt)
        counts = BatchCounts(failed=len(failures), throttled=len(failures) if code in THROTTLING else 0)
        counted = self.ledger.finish_batch(msg.job_id, msg.batch_id, counts, attempt=attempt)
        if counted:
            notify_if_complete(msg.job_id, self.ledger, self.completion)
        else:
            self.reports.discard(msg.job_id, msg.batch_id, attempt)
        return counts, counted
