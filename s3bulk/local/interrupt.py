"""Ctrl-C (SIGINT) and SIGTERM as a request to stop, not an exception at an arbitrary line.

Why: a KeyboardInterrupt raised wherever the main thread happens to be can land inside
the engine's own stop path. `timeout -s INT` delivers SIGINT twice (to the process and
to its group), and the second KeyboardInterrupt then escaped the engine while workers
still ran: the ledger was closed under them, and a move's finished batch (sources
already deleted) was never recorded. So while a job runs, a signal only sets an event;
the engine stops taking objects, lets the ones in flight finish and commit, and writes
the summary and report. Before the job starts (parsing, opening stores), the first
signal raises KeyboardInterrupt as usual, and any further one only sets the event.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TypeVar

T = TypeVar("T")
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(Exception):
    """A stop was asked for while a step that changes nothing (a count, a sample) was running."""


class Interrupt:
    """The stop request: an event the engine polls, and whether a signal may still raise KeyboardInterrupt."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.deferred = False  # True while a job runs: a signal only sets the event
        self.signals = 0

    def is_set(self) -> bool:
        return self.event.is_set()

    def request(self) -> None:
        """Ask the running job to stop (what a signal does while the job runs; tests call it directly)."""
        self.event.set()

    def handle(self, signum: int, frame: FrameType | None) -> None:
        self.signals += 1
        self.event.set()
        if not self.deferred:
            self.deferred = True  # a second signal (timeout's group delivery, a double Ctrl-C) must not raise inside the first's handling
            raise KeyboardInterrupt
        if self.signals == 2:
            print(
                "stopping: the objects in flight finish and are recorded, then the summary and report are written "
                "(kill -9 is safe too: --resume redoes unfinished batches)",
                file=sys.stderr,
                flush=True,
            )

    @contextmanager
    def defer(self) -> Iterator[Interrupt]:
        """While inside, a signal only sets the event (the job's own loop stops it)."""
        before, self.deferred = self.deferred, True
        try:
            yield self
        finally:
            self.deferred = before


@contextmanager
def handling_signals(interrupt: Interrupt) -> Iterator[Interrupt]:
    """Route SIGINT and SIGTERM to `interrupt` (main thread only; elsewhere the process's handlers stay)."""
    if threading.current_thread() is not threading.main_thread():
        yield interrupt
        return
    old = {sig: signal.signal(sig, interrupt.handle) for sig in SIGNALS}
    try:
        yield interrupt
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def interruptible(interrupt: Interrupt | None, step: Callable[[], T], poll: float = 0.1) -> T:
    """Run a step that only reads (a count, a sample) so that a stop request ends the wait at once.

    The step runs on a daemon thread; if a stop is asked for, it is left to end with the
    process (it changes nothing) and Interrupted is raised.
    """
    if interrupt is None:
        return step()
    result: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            result.append(step())
        except BaseException as exc:  # noqa: BLE001 - re-raised on the caller's thread
            error.append(exc)

    thread = threading.Thread(target=target, name="s3bulk-step", daemon=True)
    thread.start()
    while thread.is_alive():
        if interrupt.event.wait(poll) and thread.is_alive():
            raise Interrupted
        thread.join(poll)
    if error:
        raise error[0]
    return result[0]
