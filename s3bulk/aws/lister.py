"""Plan a job's listing shards, and list one shard's pages into batches on the queue, a step of pages per checkpoint."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from itertools import islice, takewhile

from s3bulk.aws.allowlist import AllowList
from s3bulk.aws.intents import PageIntent
from s3bulk.aws.ledger import MAX_LIST_SHARDS, DynamoLedger, ListShard
from s3bulk.aws.messages import BatchMessage, pack
from s3bulk.aws.queue import QueueSender
from s3bulk.aws.reportbucket import ReportBucket
from s3bulk.aws.steps import OpenSide, TimeLeft, job_stores
from s3bulk.job import Job, JobError
from s3bulk.ops.extraneous import Extraneous, empty_source_message, first_selected
from s3bulk.ops.rewind import check_history
from s3bulk.ops.versions import check_versioned
from s3bulk.report import Tally
from s3bulk.report.keylog import JsonlKeyLog, KeyRecord
from s3bulk.source.listing import iter_objects, lister
from s3bulk.source.manifest import MIN_CSV_SHARD_BYTES, ManifestReader, Row
from s3bulk.source.selection import KeyMapper, Selector, deletes, key_mapper
from s3bulk.source.shards import Shard, list_shard_page, plan_ranges
from s3bulk.source.sync import decide, join
from s3bulk.store import UNKNOWN_SIZE, ObjectInfo, ObjectStore, StoreError

# The lister starts no new page with less than this left; a page is one LIST, and the step it ends is an intent PUT,
# a few SendMessageBatch calls and a checkpoint: seconds at worst.
LIST_MARGIN_S = 30.0
# Manifest rows the lister reads per checkpoint, as many as a ListObjectsV2 page holds.
MANIFEST_PAGE = 1000

# Pages a lister lists before it stores their intent, sends their batches and checkpoints them, as one step. Each
# step costs an intent PUT and a checkpoint transaction, so a billion keys in steps of 8 pages cost 125,000 of each
# where a step a page cost a million ($5.00 of PUTs and 4,000,000 WRU: docs/cost-model.md); the workers get a step's
# batches about a second later than a page at a time would send them. A lister that dies inside a step lists its
# unsent pages again: none of their ids is on the queue yet. A shard the delete guard holds (options.max_delete) steps
# a page at a time: the room each page borrows is taken before its checkpoint, and a re-listed page borrows again.
PAGES_PER_STEP = 8
# ... and a step ends sooner once its messages hold this many bytes (a page of long keys is several messages).
STEP_BYTES = 4 * 1024 * 1024

# How often a lister asks whether its job still runs (one small read): a stopped job's listers stop within this.
STATUS_EVERY_S = 30.0
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

    shards.plan_ranges cuts it with the engine's key-space probing (one-key probes find
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
    if src.as_of is not None:
        try:
            check_history(store, src.bucket)  # a point in time needs the bucket's history, and a rewind its delete markers kept
        except StoreError as exc:
            raise JobError(f"job.source.as_of: {exc.message}") from None
    if job.options.delete_extraneous and not job.options.allow_empty_source and first_selected(job, store) is None:
        # The listers delete extraneous objects page by page: a source that selects nothing (a typo in its prefix)
        # would have them delete the whole destination prefix. The job fails here, before any lister runs.
        raise JobError(empty_source_message(job))
    target = min(target, MAX_LIST_SHARDS)
    if src.manifest is not None:
        # A manifest of versions for a job that would delete them, on a deployment not granted it: refused here, before
        # anything is sent, from its first page (a later row is refused by its shard's lister, before its page is sent).
        if job.operation in {"delete", "move"} and not allow.version_delete:
            first = islice(ManifestReader(store, src).rows(), MANIFEST_PAGE)
            refuse_version_deletes(job, selected_rows(first, Selector(src, job.operation), src.prefix), allow)
        ranges = ManifestReader(store, src).plan_ranges(target, csv_shard_bytes)
    else:
        ranges = [(sh.after, sh.upto) for sh in plan_ranges(lister(store, src, job.operation), src.bucket, src.prefix, target)]
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
    """List one shard's pages from its cursor until it is done or time is short, a step of pages per checkpoint.

    A step's intent (aws/intents.py) is stored before its messages are sent; a death
    between the send and the checkpoint is redone from the intent, never by listing
    its pages again. A page that runs past the shard's end keeps only the shard's keys,
    and ends the shard.
    """
    job = ledger.spec(job_id)
    allow.check(job)
    store, dst_store = job_stores(job, store, open_side)
    holder = f"list#{shard}"
    lease = ledger.hold(job_id, holder)  # held while this call may send: a stopped job's report waits for it (before the check)
    try:
        halted(ledger, job_id)  # a stopped job's shard loop ends here, not in a call that lists nothing, again and again
        return _list_shard(job_id, shard, job, ledger, store, dst_store, sender, reports, time_left, margin, allow)
    finally:
        ledger.release(job_id, lease)


def _list_shard(
    job_id: str,
    shard: int,
    job: Job,
    ledger: DynamoLedger,
    store: ObjectStore,
    dst_store: ObjectStore,
    sender: QueueSender,
    reports: ReportBucket,
    time_left: TimeLeft,
    margin: float,
    allow: AllowList,
) -> ListOutcome:
    state = ledger.list_shard(job_id, shard)
    src = job.source
    if src.manifest is not None:
        return _list_manifest(
            job_id, job, state, ledger=ledger, store=store, sender=sender, reports=reports, time_left=time_left, margin=margin, allow=allow
        )
    selector = Selector(src, job.operation)
    mapper = key_mapper(job)
    syncing = mapper is not None and (job.options.if_exists != "overwrite" or job.options.delete_extraneous)
    state, pages = _redo_intent(job_id, state, ledger=ledger, sender=sender, reports=reports)
    asked = time.monotonic()
    # The step being listed: each page's intent, messages and skipped objects' key lines (written with the step, so a
    # lister that dies inside it leaves none behind), and the shard as it will be once they are recorded.
    step: list[PageIntent] = []
    sending_now: list[BatchMessage] = []
    kept_lines: list[tuple[str, list[KeyRecord]]] = []
    at = state
    while not at.done and time_left() > margin:
        if time.monotonic() - asked >= STATUS_EVERY_S:
            # Stopping an execution does not stop a Lambda already running: a lister of a job its owner stopped (or an
            # outage stopped) sends no more pages; the resume lists on from this shard's checkpoint.
            asked = time.monotonic()
            halted(ledger, job_id)
        page_no, last_key = at.page, at.last_key if at.page else (at.after or None)
        page = list_shard_page(lister(store, src, job.operation), src.bucket, src.prefix, Shard(at.after, at.upto), at.cursor)
        objs, last = page.objects, page.done
        listed = [(o, selector.matches(o)) for o in objs]
        selected = [o for o, chosen in listed if chosen]
        todo, skipped, extraneous, failed = selected, 0, 0, 0
        rechecks: dict[str, bool] = {}
        part = f"{shard:04d}-{page_no:09d}"
        if syncing and mapper is not None and (objs or last):
            todo, rechecks, kept, extraneous, failures = _sync_page(dst_store, job, mapper, selector, listed, last_key, last, at.upto)
            skipped, failed = len(kept), len(failures)
            if kept:
                kept_lines.append((f"{part}-skipped", kept))
            if failures:
                reports.put_failures(job_id, f"{part}-extraneous", failures)
        sending = deletes(job.operation, todo)  # what the delete guard holds to its count
        borrowed = _hold_to_count(ledger, job, job_id, at, sending)
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
            sent=sending,
            borrowed=borrowed,
        )
        step.append(intent)
        sending_now += messages
        at = _advanced(at, intent)
        # A page that deleted or failed something ends its step: what it did is recorded before anything else is listed.
        full = len(step) >= (1 if at.counted is not None else PAGES_PER_STEP) or sum(len(m) for i in step for m in i.messages) >= STEP_BYTES
        if at.done or extraneous or failed or full:
            state, recorded = _send_step(job_id, job, state, step, sending_now, kept_lines, ledger=ledger, sender=sender, reports=reports)
            pages += recorded
            step, sending_now, kept_lines, at = [], [], [], state
    if step:  # time is short: what was listed goes out before the call ends
        state, recorded = _send_step(job_id, job, state, step, sending_now, kept_lines, ledger=ledger, sender=sender, reports=reports)
        pages += recorded
    return ListOutcome(job_id, shard, state.done, pages)


def _send_step(
    job_id: str,
    job: Job,
    state: ListShard,
    step: list[PageIntent],
    messages: list[BatchMessage],
    kept_lines: list[tuple[str, list[KeyRecord]]],
    *,
    ledger: DynamoLedger,
    sender: QueueSender,
    reports: ReportBucket,
) -> tuple[ListShard, int]:
    """Write the step's skipped objects' key lines, store its intent (when it sends anything), send its batches,
    checkpoint its pages."""
    for name, records in kept_lines:
        _put_key_lines(reports, job_id, job, name, records)
    intent = PageIntent.joined(step)
    if messages:  # a step that sends nothing can be listed again safely: no id of it is on the queue
        reports.put_intent(job_id, intent)
    sender.send(messages)
    return _record(job_id, state, intent, [m.batch_id for m in messages], ledger=ledger)


class JobHalted(RuntimeError):
    """The job stopped (an outage, the failure breaker, its owner) while its listing ran: this step ends with an error,
    so the state machine reports the job as stopped (its listing resumes from this shard's checkpoint)."""


def halted(ledger: DynamoLedger, job_id: str) -> None:
    """Raise JobHalted unless the job still runs."""
    status = ledger.status(job_id)
    if status != "RUNNING":
        raise JobHalted(f"job {job_id} is {status}; its listing goes on when it is resumed (s3bulk resume {job_id})")


def _advanced(state: ListShard, intent: PageIntent) -> ListShard:
    """The shard once `intent`'s pages are recorded."""
    return replace(
        state,
        page=intent.page + intent.pages,
        cursor=intent.cursor,
        done=intent.done,
        last_key=intent.last_key,
        sent=state.sent + intent.sent,
        borrowed=state.borrowed + intent.borrowed,
    )


def _record(job_id: str, state: ListShard, intent: PageIntent, batch_ids: list[str], *, ledger: DynamoLedger) -> tuple[ListShard, int]:
    """Checkpoint sent pages; the shard's state after them, and how many pages this call recorded (0 if another
    invocation had: then carry on from that invocation's checkpoint)."""
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
        batches=len(batch_ids),
        batch_ids=batch_ids,
        failed=intent.failed,
        extraneous=intent.extraneous,
        last_key=intent.last_key,
        sent=intent.sent,
        borrowed=intent.borrowed,
        pages=intent.pages,
    )
    if not recorded:
        return ledger.list_shard(job_id, state.index), 0
    return _advanced(state, intent), intent.pages


def _redo_intent(
    job_id: str, state: ListShard, *, ledger: DynamoLedger, sender: QueueSender, reports: ReportBucket
) -> tuple[ListShard, int]:
    """A step an earlier invocation stored and sent (some of it) but never recorded: send exactly it again and record it."""
    if state.done:
        return state, 0
    intent = reports.intent(job_id, state.index)
    if intent is None or intent.page != state.page:
        return state, 0
    batches = intent.batches()
    sender.send(batches)
    return _record(job_id, state, intent, [b.batch_id for b in batches], ledger=ledger)


def refuse_version_deletes(job: Job, objects: Iterable[ObjectInfo], allow: AllowList) -> None:
    """A delete or move of a manifest row naming a version removes that version for good (DeleteObjectVersion), which a
    deployment grants only with -c allow_version_delete: such a row fails the job (one line), not each object late."""
    if job.operation not in {"delete", "move"} or allow.version_delete:
        return
    row = next((o for o in objects if o.version_id), None)
    if row is not None:
        raise JobError(
            f"job.source.manifest: a row names version {row.version_id!r} of {row.key!r}, and a {job.operation} of a version "
            "removes it for good, which this deployment was not granted; redeploy with -c allow_version_delete=true, or list "
            "the keys without version ids (their current versions)"
        )


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
    """key-log lines the lister writes itself (skipped objects, bad manifest rows: no worker sees them); one part per page,
    written with its step (a manifest page: before its checkpoint), so a page listed again overwrites it."""
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
    allow: AllowList,
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
        refuse_version_deletes(job, objects, allow)
        part = f"{state.index:04d}-{page_no:09d}"
        if bad:
            reports.put_failures(job_id, f"{part}-rows", ({"key": r.ref, "error": r.code, "message": r.problem} for r in bad))
            records = [KeyRecord(r.ref, "failed", UNKNOWN_SIZE, attempts=0, error=r.code, message=r.problem) for r in bad]
            _put_key_lines(reports, job_id, job, f"{part}-rows", records)
        sending = deletes(job.operation, objects)
        borrowed = _hold_to_count(ledger, job, job_id, state, sending)
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
            batch_ids=[m.batch_id for m in messages],
            failed=len(bad),
            sent=sending,
            borrowed=borrowed,
        )
        pages += recorded
        if recorded:
            state = replace(
                state,
                page=page_no + 1,
                cursor=None if last else cursor,
                done=last,
                sent=state.sent + sending,
                borrowed=state.borrowed + borrowed,
            )
        else:  # another invocation got there first: resume from its cursor
            state, rows = ledger.list_shard(job_id, state.index), None
    return ListOutcome(job_id, state.index, state.done, pages)
