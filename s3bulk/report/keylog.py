"""The per-key log: one JSON line per object outcome, written as it happens, for proof afterwards.

The job report keeps counts and the failures; this keeps every key, so an auditor
can answer "was s3://b/k copied, when, and does its copy match" with a query
(Athena or DuckDB read the lines as they are; the format is in docs/key-log.md).
Lines are written while the job runs, never collected, so a job of any size costs
no memory. A resumed or redelivered batch writes its keys again: the line with the
latest `at` is the one that counts.
"""

from __future__ import annotations

import gzip
import io
import json
import shutil
import tempfile
import threading
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import IO, Any, Protocol, cast

FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """One object's outcome. Empty strings and zeros are what was not known, never guesses."""

    key: str
    outcome: str  # succeeded | skipped | failed
    size: int  # -1 (written as null): a manifest row gave none and no request needed it
    src_etag: str = ""
    dst_key: str = ""
    dst_etag: str = ""
    src_checksum: str = ""  # "ALGORITHM:value", e.g. "CRC32:AAAAAA==" or "SHA256:<hex>" (verify)
    dst_checksum: str = ""
    attempts: int = 1
    error: str = ""
    message: str = ""
    version_id: str = ""  # the version acted on (source.versions, a manifest row's); "" for a current object
    upload_id: str = ""  # abort-uploads: the multipart upload acted on (one key may have several)
    result: str = ""  # process: what the function returned (or its resultString), at most 1 KiB
    # The undo journal of a change `s3bulk undo` can reverse: {"bucket", "what", "before", "after"} (docs/undo.md).
    undo: dict[str, Any] | None = None

    def line(self, job_id: str, operation: str, at: datetime | None = None) -> str:
        doc = {"v": FORMAT_VERSION, "job_id": job_id, "operation": operation, **asdict(self)}
        if self.size < 0:
            doc["size"] = None
        doc["at"] = (at or datetime.now(UTC)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return json.dumps(doc) + "\n"  # ASCII: any key, even one with a lone surrogate, is valid JSON and UTF-8


class KeyLog(Protocol):
    def write(self, record: KeyRecord) -> None: ...

    def block(self) -> KeyBlock: ...


class KeyBlock:
    """One worker's lines for part of a batch: rendered as each outcome happens (its `at`), written as one block.

    Why: one lock and one write per object cost more than the line itself; a block is written at the
    latest when the worker leaves the batch, before the batch can count as done.
    """

    def __init__(self, log: JsonlKeyLog) -> None:
        self._log = log
        self._lines: list[str] = []

    def write(self, record: KeyRecord) -> None:
        self._lines.append(record.line(self._log.job_id, self._log.operation))

    def block(self) -> KeyBlock:
        return self

    def close(self) -> None:
        """Write the lines held so far as one block."""
        if self._lines:
            self._log.write_lines(self._lines)
            self._lines = []


class JsonlKeyLog:
    """Thread-safe appends to a JSON Lines stream (a local file, or a batch's spool on the stack)."""

    def __init__(self, out: IO[str], job_id: str, operation: str) -> None:
        self._out = out
        self.job_id = job_id
        self.operation = operation
        self._lock = threading.Lock()
        self.lines = 0

    def write(self, record: KeyRecord) -> None:
        text = record.line(self.job_id, self.operation)
        with self._lock:
            self._out.write(text)
            self.lines += 1

    def write_lines(self, lines: list[str]) -> None:
        text = "".join(lines)
        with self._lock:
            self._out.write(text)
            self.lines += len(lines)

    def block(self) -> KeyBlock:
        return KeyBlock(self)

    def flush(self) -> None:
        with self._lock:
            self._out.flush()


# A key log's first two bytes when it is gzip'd (a `--key-log PATH.gz`, or the stack's parts: reportbucket.py).
GZIP_MAGIC = b"\x1f\x8b"


def open_for_append(path: str) -> IO[str]:
    """A key log opened to append to: gzip'd when its name ends in .gz (each run adds a gzip member; readers take
    the members as one stream), about 43 bytes an object where plain lines take 520."""
    if path.endswith(".gz"):
        return gzip.open(path, "at", encoding="utf-8", compresslevel=6)
    return open(path, "a", encoding="utf-8", buffering=1024 * 1024)


def readable(fh: IO[bytes]) -> IO[bytes]:
    """A key log's bytes, whether gzip'd or not (told by its first bytes, not its name). A gzip'd one is inflated into
    a temporary file first, a chunk at a time, so a reader may seek in it (undo reads a log from its end) at no more
    memory than a chunk; a truncated or corrupt one raises EOFError or OSError here, before anything is done."""
    if not fh.seekable():  # a pipe: read through a buffer that can look ahead
        fh = cast(IO[bytes], io.BufferedReader(cast(Any, fh)))
        head = cast(io.BufferedReader, fh).peek(2)[:2]
    else:
        at = fh.tell()
        head = fh.read(2)
        fh.seek(at)
    if head != GZIP_MAGIC:
        return fh
    out = tempfile.TemporaryFile()  # noqa: SIM115 - returned open; gone when closed
    with gzip.GzipFile(fileobj=fh) as inflating:
        shutil.copyfileobj(inflating, out, 1024 * 1024)
    out.seek(0)
    return out
