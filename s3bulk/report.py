"""Counts and failures of a job, kept in bounded memory and written as the JSON report."""

from __future__ import annotations

import json
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

SHOWN_FAILURES = 20


@dataclass(frozen=True, slots=True)
class Snapshot:
    scanned: int
    listed: int
    listed_bytes: int
    listing_done: bool
    succeeded: int
    skipped: int
    failed: int
    bytes: int

    @property
    def done(self) -> int:
        return self.succeeded + self.skipped + self.failed


class Outcomes(Protocol):
    """Where per-object outcomes go: the job's Tally, or one batch's BatchTally."""

    def succeed(self, size: int) -> None: ...

    def skip(self) -> None: ...

    def fail(self, key: str, error: str, message: str) -> None: ...

    def retry(self) -> None: ...


class Tally:
    """Thread-safe counters. Failures spool to a temp file, so a million of them cost no RAM."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.scanned = self.listed = self.listed_bytes = 0
        self.succeeded = self.skipped = self.failed = self.bytes = 0
        self.retried = 0  # extra rounds objects needed after the client's own retries gave up
        self.extraneous_deleted = 0  # sync: destination objects with no source, deleted (or, in a dry run, found)
        self.listing_done = False
        self.first_failures: list[dict[str, str]] = []
        self._spool: IO[str] = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def seen(self, size: int, selected: bool) -> None:
        """One listed key: scanned always, listed (with its bytes) when the filters selected it."""
        with self._lock:
            self.scanned += 1
            if selected:
                self.listed += 1
                self.listed_bytes += size

    def finish_listing(self) -> None:
        with self._lock:
            self.listing_done = True

    def succeed(self, size: int) -> None:
        with self._lock:
            self.succeeded += 1
            self.bytes += size

    def retry(self) -> None:
        with self._lock:
            self.retried += 1

    def skip(self) -> None:
        with self._lock:
            self.skipped += 1

    def extraneous(self, n: int) -> None:
        with self._lock:
            self.extraneous_deleted += n

    def fail(self, key: str, error: str, message: str) -> None:
        entry = {"key": key, "error": error, "message": message}
        with self._lock:
            self.failed += 1
            self._spool.write(json.dumps(entry, ensure_ascii=True) + "\n")
            if len(self.first_failures) < SHOWN_FAILURES:
                self.first_failures.append(entry)

    def snapshot(self) -> Snapshot:
        with self._lock:
            return Snapshot(
                self.scanned,
                self.listed,
                self.listed_bytes,
                self.listing_done,
                self.succeeded,
                self.skipped,
                self.failed,
                self.bytes,
            )

    def failures(self) -> Iterator[dict[str, str]]:
        """Every failure, streamed back from the spool; call once the job has finished."""
        with self._lock:
            self._spool.flush()
            self._spool.seek(0)
            for line in self._spool:
                yield json.loads(line)
            self._spool.seek(0, 2)

    def close(self) -> None:
        self._spool.close()


class BatchTally:
    """One batch's outcomes: forwarded to the job's Tally as they happen (for progress), and kept
    (at most one batch of failures) so the ledger can commit them with the batch."""

    def __init__(self, parent: Tally) -> None:
        self.parent = parent
        self._lock = threading.Lock()
        self.succeeded = self.skipped = self.failed = self.bytes = self.retried = 0
        self.failures: list[tuple[str, str, str]] = []

    def succeed(self, size: int) -> None:
        with self._lock:
            self.succeeded += 1
            self.bytes += size
        self.parent.succeed(size)

    def skip(self) -> None:
        with self._lock:
            self.skipped += 1
        self.parent.skip()

    def fail(self, key: str, error: str, message: str) -> None:
        with self._lock:
            self.failed += 1
            self.failures.append((key, error, message))
        self.parent.fail(key, error, message)

    def retry(self) -> None:
        with self._lock:
            self.retried += 1
        self.parent.retry()


@dataclass
class Report:
    job_id: str
    operation: str
    status: str  # succeeded | failed | dry-run
    tally: Tally
    seconds: float
    retries: int = 0
    error: str | None = None
    interrupted: bool = False

    def summary(self) -> dict[str, Any]:
        s = self.tally.snapshot()
        out: dict[str, Any] = {
            "job_id": self.job_id,
            "operation": self.operation,
            "status": self.status,
            "listed": s.listed,
            "succeeded": s.succeeded,
            "skipped": s.skipped,
            "failed": s.failed,
            "bytes": s.bytes if self.status != "dry-run" else s.listed_bytes,
            "seconds": round(self.seconds, 3),
            "scanned": s.scanned,
            "retries": self.retries,
            "object_retries": self.tally.retried,
        }
        if self.tally.extraneous_deleted:
            out["deleted_extraneous" if self.status != "dry-run" else "would_delete_extraneous"] = self.tally.extraneous_deleted
        if self.status == "dry-run":
            out["would_process"] = s.listed - s.skipped
        if self.error:
            out["error"] = self.error
        return out

    def write(self, path: str | Path) -> None:
        """Stream the failures into the file rather than building one big list."""
        with open(path, "w", encoding="utf-8") as fh:
            head = json.dumps(self.summary(), ensure_ascii=False, indent=1)
            fh.write(head[:-2] + ',\n "failures": [')
            for i, failure in enumerate(self.tally.failures()):
                fh.write(("," if i else "") + "\n  " + json.dumps(failure, ensure_ascii=False))
            fh.write("\n ]\n}\n")

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        return 0 if self.status in {"succeeded", "dry-run"} else 1
