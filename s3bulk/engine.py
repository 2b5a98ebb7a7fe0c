"""Runs a job in one process: a lister thread streams batches, a bounded pool works them.

The same batch functions (work_batch) serve the Lambda worker; only the way
batches arrive differs.
"""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from s3bulk.copies import CopySettings, copy_object
from s3bulk.delete import delete_keys
from s3bulk.errors import error_code, error_message
from s3bulk.executor import BoundedExecutor
from s3bulk.job import Job
from s3bulk.listing import batched, iter_objects, mark_existing
from s3bulk.move import confirm_copy
from s3bulk.report import Report, Tally
from s3bulk.selection import KeyMapper, Selector
from s3bulk.store import KeyFailure, ObjectInfo, ObjectStore

# One process with 32 threads reaches ~950 copies/s against a local server and
# ~915/s at +20 ms; 128 threads add nothing (client CPU bound). See docs/architecture.md.
DEFAULT_CONCURRENCY = 32
# Part copies of large objects run on their own small pool so they never wait
# behind (or deadlock with) the object tasks that submit them.
PART_WORKERS = 8
# Batches queued between the lister and the workers: enough to never starve the
# pool, few enough that memory does not grow with the bucket.
QUEUE_BATCHES = 4


@dataclass(frozen=True, slots=True)
class Item:
    """One object of a batch and, for copy/move, where it goes."""

    obj: ObjectInfo
    dst_key: str = ""
    exists: bool = False


def resolve_concurrency(job: Job, override: int | None = None) -> int:
    return override or job.options.concurrency or DEFAULT_CONCURRENCY


def connections_needed(concurrency: int) -> int:
    """max_pool_connections for the client: one per object worker and per part worker."""
    return concurrency + PART_WORKERS


def new_job_id(job: Job) -> str:
    if job.job_id:
        return job.job_id
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{job.operation}-{stamp}-{uuid.uuid4().hex[:8]}"


class Engine:
    def __init__(self, job: Job, store: ObjectStore, *, concurrency: int | None = None, job_id: str | None = None) -> None:
        self.job = job
        self.store = store
        self.job_id = job_id or new_job_id(job)
        self.concurrency = resolve_concurrency(job, concurrency)
        self.tally = Tally()
        self._stop = threading.Event()
        self._listing_error: BaseException | None = None
        self._selector = Selector(job.source)
        dst = job.destination
        self._map = KeyMapper(job.source, dst) if dst else None
        self._copy = CopySettings(job.options.multipart_threshold, job.options.part_size, dst.storage_class if dst else None)

    # -- listing -----------------------------------------------------------------------------
    def _selected(self) -> Iterator[ObjectInfo]:
        src = self.job.source
        for obj in iter_objects(self.store, src.bucket, src.prefix):
            self.tally.scan()
            if self._selector.matches(obj):
                self.tally.list(obj.size)
                yield obj

    def _items(self) -> Iterator[Item]:
        if self._map is None:
            return (Item(obj) for obj in self._selected())
        mapper = self._map
        pairs = ((obj, mapper(obj.key)) for obj in self._selected())
        dst = self.job.destination
        if self.job.options.if_exists == "skip" and dst is not None:
            existing = iter_objects(self.store, dst.bucket, dst.prefix)
            return (Item(o, k, e) for o, k, e in mark_existing(pairs, existing))
        return (Item(o, k) for o, k in pairs)

    def _produce(self, out: queue.Queue[list[Item] | None]) -> None:
        try:
            for batch in batched(self._items(), self.job.options.batch_size):
                while not self._stop.is_set():
                    try:
                        out.put(batch, timeout=0.2)
                        break
                    except queue.Full:
                        continue
                if self._stop.is_set():
                    return
            self.tally.finish_listing()
        except BaseException as exc:  # noqa: BLE001 - reported as the job's error
            self._listing_error = exc
        finally:
            out.put(None)

    # -- running -----------------------------------------------------------------------------
    def run(self) -> Report:
        started = time.monotonic()
        batches: queue.Queue[list[Item] | None] = queue.Queue(maxsize=QUEUE_BATCHES)
        lister = threading.Thread(target=self._produce, args=(batches,), name="s3bulk-lister", daemon=True)
        lister.start()
        interrupted = False
        # The part pool is entered first (exits last) so it outlives the object tasks that feed it.
        with (
            BoundedExecutor(PART_WORKERS, max_in_flight=4 * PART_WORKERS, name="s3bulk-part") as parts,
            BoundedExecutor(self.concurrency, name="s3bulk-worker") as pool,
        ):
            try:
                while (batch := batches.get()) is not None:
                    self._dispatch(batch, pool, parts)
            except BaseException as exc:
                self._stop.set()
                pool.shutdown(wait=True, cancel_futures=True)
                while batches.get() is not None:  # let the lister reach its end marker
                    pass
                if not isinstance(exc, KeyboardInterrupt):
                    raise
                interrupted = True
        lister.join()
        return self._report(time.monotonic() - started, interrupted)

    def stop(self) -> None:
        """Stop listing; tasks already submitted finish."""
        self._stop.set()

    def _dispatch(self, batch: list[Item], pool: BoundedExecutor, parts: BoundedExecutor) -> None:
        todo = []
        for item in batch:
            if item.exists:
                self.tally.skip()
            else:
                todo.append(item)
        if self.job.options.dry_run or not todo:
            return
        if self.job.operation == "delete":
            pool.submit(work_delete, self.store, self.job.source.bucket, todo, self.tally)
            return
        tracker = _MoveBatch(len(todo)) if self.job.operation == "move" else None
        for item in todo:
            pool.submit(self._copy_task, item, parts, tracker)

    def _copy_task(self, item: Item, parts: BoundedExecutor, tracker: _MoveBatch | None) -> None:
        dst = self.job.destination
        assert dst is not None
        src_bucket = self.job.source.bucket
        ok = False
        try:
            done = copy_object(self.store, parts, src_bucket, item.obj, dst.bucket, item.dst_key, self._copy)
            if tracker is not None:
                confirm_copy(self.store, item.obj, dst.bucket, item.dst_key, done)
            ok = True
        except Exception as exc:  # noqa: BLE001 - every per-object error is reported
            self.tally.fail(item.obj.key, error_code(exc), error_message(exc))
        if tracker is None:
            if ok:
                self.tally.succeed(item.obj.size)
            return
        confirmed = tracker.finish(item if ok else None)
        if confirmed is not None:  # this thread finished the batch's last copy
            work_delete(self.store, src_bucket, confirmed, self.tally, moved=True)

    def _report(self, seconds: float, interrupted: bool) -> Report:
        error = None
        if interrupted:
            error = "interrupted before the job finished; counts cover the work done"
        elif self._listing_error is not None:
            exc = self._listing_error
            error = f"listing s3://{self.job.source.bucket}/{self.job.source.prefix} failed: {error_code(exc)}: {error_message(exc)}"
        s = self.tally.snapshot()
        if self.job.options.dry_run and error is None:
            status = "dry-run"
        elif error is None and s.failed == 0:
            status = "succeeded"
        else:
            status = "failed"
        return Report(self.job_id, self.job.operation, status, self.tally, seconds, self.store.retries, error, interrupted)


class _MoveBatch:
    """Collects a batch's confirmed copies; the last finisher deletes their sources in one request."""

    def __init__(self, pending: int) -> None:
        self._pending = pending
        self._confirmed: list[Item] = []
        self._lock = threading.Lock()

    def finish(self, confirmed: Item | None) -> list[Item] | None:
        with self._lock:
            if confirmed is not None:
                self._confirmed.append(confirmed)
            self._pending -= 1
            return self._confirmed if self._pending == 0 else None


def work_delete(store: ObjectStore, bucket: str, items: Sequence[Item], tally: Tally, *, moved: bool = False) -> None:
    """Delete a batch's keys; for a move, a key counts as done only once its source is gone."""
    sizes = {item.obj.key: item.obj.size for item in items}
    failed: dict[str, KeyFailure] = {}
    for start in range(0, len(items), 1000):
        chunk = [item.obj.key for item in items[start : start + 1000]]
        for key_failure in delete_keys(store, bucket, chunk):
            failed[key_failure.key] = key_failure
    for key, size in sizes.items():
        failure = failed.get(key)
        if failure is None:
            tally.succeed(size)
        else:
            note = "copied, but the source could not be deleted: " if moved else ""
            tally.fail(key, failure.code, note + failure.message)
