"""A bounded executor: a semaphore in front of a ThreadPoolExecutor (as s3transfer's futures.py).

The semaphore caps tasks in flight, so a producer that lists millions of keys
blocks instead of queueing them all in memory.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class BoundedExecutor:
    def __init__(self, max_workers: int, max_in_flight: int | None = None, name: str = "s3bulk") -> None:
        self.max_workers = max_workers
        self._slots = threading.BoundedSemaphore(max_in_flight or 2 * max_workers)
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix=name)

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Blocks while the executor is full."""
        self._slots.acquire()
        try:
            future = self._pool.submit(fn, *args)
        except BaseException:
            self._slots.release()
            raise
        future.add_done_callback(lambda _f: self._slots.release())
        return future

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)

    def __enter__(self) -> BoundedExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
