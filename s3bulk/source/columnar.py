"""Parquet and ORC manifests: an S3 Inventory's columnar data files, or a Parquet object list.

pyarrow is imported only here and only when such a file is read, so nothing else (the
worker's Lambda, whose asset does not carry it) ever loads it; a runtime without it gets
a ColumnarError (the manifest reader's one-line ManifestError) saying so, never an ImportError.

Bounded memory: the file is read through ranged GETs (RangedFile), the footer first, then
one row group (Parquet) or stripe (ORC) at a time, only the columns a row needs. A row's
position is (data file, row group, row in the group), so a resume opens the file at the
group it stopped in without reading the groups before it.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Generator, Iterator
from datetime import UTC, datetime
from typing import Any, NamedTuple, Protocol
from urllib.parse import quote_plus

from s3bulk.store import ObjectHead, StoreError

# A record number in a position is group * GROUP_ROWS + row (1-based), in the 12 digits position() writes.
GROUP_ROWS = 10**8
MAX_GROUPS = 10**12 // GROUP_ROWS
# A read that starts this far past the open GET's position reads on through the gap instead of opening another.
SKIP_BYTES = 1024 * 1024
BATCH_ROWS = 4096
# The columns a row is made of, named as the CSV inventory's fileSchema names them; a columnar file's names
# (an inventory's bucket, version_id, e_tag ..., or an object list's Bucket, Key, VersionId) map to them.
FIELDS = ("Bucket", "Key", "VersionId", "IsLatest", "IsDeleteMarker", "Size", "LastModifiedDate", "ETag", "StorageClass")
_CANONICAL = {f.lower(): f for f in FIELDS} | {"version": "VersionId"}
FORMATS = {"PARQUET": "Parquet", "ORC": "ORC"}


class ColumnarError(Exception):
    """A data file that cannot be read as a whole; str() is the one-line message naming it and the fix."""


class Files(Protocol):
    """Where the data files are: an object store, or the local disk (manifest.ManifestFiles)."""

    def head_object(self, bucket: str, key: str, *, version_id: str = "") -> ObjectHead: ...

    def read_object(self, bucket: str, key: str, start: int = 0) -> Iterator[bytes]: ...


class Entry(NamedTuple):
    """One row: its record number (group * GROUP_ROWS + row), where it is, and its fields as a CSV inventory writes them."""

    record: int
    row: int
    at: str
    ref: str
    values: list[str]


def canonical(name: str) -> str | None:
    """The row field a column feeds: case and underscores aside, so `e_tag`, `ETag` and `etag` are one."""
    return _CANONICAL.get(name.lower().replace("_", ""))


def split(record: int) -> tuple[int, int]:
    """A record number as (group, rows of it already passed)."""
    return divmod(record, GROUP_ROWS)


class RangedFile(io.RawIOBase):
    """A seekable, read-only file over an object, read by ranged GETs from `opener(start)`.

    A read continues the open GET when it starts where (or a little after where) the last
    one ended, so a row group's column chunks, read in order, cost one request; a jump
    closes it and opens another at the new offset. Never more than one chunk is held.
    """

    def __init__(self, opener: Callable[[int], Generator[bytes, None, None]], size: int) -> None:
        self._open = opener
        self._size = size
        self._pos = 0
        self._stream: Generator[bytes, None, None] | None = None
        self._at = 0  # the offset of the open GET's next byte (after `_buf`'s)
        self._buf = memoryview(b"")
        self.requests = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        want = min(len(buffer), self._size - self._pos)
        if want <= 0:
            return 0
        self._position_stream()
        got = 0
        while got < want:
            if not self._buf:
                assert self._stream is not None
                chunk = next(self._stream, None)
                if chunk is None:
                    break
                self._buf = memoryview(chunk)
            n = min(want - got, len(self._buf))
            buffer[got : got + n] = self._buf[:n]
            self._buf = self._buf[n:]
            got += n
        self._pos += got
        return got

    def _position_stream(self) -> None:
        """Make the open GET's next byte the one at `_pos`: skip ahead a little, or open a new GET there."""
        buffered = self._at - len(self._buf)  # the offset of _buf's first byte
        if self._stream is not None and buffered <= self._pos <= buffered + SKIP_BYTES:
            gap = self._pos - buffered
            while gap:
                if not self._buf:
                    chunk = next(self._stream, None)
                    if chunk is None:
                        break
                    self._buf = memoryview(chunk)
                    self._at += len(chunk)
                n = min(gap, len(self._buf))
                self._buf, gap = self._buf[n:], gap - n
            if not gap:
                return
        self.close_stream()
        self._stream = self._counting(self._open(self._pos))
        self._at = self._pos
        self.requests += 1

    def _counting(self, chunks: Generator[bytes, None, None]) -> Generator[bytes, None, None]:
        try:
            for chunk in chunks:
                self._at += len(chunk)
                yield chunk
        finally:
            chunks.close()

    def close_stream(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        self._buf = memoryview(b"")

    def close(self) -> None:
        self.close_stream()
        super().close()


def _pyarrow(fmt: str, where: str) -> Any:
    try:
        if fmt == "ORC":
            import pyarrow.orc as module
        else:
            import pyarrow.parquet as module
    except ImportError:
        raise ColumnarError(
            f"{where}: reading a {FORMATS[fmt]} manifest needs pyarrow, which this runtime does not carry; "
            "install s3bulk's requirements.txt (on the stack only the Lister function carries it)"
        ) from None
    return module


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:200] or type(exc).__name__


def file_rows(
    files: Files, bucket: str, key: str, where: str, fmt: str, skip: int, *, object_list: bool, fields: list[str]
) -> Iterator[Entry]:
    """The rows of one Parquet or ORC data file after record `skip`, one row group (stripe) read at a time.

    `fields` is filled, before the first row, with the FIELDS the values hold, in their order.
    """
    module = _pyarrow(fmt, where)
    try:
        size = files.head_object(bucket, key).size
    except StoreError as exc:
        raise ColumnarError(f"manifest {where} could not be read: {exc.code}: {exc.message}") from exc
    what, group_name = FORMATS[fmt], "stripe" if fmt == "ORC" else "row group"
    fix = f"replace it, or give the format it is in ({'format' if object_list else 'fileFormat'})"

    def opener(start: int) -> Generator[bytes, None, None]:
        try:
            yield from files.read_object(bucket, key, start)
        except StoreError as exc:
            raise ColumnarError(f"manifest {where} could not be read: {exc.code}: {exc.message}") from exc

    f = RangedFile(opener, size)
    try:
        try:
            if fmt == "ORC":
                table: Any = module.ORCFile(f)
                names, groups = table.schema.names, table.nstripes
            else:
                table = module.ParquetFile(f, pre_buffer=True)  # a row group's column chunks in coalesced reads
                names, groups = table.schema_arrow.names, table.num_row_groups
        except (OSError, ValueError, EOFError) as exc:  # pyarrow's ArrowInvalid is a ValueError, ArrowIOError an OSError
            raise ColumnarError(f"{where}: not a readable {what} file ({_one_line(exc)}); {fix}") from None
        columns = {canonical(n): n for n in reversed(names) if canonical(n)}
        if "Bucket" not in columns or "Key" not in columns:
            raise ColumnarError(f"{where}: its columns {names[:12]!r} include no bucket and key; name them bucket, key (and version_id)")
        if groups > MAX_GROUPS:
            raise ColumnarError(f"{where}: {groups} {group_name}s, over {MAX_GROUPS}; rewrite it with fewer, larger ones")
        # An object list names objects (and versions) only, as a JSONL one does; an inventory's rows carry the rest too.
        fields[:] = [c for c in FIELDS[: 3 if object_list else None] if c in columns]
        key_at, wanted = fields.index("Key"), [columns[c] for c in fields]
        first_group, passed = split(skip)
        for group in range(first_group, groups):
            row = 0
            batches = _group_batches(table, fmt, group, wanted)
            while True:
                try:
                    batch = next(batches, None)
                except (OSError, ValueError, EOFError) as exc:
                    raise ColumnarError(f"{where}: {what} {group_name} {group} is not readable ({_one_line(exc)}); {fix}") from None
                if batch is None:
                    break
                values = [_strings(_python(batch.column(name))) for name in wanted]  # by name: ORC keeps the file's order
                values[key_at] = [quote_plus(k, safe="/", errors="surrogatepass") for k in values[key_at]]
                if row + batch.num_rows >= GROUP_ROWS:
                    raise ColumnarError(f"{where}: a {group_name} of over {GROUP_ROWS - 1} rows; rewrite it with smaller ones")
                for entry in zip(*values, strict=True):
                    row += 1
                    if group == first_group and row <= passed:
                        continue
                    at, ref = f"{group_name} {group} row {row}", f"{where}#group={group}&row={row}"
                    yield Entry(group * GROUP_ROWS + row, row, at, ref, list(entry))
    finally:
        f.close()


def _group_batches(table: Any, fmt: str, group: int, names: list[str]) -> Iterator[Any]:
    if fmt == "ORC":
        yield table.read_stripe(group, columns=names)
    else:
        yield from table.iter_batches(batch_size=BATCH_ROWS, row_groups=[group], columns=names, use_threads=False)


def _python(column: Any) -> list[Any]:
    """A column's values as Python objects; times as UTC microseconds without a zone (datetime holds no nanoseconds,
    and pyarrow looks the zone up again for every value of a zoned time, which was most of the read's time)."""
    kind = column.type
    if hasattr(kind, "tz") and hasattr(kind, "unit"):
        import pyarrow as pa

        column = column.cast(pa.timestamp("us"), safe=False)
    values: list[Any] = column.to_pylist()
    return values


def _strings(values: list[Any]) -> list[str]:
    """Column values as the CSV inventory writes them, so one row check serves both; keys are URL-encoded for it."""
    return [_string(v) for v in values]


def _string(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        # An ORC timestamp carries no zone; S3 Inventory writes UTC.
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)
