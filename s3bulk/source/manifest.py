"""Manifest input: the objects a job acts on, read from a CSV or an S3 Inventory report instead of a listing.

Formats follow S3 Batch Operations, so a manifest made for it works here unchanged:
- csv: rows of bucket,key[,version_id] with URL-encoded keys (plain or gzip).
- inventory: an S3 Inventory manifest.json whose CSV (gzip), ORC or Parquet data files hold the rows.
- jsonl, parquet: object lists as Step Functions' Distributed Map reads them (columnar files: s3bulk/source/columnar.py).

Everything streams: one data file is open at a time and rows are yielded as the CSV
reader produces them, so a manifest of any size costs no memory. A row that cannot be
used becomes a Row with a problem (a per-row failure with its line number) and never
stops the job; only a manifest that cannot be read at all raises ManifestError.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import zlib
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol
from urllib.parse import quote_plus, unquote_plus

from s3bulk.job import MAX_KEY_BYTES, Manifest, Source
from s3bulk.source import columnar
from s3bulk.store import UNKNOWN_SIZE, ObjectHead, ObjectInfo, ObjectStore, StoreError, quoted_etag

# manifest.json is small (a list of data files); refuse anything that is clearly not one.
MAX_INVENTORY_MANIFEST = 64 * 1024 * 1024
# A plain CSV manifest is split into byte ranges of at least this much (about 200,000 rows, a few seconds of one lister).
MIN_CSV_SHARD_BYTES = 16 * 1024 * 1024
# Positions in a byte-range shard of a CSV: "b" and the byte offset where the row's line starts.
_BYTE = "b"
_CSV_FORMAT = "CSV"


class ManifestError(Exception):
    """The manifest as a whole cannot be read; str() is the one-line message."""


@dataclass(frozen=True, slots=True)
class Row:
    """One manifest entry: an object to act on, a delete marker to pass over, or a problem to report.

    `pos` sorts in manifest order (file index, then record number), so a resume can
    skip what an earlier run finished, as a listing does with keys.
    """

    pos: str
    line: int
    obj: ObjectInfo | None
    code: str = ""
    problem: str = ""
    ref: str = ""  # for a problem: the key when the row gave one, else where the row is (s3://bucket/key#line)

    @property
    def failed(self) -> bool:
        return bool(self.code)


def position(file_index: int, record: int) -> str:
    return f"{file_index:06d}:{record:012d}"


def byte_position(offset: int) -> str:
    return f"{_BYTE}{offset:015d}"


def _parse_position(pos: str | None) -> tuple[int, int]:
    if not pos:
        return 0, 0
    file_index, record = pos.split(":")
    return int(file_index), int(record)


class _ChunkReader(io.RawIOBase):
    """A file object over GetObject's chunks, so csv and gzip can stream it."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._buf = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._buf:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._buf = memoryview(chunk)
        n = min(len(buffer), len(self._buf))
        buffer[:n] = self._buf[:n]
        self._buf = self._buf[n:]  # a view: no copy of the rest of the chunk
        return n


def _text(chunks: Iterable[bytes]) -> io.TextIOWrapper:
    """Gzip or plain (decided by the magic bytes, not the name); bytes that are not UTF-8 survive as surrogates for the row check."""
    binary: Any = io.BufferedReader(_ChunkReader(chunks), buffer_size=256 * 1024)
    if binary.peek(2)[:2] == b"\x1f\x8b":
        binary = gzip.GzipFile(fileobj=binary, mode="rb")
    return io.TextIOWrapper(binary, encoding="utf-8", errors="surrogateescape", newline="")


def _decode_key(encoded: str) -> str:
    """URL-decoded as S3 Batch Operations and Inventory write it ('+' is a space, a plus is %2B)."""
    if any("\udc80" <= c <= "\udcff" for c in encoded):
        raise ValueError("the row holds bytes that are not UTF-8; write the manifest in UTF-8")
    try:
        key = unquote_plus(encoded, encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        raise ValueError(f"key {encoded[:60]!r} URL-decodes to bytes that are not UTF-8; encode the key's UTF-8 bytes") from None
    if not key:
        raise ValueError("the key is empty; every row needs bucket,key")
    size = len(key.encode("utf-8", "surrogatepass"))
    if size > MAX_KEY_BYTES:
        raise ValueError(f"the key is {size} UTF-8 bytes; S3 keys are at most {MAX_KEY_BYTES}")
    return key


class _Columns:
    """Where each field sits in a data file's rows: fixed for csv, from fileSchema for inventory."""

    def __init__(self, names: list[str]) -> None:
        self.count = len(names)
        self.index = {n: i for i, n in enumerate(names)}

    def get(self, row: list[str], name: str) -> str | None:
        i = self.index.get(name)
        return row[i] if i is not None else None


# Formats of one object per line: a CSV or JSONL manifest is cut into byte ranges for parallel listing.
LINES = frozenset({"csv", "jsonl"})


class ManifestFiles(Protocol):
    """What reading a manifest needs of where it is: an object store, or the local disk."""

    def head_object(self, bucket: str, key: str, *, version_id: str = "") -> ObjectHead: ...

    def read_object(self, bucket: str, key: str, start: int = 0) -> Iterator[bytes]: ...


class LocalFile:
    """A manifest on this machine's disk (`path`), read as a store reads an object; missing or unreadable, a StoreError."""

    def head_object(self, bucket: str, key: str, *, version_id: str = "") -> ObjectHead:
        try:
            return ObjectHead(os.stat(key).st_size, "")
        except OSError as exc:
            raise StoreError("NoSuchFile", f"{exc.strerror}", 404) from None

    def read_object(self, bucket: str, key: str, start: int = 0) -> Iterator[bytes]:
        try:
            with open(key, "rb") as f:
                f.seek(start)
                while chunk := f.read(1024 * 1024):
                    yield chunk
        except OSError as exc:
            raise StoreError("NoSuchFile", f"{exc.strerror}", 404) from None


class ManifestReader:
    """Rows of one job's manifest, in manifest order, from a position on."""

    def __init__(self, store: ObjectStore, source: Source) -> None:
        assert source.manifest is not None
        self.source = source
        self.manifest: Manifest = source.manifest
        # A local manifest (s3bulk run, `path`) is read from the disk as the store reads an object.
        self.store: ManifestFiles = LocalFile() if self.manifest.path else store
        self.bucket: str = "" if self.manifest.path else self.manifest.bucket
        self.key: str = self.manifest.path or self.manifest.key
        self._needs_size = source.min_size > 0 or source.max_size is not None
        self._needs_time = source.modified_after is not None or source.modified_before is not None
        self.sizes: list[int] = [1]  # each data file's size in bytes, as manifest.json lists it (set by data_files)
        self._columns: _Columns | None = None  # a CSV header's (read once)
        self._file_format = "PARQUET" if self.manifest.format == "parquet" else _CSV_FORMAT  # inventory: set by data_files

    @property
    def where(self) -> str:
        return self.manifest.path or f"s3://{self.bucket}/{self.key}"

    def data_files(self) -> tuple[list[str], _Columns | None]:
        """The data files' keys (in the manifest's bucket) and, for inventory, their columns."""
        if self.manifest.format in LINES:
            return [self.key], self._header()
        if self.manifest.format == "parquet":
            return [self.key], None  # its columns are the file's own (columnar.file_rows)
        doc = self._inventory_manifest()
        fmt = str(doc.get("fileFormat", ""))
        self._file_format = fmt.upper()
        if self._file_format != _CSV_FORMAT and self._file_format not in columnar.FORMATS:
            raise ManifestError(
                f"{self.where}: inventory fileFormat {fmt!r} is not one s3bulk reads; configure the report as CSV, ORC or Parquet"
            )
        # A columnar fileSchema is a Parquet message or an ORC struct: the data files' own schemas name the columns.
        names = (
            [n.strip() for n in str(doc.get("fileSchema", "")).split(",") if n.strip()] if fmt.upper() == _CSV_FORMAT else ["Bucket", "Key"]
        )
        if "Bucket" not in names or "Key" not in names:
            raise ManifestError(
                f"{self.where}: fileSchema {doc.get('fileSchema')!r} has no Bucket and Key columns; is it an inventory manifest.json?"
            )
        data_bucket = str(doc.get("destinationBucket", "")).removeprefix("arn:aws:s3:::") or self.bucket
        if data_bucket != self.bucket:
            raise ManifestError(
                f"{self.where}: its data files are in bucket {data_bucket!r}; put manifest.json and its data files in one bucket"
            )
        files = doc.get("files")
        if not isinstance(files, list) or not all(isinstance(f, dict) and isinstance(f.get("key"), str) for f in files):
            raise ManifestError(f'{self.where}: "files" must be a list of {{"key": ...}}; is it an inventory manifest.json?')
        self.sizes = [f["size"] if isinstance(f.get("size"), int) and f["size"] > 0 else 1 for f in files]
        return [str(f["key"]) for f in files], _Columns(names)

    def plan_ranges(self, target: int, min_csv_bytes: int = MIN_CSV_SHARD_BYTES) -> list[tuple[str, str | None]]:
        """At most `target` shards as position ranges: whole data files of an inventory, byte ranges of a plain CSV.

        A shard (after, upto] holds the rows whose position sorts after `after` and not after
        `upto`. An inventory's shards are runs of data files balanced by the sizes manifest.json
        lists, bounded by position(first file, 0). A plain CSV of at least 2 x min_csv_bytes is
        cut into byte ranges; a row belongs to the range its line starts in, found by ranged GETs
        aligned to line ends (S3 Batch Operations' CSV keys are URL-encoded, so no field holds a
        line break). A gzip CSV cannot be read from the middle: one shard.
        """
        if self.manifest.format in LINES:
            return self._csv_ranges(target, min_csv_bytes)
        files, _ = self.data_files()
        if target <= 1 or len(files) <= 1:
            return [("", None)]
        total, groups = sum(self.sizes), min(target, len(files))
        starts, running = [0], 0
        for i, size in enumerate(self.sizes[:-1]):
            running += size
            # Cut after file i once the files so far hold the next share, or when each shard still to come needs one of the
            # files left; never leave a shard without a file.
            left, needed = len(files) - (i + 1), groups - len(starts)
            if needed > 0 and left >= needed and (running * groups >= total * len(starts) or left == needed):
                starts.append(i + 1)
        bounds = [position(i, 0) for i in starts]
        return [(b if i else "", bounds[i + 1] if i + 1 < len(bounds) else None) for i, b in enumerate(bounds)]

    def _csv_ranges(self, target: int, min_bytes: int) -> list[tuple[str, str | None]]:
        try:
            size = self.store.head_object(self.bucket, self.key).size
        except StoreError as exc:
            raise ManifestError(f"manifest {self.where} could not be read: {exc.code}: {exc.message}") from exc
        count = min(target, size // max(1, min_bytes))
        if count <= 1:
            return [("", None)]
        head = self._read(self.key)
        try:
            gzipped = next(head, b"")[:2] == b"\x1f\x8b"
        finally:
            head.close()
        if gzipped:
            return [("", None)]
        cuts = ["", *(byte_position(size * i // count) for i in range(1, count))]
        return [(cut, cuts[i + 1] if i + 1 < count else None) for i, cut in enumerate(cuts)]

    def _inventory_manifest(self) -> dict[str, Any]:
        body = bytearray()
        for chunk in self._read(self.key):
            body += chunk
            if len(body) > MAX_INVENTORY_MANIFEST:
                raise ManifestError(f"{self.where}: over {MAX_INVENTORY_MANIFEST} bytes, which no manifest.json is; check format")
        try:
            doc = json.loads(bytes(body))
        except ValueError as exc:
            raise ManifestError(f'{self.where}: not valid JSON ({exc}); give the inventory\'s manifest.json, or format "csv"') from None
        if not isinstance(doc, dict):
            raise ManifestError(f"{self.where}: not an inventory manifest.json (a JSON object with fileFormat, fileSchema, files)")
        return doc

    def _read(self, key: str, start: int = 0) -> Generator[bytes, None, None]:
        try:
            yield from self.store.read_object(self.bucket, key, start)
        except StoreError as exc:
            raise ManifestError(f"manifest {self.where} could not be read: {exc.code}: {exc.message}") from exc

    def rows(self, after: str | None = None, upto: str | None = None) -> Iterator[Row]:
        """Every row after position `after` (None: from the start) and not after `upto` (None: to the end)."""
        if (after or "").startswith(_BYTE) or (upto or "").startswith(_BYTE):
            yield from self._byte_rows(after, upto)
            return
        files, columns = self.data_files()
        first_file, first_record = _parse_position(after)
        last_file, last_record = _parse_position(upto) if upto else (len(files), 0)
        bound = position(last_file, last_record)
        for index, key in enumerate(files):
            if index < first_file:
                continue
            if index > last_file or (index == last_file and last_record == 0):
                return  # a bound at a file's start (as plan_ranges makes) never opens that file
            skip = first_record if index == first_file and after else 0
            rows = self._file_rows(index, key, columns, skip)
            yield from rows if index < last_file else (r for r in rows if r.pos <= bound)

    def _file_rows(self, index: int, key: str, columns: _Columns | None, skip: int) -> Iterator[Row]:
        if self._file_format in columnar.FORMATS:
            yield from self._columnar_rows(index, key, skip)
            return
        text = _text(self._read(key))
        where = self.where if self.manifest.format in LINES else f"s3://{self.bucket}/{key}"
        if self.manifest.format == "jsonl":
            yield from self._json_rows(index, text, skip, where)
            return
        reader = csv.reader(text, delimiter=self.manifest.delimiter)
        if self.manifest.header:
            next(reader, None)  # the column names (_header read them)
        record = 0
        while True:
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                record += 1
                if record > skip:
                    line = reader.line_num
                    yield Row(position(index, record), line, None, "InvalidManifestRow", f"{where} line {line}: {exc}", f"{where}#{line}")
                continue
            except (OSError, EOFError, zlib.error) as exc:
                raise ManifestError(f"{where}: not readable as gzip or CSV after line {reader.line_num} ({exc}); replace the file") from exc
            if not fields or fields == [""]:
                continue  # a blank line is not an entry
            record += 1
            if record <= skip:
                continue
            yield self._row(position(index, record), reader.line_num, fields, columns, where)

    def _columnar_rows(self, index: int, key: str, skip: int) -> Iterator[Row]:
        where, fields = f"s3://{self.bucket}/{key}" if self.bucket else self.where, list[str]()
        entries = columnar.file_rows(
            self.store, self.bucket, key, where, self._file_format, skip, object_list=self.manifest.format == "parquet", fields=fields
        )
        layout: _Columns | None = None
        try:
            for e in entries:
                layout = layout or _Columns(fields)  # the columns the file has, known once it is open
                yield self._row(position(index, e.record), e.row, e.values, layout, where, at=e.at, ref=e.ref)
        except columnar.ColumnarError as exc:
            raise ManifestError(str(exc)) from None

    def _byte_rows(self, after: str | None, upto: str | None) -> Iterator[Row]:
        """A plain CSV's rows whose lines start after byte `after` and at or before byte `upto`, by one ranged GET.

        A row's position is the byte its line starts at, so a cursor and a shard's cut are
        alike: the read starts at that byte and passes over the rest of the line there (the
        cursor's own row, or the end of a line the cut falls in, which belongs to the shard
        before). Line numbers are unknown mid-file, so problems name the byte.
        """
        lo = int(after[1:]) if after else None
        hi = int(upto[1:]) if upto else None
        offset = lo or 0
        skipping = lo is not None
        pending = b""
        chunks = self._read(self.key, offset)
        try:
            for chunk in chunks:
                buf, i = pending + chunk, 0
                while (nl := buf.find(b"\n", i)) >= 0:
                    line, line_start = buf[i:nl], offset
                    offset, i = offset + nl + 1 - i, nl + 1
                    if skipping:
                        skipping = False
                    elif hi is not None and line_start > hi:
                        return
                    elif (row := self._byte_row(line, line_start)) is not None:
                        yield row
                pending = buf[i:]
            if pending and not skipping and (hi is None or offset <= hi) and (row := self._byte_row(pending, offset)) is not None:
                yield row
        finally:
            chunks.close()

    def _byte_row(self, raw: bytes, offset: int) -> Row | None:
        where = self.where
        text = raw.rstrip(b"\r").decode("utf-8", errors="surrogateescape")
        if not text or (offset == 0 and self.manifest.header):
            return None  # a blank line is not an entry, nor the header
        pos, at, ref = byte_position(offset), f"byte {offset}", f"{where}#byte={offset}"
        if self.manifest.format == "jsonl":
            return self._json_row(pos, 0, text, where, at=at, ref=ref)
        try:
            fields = next(csv.reader([text], delimiter=self.manifest.delimiter))
        except csv.Error as exc:
            return Row(pos, 0, None, "InvalidManifestRow", f"{where} {at}: {exc}", ref)
        return self._row(pos, 0, fields, self._header(), where, at=at, ref=ref)

    def _header(self) -> _Columns | None:
        """A CSV with `header`: its first line's column names (read once), as an inventory's fileSchema gives them."""
        if not self.manifest.header:
            return None
        if self._columns is None:
            chunks = self._read(self.key)
            try:
                first = next(csv.reader(_text(chunks), delimiter=self.manifest.delimiter), [])
            finally:
                chunks.close()
            canonical = {"bucket": "Bucket", "key": "Key", "versionid": "VersionId", "version": "VersionId"}
            names = [canonical.get(n.strip().lower().replace("_", ""), n) for n in first]
            if "Bucket" not in names or "Key" not in names:
                raise ManifestError(f"{self.where}: its header {first!r} names no bucket and key columns; name them, or drop header")
            self._columns = _Columns(names)
        return self._columns

    def _json_rows(self, index: int, text: Iterable[str], skip: int, where: str) -> Iterator[Row]:
        record = 0
        try:
            for line, raw in enumerate(text, 1):
                if not raw.strip():
                    continue
                record += 1
                if record > skip:
                    yield self._json_row(position(index, record), line, raw, where)
        except (OSError, EOFError, zlib.error) as exc:
            raise ManifestError(f"{where}: not readable as gzip or text ({exc}); replace the file") from exc

    def _json_row(self, pos: str, line: int, text: str, where: str, *, at: str = "", ref: str = "") -> Row:
        """One JSONL entry: {"bucket", "key"[, "version_id"]}, Distributed Map's capitalized names too; keys as they are."""
        at, ref = at or f"line {line}", ref or f"{where}#{line}"
        try:
            doc = json.loads(text)
        except ValueError as exc:
            return Row(pos, line, None, "InvalidManifestRow", f"{where} {at}: not JSON ({exc})", ref)
        if not isinstance(doc, dict):
            return Row(pos, line, None, "InvalidManifestRow", f"{where} {at}: not a JSON object", ref)
        bucket, key = doc.get("bucket", doc.get("Bucket")), doc.get("key", doc.get("Key"))
        version = doc.get("version_id", doc.get("VersionId")) or ""
        if not isinstance(bucket, str) or not isinstance(key, str) or not key or not isinstance(version, str):
            return Row(pos, line, None, "InvalidManifestRow", f"{where} {at}: an entry needs string bucket and key (and version_id)", ref)
        return self._row(pos, line, [bucket, quote_plus(key, safe="/", errors="surrogatepass"), version], None, where, at=at, ref=ref)

    def _row(self, pos: str, line: int, fields: list[str], columns: _Columns | None, where: str, *, at: str = "", ref: str = "") -> Row:
        at, ref = at or f"line {line}", ref or f"{where}#{line}"
        try:
            return Row(pos, line, self._object(fields, columns))
        except _Skip:
            return Row(pos, line, None)
        except _RowProblem as exc:
            return Row(pos, line, None, exc.code, f"{where} {at}: {exc}", exc.key)
        except ValueError as exc:
            return Row(pos, line, None, "InvalidManifestRow", f"{where} {at}: {exc}", ref)

    def _object(self, fields: list[str], columns: _Columns | None) -> ObjectInfo:
        if columns is None:
            if len(fields) not in (2, 3):
                raise ValueError(f"{len(fields)} fields; a row is bucket,key or bucket,key,version_id")
            bucket, encoded = fields[0], fields[1]
            version = fields[2] if len(fields) == 3 else ""
            size, etag, modified, storage_class, latest = None, "", None, None, None
        else:
            if len(fields) != columns.count:
                raise ValueError(f"{len(fields)} fields where fileSchema names {columns.count}")
            if (columns.get(fields, "IsDeleteMarker") or "").lower() == "true":
                raise _Skip
            bucket, encoded = fields[columns.index["Bucket"]], fields[columns.index["Key"]]
            version = columns.get(fields, "VersionId") or ""
            latest = columns.get(fields, "IsLatest")
            size = columns.get(fields, "Size")
            etag = columns.get(fields, "ETag") or ""
            storage_class = columns.get(fields, "StorageClass") or None
            modified = columns.get(fields, "LastModifiedDate")
        key = _decode_key(encoded)
        if bucket != self.source.bucket:
            raise _RowProblem(
                key,
                "ManifestBucketMismatch",
                f"row is for bucket {bucket!r}, but source.bucket is {self.source.bucket!r}; a job acts on one bucket, so split the manifest",
            )
        # A row naming a version acts on that version; an inventory's current ones act on the current object, as a listing would.
        current = latest is not None and latest.lower() == "true"
        info = ObjectInfo(
            key,
            _int(size, "Size") if size else UNKNOWN_SIZE,
            quoted_etag(etag),
            _time(modified) if modified else None,
            storage_class,
            "" if current else version,
            current or not version,
        )
        if info.size == UNKNOWN_SIZE and self._needs_size:
            raise ValueError("the row gives no Size, which source.min_size/max_size need; add Size to the inventory or drop the filter")
        if info.last_modified is None and self._needs_time:
            raise ValueError(
                "the row gives no LastModifiedDate, which modified_after/before need; add it to the inventory or drop the filter"
            )
        return info


class _Skip(Exception):
    """A delete marker: listed by a versioned inventory, but not an object."""


class _RowProblem(ValueError):
    """A well-formed row the job cannot act on; its key is known, so the report names it."""

    def __init__(self, key: str, code: str, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.code = code


def _int(text: str, name: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name} {text[:30]!r} is not a whole number") from None
    if value < 0:
        raise ValueError(f"{name} {value} is negative")
    return value


def _time(text: str) -> datetime:
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"LastModifiedDate {text[:40]!r} is not an ISO 8601 time") from None
    if stamp.tzinfo is None:
        raise ValueError(f"LastModifiedDate {text[:40]!r} has no timezone")
    return stamp
