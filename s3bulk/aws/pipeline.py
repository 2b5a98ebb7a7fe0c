"""The distributed job's steps: validate, list a bounded slice, work one message, finalize.

Each step takes its clients and a `time_left()` callable and knows nothing about
Lambda; the handlers in functions/ adapt a Lambda context to these calls.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from itertools import islice, takewhile
from typing import Any

from s3bulk.aws.allowlist import AllowList
from s3bulk.aws.assembly import assemble
from s3bulk.aws.completion import Completion
from s3bulk.aws.intents import PageIntent
from s3bulk.aws.ledger import MAX_LIST_SHARDS, BatchCounts, DynamoLedger, ListShard, initial_item
from s3bulk.aws.messages import BatchMessage, pack
from s3bulk.aws.queue import QueueSender, Returns
from s3bulk.aws.reportbucket import ReportBucket
from s3bulk.bodies.budget import MemoryBudget
from s3bulk.errors import error_code, error_message
from s3bulk.job import Destination, Job, JobError, Process, Source, new_job_id, parse_job, request_options
from s3bulk.keys import JsonlKeyLog, KeyRecord
from s3bulk.listing import Shard, iter_objects, list_shard_page, lister, plan_ranges
from s3bulk.manifest import MIN_CSV_SHARD_BYTES, ManifestReader, Row
from s3bulk.ops.batch import BatchRunner, Item, part_pool
from s3bulk.ops.executor import BoundedExecutor
from s3bulk.ops.extraneous import Extraneous, empty_source_message, first_selected
from s3bulk.ops.process import ProcessCode, Processor, make_processor
from s3bulk.ops.versions import check_versioned
from s3bulk.outage import EndpointUnreachable
from s3bulk.report import Counts, Tally, job_status, over_tolerance, summarize
from s3bulk.s3.ratecontrol import RateControl
from s3bulk.selection import KeyMapper, Selector, key_mapper
from s3bulk.store import UNKNOWN_SIZE, ObjectInfo, ObjectStore
from s3bulk.sync import decide, join

TimeLeft = Callable[[], float]

# The lister starts no new page with less than this left; a page is one LIST plus
# at most a few SendMessageBatch calls, seconds at worst.
LIST_MARGIN_S = 30.0
# The worker submits no new object with less than this left, so copies already
# running (each bounded by the client's read timeout) finish before the Lambda does.
WORK_MARGIN_S = 150.0
# How long the execution waits for the completion token before it asks the ledger itself (a safety net).
DEFAULT_POLL_SECONDS = 600
# Manifest rows the lister reads per checkpoint, as many as a ListObjectsV2 page holds.
MANIFEST_PAGE = 1000
# A record handed back comes back this soon: at once-ish when the worker only ran out of time
# (another container has it), with backoff when the batch raised (a transient fault, or a
# poison message on its way to the DLQ). Never the hour-long visibility timeout.
RETURN_NOT_STARTED_S = 2
RETURN_BASE_S = 10
RETURN_CAP_S = 300
# A stopped job's batches wait for it to be submitted again, coming back this often (not every few seconds for days),
# for at most STOPPED_KEEP_S: after that they are cancelled (reported JobStopped) so a forgotten job costs nothing more.
RETURN_STOPPED_S = 900
STOPPED_KEEP_S = 7 * 86400
# How long workers hand batches back for an endpoint that gives no answer before the job is stopped (resumable).
OUTAGE_STOP_S = 900.0
# The worker function's timeout (infra/config.py worker_timeout_s), and the longest outage window a job may ask of
# the stack: a call kept going through an outage must give up with time to hand its batch back.
WORKER_TIME_S = 600
STACK_MAX_OUTAGE_WINDOW = 300.0


def return_delay(attempts: int, *, not_started: bool) -> int:
    """Seconds until a returned record is visible again, by how often it has been received."""
    if not_started:
        return RETURN_NOT_STARTED_S
    return int(min(RETURN_CAP_S, RETURN_BASE_S * 2 ** max(0, attempts - 1)))


# -- validate -------------------------------------------------------------------------------------
def validate(
    event: Any,
    allow: AllowList,
    poll_seconds: int = DEFAULT_POLL_SECONDS,
    execution: str | None = None,
    load_code: Callable[[Process], ProcessCode] | None = None,
) -> dict[str, Any]:
    """Parse and authorize a job event; raises JobError (one line naming the field) when it is bad.

    `execution` is the name of the execution running the job: a job without its own id
    takes one derived from it (see execution_ended). A process job's code is imported
    here too, so a function the deployment does not hold fails the job before any listing.
    """
    job = parse_job(json.dumps(event))
    if job.options.outage_seconds > STACK_MAX_OUTAGE_WINDOW:
        raise JobError(
            f"job.options.outage_seconds: a worker must learn of an outage well within its {WORKER_TIME_S} s, so the stack "
            f"takes at most {STACK_MAX_OUTAGE_WINDOW:.0f}; lower it (the stack rides out longer outages by handing batches back, "
            "up to its S3BULK_OUTAGE_STOP_S)"
        )
    if job.options.canary is not None:
        raise JobError(
            "job.options.canary: the stack does not run a canary yet; run the canary with s3bulk run --canary N, "
            "then submit the job without canary"
        )
    if job.options.max_delete is not None and job.options.delete_extraneous:
        raise JobError(
            "job.options.max_delete: on the stack a sync finds its extraneous objects while it copies, so they cannot be "
            "counted first yet; run the sync with s3bulk run (or check the count with s3bulk plan), or drop max_delete"
        )
    for side, name in ((job.source, "source"), (job.destination, "destination")):
        if side is not None and side.profile:
            raise JobError(
                f"job.{name}.profile: functions have no AWS profiles; put that side's keys in a Secrets Manager secret "
                f"and name it in job.{name}.credentials_secret"
            )
        if side is not None and side.endpoint_url and not side.credentials_secret:
            raise JobError(
                f"job.{name}.endpoint_url: another endpoint needs its own keys; store them in a Secrets Manager secret "
                f"and name it in job.{name}.credentials_secret"
            )
    allow.check(job)
    if job.process is not None and load_code is not None:
        load_code(job.process)
    job_id = new_job_id(job, execution)
    return {"job_id": job_id, "item": initial_item(job_id, job, execution=execution), "poll_seconds": poll_seconds}


# -- the two sides' stores -------------------------------------------------------------------------
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


# -- plan and list --------------------------------------------------------------------------------
# Listing shards a job is split into by default: see docs/benchmarks-listing.md ("the stack").
DEFAULT_LIST_SHARDS = 16


def plan_step(
    job_id: str,
    *,
    ledger: DynamoLedger,
    store: ObjectStore,
    allow: AllowList,
    target: int = DEFAULT_LIST_SHARDS,
    csv_shard_bytes: int = MIN_CSV_SHARD_BYTES,
    open_side: OpenSide | None = None,
) -> list[int]:
    """Split the source into key ranges listed in parallel, once per job (a retried plan returns the first one).

    listing.plan_ranges cuts it with the engine's key-space probing (one-key probes find
    where keys share a prefix and cut at the next character), so nested and flat keyspaces
    both split. Any cut points cover the keys exactly once (each range starts after the
    previous one ends); the probes only decide balance. An inventory manifest splits by
    data file, a plain CSV one by byte ranges (ManifestReader.plan_ranges).
    """
    rec = ledger.load(job_id)
    if rec.shards is not None:
        return list(range(rec.shards))
    job = rec.job
    allow.check(job)
    store, dst_store = job_stores(job, store, open_side)
    src = job.source
    if job.operation == "copy" and src.versions == "all" and job.destination is not None:
        check_versioned(dst_store, job.destination.bucket)  # before any version is copied
    if job.options.delete_extraneous and not job.options.allow_empty_source and first_selected(job, store) is None:
        # The listers delete extraneous objects page by page: a source that selects nothing (a typo in its prefix)
        # would have them delete the whole destination prefix. The job fails here, before any lister runs.
        raise JobError(empty_source_message(job))
    target = min(target, MAX_LIST_SHARDS)
    if src.manifest is not None:
        ranges = ManifestReader(store, src).plan_ranges(target, csv_shard_bytes)
    else:
        ranges = [(sh.after, sh.upto) for sh in plan_ranges(lister(store, src), src.bucket, src.prefix, target)]
    return list(range(ledger.plan(job_id, ranges)))


@dataclass(frozen=True, slots=True)
class ListOutcome:
    job_id: str
    shard: int
    done: bool
    pages: int


def list_step(
    job_id: str,
    shard: int,
    *,
    ledger: DynamoLedger,
    store: ObjectStore,
    sender: QueueSender,
    allow: AllowList,
    time_left: TimeLeft,
    reports: ReportBucket,
    margin: float = LIST_MARGIN_S,
    open_side: OpenSide | None = None,
) -> ListOutcome:
    """List one shard's pages from its cursor until it is done or time is short, checkpointing after each page.

    A page's intent (aws/intents.py) is stored before its messages are sent; a death
    between the send and the checkpoint is redone from the intent, never by listing
    the page again. A page that runs past the shard's end keeps only the shard's keys,
    and ends the shard.
    """
    job = ledger.spec(job_id)
    allow.check(job)
    store, dst_store = job_stores(job, store, open_side)
    state = ledger.list_shard(job_id, shard)
    src = job.source
    if src.manifest is not None:
        return _list_manifest(
            job_id, job, state, ledger=ledger, store=store, sender=sender, reports=reports, time_left=time_left, margin=margin
        )
    selector = Selector(src, job.operation)
    mapper = key_mapper(job)
    syncing = mapper is not None and (job.options.if_exists != "overwrite" or job.options.delete_extraneous)
    state, pages = _redo_intent(job_id, state, ledger=ledger, sender=sender, reports=reports)
    while not state.done and time_left() > margin:
        page_no, last_key = state.page, state.last_key if state.page else (state.after or None)
        page = list_shard_page(lister(store, src), src.bucket, src.prefix, Shard(state.after, state.upto), state.cursor)
        objs, last = page.objects, page.done
        listed = [(o, selector.matches(o)) for o in objs]
        selected = [o for o, chosen in listed if chosen]
        todo, skipped, extraneous, failed = selected, 0, 0, 0
        rechecks: dict[str, bool] = {}
        part = f"{shard:04d}-{page_no:09d}"
        if syncing and mapper is not None and (objs or last):
            todo, rechecks, kept, extraneous, failures = _sync_page(dst_store, job, mapper, selector, listed, last_key, last, state.upto)
            skipped, failed = len(kept), len(failures)
            if kept:
                _put_key_lines(reports, job_id, job, f"{part}-skipped", kept)
            if failures:
                reports.put_failures(job_id, f"{part}-extraneous", failures)
        borrowed = _hold_to_count(ledger, job, job_id, state, len(todo))
        messages = [] if job.options.dry_run else list(pack(job_id, part, todo, job.options.batch_size, rechecks=rechecks))
        intent = PageIntent.of(
            messages,
            shard=shard,
            page=page_no,
            cursor=page.next_token,
            done=last,
            last_key=objs[-1].key if objs else last_key,
            scanned=len(objs),
            listed=len(selected),
            listed_bytes=sum(o.size for o in selected),
            skipped=skipped,
            failed=failed,
            extraneous=extraneous,
            sent=len(todo),
            borrowed=borrowed,
        )
        if messages:  # a page that sends nothing can be listed again safely: no id of it is on the queue
            reports.put_intent(job_id, intent)
        sender.send(messages)
        state, recorded = _record(job_id, state, intent, len(messages), ledger=ledger)
        pages += recorded
    return ListOutcome(job_id, shard, state.done, pages)


def _record(job_id: str, state: ListShard, intent: PageIntent, batches: int, *, ledger: DynamoLedger) -> tuple[ListShard, int]:
    """Checkpoint a sent page; the shard's state after it, and 1 if this call recorded it (0 if another invocation had:
    then carry on from that invocation's checkpoint)."""
    recorded = ledger.checkpoint(
        job_id,
        state.index,
        intent.page,
        intent.cursor,
        intent.done,
        scanned=intent.scanned,
        listed=intent.listed,
        listed_bytes=intent.listed_bytes,
        skipped=intent.skipped,
        batches=batches,
        failed=intent.failed,
        extraneous=intent.extraneous,
        last_key=intent.last_key,
        sent=intent.sent,
        borrowed=intent.borrowed,
    )
    if not recorded:
        return ledger.list_shard(job_id, state.index), 0
    advanced = replace(
        state,
        page=intent.page + 1,
        cursor=intent.cursor,
        done=intent.done,
        last_key=intent.last_key,
        sent=state.sent + intent.sent,
        borrowed=state.borrowed + intent.borrowed,
    )
    return advanced, 1


def _redo_intent(
    job_id: str, state: ListShard, *, ledger: DynamoLedger, sender: QueueSender, reports: ReportBucket
) -> tuple[ListShard, int]:
    """A page an earlier invocation stored and sent (some of it) but never recorded: send exactly it again and record it."""
    if state.done:
        return state, 0
    intent = reports.intent(job_id, state.index)
    if intent is None or intent.page != state.page:
        return state, 0
    batches = intent.batches()
    sender.send(batches)
    return _record(job_id, state, intent, len(batches), ledger=ledger)


def selected_rows(rows: Iterable[Row], selector: Selector, prefix: str) -> list[ObjectInfo]:
    """A manifest page's objects the job acts on: good rows under source.prefix that the filters select."""
    return [r.obj for r in rows if r.obj is not None and not r.failed and r.obj.key.startswith(prefix) and selector.matches(r.obj)]


def past_count(state: ListShard, sending: int) -> int:
    """How many of a page's sends would take a shard past what the delete guard counted in it (aws/guard.py); 0 unguarded."""
    if state.counted is None:
        return 0
    return max(0, state.sent + sending - state.counted - state.borrowed)


def _hold_to_count(ledger: DynamoLedger, job: Job, job_id: str, state: ListShard, sending: int) -> int:
    """The delete guard's second half: sends past a shard's count (the selection grew after it) come out of the job's
    room under max_delete, shared by all shards; past that, the job stops before the batch that would pass the limit."""
    over = past_count(state, sending)
    if over == 0:
        return 0
    limit = job.options.max_delete or 0
    room = limit - ledger.guard_total(job_id)[0]
    if not ledger.borrow(job_id, over, room):
        raise JobError(
            f"job.options.max_delete: the selection grew past max_delete {limit:,} after it was counted (listing shard "
            f"{state.index} holds more than the {state.counted:,} objects it counted); the job stopped before the batch that "
            "would pass the limit"
        )
    return over


def _sync_page(
    dst_store: ObjectStore,
    job: Job,
    mapper: KeyMapper,
    selector: Selector,
    listed: list[tuple[ObjectInfo, bool]],
    after: str | None,
    last: bool,
    upto: str | None = None,
) -> tuple[list[ObjectInfo], dict[str, bool], list[KeyRecord], int, list[dict[str, str]]]:
    """Merge-join one page with the destination range it covers.

    Returns what to send, the sent keys whose skip the worker decides by checksums (with
    the answer when checksums cannot decide), the skipped objects' key-log records,
    extraneous objects deleted, and deletes that failed.

    With delete_extraneous the range starts just after the previous page's last key
    mapped, so destination keys between two pages are seen exactly once; a shard's last page
    also takes every destination key up to its shard's end (or after its own, for the last shard). Without it, only the page's own
    keys matter, so the range starts at the page's first key.
    """
    assert job.destination is not None
    opts = job.options
    if opts.delete_extraneous:
        start = mapper(after) if after is not None else None
    else:
        start = mapper(listed[0][0].key)[:-1] or None if listed else None
    existing: Iterator[ObjectInfo] = iter_objects(dst_store, job.destination.bucket, job.destination.prefix, start_after=start)
    if upto is not None:
        end = mapper(upto)
        existing = takewhile(lambda o: o.key <= end, existing)
    tally = Tally()
    try:
        deleting = Extraneous(job, dst_store, tally, selector, mapper) if opts.delete_extraneous else None
        joined = join(listed, mapper, existing, deleting.add if deleting else None, drain=last)
        todo: list[ObjectInfo] = []
        rechecks: dict[str, bool] = {}
        kept: list[KeyRecord] = []
        for j in joined:
            if not j.selected:
                continue
            d = decide(opts.if_exists, j.obj, j.existing)
            if d.skip:
                dst_etag = j.existing.etag if j.existing else ""
                kept.append(KeyRecord(j.obj.key, "skipped", j.obj.size, j.obj.etag, j.dst_key, dst_etag, attempts=0))
                continue
            todo.append(j.obj)
            if d.recheck is not None:
                rechecks[j.obj.key] = d.recheck
        if deleting is not None:
            deleting.flush()
        return todo, rechecks, kept, tally.extraneous_deleted, list(tally.failures())
    finally:
        tally.close()


def _put_key_lines(reports: ReportBucket, job_id: str, job: Job, part: str, records: list[KeyRecord]) -> None:
    """key-log lines the lister writes itself (skipped objects, bad manifest rows: no worker sees them); one part per page, so a redo overwrites it."""
    if job.options.dry_run:
        return
    with tempfile.SpooledTemporaryFile(1024 * 1024, "w+", encoding="utf-8") as spool:
        keylog = JsonlKeyLog(spool, job_id, job.operation)
        for record in records:
            keylog.write(record)
        reports.put_keys(job_id, part, spool)


def _list_manifest(
    job_id: str,
    job: Job,
    state: ListShard,
    *,
    ledger: DynamoLedger,
    store: ObjectStore,
    sender: QueueSender,
    reports: ReportBucket,
    time_left: TimeLeft,
    margin: float,
) -> ListOutcome:
    """list_step for a manifest shard (whole data files): pages of rows instead of ListObjectsV2 pages, the row position as the cursor.

    Bad rows are reported (failures and key-log parts named after the page, so a
    re-read page overwrites them) and counted as failed in the same checkpoint.
    The worker decides skip modes and unknown sizes per object, as the CLI does.
    """
    selector, prefix = Selector(job.source, job.operation), job.source.prefix
    pages = 0
    rows: Iterator[Row] | None = None
    cursor = state.cursor
    while not state.done and time_left() > margin:
        if rows is None:  # one stream per invocation (and after losing a checkpoint race): resumes at the cursor
            rows = ManifestReader(store, job.source).rows(after=state.cursor or state.after or None, upto=state.upto)
        page_no = state.page
        page = list(islice(rows, MANIFEST_PAGE))
        last = len(page) < MANIFEST_PAGE
        bad = [r for r in page if r.failed]
        objects = selected_rows(page, selector, prefix)
        part = f"{state.index:04d}-{page_no:09d}"
        if bad:
            reports.put_failures(job_id, f"{part}-rows", ({"key": r.ref, "error": r.code, "message": r.problem} for r in bad))
            records = [KeyRecord(r.ref, "failed", UNKNOWN_SIZE, attempts=0, error=r.code, message=r.problem) for r in bad]
            _put_key_lines(reports, job_id, job, f"{part}-rows", records)
        borrowed = _hold_to_count(ledger, job, job_id, state, len(objects))
        messages = [] if job.options.dry_run else list(pack(job_id, part, objects, job.options.batch_size))
        sender.send(messages)
        cursor = page[-1].pos if page else state.cursor
        recorded = ledger.checkpoint(
            job_id,
            state.index,
            page_no,
            None if last else cursor,
            last,
            scanned=len(page),
            listed=len(objects) + len(bad),
            listed_bytes=sum(max(o.size, 0) for o in objects),
            skipped=0,
            batches=len(messages),
            failed=len(bad),
            sent=len(objects),
            borrowed=borrowed,
        )
        pages += recorded
        if recorded:
            state = replace(
                state,
                page=page_no + 1,
                cursor=None if last else cursor,
                done=last,
                sent=state.sent + len(objects),
                borrowed=state.borrowed + borrowed,
            )
        else:  # another invocation got there first: resume from its cursor
            state, rows = ledger.list_shard(job_id, state.index), None
    return ListOutcome(job_id, state.index, state.done, pages)


# -- work -----------------------------------------------------------------------------------------
# How long a worker container trusts the job status it read: a stopped job's queued batches are cancelled
# within this long, for one small read per container per period (never one per batch on the job's item).
STATUS_TTL_S = 30.0
# The error code a stopped job's unworked objects are reported with.
JOB_STOPPED = "JobStopped"
# Statuses of a job stopped by an endpoint outage: its batches are kept (handed back uncounted), not cancelled.
PAUSED = frozenset({"STOPPING", "STOPPED"})


class NotStarted(RuntimeError):
    """Too little time left to start this message; it comes back untouched."""


# The code of the objects of a batch whose worker Lambda never finished it (see WorkerService.dead_lettered).
WORKER_DIED = "WorkerDied"


class WorkerTimedOut(RuntimeError):
    """Time ran out before the batch's first unfinished object could be done: nothing of it is counted, and it
    comes back whole (one object outlasting a worker's time fails with this code on the batch's last delivery)."""


class EndpointDown(RuntimeError):
    """The job's outage breaker tripped (s3bulk/outage.py), or the job was stopped by one: nothing of the batch is
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
        self.rate = rate  # the store's, so the job's adaptive_rate can switch it and share it
        self.returns = returns
        self.max_receives = max_receives
        self.clock = clock
        self.pool = BoundedExecutor(concurrency, name="s3bulk-worker")
        self.parts = part_pool()
        self._jobs: dict[str, Job] = {}
        self._status: dict[str, tuple[str, float]] = {}

    def job(self, job_id: str) -> Job:
        if job_id not in self._jobs:
            self._jobs[job_id] = self.ledger.spec(job_id)
        return self._jobs[job_id]

    def status(self, job_id: str) -> str:
        """The job's status as of at most STATUS_TTL_S ago; any other status than RUNNING is read afresh (a job may be reopened)."""
        status, at = self._status.get(job_id, ("", -STATUS_TTL_S))
        if status != "RUNNING" or self.clock() - at >= STATUS_TTL_S:
            status = self.ledger.status(job_id)
            self._status[job_id] = (status, self.clock())
        return status

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
        if time_left() < self.margin:
            raise NotStarted(f"batch {msg.batch_id}: {time_left():.0f}s left, under the {self.margin:.0f}s margin")
        job = self.job(msg.job_id)
        self.allow.check(job)
        marker = self.ledger.counted_batch(msg.job_id, msg.batch_id)
        if marker is not None:
            if "child" in marker and self.returns is not None:
                # The try that counted this batch handed its rest on; it may have ended before sending it (the
                # child's id dedupes a second copy).
                self.returns.requeue(str(marker["child"]["S"]))
            return WorkOutcome(BatchCounts(), counted=False)
        status = self.status(msg.job_id)
        if status in PAUSED:
            since = self.ledger.stopped_at(msg.job_id)
            if since is None or self.wall() - since < STOPPED_KEEP_S:
                raise EndpointDown(f"job {msg.job_id} is stopped (an endpoint stopped answering); submit it again to resume", stopped=True)
            return self._cancel(msg, status)  # never submitted again: its batches drain, reported JobStopped
        if status != "RUNNING":
            return self._cancel(msg, status)
        attempt = uuid.uuid4().hex[:12]  # this try's parts are named by it; the ledger keeps the counted one's
        mapper = key_mapper(job)
        checks = msg.rechecks()
        items = [Item(o, mapper(o.key) if mapper else "", recheck=checks.get(i)) for i, o in enumerate(msg.objects())]
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
                    self.pool,
                    self.parts,
                    keylog=keylog,
                    processor=self._processor(msg.job_id, job, store, dst_store),
                    dst_store=dst_store,
                    budget=self.budget,
                )
                run = runner.start(items, tally, keep_going=lambda: time_left() > self.margin)
                run.wait()
                if runner.outage is not None:
                    self._stop_if_lasting(msg.job_id, runner.outage)
                    raise EndpointDown(f"batch {msg.batch_id}: {runner.outage}; it comes back uncounted") from runner.outage
                rest: BatchMessage | None = None
                if not run.complete:
                    rest = self._rest(msg, items, run.untaken(), attempt)
                self.reports.put_failures(msg.job_id, msg.batch_id, tally.failures(), attempt)
                self.reports.put_keys(msg.job_id, msg.batch_id, spool, attempt)
                retries = sum(s.retries for s in stores) - retries_before
                counts = BatchCounts(tally.succeeded, tally.skipped, tally.failed, tally.bytes, retries, tally.retried)
            finally:
                tally.close()
        counted = self.ledger.finish_batch(msg.job_id, msg.batch_id, counts, attempt=attempt, child=rest.encode() if rest else "")
        if counted and rest is not None and self.returns is not None:
            self.returns.requeue(rest.encode())  # after the count: a try that ends between the two is redelivered and sends it
        if counted:
            notify_if_complete(msg.job_id, self.ledger, self.completion)
        else:  # another try of this batch was counted first: its parts, not these, are the batch's
            self.reports.discard(msg.job_id, msg.batch_id, attempt)
        if self.rate is not None and self.rate.enabled and self.rate.send_rate is not None:
            self.ledger.publish_rate(msg.job_id, self.rate.send_rate, cut=self.rate.cuts > cuts_before)
        return WorkOutcome(counts, counted)

    def _rest(self, msg: BatchMessage, items: list[Item], untaken: list[Item] | None, attempt: str) -> BatchMessage:
        """Time ran out mid-batch: what no task took goes on as a batch of its own, and what was finished is counted
        now, so a batch that needs several invocations makes progress in each instead of being redone whole."""
        if untaken is not None and len(untaken) == len(items):  # no object was started: as if too late to start
            raise NotStarted(f"batch {msg.batch_id}: time ran short before its first object")
        if untaken is None or not untaken or self.returns is None:
            raise WorkerTimedOut(
                f"batch {msg.batch_id} of {len(items)} objects: time ran out before an object could finish in the worker's "
                f"{WORKER_TIME_S} s less its {self.margin:.0f} s margin; raise worker_timeout_s (deploy.json) or lower options.batch_size"
            )
        checks = {j: it.recheck for j, it in enumerate(untaken) if it.recheck is not None}
        return msg.rest([it.obj for it in untaken], checks, attempt)

    def _stop_if_lasting(self, job_id: str, outage: EndpointUnreachable) -> None:
        """An endpoint gone for longer than `outage_stop` (this container's breaker remembers since when): stop the job.

        The one worker whose write stops it resumes the execution, which finalizes the job as stopped.
        """
        lasted = self.wall() - outage.since
        if lasted < self.outage_stop:
            return
        reason = f"{outage.outage.endpoint} gave no answer for {lasted:.0f} s: {outage.error}"
        if self.ledger.stop_for_outage(job_id, reason):
            self._status.pop(job_id, None)
            token = self.ledger.progress(job_id).token
            if token is not None and self.completion is not None:
                self.completion.send(token, job_id)

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

    def dead_letter(self, msg: BatchMessage, exc: BaseException, attempts: int) -> BatchCounts:
        """Last delivery: report every object of the batch as failed so the job can finish, then let SQS dead-letter it."""
        message = f"dead-lettered after {attempts} deliveries: {error_message(exc)}"
        return self._fail_all(msg, error_code(exc), message)[0]

    def _fail_all(self, msg: BatchMessage, code: str, message: str) -> tuple[BatchCounts, bool]:
        """Every object of the batch as failed with `code`, in the failures and counted once."""
        failures = [{"key": key, "error": code, "message": message} for key, *_ in msg.items]
        attempt = uuid.uuid4().hex[:12]
        self.reports.put_failures(msg.job_id, msg.batch_id, failures, attempt)
        counts = BatchCounts(failed=len(failures))
        counted = self.ledger.finish_batch(msg.job_id, msg.batch_id, counts, attempt=attempt)
        if counted:
            notify_if_complete(msg.job_id, self.ledger, self.completion)
        else:
            self.reports.discard(msg.job_id, msg.batch_id, attempt)
        return counts, counted


# -- completion -----------------------------------------------------------------------------------
def notify_if_complete(job_id: str, ledger: DynamoLedger, completion: Completion | None) -> bool:
    """Resume the execution if the job is complete and it is waiting; True if this call resumed it.

    The worker counting a batch and the Await step storing the token each write, then
    read the other's write (strongly consistent), so at least one of them sees both.
    """
    if completion is None:
        return False
    progress = ledger.progress(job_id)
    if not progress.complete or progress.token is None:
        return False
    return completion.send(progress.token, job_id)


def await_step(job_id: str, token: str, *, ledger: DynamoLedger, completion: Completion) -> dict[str, Any]:
    """The state machine waits on `token` until the job is complete; store it, then check, in that order."""
    ledger.await_completion(job_id, token)
    resumed = notify_if_complete(job_id, ledger, completion)
    return {"job_id": job_id, "resumed": resumed}


def progress_step(job_id: str, *, ledger: DynamoLedger) -> dict[str, Any]:
    """The safety net when no one sent the token in time: is the job complete?"""
    p = ledger.progress(job_id)
    # A job an outage stopped is finalized now (as stopped), whatever is pending.
    complete = p.complete or p.status == "STOPPING"
    return {"job_id": job_id, "complete": complete, "pending": p.pending, "listing_done": p.listing_done}


# -- finalize -------------------------------------------------------------------------------------
def finalize(
    job_id: str,
    *,
    ledger: DynamoLedger,
    reports: ReportBucket,
    error: str | None = None,
    now: Callable[[], float] = time.time,
    time_left: TimeLeft = lambda: float("inf"),
    writer: str = "finalize",
) -> dict[str, Any]:
    """Write failures.jsonl and report.json; say whether failures exceed the job's tolerance.

    failures.jsonl is assembled over as many calls as it takes (aws/assembly.py): until it
    is complete the answer is `report_done: false`, and the caller calls again. With `error`
    (a step of the execution failed for good), the report is written all the same, with what
    was counted so far and the error, and the job is marked FAILED: no execution that got
    as far as its ledger entry ends without a report.
    """
    rec = ledger.load(job_id)
    digest = assemble(reports, job_id, writer=writer, execution=rec.execution or "", counted=ledger.counted_attempts, time_left=time_left)
    if digest is None:
        return {"job_id": job_id, "report_done": False}
    rec = ledger.load(job_id)  # the counts as they are now that every failure has been read
    counts = Counts.of_counters(rec.counters)
    opts = rec.job.options
    # Stopped, not failed: workers found an endpoint gone past the bound, or the listing did (its step's error).
    stopped = rec.stop_reason is not None or (error is not None and error.startswith(f"{EndpointUnreachable.__name__}:"))
    reason = rec.stop_reason or error if stopped else error
    status = job_status(dry_run=opts.dry_run, failed=counts.failed, error=error, stopped=stopped)
    summary = summarize(
        job_id, rec.job.operation, status, counts, now() - rec.created_at, tolerated_failures=opts.tolerated_failures, error=reason
    )
    uri = reports.put_report(job_id, summary, digest)
    over = not stopped and over_tolerance(status=status, failed=counts.failed, tolerated=opts.tolerated_failures, error=error)
    ledger.set_status(job_id, "STOPPED" if stopped else "FAILED" if over else "SUCCEEDED", report=uri)
    return {
        "job_id": job_id,
        "report_done": True,
        "status": status,
        "failed": counts.failed,
        "tolerated_failures": opts.tolerated_failures,
        "over_threshold": over,
        "report": uri,
    }


# -- an execution that ended on its own terms ----------------------------------------------------
# The execution statuses whose event reaches execution_ended (the stack's EventBridge rule).
ENDED = ("FAILED", "TIMED_OUT", "ABORTED")


def job_id_of(detail: dict[str, Any]) -> str | None:
    """The job id an execution ran, from its status-change event: as Validate derived it (input and name), or None if invalid."""
    raw = detail.get("input")
    if not isinstance(raw, str):
        return None
    try:
        job = parse_job(raw)
    except JobError:
        return None  # Validate refused it: no ledger entry was made
    name = detail.get("name")
    if not job.job_id and not name:
        return None
    return new_job_id(job, str(name or ""))


def execution_ended(
    detail: dict[str, Any],
    *,
    ledger: DynamoLedger,
    reports: ReportBucket,
    now: Callable[[], float] = time.time,
    time_left: TimeLeft = lambda: float("inf"),
) -> dict[str, Any]:
    """An execution FAILED, TIMED_OUT or was ABORTED: make sure its job has a report and is no longer RUNNING.

    The state machine writes the report itself on every path it controls (Finalize, and
    ReportFailure for a step that failed for good). Some ends bypass every Catch: a user's
    StopExecution, the execution's own timeout, States.Runtime and States.DataLimitExceeded
    errors, and the 25,000-event history limit. For those, Step Functions' status-change event
    brings the execution here; the job's report is written with what was counted and the
    reason, and its queued batches are then cancelled by the workers (JobStopped). A job that
    already has its report is left alone, so this and ReportFailure may both run (each assembles
    its own failures.jsonl). `report_done: false` means call again with the same event.
    """
    status = str(detail.get("status", ""))
    job_id = job_id_of(detail)
    if status not in ENDED or job_id is None:
        return {"job_id": job_id, "finalized": False, "reason": f"nothing to report for a {status or 'malformed'} event"}
    try:
        rec = ledger.load(job_id)
    except KeyError:
        return {"job_id": job_id, "finalized": False, "reason": "the execution ended before it made a ledger entry"}
    if rec.execution and detail.get("name") and rec.execution != detail["name"]:
        # A submission refused because the job runs (or ran with another spec), or an older execution whose end
        # arrives after the job was resumed: neither is the job's current execution.
        return {"job_id": job_id, "finalized": False, "reason": f"not the job's current execution ({rec.execution})"}
    if rec.report is not None and rec.status != "RUNNING":
        return {"job_id": job_id, "finalized": False, "reason": f"already reported ({rec.status})"}
    why = step_error({"Error": str(detail.get("error") or status), "Cause": str(detail.get("cause") or "")})
    out = finalize(job_id, ledger=ledger, reports=reports, error=f"execution {status}: {why}", now=now, time_left=time_left, writer="ended")
    return {**out, "finalized": bool(out["report_done"])}


def step_error(error: dict[str, str] | None) -> str | None:
    """One line from a Step Functions error object ({"Error", "Cause"}), the Cause cut to 500 characters."""
    if not error:
        return None
    cause = str(error.get("Cause") or "")
    with contextlib.suppress(ValueError, AttributeError):  # a Lambda's Cause is JSON: {"errorMessage", "errorType", ...}
        cause = str(json.loads(cause).get("errorMessage", cause))
    return f"{error.get('Error', 'Error')}: {cause[:500]}"
