"""ObjectWriter: stream bytes into a new object with bounded memory.

Up to `threshold` bytes become one PutObject. Past it, the writer starts a
multipart upload and sends `part_size` parts while the caller keeps writing, at
most `in_flight` at a time, so memory stays near `part_size * (in_flight + 1)`
however much is written. Every body carries Content-MD5, so the server refuses
bytes that changed on the way, and a CRC32 (zlib, while streaming): each part its
own, and the object a FULL_OBJECT CRC32 of everything written, which the server
checks at completion and keeps for later verification. Any failure, or leaving the `with` block by an
exception, aborts the upload: no orphaned parts keep costing storage. A shared
`MemoryBudget` (budget.py) caps the parts on the wire of all writers together.

A writer that does not know the total size grows its parts (doubling every
1,000 parts) so 10,000 parts reach S3's 5 TiB limit; one that is told the size
picks a single part size that fits, as the copy path does.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import math
import zlib
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any

from s3bulk.bodies.budget import MemoryBudget
from s3bulk.store import Body, ListedPart, ObjectHead, ObjectStore, StoreError, UploadWatch

MiB = 1024 * 1024
# s3transfer's defaults, which AWS measured and its CLI ships: 8 MiB parts above an 8 MiB threshold.
PART_SIZE = 8 * MiB
THRESHOLD = 8 * MiB
IN_FLIGHT = 4
MIN_PART = 5 * MiB
MAX_PART = 5 * 1024 * MiB
MAX_PARTS = 10_000
PARTS_PER_STEP = 1_000

Submit = Callable[..., "Future[str]"]


# CRC-32's polynomial, reflected: the operator that appends one zero bit (zlib's crc32_combine).
_CRC32_POLY = 0xEDB88320


def _gf2_times(matrix: Sequence[int], vector: int) -> int:
    total, i = 0, 0
    while vector:
        if vector & 1:
            total ^= matrix[i]
        vector >>= 1
        i += 1
    return total


def _gf2_compose(a: Sequence[int], b: Sequence[int]) -> list[int]:
    return [_gf2_times(a, column) for column in b]


@functools.lru_cache(maxsize=16)
def _shift_operator(nbytes: int) -> tuple[int, ...]:
    """The GF(2) operator that appends `nbytes` zero bytes to a CRC-32 (zlib's crc32_combine, as one matrix, so the
    parts of an upload, all of one size, combine at 32 steps each)."""
    op = [1 << n for n in range(32)]
    odd = [_CRC32_POLY] + [1 << (n - 1) for n in range(1, 32)]  # one zero bit
    even = _gf2_compose(odd, odd)  # two
    odd = _gf2_compose(even, even)  # four
    while nbytes:
        even = _gf2_compose(odd, odd)
        if nbytes & 1:
            op = _gf2_compose(even, op)
        nbytes >>= 1
        if not nbytes:
            break
        odd = _gf2_compose(even, even)
        if nbytes & 1:
            op = _gf2_compose(odd, op)
        nbytes >>= 1
    return tuple(op)


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """The CRC-32 of A + B from A's, B's and B's length: a paused upload's parts give the object's running CRC-32."""
    return _gf2_times(_shift_operator(len2), crc1) ^ crc2 if len2 > 0 else crc1


def part_crc32(part: ListedPart) -> int | None:
    """A listed part's CRC-32 (ListParts gives "CRC32:<base64 of 4 bytes>"), None when it has none."""
    if not part.checksum.startswith("CRC32:"):
        return None
    return int.from_bytes(base64.b64decode(part.checksum.removeprefix("CRC32:")), "big")


def part_size_for(number: int, base: int) -> int:
    """Part `number`'s size when the total is unknown: `base`, doubled every 1,000 parts, capped at 5 GiB."""
    return min(base << ((number - 1) // PARTS_PER_STEP), MAX_PART)


# The error a writer's commit raises once its batch run was frozen and the upload handed on (ops/relay.py pauses on it).
ABANDONED = "Abandoned"


class ObjectWriter:
    """Write with `write()`, then `commit()` (or leave a `with` block); `abort()` discards everything."""

    def __init__(
        self,
        store: ObjectStore,
        bucket: str,
        key: str,
        *,
        head: ObjectHead | None = None,
        tags: Mapping[str, str] | None = None,
        storage_class: str | None = None,
        size_hint: int | None = None,
        part_size: int = PART_SIZE,
        threshold: int = THRESHOLD,
        in_flight: int = IN_FLIGHT,
        submit: Submit | None = None,
        budget: MemoryBudget | None = None,
        checksum: bool = True,
        watch: UploadWatch | None = None,
    ) -> None:
        if part_size < MIN_PART:
            raise ValueError(f"part_size must be at least {MIN_PART} bytes (S3's minimum part)")
        self.store, self.bucket, self.key = store, bucket, key
        self.head = head or ObjectHead(0, "")
        self.tags = dict(tags or {})
        self.storage_class = storage_class
        self.threshold = threshold
        self.in_flight = max(1, in_flight)
        self.fixed_part = max(part_size, math.ceil(size_hint / MAX_PARTS / MiB) * MiB) if size_hint else None
        self.base_part = part_size
        self.written = 0
        self.etag = ""
        self.checksum = checksum
        self.crc32 = 0  # of every byte written, in order: the object's full-object CRC32, checked by the server at the end
        self._part_crcs: list[int] = []
        self._buffer = bytearray()
        self._upload_id: str | None = None
        self._parts: list[Future[str]] = []
        self._pending: deque[Future[str]] = deque()
        self._submit = submit
        self._budget = budget
        self._pool: ThreadPoolExecutor | None = None
        self._state = "open"  # open | committed | aborted | paused
        self._watch = watch  # told of the upload and each part; once abandoned, the upload is left to whoever has it

    # -- the file-like side ---------------------------------------------------------------------
    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        """Take the bytes; sends full parts as they fill, blocking while `in_flight` parts are on the wire."""
        if self._state != "open":
            raise ValueError(f"write to a writer that is {self._state}")
        view = memoryview(data).cast("B")
        try:
            self._buffer += view
            self.written += len(view)
            if self.checksum:
                self.crc32 = zlib.crc32(view, self.crc32)
            if self._upload_id is None and len(self._buffer) > self.threshold:
                self._upload_id = self.store.create_multipart_upload(
                    self.bucket, self.key, self.head, self.tags, storage_class=self.storage_class, crc32=self.checksum
                )
                if self._watch is not None:
                    self._watch.upload(self._upload_id)
            if self._upload_id is not None:
                while len(self._buffer) >= self._next_part_size():
                    self._send(self._next_part_size())
        except BaseException:
            self.abort()
            raise
        return len(view)

    @property
    def upload_id(self) -> str:
        """The multipart upload this writer sends to ("" before it opened one)."""
        return self._upload_id or ""

    @property
    def parts(self) -> int:
        """Parts sent so far (a resumed upload's included)."""
        return len(self._parts)

    @property
    def part_size(self) -> int:
        """The size every part but the last has, when the writer was told the total size (size_hint)."""
        return self.fixed_part or self.base_part

    def resume(self, upload_id: str, parts: Sequence[ListedPart]) -> None:
        """Go on with an upload an earlier invocation paused (`pause`): its parts, 1..n of `part_size` each with their
        CRC-32s, count as written, so the caller writes from byte n x part_size on and the object's CRC-32 comes out
        whole."""
        if self._state != "open" or self.written or self._upload_id is not None:
            raise ValueError("resume a writer before anything is written to it")
        self._upload_id = upload_id
        if self._watch is not None:
            self._watch.upload(upload_id)
        for part in parts:
            crc = part_crc32(part)
            if crc is None or part.size != self.part_size:
                raise ValueError(f"part {part.number} is not one of this writer's ({part.size} bytes, {part.checksum or 'no checksum'})")
            done: Future[str] = Future()
            done.set_result(part.etag)
            self._parts.append(done)
            self._part_crcs.append(crc)
            self.crc32 = crc32_combine(self.crc32, crc, part.size)
            self.written += part.size

    def pause(self) -> str:
        """Stop here: wait for the parts sent so far to land and leave the upload open for `resume` in another
        invocation; returns its id. Bytes buffered but not sent are dropped: the resume writes them again."""
        if self._state != "open" or self._upload_id is None:
            raise ValueError("only an open multipart upload can pause")
        try:
            for f in self._parts:
                f.result()  # a part that failed fails the object instead
        except BaseException:
            self.abort()
            raise
        self._state = "paused"  # neither abort() nor commit() touches it any more
        self._buffer = bytearray()
        self._close_pool()
        return self._upload_id

    def flush(self) -> None:
        """Nothing to do: parts go out as they fill (present for wrappers like gzip.GzipFile)."""

    def commit(self) -> str:
        """Send what is left and complete the object; returns its ETag."""
        if self._state == "committed":
            return self.etag
        if self._state != "open":
            raise ValueError(f"commit of a {self._state} writer")
        try:
            if self._upload_id is None:
                self.etag = self.store.write_object(
                    self.bucket,
                    self.key,
                    bytes(self._buffer),
                    self.head,
                    self.tags,
                    storage_class=self.storage_class,
                    crc32=self.crc32 if self.checksum else None,
                )
            else:
                if self._buffer or not self._parts:
                    self._send(len(self._buffer))
                etags = [f.result() for f in self._parts]
                if self._watch is not None and self._watch.abandoned():
                    self._leave()
                    raise StoreError(ABANDONED, "the upload went on to a child batch, which completes it", 409)
                self.etag = self.store.complete_multipart_upload(
                    self.bucket,
                    self.key,
                    self._upload_id,
                    etags,
                    part_crc32s=self._part_crcs,
                    crc32=self.crc32 if self.checksum else None,
                )
        except BaseException:
            self.abort()
            raise
        self._buffer = bytearray()
        self._state = "committed"
        self._close_pool()
        return self.etag

    def abort(self) -> None:
        """Stop sending, wait for parts on the wire, and abort the upload (a lifecycle rule reaps one whose abort fails)."""
        if self._state != "open":
            return
        if self._watch is not None and self._watch.abandoned():
            self._leave()  # the upload is a child batch's now: aborting it would lose the parts the child goes on from
            return
        self._state = "aborted"
        self._buffer = bytearray()
        for f in self._parts:
            f.cancel()
        for f in self._parts:
            if not f.cancelled():
                f.exception()  # no part may land after the abort
        self._close_pool()
        if self._upload_id is not None:
            with contextlib.suppress(StoreError):
                self.store.abort_multipart_upload(self.bucket, self.key, self._upload_id)

    def _leave(self) -> None:
        """Let go of an upload someone else now owns: send nothing more, touch it no more."""
        self._state = "paused"
        self._buffer = bytearray()
        self._close_pool()

    def __enter__(self) -> ObjectWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if kind is None:
            self.commit()
        else:
            self.abort()

    # -- parts ----------------------------------------------------------------------------------
    def _next_part_size(self) -> int:
        return self.fixed_part or part_size_for(len(self._parts) + 1, self.base_part)

    def _send(self, size: int) -> None:
        while len(self._pending) >= self.in_flight:
            self._pending.popleft().result()  # raises the first failed part's error at once
        if len(self._buffer) == size:
            body, self._buffer = self._buffer, bytearray()  # the whole buffer is the part: handed over, not copied
        else:
            with memoryview(self._buffer) as view:
                body = bytearray(view[:size])  # one copy, not a slice and then a copy
            del self._buffer[:size]
        number = len(self._parts) + 1
        assert self._upload_id is not None
        if number > MAX_PARTS:
            raise StoreError("EntityTooLarge", f"over {MAX_PARTS} parts; S3 objects are at most 5 TiB", 400)
        size = len(body)
        if self._budget is not None:
            # Wait only while a part of ours is on the wire (it will finish and give back); with none, go at once.
            self._budget.take(size, holding=lambda: any(not f.done() for f in self._pending), wait=True)
        crc = zlib.crc32(body) if self.checksum else None
        try:
            future = self._start(self._upload_id, number, body, crc)
        except BaseException:
            self._give(size)
            raise
        future.add_done_callback(lambda _f: self._give(size))
        if self._watch is not None:
            future.add_done_callback(self._landed)
        if crc is not None:
            self._part_crcs.append(crc)
        self._parts.append(future)
        self._pending.append(future)

    def _landed(self, f: Future[str]) -> None:
        if self._watch is not None and not f.cancelled() and f.exception() is None:
            self._watch.landed()

    def _give(self, size: int) -> None:
        if self._budget is not None:
            self._budget.give(size)

    def _start(self, upload_id: str, number: int, body: Body, crc: int | None) -> Future[str]:
        upload = functools.partial(self.store.upload_part, crc32=crc)  # the runner's part pool passes positional arguments only
        if self._submit is not None:
            return self._submit(upload, self.bucket, self.key, upload_id, number, body)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.in_flight, thread_name_prefix="s3bulk-write")
        return self._pool.submit(upload, self.bucket, self.key, upload_id, number, body)

    def _close_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def write_stream(writer: ObjectWriter, source: Any, chunk: int = MiB) -> str:
    """Copy bytes (or a binary file object) into `writer` and commit; the writer is aborted on any failure."""
    with writer:
        if isinstance(source, (bytes, bytearray, memoryview)):
            view = memoryview(source).cast("B")
            for at in range(0, len(view), chunk):
                writer.write(view[at : at + chunk])
        else:
            while block := source.read(chunk):
                writer.write(block)
    return writer.etag
