"""Runs a job in one process: a lister thread streams batches, a bounded pool works them.

The per-object work lives in batchrun.BatchRunner, which the Lambda worker
uses too; only the way batches arrive differs.
"""

from __future__ import annotations

import functools
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import IO

from s3bulk.bodies.budget import MemoryBudget
from s3bulk.breakers.failure import STOP_REASON, Trip, tripped
from s3bulk.breakers.outage import EndpointUnreachable
from s3bulk.errors import error_code, error_message
from s3bulk.job import Job, new_job_id, request_options
from s3bulk.job.retry import version_failed
from s3bulk.local.interrupt import Interrupt, Interrupted
from s3bulk.local.ledger import REDO_BATCH, BatchEntry, LocalLedger
from s3bulk.ops.batch import BatchRunner
from s3bulk.ops.delete import delete_batch
from s3bulk.ops.executor import BoundedExecutor
from s3bulk.ops.extraneous import Extraneous, empty_source_message
from s3bulk.ops.items import Item
from s3bulk.ops.pools import DEFAULT_CONCURRENCY, part_pool
from s3bulk.ops.process import ProcessCode, make_processor
from s3bulk.ops.rewind import check_history
from s3bulk.ops.versions import check_versioned
from s3bulk.report import BatchTally, Counted, Report, Tally, job_status
from s3bulk.report.keylog import JsonlKeyLog
from s3bulk.source.listing import batched, iter_objects, lister
from s3bulk.source.manifest import ManifestError, ManifestReader
from s3bulk.source.selection import GUARDED_OPS, Selector, deletes, key_mapper
from s3bulk.source.shards import iter_objects_parallel
from s3bulk.source.sync import Joined, decide, join
from s3bulk.store import UNKNOWN_SIZE, ObjectInfo, ObjectStore, StoreError

# Batches queued between the lister and the workers: enough to never starve the
# pool, few enough that memory does not grow with the bucket.
QUEUE_BATCHES = 4
# Source -> destination keys a plan or a dry run shows, so a mapping's mistake is seen before anything is written.
MAPPING_EXAMPLES = 5
# Object bodies a process or relay job holds at once beyond one range and one part per thread (bodies/budget.py).
LOCAL_BODY_BUDGET = 1024 * 1024 * 1024


class JobAbort(Exception):
    """The job cannot start; str() is the whole message."""


def _item_key(item: Item) -> str:
    return item.obj.key


def resolve_concurrency(job: Job, override: int | None = None) -> int:
    return override or job.options.concurrency or DEFAULT_CONCURRENCY


def finish_journaled_deletes(job: Job, store: ObjectStore, ledger: LocalLedger) -> int:
    """Move batches a killed run journaled but never committed: delete their sources again (a source already gone
    counts as deleted, as S3 answers) and commit each with its counts. Returns the batches finished.

    Why: such a batch's sources may already be gone, so a new listing would never see them, and the
    job's counts would fall short by the batch (every object moved, none counted).
    """
    scoped = store.scoped(request_options(job))
    pending = ledger.deletes_to_finish()
    for rec, failures, objects in pending:
        counted = Counted()
        items = [Item(ObjectInfo(key, size, version_id=version)) for key, version, size in objects]
        delete_batch(scoped, job.source.bucket, items, counted, moved=True)
        done = replace(
            rec,
            succeeded=rec.succeeded + counted.succeeded,
            failed=rec.failed + len(counted.failures),
            bytes=rec.bytes + counted.bytes,
        )
        ledger.finish_batch(done, failures + counted.failures)
    return len(pending)


class Engine:
    def __init__(
        self,
        job: Job,
        store: ObjectStore,
        *,
        concurrency: int | None = None,
        job_id: str | None = None,
        ledger: LocalLedger | None = None,
        key_log: IO[str] | None = None,
        code: ProcessCode | None = None,
        dst_store: ObjectStore | None = None,
        sample: list[Item] | None = None,
        interrupt: Interrupt | None = None,
    ) -> None:
        # Ctrl-C while the job runs (local/interrupt.py): lanes take no more objects, those in flight finish and commit.
        self.interrupt = interrupt or Interrupt()
        self.code = code  # a process job's, loaded by the caller (ops.process.load_code); BatchRunner refuses to run without it
        self.job = job
        self.store = store.scoped(request_options(job))
        # The destination's store when it is another endpoint or account (a relay); otherwise the same one.
        self.dst_store = dst_store.scoped(request_options(job)) if dst_store is not None else self.store
        self.ledger = None if job.options.dry_run else ledger
        self.job_id = ledger.job_id if ledger is not None else (job_id or new_job_id(job))
        # A canary (local/canary.py) runs on its sample instead of the listing, and commits it apart from the listing's ranges.
        self._sample = sample
        # A resumed job lists again from its watermark and skips the finished ranges beyond it, and what its canary did.
        self._start_after, self._finished = self.ledger.resume_point() if self.ledger is not None and sample is None else (None, [])
        if job.options.delete_extraneous and self._start_after is not None:
            # A sync's deletes wait for a whole listing (ops/extraneous.py), so a resumed one joins from the start again:
            # what the watermark covers is skipped like any finished range, but the join still sees it.
            self._finished = [("", self._start_after), *self._finished]
            self._start_after = None
        if self.ledger is not None and sample is None:
            self.ledger.drop_canary_failures()  # what failed in a canary is done again, like any object
        # After the failure breaker stopped the job (and its cause was fixed), a resume does its failed objects again
        # before the rest: `redo` of them, in the ledger until committed.
        self.redo = 0
        if self.ledger is not None and sample is None and not job.options.dry_run:
            if self.ledger.stopped_by() == STOP_REASON and job.source.versions == "current":
                self.redo = self.ledger.take_for_redo(version_failed)
            else:
                self.redo = self.ledger.redo_left()  # what an interrupted resume left of an earlier redo
        self._canary_done = self.ledger.canary_objects() if self.ledger is not None and sample is None else set()
        self.concurrency = resolve_concurrency(job, concurrency)
        # One outage breaker per store (the same one when both sides share it), with the job's window.
        self.breakers = [self.store.breaker]
        if self.dst_store.breaker is not self.store.breaker:
            self.breakers.append(self.dst_store.breaker)
        for breaker in self.breakers:
            breaker.configure(job.options.outage_seconds)
        self.tally = Tally()
        self._committed_lock = threading.Lock()
        self._closing_error: Exception | None = None  # a batch's commit (or a move's deletes) raised: the run failed
        self.trip: Trip | None = None  # set once the failure breaker (breaker.py) tripped: the run takes no new work
        self._committed = (0, 0, 0)  # (scanned, listed, listed bytes) of the batches this run committed to the ledger
        # The outcomes of batches started but not yet committed: a stop's report counts what they did (a resume redoes them).
        self._uncommitted: dict[int, BatchTally] = {}
        self._tail = 0  # keys scanned after the last selected one, recorded with the listing's end
        self._stop = threading.Event()
        self._over_cap: str | None = None  # set when a delete or move would pass options.max_delete
        self._listing_error: BaseException | None = None
        self._selector = Selector(job.source, job.operation)
        self._map = key_mapper(job)
        # The first source -> destination keys, for plan and a dry run to show: `backup//a` seen before it is written.
        self.mappings: list[tuple[str, str]] = []
        self._extraneous = Extraneous(job, self.dst_store, self.tally, self._selector, self._map, spool=True)
        # The per-key log (--key-log): a dry run changes nothing, so it has no outcomes to record.
        self.keylog = JsonlKeyLog(key_log, self.job_id, job.operation) if key_log is not None and not job.options.dry_run else None

    # -- listing -----------------------------------------------------------------------------
    def _entries(self) -> Iterator[tuple[ObjectInfo | None, str, tuple[str, str] | None]]:
        """(object, cursor, problem) in job order: a listing's cursor is the key, a manifest's the row's position.

        A manifest row that names no usable object comes as a problem; a delete marker as no object.
        """
        src = self.job.source
        if src.manifest is None:
            listing = iter_objects_parallel(
                lister(self.store, src, self.job.operation),
                src.bucket,
                src.prefix,
                self.job.options.list_workers,
                start_after=self._start_after,
            )
            return ((obj, obj.key, None) for obj in listing)
        rows = ManifestReader(self.store, src).rows(after=self._start_after)
        return (
            (ObjectInfo(row.ref, UNKNOWN_SIZE) if row.failed else row.obj, row.pos, (row.code, row.problem) if row.failed else None)
            for row in rows
        )

    def _listed(self) -> Iterator[tuple[ObjectInfo, bool, str, tuple[str, str] | None]]:
        """Every entry and whether the filters select it (a sync must see the unselected too), with its cursor and problem."""
        finished, i = self._finished, 0
        prefix = self.job.source.prefix
        for obj, cursor, problem in self._entries():
            if finished:
                while i < len(finished) and finished[i][1] < cursor:
                    i += 1
                if i < len(finished) and finished[i][0] < cursor:
                    # Inside a range an earlier run finished: not counted again, but a sync's join must
                    # still see it, or its destination object would look extraneous.
                    if obj is not None:
                        yield obj, False, cursor, None
                    continue
            if obj is None:  # a delete marker in a versioned inventory: scanned, but no object to act on
                self.tally.seen(0, False)
                continue
            selected = problem is not None or (obj.key.startswith(prefix) and self._selector.matches(obj))
            self.tally.seen(max(obj.size, 0), selected)
            yield obj, selected, cursor, problem

    def flush_extraneous(self, stop: Callable[[], bool] = lambda: False) -> None:
        """Delete what the sync found extraneous: only now, with the whole listing read without an error, and never
        after a selection that held nothing (every destination object then looks extraneous). `stop` (a Ctrl-C)
        is asked between two DeleteObjects; what is left is deleted by the resume, which joins from the start."""
        if self._extraneous.found and not self.job.options.allow_empty_source:
            listed = self.tally.snapshot().listed + (self.ledger.totals().listed if self.ledger is not None else 0)
            if listed == 0:
                raise JobAbort(empty_source_message(self.job))
        self._extraneous.flush(lambda: stop() or self._stop.is_set())

    def items(self) -> Iterator[Item]:
        """What the job would touch, from the listing (and the destination listing for skip modes); changes nothing."""
        if self._sample is not None:
            for item in self._sample:
                self.tally.seen(max(item.obj.size, 0), True)
            return iter(self._sample)
        items = self._items()
        if self._map is not None:
            items = self._noting_mappings(items)
        return self._past_canary(items) if self._canary_done else items

    def _noting_mappings(self, items: Iterator[Item]) -> Iterator[Item]:
        for item in items:
            if len(self.mappings) < MAPPING_EXAMPLES and item.dst_key:
                self.mappings.append((item.obj.key, item.dst_key))
            yield item

    def _past_canary(self, items: Iterator[Item]) -> Iterator[Item]:
        """Leave out what the job's canary did: listed again, but counted (and committed) by the canary."""
        for item in items:
            if (item.obj.key, item.obj.version_id) in self._canary_done:
                with self._committed_lock:
                    scanned, listed, listed_bytes = self._committed
                    self._committed = (scanned, listed + 1, listed_bytes + max(item.obj.size, 0))
                continue
            yield item

    def _items(self) -> Iterator[Item]:
        mapper, dst, opts = self._map, self.job.destination, self.job.options
        if self.job.source.manifest is not None:
            # Manifest order is not key order, so skip modes are decided per object by the worker (a HEAD).
            return (
                Item(obj, mapper(obj.key) if mapper and problem is None else "", pos=cursor, problem=problem)
                for obj, selected, cursor, problem in self._listed()
                if selected
            )
        if mapper is None or dst is None:
            return (Item(obj) for obj, selected, _, _ in self._listed() if selected)
        if opts.if_exists == "overwrite" and not opts.delete_extraneous:
            return (Item(obj, mapper(obj.key)) for obj, selected, _, _ in self._listed() if selected)
        existing = iter_objects(
            self.dst_store, dst.bucket, dst.prefix, start_after=mapper(self._start_after) if self._start_after else None
        )
        extraneous = self._extraneous.add if opts.delete_extraneous else None
        joined = join(((obj, selected) for obj, selected, _, _ in self._listed()), mapper, existing, extraneous)
        return (self._item(j) for j in joined if j.selected)

    def _item(self, j: Joined) -> Item:
        d = decide(self.job.options.if_exists, j.obj, j.existing)
        return Item(j.obj, j.dst_key, d.skip, recheck=d.recheck)

    def check_destination(self) -> None:
        """One cheap listing of the destination first, so a typo fails once, not once per object (and a point in time
        needs a source that keeps its history)."""
        if self.job.source.as_of is not None:
            try:
                check_history(self.store, self.job.source.bucket)
            except StoreError as exc:
                raise JobAbort(f"source.as_of: {error_message(exc)}") from exc
        dst = self.job.destination
        if dst is None:
            return
        try:
            self.dst_store.list_page(dst.bucket, dst.prefix, max_keys=1)
            if self.job.operation == "copy" and self.job.source.versions == "all":
                check_versioned(self.dst_store, dst.bucket)
        except StoreError as exc:
            raise JobAbort(f"destination s3://{dst.bucket}/{dst.prefix} is not usable: {error_code(exc)}: {error_message(exc)}") from exc

    def _redone(self) -> Iterator[Item]:
        """The objects to redo (take_for_redo), each named by key and version only, as a manifest row without a size."""
        assert self.ledger is not None
        for key, version in self.ledger.to_redo():
            self.tally.seen(0, True)
            yield Item(ObjectInfo(key, UNKNOWN_SIZE, version_id=version), self._map(key) if self._map else "", alone=True)

    def _produce(self, out: queue.Queue[tuple[list[Item], BatchEntry] | None]) -> None:
        try:
            self.check_destination()
            if self.redo:  # ahead of the listing, each batch committed apart from its ranges (finish_redo)
                for batch in batched(self._redone(), self.job.options.batch_size):
                    rec = BatchEntry(REDO_BATCH, REDO_BATCH, len(batch), len(batch), 0, 0, 0, 0, 0, 0)
                    if not self._put(out, (batch, rec)):
                        return
            after, scanned = self._start_after, self.tally.snapshot().scanned
            # A batch ends between keys, never inside one key's versions (or uploads): the ledger resumes after a whole key.
            whole_keys = self.job.source.versions != "current" or self.job.operation == "abort-uploads"
            group = _item_key if whole_keys else None
            for batch in batched(self.items(), self.job.options.batch_size, group):
                now = self.tally.snapshot().scanned
                # The ledger's unit: the batch covers (after, last] of the listing, and the keys scanned to reach it.
                last = batch[-1].pos or batch[-1].obj.key
                rec = BatchEntry(after, last, now - scanned, len(batch), sum(max(i.obj.size, 0) for i in batch), 0, 0, 0, 0, 0)
                after, scanned = rec.last, now
                if not self._put(out, (batch, rec)):
                    return
            if self._stop.is_set():
                return
            if self.ledger is not None and self._sample is None:
                self._tail = self.tally.snapshot().scanned - scanned
                self.ledger.record_tail(self._tail)
            self.tally.finish_listing()
        except BaseException as exc:  # noqa: BLE001 - reported as the job's error
            self._listing_error = exc
        finally:
            out.put(None)

    def _put(self, out: queue.Queue[tuple[list[Item], BatchEntry] | None], entry: tuple[list[Item], BatchEntry]) -> bool:
        """Hand a batch to the run; False once the run stopped (the batch was not taken)."""
        while not self._stop.is_set():
            try:
                out.put(entry, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    @property
    def _journals(self) -> bool:
        """A move's listed batches journal their deletes first (a canary's sample and redone objects are committed apart)."""
        return self.job.operation == "move" and self.ledger is not None and self._sample is None

    def _journal_deletes(self, rec: BatchEntry, outcomes: BatchTally, confirmed: list[Item]) -> None:
        assert self.ledger is not None
        o = outcomes  # every lane of the batch has finished: nothing counts into it now
        now = replace(rec, succeeded=o.succeeded, skipped=o.skipped, failed=o.failed, bytes=o.bytes, retried=o.retried)
        self.ledger.begin_deletes(now, list(o.failures), [(i.obj.key, i.obj.version_id, i.obj.size) for i in confirmed])

    def _commit(self, rec: BatchEntry, outcomes: BatchTally, batch: list[Item]) -> None:
        assert self.ledger is not None
        o = outcomes
        done = replace(rec, succeeded=o.succeeded, skipped=o.skipped, failed=o.failed, bytes=o.bytes, retried=o.retried)
        if rec.last == REDO_BATCH:  # listed again, as take_for_redo uncounted them (scanned by no listing: the ledger keeps none)
            self.ledger.finish_redo([(i.obj.key, i.obj.version_id) for i in batch], done, o.failures)
        elif self._sample is not None:  # scanned again by the listing that does the rest, unless the canary removed them
            objects = [(i.obj.key, i.obj.version_id, i.obj.size) for i in batch]
            removes = self.job.operation in {"delete", "move"}
            rec = replace(rec, scanned=self.ledger.finish_canary(objects, done, o.failures, removes_source=removes))
        else:
            self.ledger.finish_batch(done, o.failures)
        with self._committed_lock:
            scanned, listed, listed_bytes = self._committed
            self._committed = (scanned + rec.scanned, listed + rec.listed, listed_bytes + rec.listed_bytes)
            self._uncommitted.pop(id(outcomes), None)

    # -- running -----------------------------------------------------------------------------
    def run(self) -> Report:
        started = time.monotonic()
        batches: queue.Queue[tuple[list[Item], BatchEntry] | None] = queue.Queue(maxsize=QUEUE_BATCHES)
        listing_thread = threading.Thread(target=self._produce, args=(batches,), name="s3bulk-lister", daemon=True)
        listing_thread.start()
        interrupted = False
        # The part pool is entered first (exits last) so it outlives the object tasks that feed it.
        with (
            part_pool() as parts,
            BoundedExecutor(self.concurrency, name="s3bulk-worker") as pool,
        ):
            budget = MemoryBudget(LOCAL_BODY_BUDGET)
            processor = None
            if self.code is not None:
                processor = make_processor(self.job, self.job_id, self.code, self.store, parts.submit, budget, self.dst_store)
            runner = BatchRunner(
                self.job,
                self.store,
                pool,
                parts,
                keylog=self.keylog,
                processor=processor,
                dst_store=self.dst_store,
                budget=budget,
                head_destination=self._sample is not None,  # a sample has no destination listing to join with
            )
            listed_all = False

            def halt(*, cancel: bool) -> None:
                """Stop the lister and take batches until its end marker; `cancel` also drops tasks not yet started."""
                nonlocal listed_all
                self._stop.set()
                if cancel:
                    runner.halt()  # the lanes running take no more objects
                    pool.shutdown(wait=True, cancel_futures=True)
                # A lister stuck in a request to an unanswering endpoint is not waited for long after a cancel.
                give_up = time.monotonic() + 2.0
                while not listed_all:
                    try:
                        if batches.get(timeout=0.1) is None:
                            break
                    except queue.Empty:
                        if not listing_thread.is_alive() or (cancel and time.monotonic() > give_up):
                            break
                listed_all = True

            # The delete guard's second half: the count came first (local/run.py), and the run never goes past it
            # even when the selection grew in between.
            op = self.job.operation
            cap = self.job.options.max_delete if op in GUARDED_OPS and not self.job.options.dry_run else None
            sent = 0
            stop = self.interrupt.event

            def keep_going() -> bool:
                return not stop.is_set() and not self._breaker_tripped()

            try:
                while (entry := self._next(batches)) is not None:
                    batch, rec = entry
                    if self._breaker_tripped():  # no new work: the batches already started finish what they took
                        break
                    if cap is not None:
                        sent += deletes(op, (item.obj for item in batch))
                    if cap is not None and sent > cap:
                        self._over_cap = (
                            f"job.options.max_delete: the selection grew past {cap:,} after it was counted; "
                            f"the run stopped before the batch that would pass the limit"
                        )
                        break
                    if self.ledger is None:
                        runner.start(batch, self.tally, keep_going)
                    else:
                        outcomes = BatchTally(self.tally)
                        with self._committed_lock:
                            self._uncommitted[id(outcomes)] = outcomes
                        journals = self._journals and rec.last != REDO_BATCH
                        journal = functools.partial(self._journal_deletes, rec, outcomes) if journals else None
                        on_complete = functools.partial(self._commit, rec, outcomes, batch)
                        runner.start(batch, outcomes, keep_going, on_complete=on_complete, before_deletes=journal)
                    if runner.outage is not None:
                        break
                else:
                    listed_all = True
                if self._over_cap is not None or self.trip is not None:  # batches already sent finish; the lister stops
                    halt(cancel=False)
                if runner.outage is not None:  # the breaker tripped: queued tasks are dropped (not done), running ones end at once
                    halt(cancel=True)
                pool.shutdown(wait=True)  # in the try: a Ctrl-C while the last tasks finish still ends in a report
                if runner.closing_errors:
                    self._closing_error = runner.closing_errors[0]
                # A stop asked for while the last tasks ran: lanes took no more objects, so batches may be incomplete.
                interrupted = stop.is_set()
                listing_thread.join()  # it sent its end marker: only the tail's record is left
                clean = self._listing_error is None and self._over_cap is None and self.trip is None
                if listed_all and not interrupted and runner.outage is None and clean:
                    # A sync's deletes come last (rclone's --delete-after): after a whole listing read without an
                    # error, and after every copy, so a stop at any point before leaves the destination complete.
                    try:
                        self.flush_extraneous(stop.is_set)
                    except JobAbort as exc:
                        self._listing_error = exc
                    interrupted = stop.is_set()
            except BaseException as exc:
                halt(cancel=True)
                if not isinstance(exc, (KeyboardInterrupt, Interrupted)):
                    raise
                interrupted = True
        # A lister waiting out an unanswering endpoint (up to options.outage_seconds) is not waited for after a stop:
        # it only reads, and it records nothing once the stop is set.
        listing_thread.join(timeout=2.0 if interrupted else None)
        if not listing_thread.is_alive():
            self._extraneous.close()
        if self.keylog is not None:
            self.keylog.flush()
        outage = runner.outage
        if outage is None and isinstance(self._listing_error, EndpointUnreachable):
            outage = self._listing_error
        return self._report(time.monotonic() - started, interrupted, outage)

    def _breaker_tripped(self) -> bool:
        """options.failure_breaker on this run's counts (asked before each batch and each object; cheap until `after`)."""
        if self.trip is not None:
            return True
        rule = self.job.options.failure_breaker
        if rule is False or self.job.options.dry_run:
            return False
        snap = self.tally.snapshot()
        finished = snap.succeeded + snap.skipped + snap.failed
        if finished < rule.after:
            return False
        by_code, examples = self.tally.codes()
        trip = tripped(rule, finished=finished, failed=snap.failed, by_code=by_code)
        if trip is not None and trip.by_code:
            trip = replace(trip, example=examples.get(trip.by_code[0][0]))
        self.trip = trip
        return trip is not None

    def _next(self, batches: queue.Queue[tuple[list[Item], BatchEntry] | None]) -> tuple[list[Item], BatchEntry] | None:
        """The lister's next batch, or Interrupted once a stop is asked for (polled: a signal only sets the event)."""
        while True:
            if self.interrupt.is_set():
                raise Interrupted
            try:
                return batches.get(timeout=0.1)
            except queue.Empty:
                continue

    def interrupted_report(self, seconds: float) -> Report:
        """The report of a run stopped before its first batch (during the delete guard's count or the canary's sample)."""
        self.tally.finish_listing()
        return self._report(seconds, True)

    def _report(self, seconds: float, interrupted: bool, outage: EndpointUnreachable | None = None) -> Report:
        error = None
        stopped = (outage is not None or self.trip is not None) and not interrupted
        if interrupted:
            error = "interrupted before the job finished; counts cover the work done"
        elif outage is not None:
            error = f"stopped: {outage}"
        elif self._over_cap is not None:
            error = self._over_cap
        elif self.trip is not None:
            error = self.trip.line(f"s3bulk run --resume {self.job_id}")
        elif self._closing_error is not None:
            failed = self._closing_error
            error = (
                f"a batch's outcome could not be recorded ({error_code(failed)}: {error_message(failed)}); it is not counted "
                "as done: resume the job (s3bulk run --resume JOB_ID) to redo it"
            )
        elif self._listing_error is not None:
            exc = self._listing_error
            error = (
                str(exc)
                if isinstance(exc, (JobAbort, ManifestError))
                else f"listing s3://{self.job.source.bucket}/{self.job.source.prefix} failed: {error_code(exc)}: {error_message(exc)}"
            )
        tally = self.tally
        if self.ledger is not None:
            tally = self._ledger_tally()
            ended = "finished" if error is None else "failed"
            why = STOP_REASON if self.trip is not None and stopped and outage is None else None
            self.ledger.finish(
                "interrupted" if interrupted else "stopped" if stopped else "canary" if self._sample is not None else ended, why
            )
        opts = self.job.options
        status = job_status(
            dry_run=opts.dry_run,
            failed=tally.snapshot().failed,
            error=error,
            stopped=stopped,
            interrupted=interrupted,
            canary=self._sample is not None,
        )
        this_run = self.tally.snapshot()
        return Report(
            self.job_id,
            self.job.operation,
            status,
            tally,
            seconds,
            self.store.retries + (self.dst_store.retries if self.dst_store is not self.store else 0),
            error,
            interrupted,
            tolerated_failures=opts.tolerated_failures,
            outage=outage.outage if stopped and outage is not None else None,
            run_done=this_run.done,
            run_bytes=this_run.bytes,
            stop_reason=STOP_REASON if self.trip is not None and stopped and outage is None else None,
            redone=self.redo,
        )

    def _ledger_tally(self) -> Tally:
        """The job's counts across every run of it: what the ledger committed, each batch once."""
        assert self.ledger is not None
        t = Tally()
        for key, code, message in self.ledger.failures():
            t.fail(key, code, message)
        totals = self.ledger.totals()
        # Listed by this run but in no committed batch (an interrupted or stopped run): counted as listed, and what their
        # objects came to so far counted as done: the objects were copied (or failed) whether or not the ledger says so.
        now = self.tally.snapshot()
        with self._committed_lock:
            scanned, listed, listed_bytes = self._committed
            open_batches = list(self._uncommitted.values())
        for o in open_batches:
            for key, code, message in list(o.failures):
                t.fail(key, code, message)
        t.scanned = totals.scanned + max(0, now.scanned - scanned - self._tail)
        t.listed = totals.listed + max(0, now.listed - listed)
        t.listed_bytes = totals.listed_bytes + max(0, now.listed_bytes - listed_bytes)
        t.succeeded = totals.succeeded + sum(o.succeeded for o in open_batches)
        t.skipped = totals.skipped + sum(o.skipped for o in open_batches)
        t.failed = totals.failed + sum(o.failed for o in open_batches)
        t.bytes = totals.bytes + sum(o.bytes for o in open_batches)
        t.retried = totals.retried + sum(o.retried for o in open_batches)
        t.listing_done = self.tally.listing_done
        t.extraneous_deleted = self.tally.extraneous_deleted  # this run's deletes; the ledger records batches only
        t.notes.update(self.tally.noted())  # this run's objects decided without content evidence (report.NOTES)
        return t
