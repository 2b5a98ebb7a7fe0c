"""One batch's run: which of its items are taken, finished, confirmed or paused, and the step that closes it.

The thread that finishes the batch's last task runs its closing step. A run with a deadline (the stack's worker) can be
cut (no more items taken) or frozen (stop waiting for items still in flight): what finished is counted once, and the
rest is handed on (Frozen) as a child batch.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from s3bulk.ops.items import Item
from s3bulk.report import Counted, Outcomes
from s3bulk.report.keylog import KeyBlock


@dataclass(frozen=True, slots=True)
class Frozen:
    """A run stopped mid-batch (BatchRun.freeze): how many items have their outcome in the tally, and the rest."""

    counted: int
    untaken: list[Item]  # no lane took them
    paused: list[Item]  # multipart copies paused with their upload open
    inflight: list[Item]  # a lane was still working them: their outcome is unknown, and they may or may not have acted
    # Of those, the ones a lane had been working at least `strike_after` (BatchRun.freeze): an object taken a moment
    # before the freeze is not to blame for it, and is handed on without a strike.
    long: list[Item] = field(default_factory=list)

    @property
    def rest(self) -> list[Item]:
        return self.paused + self.inflight + self.untaken


class ItemWatch:
    """One object's multipart copy reporting to its run (ops/copies.UploadWatch): the upload it holds open, and when a
    part last landed. A freeze hands the upload on with the object, and strikes it only if it made no progress."""

    __slots__ = ("_key", "_run")

    def __init__(self, run: BatchRun, key: int) -> None:
        self._run, self._key = run, key

    def upload(self, upload_id: str) -> None:
        self._run._note(self._key, upload_id)

    def landed(self) -> None:
        self._run._note(self._key, None)

    def abandoned(self) -> bool:
        return self._run._frozen


# A lane adds what it finished to the batch's tally at least this often, so a run frozen mid-batch keeps it.
FLUSH_EVERY_S = 1.0


class BatchRun:
    """Tracks one batch's tasks; the thread that finishes the last one runs the batch's closing step.

    The batch is whole when every task was submitted (`seal`) and no task left items of it untaken (`cut`).
    """

    def __init__(
        self,
        closing: Callable[[list[Item]], None] | None,
        on_complete: Callable[[], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        self._closing = closing
        self._on_complete = on_complete
        self._on_error = on_error
        self._lock = threading.Lock()
        self._open = 0
        self._sealed = False
        self._all_submitted = False
        self._closed = False
        self._abandoned = False
        self._cut = False
        self._confirmed: list[Item] = []
        self._done = threading.Event()
        # What a cut run never started, once it has ended (None: this kind of batch cannot be split, e.g. a delete,
        # or a local move, whose closing deletes sources only for a whole batch).
        self._untaken: Callable[[], list[Item]] | None = None
        # A move handed on in part (the stack): its closing deletes the sources of the copies it confirmed even when
        # the batch was cut, and the rest goes on in a child batch.
        self._partial = False
        self._paused: list[Item] = []  # objects whose multipart copy paused: each carries its open upload
        # Lanes can be frozen mid-run (see freeze) where the rest can be handed on: they flush what they finished now
        # and then, and these are the items whose outcomes are in the tally so far (and a move's confirmed copies).
        self._freezable = False
        self._frozen = False
        self._flushed: list[Item] = []
        self._published: list[Item] = []
        self._began: dict[int, float] = {}  # id(item) -> when a lane took it, while the lane works it
        self._uploads: dict[int, str] = {}  # id(item) -> the multipart upload its copy holds open, while worked
        self._landed: dict[int, float] = {}  # id(item) -> when a part of its copy last landed, while worked
        self._todo: Sequence[Item] = ()
        self._queue: deque[Item] | None = None

    def pause(self, item: Item) -> None:
        """An object's copy paused with its upload open: not done, handed on (untaken) with the upload to go on with."""
        with self._lock:
            self._paused.append(item)
            self._cut = True
            self._all_submitted = False

    @property
    def paused(self) -> int:
        """Objects this run advanced without finishing (multipart copies paused part way)."""
        with self._lock:
            return len(self._paused)

    def add(self, n: int = 1) -> None:
        with self._lock:
            self._open += n

    def seal(self, all_submitted: bool) -> None:
        """No more tasks will be added; `all_submitted` says whether every item got one."""
        with self._lock:
            self._sealed = True
            self._all_submitted = all_submitted and not self._cut
            last = self._open == 0
        if last:
            self._close()

    def cut(self) -> None:
        """A task stopped (deadline, outage, halt) with items of the batch not taken: the batch will not complete."""
        with self._lock:
            self._cut = True
            self._all_submitted = False

    def abandon(self) -> None:
        """A task left its objects not done (their endpoint is unreachable): the batch will not complete."""
        with self._lock:
            self._abandoned = True

    def finish(self, confirmed: Sequence[Item] = ()) -> None:
        with self._lock:
            self._confirmed += confirmed
            self._open -= 1
            last = self._sealed and self._open == 0
        if last:
            self._close()

    def _close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            frozen = self._frozen  # the freeze ran the closing on what was confirmed by then; the rest is handed on
        try:
            whole = self._all_submitted or self._partial
            if self._closing is not None and whole and self._confirmed and not self._abandoned and not frozen:
                self._closing(self._confirmed)
            if self._on_complete is not None and self._all_submitted and not self._abandoned:  # the closing may abandon it
                self._on_complete()
        except Exception as exc:
            # Whichever thread closes the batch (a pool thread, or the caller's when its tasks all ended before the
            # seal), a failed closing step (a commit, the sources' deletes) reaches the runner, never a lost future.
            if self._on_error is None:
                raise
            self._on_error(exc)
        finally:
            self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def flush(
        self, tally: Outcomes, counted: Counted, lines: KeyBlock | None, finished: list[Item], confirmed: Sequence[Item] = ()
    ) -> bool:
        """A lane's outcomes so far into the batch's tally and key log, with the items they are of (and a move's copies
        confirmed since, whose sources a freeze deletes); False (and nothing written) once the run is frozen: those
        items are handed on instead."""
        with self._lock:
            if self._frozen:
                return False
            if counted:
                tally.merge(counted)
            if lines is not None:
                lines.close()
            if self._freezable:
                self._flushed += finished
                self._published += confirmed
            return True

    def taking(self, item: Item) -> None:
        """A lane starts on `item` (a freeze tells how long each object in flight has been worked)."""
        if self._freezable:
            with self._lock:
                self._began[id(item)] = time.monotonic()

    def left(self, item: Item) -> None:
        """A lane is done working `item` (its outcome may wait for the lane's next flush): a freeze gives it no strike."""
        if self._freezable:
            with self._lock:
                self._began.pop(id(item), None)
                self._uploads.pop(id(item), None)
                self._landed.pop(id(item), None)

    def watch(self, item: Item) -> ItemWatch | None:
        """What the lane working `item` hands its copy to report on (None when this run cannot be frozen)."""
        return ItemWatch(self, id(item)) if self._freezable else None

    def _note(self, key: int, upload_id: str | None) -> None:
        with self._lock:
            if key not in self._began:
                return  # the lane is done with it (or the run froze and moved on): nothing to hand on
            if upload_id is not None:
                self._uploads[key] = upload_id
            else:
                self._landed[key] = time.monotonic()

    def freeze(self, strike_after: float = 0.0) -> Frozen | None:
        """Stop the run where it stands, its slow objects still in flight: the tally keeps exactly the outcomes flushed
        so far, nothing more is written to it, and the rest of the batch is told apart. A move's copies confirmed by
        the last flush have their sources deleted and counted here, in the caller's thread. None when this batch
        cannot be split (a delete, a process group, a local move): it can only be waited for."""
        with self._lock:
            if not self._freezable or self._done.is_set():
                return None
            self._frozen = True
            queue = self._queue if self._queue is not None else deque()
            untaken = list(queue)
            queue.clear()  # no lane takes another
            paused = list(self._paused)
            confirmed = list(self._published) if self._closing is not None else []
            gone = {id(i) for i in self._flushed} | {id(i) for i in untaken}
            # Paused copies are handed on with their upload, confirmed copies are moved now (both are copies of the
            # batch's items, so told by key); any other item a lane took and did not flush was in flight.
            taken = {(i.obj.key, i.obj.version_id) for i in paused + confirmed}
            inflight = [i for i in self._todo if id(i) not in gone and (i.obj.key, i.obj.version_id) not in taken]
            counted = len(self._flushed)
            now = time.monotonic()
            # Only an object a lane is working now can be to blame: one it finished and has not flushed yet is handed
            # on (its outcome is not in the tally) without a strike.
            # A strike goes to an object worked at least `strike_after` with no part of it landing in that time:
            # progress, not presence. One whose copy holds an upload is handed on with it, so the child goes on from
            # its parts (ListParts) instead of opening another.
            handed: list[Item] = []
            long: list[Item] = []
            for i in inflight:
                upload = self._uploads.get(id(i), "")
                on = replace(i, upload_id=upload) if upload else i
                handed.append(on)
                if id(i) in self._began and now - max(self._began[id(i)], self._landed.get(id(i), 0.0)) >= strike_after:
                    long.append(on)
            inflight = handed
        if confirmed and self._closing is not None:
            self._closing(confirmed)  # deletes and counts into the tally directly: a flush would be refused now
        return Frozen(counted + len(confirmed), untaken, paused, inflight, long)

    def untaken(self) -> list[Item] | None:
        """After wait(): the items no task took (a deadline or halt cut the batch), each of which has no outcome, while
        every other item has its final one; None when the batch cannot be split that way."""
        if self._untaken is None:
            return None
        with self._lock:
            paused = list(self._paused)
        return paused + self._untaken()

    @property
    def complete(self) -> bool:
        """Every item of the batch has its final outcome in the tally."""
        return self._done.is_set() and self._all_submitted and not self._abandoned
