"""Work one batch of objects on a bounded pool: the unit the local engine and the Lambda worker share.

A batch completes only when every object in it has a final outcome. A caller
with a deadline (the Lambda worker) can stop submitting; the batch is then
incomplete, nothing of it is counted by the ledger, and the whole batch is
redone later. Every task is idempotent, so a redo is safe.

The same holds when the job's outage breaker trips (s3bulk/breakers/outage.py): an object whose
request raised EndpointUnreachable is left not done (no outcome, no key-log line), its
batch does not complete, the runner submits nothing more, and `outage` says why.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace

from s3bulk.bodies.budget import MemoryBudget
from s3bulk.breakers.outage import EndpointUnreachable
from s3bulk.errors import ErrorKind, classify, error_code, error_message
from s3bulk.job import ACTS_ON_VERSIONS, MAX_KEY_BYTES, Job, Restore, relays
from s3bulk.ops.acl import AclsEnabled, acl_doc, set_acl
from s3bulk.ops.batchrun import FLUSH_EVERY_S, BatchRun
from s3bulk.ops.checksum import add_checksum
from s3bulk.ops.copies import CopyPaused, CopySettings, copy_in_place, copy_object
from s3bulk.ops.delete import delete_batch
from s3bulk.ops.encryption import encryption_doc, set_encryption, target_of
from s3bulk.ops.executor import BoundedExecutor
from s3bulk.ops.filters import ObjectFilter, Verdict
from s3bulk.ops.identity import BY_SIZE, confirm_copy
from s3bulk.ops.items import NEEDS_HEAD, Done, Item, heads_anyway, naming_version, needs_nothing, said, undo_entry, write_outcome
from s3bulk.ops.lock import retention_doc, set_legal_hold, set_retention
from s3bulk.ops.move import destination_already_moved
from s3bulk.ops.process import Processor, failure
from s3bulk.ops.relay import relay_object
from s3bulk.ops.restore import restore_object
from s3bulk.ops.rewind import WHAT as REWOUND
from s3bulk.ops.rewind import rewind_key
from s3bulk.ops.tagging import tag_object
from s3bulk.ops.uploads import ALREADY_GONE, abort_upload
from s3bulk.ops.verify import verify_object
from s3bulk.ops.versions import copy_history
from s3bulk.report import SIZE_ONLY, Counted, Outcomes
from s3bulk.report.keylog import KeyLog
from s3bulk.source.selection import MAPS_KEYS, folder_key
from s3bulk.source.sync import Decision, decide, settle
from s3bulk.store import UNKNOWN_SIZE, ObjectHead, ObjectInfo, ObjectStore, StoreError, UploadWatch

# Pause before an object's next round: the client's own retries already spent ~10 s of backoff.
ROUND_PAUSE = 1.0
ROUND_PAUSE_MAX = 20.0


def _always() -> bool:
    return True


class BatchRunner:
    """Per-object tasks for one job; the pools are the caller's (sized to the client's connection pool)."""

    def __init__(
        self,
        job: Job,
        store: ObjectStore,
        pool: BoundedExecutor,
        parts: BoundedExecutor,
        sleep: Callable[[float], None] = time.sleep,
        keylog: KeyLog | None = None,
        processor: Processor | None = None,
        dst_store: ObjectStore | None = None,
        budget: MemoryBudget | None = None,
        head_destination: bool = False,
        hands_on: bool = False,
    ) -> None:
        if (job.operation == "process") != (processor is not None):
            raise ValueError("a process job needs its processor (ops.process.make_processor), and only a process job takes one")
        self.processor = processor
        self.job = job
        self.keylog = keylog
        self.sleep = sleep
        self.store = store
        self.dst = dst_store or store  # the destination's store: another one when it is another endpoint or account
        self.relay = relays(job)
        self.budget = budget
        self.pool = pool
        self.parts = parts
        dst = job.destination
        self._copy_settings = CopySettings(job.options.multipart_threshold, job.options.part_size, dst.storage_class if dst else None)
        self._in_place = CopySettings(job.options.multipart_threshold, job.options.part_size, job.storage_class)
        self._acls = AclsEnabled(store)  # asked at the first in-place copy: does its bucket have ACLs to carry over?
        # A manifest is not a sorted listing to merge-join, so its skip modes ask the destination per object.
        # So do objects given one by one (a canary's sample: head_destination).
        self._head_destination = (head_destination or job.source.manifest is not None) and job.options.if_exists != "overwrite"
        # Set once a request raised EndpointUnreachable (the outage breaker tripped): nothing more is submitted.
        self.outage: EndpointUnreachable | None = None
        self._halted = False  # set by halt(): lanes take no more objects
        # A batch's closing step (its commit, a move's deletes) that raised: the batch is not done, and the run must say so.
        self.closing_errors: list[Exception] = []
        self._errors_lock = threading.Lock()
        # source.tags / source.content_type: judged per object in the lanes, just before it is acted on (ops/filters.py).
        # A delete so filtered is worked as a move is: the lanes judge, and the batch deletes the matches in one
        # DeleteObjects (`_deletes_later`).
        self.filter = ObjectFilter.of(job.source)
        self._deletes_later = job.operation == "move" or (job.operation == "delete" and self.filter is not None)
        # On the stack (`hands_on`) what a batch could not finish in an invocation goes on in a child batch: a copy's
        # multipart upload pauses when the deadline nears and goes on in the next one (Item.upload_id), and a move cut
        # or frozen part way deletes the sources of the copies it confirmed and hands on the rest. Not locally: a
        # Ctrl-C must not leave uploads open that nothing would finish, and a local move's batch deletes its sources
        # whole, after its ledger journals them.
        self._hands_on = hands_on
        self._maps_keys = job.destination is not None and job.operation in MAPS_KEYS
        self._pause_copies = hands_on and job.operation in {"copy", "move"}

    def _left(self, exc: EndpointUnreachable, run: BatchRun) -> None:
        """Objects left not done because their endpoint is unreachable: nothing counted, and the batch cannot complete."""
        if self.outage is None:
            self.outage = exc
        run.abandon()

    def start(
        self,
        batch: Sequence[Item],
        tally: Outcomes,
        keep_going: Callable[[], bool] = _always,
        on_complete: Callable[[], None] | None = None,
        before_deletes: Callable[[list[Item]], None] | None = None,
    ) -> BatchRun:
        """Submit the batch's tasks (blocking while the pool is full) and return at once.

        on_complete runs once every item has its final outcome (not if keep_going stopped it early, nor
        after an outage left an object not done). For a move, before_deletes gets the confirmed copies just
        before their sources are deleted (the local ledger journals them: a kill between the deletes and
        on_complete would otherwise lose them from the counts, their sources gone from any new listing).
        """
        todo = []
        settled = Counted()
        lines = self.keylog.block() if self.keylog is not None else None
        for item in batch:
            if item.obj.version_id and self.job.operation not in ACTS_ON_VERSIONS:
                item = replace(
                    item,
                    problem=(
                        "VersionIdNotSupported",
                        f"{self.job.operation} acts on current objects only, and this names version {item.obj.version_id[:40]}; "
                        "drop the version id",
                    ),
                )
            elif item.problem is None and self._maps_keys and (folder := folder_key(item.obj.key, item.dst_key)) is not None:
                item = replace(item, problem=("InvalidDestinationKey", folder))  # before a sync's "exists": no bytes are there
            if item.problem is not None:
                code, message = item.problem
                settled.fail(item.obj.key, code, message)
                write_outcome(lines, item, "failed", attempts=0, error=code, message=message)
            elif item.exists:
                settled.skip()
                write_outcome(lines, item, "skipped", attempts=0)
            else:
                todo.append(item)
        if lines is not None:
            lines.close()
        if self.job.options.dry_run:  # what it would process: neither the objects it skips nor those it would fail
            settled.bytes += sum(max(item.obj.size, 0) for item in todo)
        if settled:
            tally.merge(settled)
        op = self.job.operation
        closing = None
        if self._deletes_later:
            bucket = self.job.source.bucket

            def closing(confirmed: list[Item]) -> None:
                if before_deletes is not None:
                    before_deletes(confirmed)
                counted = Counted()
                lines = self.keylog.block() if self.keylog is not None else None
                try:
                    delete_batch(self.store, bucket, confirmed, counted, moved=op == "move", keylog=lines)
                except EndpointUnreachable as exc:
                    self._left(exc, run)
                finally:
                    if lines is not None:
                        lines.close()
                    if counted:
                        tally.merge(counted)

        run = BatchRun(closing, on_complete, self._closing_failed)
        if self.job.options.dry_run or not todo:
            run.seal(all_submitted=True)
            return run
        if op == "delete" and self.filter is None:
            if keep_going() and self.outage is None:
                run.add()
                self.pool.submit(self._delete_task, todo, tally, run)
                run.seal(all_submitted=True)
            else:
                run.seal(all_submitted=False)
            return run
        if self.processor is not None:
            size = self.processor.per_call
            groups = [todo[at : at + size] for at in range(0, len(todo), size)]
            started = 0
            for group in groups:
                if not keep_going() or self.outage is not None:
                    break
                run.add()
                self.pool.submit(self._process_task, group, tally, run)
                started += 1
            run._untaken = lambda: [item for group in groups[started:] for item in group]
            run.seal(all_submitted=started == len(groups))
            return run
        # The batch is worked as a unit: a few lanes (at most one per worker) take its objects from one queue,
        # each counting into its own Counted and key-log block, merged once when the lane leaves the batch.
        queue = deque(todo)
        if closing is None or self._hands_on:  # lanes take from the front: what is left is exactly what no lane took
            run._untaken = lambda: list(queue)
            run._freezable, run._todo, run._queue = True, todo, queue
            run._partial = closing is not None
        lanes = min(self.pool.max_workers, len(todo))
        submitted = 0
        for _ in range(lanes):  # keep_going is asked by the lanes, once before each object
            if self.outage is not None or self._halted:
                break
            run.add()
            self.pool.submit(self._lane, queue, tally, run, keep_going)
            submitted += 1
        run.seal(all_submitted=submitted > 0)
        return run

    def _closing_failed(self, exc: Exception) -> None:
        with self._errors_lock:
            self.closing_errors.append(exc)

    def halt(self) -> None:
        """Take no more objects (Ctrl-C): the lanes running stop after their current object; their batches are not complete."""
        self._halted = True

    def _lane(self, queue: deque[Item], tally: Outcomes, run: BatchRun, keep_going: Callable[[], bool]) -> None:
        """Objects of one batch, one after another, until its queue is empty (or the job must stop taking more).

        What it finished goes into the batch's tally at least every FLUSH_EVERY_S, so a run frozen while one of its
        objects hangs (the stack's worker near its end) still counts the others."""
        counted = Counted()
        lines = self.keylog.block() if self.keylog is not None else None
        confirmed: list[Item] = []
        fresh: list[Item] = []  # confirmed since the last flush
        finished: list[Item] = []
        flushed_at = time.monotonic()
        try:
            while queue:
                if self.outage is not None or self._halted or not keep_going():
                    run.cut()
                    break
                try:
                    item = queue.popleft()
                except IndexError:  # another lane took the last one
                    break
                run.taking(item)
                done, settled = self._object(item, counted, lines, run, keep_going, run.watch(item))
                run.left(item)
                if done is not None:
                    confirmed.append(done)
                    fresh.append(done)
                if settled:
                    finished.append(item)
                if time.monotonic() - flushed_at >= FLUSH_EVERY_S and run.flush(tally, counted, lines, finished, fresh):
                    counted, finished, fresh, flushed_at = Counted(), [], [], time.monotonic()
        finally:
            run.flush(tally, counted, lines, finished, fresh)
            run.finish(confirmed)

    def _delete_task(self, items: list[Item], tally: Outcomes, run: BatchRun) -> None:
        counted = Counted()
        lines = self.keylog.block() if self.keylog is not None else None
        try:
            undeletes = self.job.source.versions == "delete-markers"
            delete_batch(self.store, self.job.source.bucket, items, counted, keylog=lines, submit=self.parts.submit if undeletes else None)
        except EndpointUnreachable as exc:
            self._left(exc, run)
        finally:
            if lines is not None:
                lines.close()
            if counted:
                tally.merge(counted)
            run.finish()

    def _copy(self, item: Item, keep_going: Callable[[], bool] = _always, watch: UploadWatch | None = None) -> Done:
        """One copy (and, for a move, its confirmation); the source is deleted later, per batch."""
        dst = self.job.destination
        assert dst is not None
        move = self.job.operation == "move"
        size = len(item.dst_key.encode("utf-8", "surrogatepass"))
        if size > MAX_KEY_BYTES:
            # Checked here, not left to the server: some S3-compatible servers cut or accept long keys.
            raise StoreError("KeyTooLongError", f"the destination key is {size} UTF-8 bytes; S3 allows {MAX_KEY_BYTES}", 400)
        obj = item.obj
        if self.job.source.versions == "all":
            h = copy_history(
                self.store, self.dst, self.parts, self.job.source.bucket, obj.key, dst.bucket, item.dst_key, self._copy_settings
            )
            weak: tuple[str, ...] = (SIZE_ONLY,) if h.size_only else ()
            said_too = f"; {h.size_only} {said(weak)}" if h.size_only else ""
            return Done(h.copied > 0, bytes=h.bytes, result=f"{h.copied} of {h.versions} versions copied{said_too}", notes=weak)
        notes: tuple[str, ...] = ()  # how if_exists and the copy's confirmation were decided, where no content could say
        source = item.head  # the source's HEAD, once read (a filter's, or a recheck's): the copy and its check use it
        try:
            obj = self._resolve(obj, item.head)
            if self._head_destination or (item.alone and self.job.options.if_exists != "overwrite"):
                existing = self._destination_head(dst.bucket, item.dst_key)
                decision = decide(self.job.options.if_exists, obj, existing.info(item.dst_key) if existing else None)
                skip, notes, read = settle(self.store, self.job.source.bucket, obj, decision, existing)
                source = read or source
                if skip:
                    return Done(False, obj=obj, notes=notes, result=said(notes))
            elif item.recheck is not None:
                existing = self._destination_head(dst.bucket, item.dst_key)
                skip, notes, read = settle(self.store, self.job.source.bucket, obj, Decision(False, item.recheck), existing)
                source = read or source
                if skip:
                    return Done(False, obj=obj, notes=notes, result=said(notes))
            pausable = self._pause_copies and not self.job.options.dry_run
            if self.relay:
                done = relay_object(
                    self.store,
                    self.dst,
                    self.job.source.bucket,
                    obj,
                    dst.bucket,
                    item.dst_key,
                    storage_class=dst.storage_class,
                    submit=self.parts.submit,
                    budget=self.budget,
                    keep_going=keep_going if pausable else None,
                    upload_id=item.upload_id,
                    head=source,
                    watch=watch,
                )
            else:
                done = copy_object(
                    self.store,
                    self.parts,
                    self.job.source.bucket,
                    obj,
                    dst.bucket,
                    item.dst_key,
                    self._copy_settings,
                    keep_going=keep_going if pausable else None,
                    upload_id=item.upload_id,
                    head=source,
                    watch=watch,
                )
            # Every copy, not only a move's: a copy whose result contradicts its source fails (ops/identity.py).
            if confirm_copy(self.store, self.dst, self.job.source.bucket, obj, dst.bucket, item.dst_key, done, source) == BY_SIZE:
                notes += (SIZE_ONLY,)
            return Done(True, done.etag, obj=obj, notes=notes, result=said(notes))
        except StoreError as exc:
            # A redelivered move whose source is already gone succeeded earlier if the destination matches.
            if move and exc.code == "NoSuchKey" and destination_already_moved(self.dst, obj, dst.bucket, item.dst_key):
                return Done(True, obj=obj)
            raise

    def _resolve(self, obj: ObjectInfo, head: ObjectHead | None = None) -> ObjectInfo:
        """A manifest row without a size gets one (and its storage class) from a HEAD (the filter's, when it read one);
        listed objects cost nothing."""
        if obj.size != UNKNOWN_SIZE or (head is None and self.job.operation not in NEEDS_HEAD):
            return obj
        head = head or self.store.head_object(self.job.source.bucket, obj.key, version_id=obj.version_id)
        return replace(head.info(obj.key), version_id=obj.version_id)

    def _screen(self, item: Item) -> Verdict:
        """The filters' answer for one object (ops/filters.py). An object gone since it was listed is let through: its
        operation then treats it as it would unfiltered (a delete or a redelivered move finds it done, a copy fails)."""
        assert self.filter is not None
        try:
            return self.filter.judge(self.store, item.obj, head_first=heads_anyway(self.job, item.obj))
        except StoreError as exc:
            if exc.code in {"NoSuchKey", "404", "NotFound"}:
                return Verdict()
            if item.obj.version_id and (exc.code == "MethodNotAllowed" or exc.status == 405):
                # S3's answer for a delete marker's version (a batch message does not say it is one): nothing to match
                return Verdict("filtered out: a delete marker has no tags or content type")
            raise

    def _destination_head(self, bucket: str, key: str) -> ObjectHead | None:
        """The destination object already there, or None; one HEAD."""
        try:
            return self.dst.head_object(bucket, key)
        except StoreError as exc:
            if exc.code in {"NoSuchKey", "404", "NotFound"}:
                return None
            raise

    def _act(self, item: Item, keep_going: Callable[[], bool] = _always, watch: UploadWatch | None = None) -> Done:
        """One object's work: the call(s) its operation needs, nothing more."""
        job, bucket = self.job, self.job.source.bucket
        if job.operation in {"copy", "move"}:
            return self._copy(item, keep_going, watch)
        if job.operation == "delete":
            return Done(True)  # it passed the filters (a filtered delete): the batch deletes it with the others
        obj = self._resolve(item.obj, item.head)
        found = obj if obj is not item.obj else None
        journal = self.keylog is not None  # what a change replaced is read only for the per-key log (s3bulk undo)
        version = obj.version_id
        if job.operation == "abort-uploads":
            return Done(True, result="" if abort_upload(self.store, bucket, obj) else ALREADY_GONE)
        if job.operation == "tag":
            assert job.tagging is not None
            t = tag_object(self.store, bucket, obj.key, job.tagging, journal=journal, version_id=version)
            changed = t.changed and t.before is not None
            return Done(t.changed, undo=undo_entry(bucket, "tags", t.before, t.after, version) if changed else None)
        if job.operation == "restore":
            return Done(restore_object(self.store, bucket, obj, job.restore or Restore()), obj=found)
        if job.operation == "set-retention":
            assert job.retention is not None
            held = retention_doc(self.store.head_object(bucket, obj.key, version_id=version).retention) if journal else None
            set_retention(self.store, bucket, obj.key, job.retention, version_id=version)
            after = retention_doc((job.retention.mode, job.retention.until))
            return Done(True, undo=undo_entry(bucket, "retention", held, after, version) if journal else None)
        if job.operation == "set-legal-hold":
            assert job.legal_hold is not None
            before = self.store.get_legal_hold(bucket, obj.key, version_id=version) if journal else None
            set_legal_hold(self.store, bucket, obj.key, job.legal_hold, version_id=version)
            return Done(True, undo=undo_entry(bucket, "legal_hold", before, job.legal_hold, version) if before is not None else None)
        if job.operation == "set-acl":
            assert job.acl is not None
            # The journal keeps the grants before and after: a canned ACL does not read back as its name.
            prior = acl_doc(self.store.get_acl(bucket, obj.key, version_id=version)) if journal else None
            set_acl(self.store, bucket, obj.key, job.acl, version_id=version)
            if prior is None:
                return Done(True)
            now = acl_doc(self.store.get_acl(bucket, obj.key, version_id=version))
            return Done(True, undo=undo_entry(bucket, "acl", prior, now, version))
        if job.operation == "add-checksum":
            algorithm = job.checksum_algorithm or "CRC64NVME"
            etag = add_checksum(self.store, self.parts, bucket, obj, algorithm, self._in_place, keep_acl=self._acls(bucket), head=item.head)
            return Done(etag is not None, etag or "", obj=found)
        if job.operation == "rewind":
            r = rewind_key(self.store, self.parts, bucket, item.obj, self._in_place, keep_acl=self._acls(bucket))
            before = item.obj.replaces or ""
            return Done(r.changed, r.etag, undo=undo_entry(bucket, REWOUND, before, r.after) if r.changed else None)
        if job.operation == "set-encryption":
            assert job.encryption is not None
            target = target_of(job.encryption)
            e = set_encryption(self.store, self.parts, bucket, obj, target, self._in_place, keep_acl=self._acls(bucket))
            found = replace(e.head.info(obj.key), version_id=version) if obj.size == UNKNOWN_SIZE else None
            if not e.changed:
                return Done(False, obj=found)
            return Done(True, e.etag, obj=found, undo=undo_entry(bucket, "encryption", encryption_doc(e.before), encryption_doc(target)))
        if job.operation == "set-storage-class":
            listed = item.obj.size != UNKNOWN_SIZE  # a manifest row without a size has no class either: the HEAD tells
            if listed and (obj.storage_class or "STANDARD") == job.storage_class:
                return Done(False)  # from the listing: no request
            c = copy_in_place(self.store, self.parts, bucket, obj, self._in_place, item.head, keep_acl=self._acls(bucket))
            found = None if listed else replace(c.head.info(obj.key), version_id=version)
            if c.done is None:
                return Done(False, obj=found)
            before = c.head.storage_class or "STANDARD"
            return Done(True, c.done.etag, obj=found, undo=undo_entry(bucket, "storage_class", before, job.storage_class))
        assert job.operation == "verify" and job.destination is not None
        v = verify_object(self.store, bucket, obj, job.destination.bucket, item.dst_key, self.dst)
        return Done(True, "", v.src_checksum, v.dst_checksum)

    def _object(
        self,
        item: Item,
        tally: Outcomes,
        keylog: KeyLog | None,
        run: BatchRun,
        keep_going: Callable[[], bool] = _always,
        watch: UploadWatch | None = None,
    ) -> tuple[Item | None, bool]:
        """Rounds of `_act` with a pause between them; a move's object is done only when the batch deletes its source,
        so it comes back (confirmed) instead of being counted here. Also says whether the object has its outcome in
        `tally` (not when its endpoint went away or its copy paused: it is handed on)."""
        attempts = 0
        verdict: Verdict | None = None  # the filters' answer, once read: a later round does not ask again
        try:
            for round_ in range(self.job.options.object_retries + 1):
                attempts = round_ + 1
                try:
                    if verdict is None and self.filter is not None and not needs_nothing(self.job, item.obj):
                        verdict = self._screen(item)
                        if verdict.head is not None:
                            item = replace(item, head=verdict.head)
                    if verdict is not None and not verdict.matches:
                        done = Done(False, result=verdict.reason)  # neither done nor failed: skipped, and the key log says why
                        break
                    done = self._act(item, keep_going, watch)
                    if done.obj is not None:
                        item = replace(item, obj=done.obj)
                    for note in done.notes:
                        tally.note(note)
                    break
                except StoreError as exc:
                    if classify(exc) is ErrorKind.PERMANENT or round_ == self.job.options.object_retries:
                        raise
                    if watch is not None and watch.abandoned():
                        raise  # frozen: the object went on to a child batch, which tries it again, not this lane
                    tally.retry()
                    self.sleep(min(ROUND_PAUSE_MAX, ROUND_PAUSE * 2**round_) * random.uniform(0.5, 1.0))
            if self._deletes_later and done.changed:
                return replace(item, dst_etag=done.dst_etag, attempts=attempts, result=done.result), False
            if done.changed:
                tally.succeed(done.bytes if done.bytes is not None else max(item.obj.size, 0))
                if keylog is not None:
                    write_outcome(keylog, item, "succeeded", done, attempts)
            else:
                tally.skip()
                if keylog is not None:
                    write_outcome(keylog, item, "skipped", done, attempts)
        except EndpointUnreachable as exc:
            self._left(exc, run)  # not done, not failed: a resume or a redelivery does it
            return None, False
        except CopyPaused as exc:
            run.pause(replace(item, upload_id=exc.upload_id, attempts=attempts))  # not done: handed on with its upload
            return None, False
        except Exception as exc:  # noqa: BLE001 - every per-object error is reported, never raised
            tally.fail(item.obj.key, error_code(exc), naming_version(item.obj, error_message(exc)))
            write_outcome(keylog, item, "failed", attempts=attempts, error=error_code(exc), message=error_message(exc))
        return None, True

    def _process_task(self, group: list[Item], tally: Outcomes, run: BatchRun) -> None:
        """Rounds of the processor over a group; TemporaryFailure results (and retryable errors) get the next round."""
        assert self.processor is not None
        pending = group
        try:
            if self.filter is not None:
                try:
                    pending = self._admitted(group, tally)
                except EndpointUnreachable as exc:
                    self._left(exc, run)
                    return
                if not pending:
                    return
            for round_ in range(self.job.options.object_retries + 1):
                try:
                    results = self.processor.run([item.obj for item in pending])
                except EndpointUnreachable as exc:
                    self._left(exc, run)
                    return
                except Exception as exc:  # noqa: BLE001 - a processor's own fault fails its objects, never the batch
                    results = [failure(exc)] * len(pending)
                last_round = round_ == self.job.options.object_retries
                again: list[Item] = []
                for item, res in zip(pending, results, strict=True):
                    if res.code == "Succeeded":
                        tally.succeed(max(item.obj.size, 0))
                        write_outcome(self.keylog, item, "succeeded", attempts=round_ + 1, result=res.result)
                    elif res.code == "TemporaryFailure" and not last_round:
                        again.append(item)
                    else:
                        tally.fail(item.obj.key, res.error, res.message)
                        write_outcome(
                            self.keylog, item, "failed", attempts=round_ + 1, error=res.error, message=res.message, result=res.result
                        )
                if not again:
                    return
                pending = again
                for _ in again:
                    tally.retry()
                self.sleep(min(ROUND_PAUSE_MAX, ROUND_PAUSE * 2**round_) * random.uniform(0.5, 1.0))
        finally:
            run.finish()

    def _admitted(self, group: list[Item], tally: Outcomes) -> list[Item]:
        """A process group's objects that pass the filters, each judged in rounds as `_object` acts; the others are
        counted here (skipped, or failed when the filter's own call failed)."""
        kept = []
        for item in group:
            for round_ in range(self.job.options.object_retries + 1):
                try:
                    verdict = self._screen(item)
                    break
                except StoreError as exc:
                    if classify(exc) is not ErrorKind.PERMANENT and round_ < self.job.options.object_retries:
                        tally.retry()
                        self.sleep(min(ROUND_PAUSE_MAX, ROUND_PAUSE * 2**round_) * random.uniform(0.5, 1.0))
                        continue
                    tally.fail(item.obj.key, error_code(exc), naming_version(item.obj, error_message(exc)))
                    write_outcome(self.keylog, item, "failed", attempts=round_ + 1, error=error_code(exc), message=error_message(exc))
                    verdict = None
                    break
            if verdict is None:
                continue
            if verdict.matches:
                kept.append(item)
            else:
                tally.skip()
                write_outcome(self.keylog, item, "skipped", result=verdict.reason)
        return kept
