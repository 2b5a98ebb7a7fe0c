"""ObjectReader: an object's bytes as a seekable file, read with ranged GETs pinned to its ETag.

A plain `get_object().read()` holds the whole body and waits for it all; a reader
that sends one small GET per `read()` drowns in round trips. This one reads whole
ranges of `range_size` bytes, each with `If-Match: <etag>`, so a concurrent
overwrite fails loudly instead of mixing two versions. While a caller reads
sequentially, the next `prefetch` ranges are already being fetched in parallel.
A seek elsewhere fetches only what is read, in the caller's thread, and stops
prefetching until reads are sequential again (a zip's directory, then a member).

Memory is bounded by `range_size * (1 + prefetch)` (plus the small buffer of the
`io.BufferedReader` that `open_object` wraps it in), however large the object; a
shared `MemoryBudget` (budget.py) caps the prefetches of all readers together.
The defaults are measured: bench/reader.py and docs/benchmarks-reader.md.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from s3bulk.bodies.budget import MemoryBudget, nothing, something
from s3bulk.store import Body, ObjectHead, ObjectStore, StoreError

MiB = 1024 * 1024
RANGE_SIZE = 8 * MiB
PREFETCH = 4
# The buffered wrapper only saves Python calls for small reads (readline, gzip's 8 KiB reads); the ranges are the real buffer.
WRAPPER_BUFFER = 256 * 1024

Submit = Callable[..., "Future[Body]"]


class ObjectChanged(StoreError):
    """The object was overwritten while it was being read: its ETag no longer matches."""


class ObjectReader(io.RawIOBase):
    """Seekable, read-only; `submit` runs prefetches (a pool of `prefetch` threads of its own when not given).
    `version_id` reads that version (a point-in-time copy's), not the current object."""

    def __init__(
        self,
        store: ObjectStore,
        bucket: str,
        key: str,
        size: int,
        etag: str,
        *,
        range_size: int = RANGE_SIZE,
        prefetch: int = PREFETCH,
        submit: Submit | None = None,
        budget: MemoryBudget | None = None,
        version_id: str = "",
    ) -> None:
        super().__init__()
        if range_size < 1 or prefetch < 0:
            raise ValueError("range_size must be at least 1 and prefetch at least 0")
        self.store, self.bucket, self.key = store, bucket, key
        self.size, self.etag, self.version_id = size, etag, version_id
        self.range_size, self.prefetch = range_size, prefetch
        self.requests = 0  # ranged GETs sent, for tests and the bench
        self._submit = submit
        self._budget = budget
        self._pool: ThreadPoolExecutor | None = None
        self._pos = 0
        self._last = -1  # the range index served last; index 0 next counts as sequential
        self._current: tuple[int, Body] | None = None
        self._window: dict[int, Future[Body]] = {}

    # -- io.RawIOBase -------------------------------------------------------------------------
    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        self._checkClosed()
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._checkClosed()
        if whence == io.SEEK_SET:
            new = offset
        elif whence == io.SEEK_CUR:
            new = self._pos + offset
        elif whence == io.SEEK_END:
            new = self.size + offset
        else:
            raise ValueError(f"invalid whence ({whence}); use io.SEEK_SET, io.SEEK_CUR or io.SEEK_END")
        if new < 0:
            raise ValueError(f"negative seek position {new}")
        self._pos = new
        return new

    def readinto(self, buffer: Any) -> int:
        self._checkClosed()
        if self._pos >= self.size:
            return 0
        index = self._pos // self.range_size
        data = self._range(index)
        offset = self._pos - index * self.range_size
        view = memoryview(buffer).cast("B")
        n = min(len(view), len(data) - offset)
        view[:n] = data[offset : offset + n]
        self._pos += n
        return n

    def close(self) -> None:
        if not self.closed:
            self._drop_window()
            self._let_go_current()
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
        super().close()

    # -- ranges -------------------------------------------------------------------------------
    def _range(self, index: int) -> Body:
        """The bytes of range `index`, from the window when prefetched; then the window moves on."""
        if self._current is not None and self._current[0] == index:
            return self._current[1]
        sequential = index == self._last + 1
        self._last = index
        self._let_go_current()  # before holding a new one
        future = self._window.pop(index, None)
        if not sequential:
            if future is not None:
                self._discard(index, future)
            self._drop_window()
            future = None
        for stale in [i for i in self._window if i < index]:
            self._discard(stale, self._window.pop(stale))
        if future is None:
            self._reserve(index, wait=True)  # the range being read is always granted: every reader progresses
            try:
                data = self._fetch(index)
            except BaseException:
                self._release(index)
                raise
        else:
            try:
                data = future.result()  # its reservation passes to the current range
            except BaseException:
                self._release(index)
                raise
        self._current = (index, data)
        if sequential and self.prefetch:
            last = (self.size - 1) // self.range_size
            for ahead in range(index + 1, min(index + self.prefetch, last) + 1):
                if ahead in self._window:
                    continue
                if not self._reserve(ahead, wait=False):
                    break  # the budget is short: read ahead later, in order
                self._window[ahead] = self._start(ahead)
        return data

    def _bytes(self, index: int) -> int:
        return min(self.range_size, self.size - index * self.range_size)

    def _reserve(self, index: int, *, wait: bool) -> bool:
        if self._budget is None:
            return True
        return self._budget.take(self._bytes(index), holding=nothing if wait else something, wait=wait)

    def _release(self, index: int) -> None:
        if self._budget is not None:
            self._budget.give(self._bytes(index))

    def _let_go_current(self) -> None:
        if self._current is not None:
            self._release(self._current[0])
            self._current = None

    def _fetch(self, index: int) -> Body:
        first = index * self.range_size
        last = min(first + self.range_size, self.size) - 1
        self.requests += 1
        try:
            return self.store.read_range(self.bucket, self.key, first, last, self.etag, version_id=self.version_id)
        except StoreError as exc:
            if exc.code == "PreconditionFailed" or exc.status == 412:
                raise ObjectChanged(
                    "PreconditionFailed",
                    f"s3://{self.bucket}/{self.key} changed while it was read (its ETag is no longer {self.etag}); rerun to read the new version",
                    412,
                ) from exc
            raise

    def _start(self, index: int) -> Future[Body]:
        if self._submit is not None:
            return self._submit(self._fetch, index)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.prefetch, thread_name_prefix="s3bulk-read")
        return self._pool.submit(self._fetch, index)

    def _drop_window(self) -> None:
        while self._window:
            self._discard(*self._window.popitem())

    def _discard(self, index: int, future: Future[Body]) -> None:
        """Cancel a prefetch; one already running is waited for, so dropped ranges never add to memory."""
        if not future.cancel():
            future.exception()
        self._release(index)


def open_object(
    store: ObjectStore,
    bucket: str,
    key: str,
    *,
    head: ObjectHead | None = None,
    range_size: int = RANGE_SIZE,
    prefetch: int = PREFETCH,
    submit: Submit | None = None,
    budget: MemoryBudget | None = None,
    version_id: str = "",
) -> io.BufferedReader:
    """The object (or its version `version_id`) as a buffered binary file; one HEAD when its size and ETag are not given."""
    head = head or store.head_object(bucket, key, version_id=version_id)
    raw = ObjectReader(
        store,
        bucket,
        key,
        head.size,
        head.etag,
        range_size=range_size,
        prefetch=prefetch,
        submit=submit,
        budget=budget,
        version_id=version_id,
    )
    return io.BufferedReader(raw, buffer_size=min(WRAPPER_BUFFER, range_size))
