"""Counts and failures of a job, kept in bounded memory, and the one JSON report both runtimes write.

`job_status`, `summarize` and `write_report` are the only status rule, summary builder and
report writer: the CLI's `Report` and the stack's finalize step both call them, so a job's
report has the same fields wherever it ran.
"""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from s3bulk.breakers.outage import Outage

SHOWN_FAILURES = 20
# report.json lists at most this many failures (with the count of each error code); the rest are in a JSONL beside it.
REPORT_FAILURES = 1000

# Objects whose outcome no content evidence decided, counted so the report says how many (issue 50): a copy nothing but
# its size confirmed (ops/identity.py), and skip-unchanged pairs neither ETags nor checksums could compare, copied
# (a listing without ETags) or skipped by the modification order (multipart ETags) (ops/batch.py, source/sync.py).
SIZE_ONLY = "confirmed_by_size_only"
UNDECIDED_COPIED = "unchanged_undecided_copied"
BY_TIME_SKIPPED = "unchanged_by_time_skipped"
NOTES = (SIZE_ONLY, UNDECIDED_COPIED, BY_TIME_SKIPPED)


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

    def note(self, what: str) -> None:
        """One object decided without content evidence (one of NOTES)."""
        ...

    def merge(self, counted: Counted) -> None: ...


class Counted:
    """One worker's outcomes for part of a batch, counted without a lock and merged into the batch's tally once.

    Why: a lock per outcome (and another in the job's Tally) cost more CPU per small object than the
    request's own bookkeeping; a worker owns its Counted, so plain increments are safe.
    """

    __slots__ = ("bytes", "failures", "notes", "retried", "skipped", "succeeded")

    def __init__(self) -> None:
        self.succeeded = self.skipped = self.bytes = self.retried = 0
        self.failures: list[tuple[str, str, str]] = []
        self.notes: Counter[str] = Counter()

    def succeed(self, size: int) -> None:
        self.succeeded += 1
        self.bytes += size

    def skip(self) -> None:
        self.skipped += 1

    def fail(self, key: str, error: str, message: str) -> None:
        self.failures.append((key, error, message))

    def retry(self) -> None:
        self.retried += 1

    def note(self, what: str) -> None:
        self.notes[what] += 1

    def merge(self, counted: Counted) -> None:
        self.succeeded += counted.succeeded
        self.skipped += counted.skipped
        self.bytes += counted.bytes
        self.retried += counted.retried
        self.failures += counted.failures
        self.notes.update(counted.notes)

    def __bool__(self) -> bool:
        return bool(self.succeeded or self.skipped or self.bytes or self.retried or self.failures or self.notes)


class Tally:
    """Thread-safe counters. Failures spool to a temp file, so a million of them cost no RAM."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.scanned = self.listed = self.listed_bytes = 0
        self.succeeded = self.skipped = self.failed = self.bytes = 0
        self.retried = 0  # extra rounds objects needed after the client's own retries gave up
        self.extraneous_deleted = 0  # sync: destination objects with no source, deleted (or, in a dry run, found)
        self.notes: Counter[str] = Counter()  # objects decided without content evidence, by NOTES name
        self.listing_done = False
        self.first_failures: list[dict[str, str]] = []
        self.by_code: Counter[str] = Counter()  # failures by error code, for the failure breaker (breaker.py)
        self.examples: dict[str, tuple[str, str]] = {}  # the first (key, message) of each code
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

    def note(self, what: str) -> None:
        with self._lock:
            self.notes[what] += 1

    def noted(self) -> dict[str, int]:
        """Each of NOTES with its count so far."""
        with self._lock:
            return {name: self.notes[name] for name in NOTES}

    def fail(self, key: str, error: str, message: str) -> None:
        with self._lock:
            self._fail(key, error, message)

    def _fail(self, key: str, error: str, message: str) -> None:
        entry = {"key": key, "error": error, "message": message}
        self.failed += 1
        self.by_code[error] += 1
        self.examples.setdefault(error, (key, message))
        self._spool.write(json.dumps(entry, ensure_ascii=True) + "\n")
        if len(self.first_failures) < SHOWN_FAILURES:
            self.first_failures.append(entry)

    def merge(self, counted: Counted) -> None:
        """A worker's outcomes, under one lock."""
        with self._lock:
            self.succeeded += counted.succeeded
            self.skipped += counted.skipped
            self.bytes += counted.bytes
            self.retried += counted.retried
            self.notes.update(counted.notes)
            for key, error, message in counted.failures:
                self._fail(key, error, message)

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

    def codes(self) -> tuple[dict[str, int], dict[str, tuple[str, str]]]:
        """Failures by code so far, and each code's first (key, message)."""
        with self._lock:
            return dict(self.by_code), dict(self.examples)

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
        self.notes: Counter[str] = Counter()

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

    def note(self, what: str) -> None:
        with self._lock:
            self.notes[what] += 1
        self.parent.note(what)

    def merge(self, counted: Counted) -> None:
        """A worker's outcomes: kept for the batch's commit, and forwarded to the job's Tally (progress)."""
        with self._lock:
            self.succeeded += counted.succeeded
            self.skipped += counted.skipped
            self.bytes += counted.bytes
            self.retried += counted.retried
            self.failed += len(counted.failures)
            self.failures += counted.failures
            self.notes.update(counted.notes)
        self.parent.merge(counted)


@dataclass(frozen=True, slots=True)
class Counts:
    """A job's totals, from a Tally (the CLI) or from the ledger's counters (the stack)."""

    scanned: int = 0
    listed: int = 0
    listed_bytes: int = 0
    succeeded: int = 0
    skipped: int = 0
    failed: int = 0
    bytes: int = 0
    retries: int = 0  # requests the S3 client retried
    object_retries: int = 0  # extra rounds objects needed after the client's own retries gave up
    extraneous: int = 0  # sync: destination objects with no source, deleted (or, in a dry run, found)
    # NOTES: objects decided without content evidence (a ledger records them under these names)
    confirmed_by_size_only: int = 0
    unchanged_undecided_copied: int = 0
    unchanged_by_time_skipped: int = 0

    @classmethod
    def of_tally(cls, tally: Tally, retries: int) -> Counts:
        s = tally.snapshot()
        notes = tally.noted()
        return cls(
            s.scanned,
            s.listed,
            s.listed_bytes,
            s.succeeded,
            s.skipped,
            s.failed,
            s.bytes,
            retries,
            tally.retried,
            tally.extraneous_deleted,
            **notes,
        )

    @classmethod
    def of_counters(cls, c: Mapping[str, int]) -> Counts:
        return cls(**{name: int(c.get(name, 0)) for name in cls.__slots__})


# Statuses of a job that ended before all its work was done, on purpose: the report says what was done and what not.
ENDED_EARLY = frozenset({"stopped", "interrupted", "cancelled"})


def job_status(
    *,
    dry_run: bool,
    failed: int,
    error: str | None = None,
    stopped: bool = False,
    interrupted: bool = False,
    cancelled: bool = False,
    canary: bool = False,
) -> str:
    """The one status rule: its owner's cancel ends the job for good; Ctrl-C interrupts it and an endpoint that stopped
    answering stops it (both resumable); a job error fails it; a dry run is a dry run; any failed object fails it; a
    canary that did its sample is a canary (the rest of the job is still to run), never `succeeded`."""
    if cancelled:
        return "cancelled"
    if interrupted:
        return "interrupted"
    if stopped:
        return "stopped"
    if error is not None:
        return "failed"
    if dry_run:
        return "dry-run"
    if failed:
        return "failed"
    return "canary" if canary else "succeeded"


def over_tolerance(*, status: str, failed: int, tolerated: int, error: str | None) -> bool:
    """Whether a job counts as failed (a non-zero exit, a FAILED execution): a job error always; failed objects only
    beyond options.tolerated_failures. The report still names every failure and says `failed`."""
    if error is not None or status not in {"succeeded", "dry-run", "canary", "failed"}:
        return True
    return failed > tolerated


def summarize(
    job_id: str,
    operation: str,
    status: str,
    counts: Counts,
    seconds: float,
    *,
    tolerated_failures: int,
    error: str | None = None,
    stop_reason: str | None = None,
    redone: int = 0,
) -> dict[str, Any]:
    """The report's summary fields, the same on the CLI and on the stack (docs/architecture.md, "Exit codes and the report").
    `redone`: objects a run before the failure breaker's stop failed, done again by this resumed run."""
    dry = status == "dry-run"
    out: dict[str, Any] = {
        "job_id": job_id,
        "operation": operation,
        "status": status,
        "listed": counts.listed,
        "succeeded": counts.succeeded,
        "skipped": counts.skipped,
        "failed": counts.failed,
        "bytes": counts.bytes,  # a dry run's: the bytes of the objects it would process (ops/batch.py), not of those it skips
        "seconds": round(seconds, 3),
        "scanned": counts.scanned,
        "retries": counts.retries,
        "object_retries": counts.object_retries,
        "tolerated_failures": tolerated_failures,
    }
    if counts.extraneous:
        out["would_delete_extraneous" if dry else "deleted_extraneous"] = counts.extraneous
    for name in NOTES:  # only when some object was so decided: a report says what it could not check
        if n := getattr(counts, name):
            out[name] = n
    if dry:
        out["would_process"] = counts.listed - counts.skipped
    unfinished = counts.listed - counts.succeeded - counts.skipped - counts.failed
    if status in ENDED_EARLY:
        # Stopped by the outage breaker or by Ctrl-C, or cancelled: what is done, what failed on its own, and what was
        # not done (listed objects only: a listing cut short names no more), which a resume still has to do.
        out["done"] = counts.succeeded + counts.skipped
        out["not_done"] = max(0, unfinished)
    if redone:
        out["redone_after_breaker"] = redone  # their earlier failures are replaced by this run's outcomes
    if stop_reason:
        out["stop_reason"] = stop_reason  # what stopped it: "failure_breaker" (breaker.py); absent for an outage or a user
    if error:
        out["error"] = error
        # A job stopped early: objects listed but neither done nor failed when the report was written.
        if unfinished > 0 and not dry and status not in ENDED_EARLY:
            out["unfinished"] = unfinished
    return out


class FailureDigest:
    """What report.json says of a job's failures, gathered in one pass over any number of them: the count of each
    error code and the first REPORT_FAILURES. The whole list goes to failures.jsonl beside it (`failures_file`), so a
    job with millions of failures still gets a report of bounded size."""

    def __init__(self, keep: int = REPORT_FAILURES) -> None:
        self.keep = keep
        self.total = 0
        self.by_code: Counter[str] = Counter()
        self.sample: list[dict[str, str]] = []

    @classmethod
    def restore(cls, total: int, by_code: Mapping[str, int], sample: list[dict[str, str]], keep: int = REPORT_FAILURES) -> FailureDigest:
        """A digest saved part way (aws/assembly.py), to go on adding to."""
        digest = cls(keep)
        digest.total, digest.by_code, digest.sample = total, Counter(by_code), list(sample)
        return digest

    def add(self, failure: Mapping[str, str]) -> None:
        self.total += 1
        self.by_code[str(failure.get("error", ""))] += 1
        if len(self.sample) < self.keep:
            self.sample.append(dict(failure))

    def through(self, failures: Iterable[Mapping[str, str]]) -> Iterator[Mapping[str, str]]:
        """Each failure as it passes, digested on the way (to a failures.jsonl being written)."""
        for failure in failures:
            self.add(failure)
            yield failure

    @property
    def complete(self) -> bool:
        """report.json itself lists every failure."""
        return self.total <= len(self.sample)


def failures_file(report_path: str | Path) -> Path:
    """Where the CLI writes every failure when report.json lists only the first REPORT_FAILURES: beside it."""
    target = Path(report_path)
    return target.with_name(f"{target.stem}.failures.jsonl")


def writes_stdout(path: str | Path) -> bool:
    """`-`, or a path that is this process's standard output (/dev/stdout, /proc/self/fd/1, the terminal it prints to)."""
    return _standard_stream(path) is sys.stdout


def _standard_stream(path: str | Path) -> IO[str] | None:
    """sys.stdout or sys.stderr when `path` is `-` or the file one of them writes to; None otherwise. Written to as
    itself, not opened again: a second open of /dev/stdout, when it is a file, would truncate what was printed."""
    if str(path) == "-":
        return sys.stdout
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    for stream in (sys.stdout, sys.stderr):
        try:
            own = os.fstat(stream.fileno())
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            continue
        if (own.st_dev, own.st_ino) == (st.st_dev, st.st_ino):
            return stream
    return None


def write_report(fh: IO[str], summary: Mapping[str, Any], digest: FailureDigest, every_failure: str | None = None) -> None:
    """report.json: the summary, the failures by error code, and the digest's failures (one per line); when it does
    not list them all, how many it leaves out and `failures_file`, the JSONL that lists every one."""
    head = dict(summary)
    head["failures_by_code"] = dict(sorted(digest.by_code.items(), key=lambda kv: (-kv[1], kv[0])))
    if not digest.complete:
        head["failures_not_listed"] = digest.total - len(digest.sample)
        if every_failure is not None:
            head["failures_file"] = every_failure
    text = json.dumps(head, ensure_ascii=False, indent=1)
    fh.write(text[:-2] + ',\n "failures": [')
    for i, failure in enumerate(digest.sample):
        fh.write(("," if i else "") + "\n  " + json.dumps(failure, ensure_ascii=False))
    fh.write("\n ]\n}\n")


def write_failures(fh: IO[str], failures: Iterable[Mapping[str, str]]) -> None:
    """failures.jsonl: one failure per line, every one."""
    for failure in failures:
        fh.write(json.dumps(failure, ensure_ascii=False) + "\n")


@dataclass
class Report:
    """A finished local run: its counts (a Tally), status and error; exit_code is the CLI's."""

    job_id: str
    operation: str
    status: str  # job_status()
    tally: Tally
    seconds: float
    retries: int = 0
    error: str | None = None
    interrupted: bool = False
    tolerated_failures: int = 0
    outage: Outage | None = None  # why an endpoint stopped the job (status "stopped")
    # This run's own objects done and bytes (a resumed run's tally holds every run's): its rates divide these.
    run_done: int | None = None
    run_bytes: int | None = None
    stop_reason: str | None = None  # "failure_breaker" when the failure breaker stopped the run
    canary: dict[str, Any] | None = None  # a canary's: objects sampled and checked, and the command that runs the rest
    redone: int = 0  # objects a run before the failure breaker's stop failed, done again by this resumed run

    def summary(self) -> dict[str, Any]:
        counts = Counts.of_tally(self.tally, self.retries)
        out = summarize(
            self.job_id,
            self.operation,
            self.status,
            counts,
            self.seconds,
            tolerated_failures=self.tolerated_failures,
            error=self.error,
            stop_reason=self.stop_reason,
            redone=self.redone,
        )
        if self.canary is not None:
            out["canary"] = self.canary
        return out

    def write(self, path: str | Path, *, spill_dir: Path | None = None) -> Path | None:
        """The report at `path`; returns where every failure went, when report.json does not list them all (else None).

        A regular file (or a new one) is written beside the target and renamed over it, so a reader never sees
        half a report. A symlink, a device (/dev/stdout), a FIFO and `-` (standard output) are written through,
        so the link or the device stays what it is. Past REPORT_FAILURES failures, every one goes to
        failures_file(path) beside it as well (report.json lists the first ones); for `-`, a device or a FIFO,
        which have no directory of their own, to spill_dir/JOB_ID.failures.jsonl (with no spill_dir, nowhere:
        the report counts what it leaves out).
        """
        target = Path(path)
        stream = str(path) == "-" or (target.exists() and not target.is_file())
        through = stream or target.is_symlink()
        everything: Path | None = None  # a stream's report lists every failure, or (no spill_dir) counts those it leaves out
        if not stream:
            everything = failures_file(target)
        elif spill_dir is not None and self.tally.snapshot().failed > REPORT_FAILURES:
            everything = spill_dir / f"{self.job_id}.failures.jsonl"
            everything.parent.mkdir(parents=True, exist_ok=True)
        digest = self._digest(everything)
        named = None if digest.complete or everything is None else str(everything) if stream else everything.name
        if not through:
            tmp = target.with_name(f".{target.name}.tmp")
            try:
                with open(tmp, "w", encoding="utf-8") as fh:
                    write_report(fh, self.summary(), digest, named)
                tmp.replace(target)
            finally:
                tmp.unlink(missing_ok=True)
        elif (out := _standard_stream(path)) is not None:
            write_report(out, self.summary(), digest, named)
            out.flush()
        else:
            with open(target, "w", encoding="utf-8") as fh:
                write_report(fh, self.summary(), digest, named)
        return None if digest.complete else everything

    def _digest(self, everything: Path | None) -> FailureDigest:
        """Every failure through a digest, into `everything` (written beside and renamed) when report.json would not
        list them all; nothing is written when it does, or when there is nowhere to write them."""
        digest = FailureDigest()
        if everything is None:
            for _ in digest.through(self.tally.failures()):
                pass
            return digest
        tmp_all = everything.with_name(f".{everything.name}.tmp")
        try:
            with open(tmp_all, "w", encoding="utf-8") as fh:
                write_failures(fh, digest.through(self.tally.failures()))
            if not digest.complete:
                tmp_all.replace(everything)
        finally:
            tmp_all.unlink(missing_ok=True)
        return digest

    @property
    def exit_code(self) -> int:
        """The CLI's: 0 succeeded, a dry run, or failures within options.tolerated_failures; 1 failed; 3 stopped (an
        endpoint unreachable; resumable); 4 stopped by the failure breaker (resumable); 130 interrupted (resumable)."""
        if self.interrupted:
            return 130
        if self.status == "stopped":
            return 4 if self.stop_reason == "failure_breaker" else 3
        failed = self.tally.snapshot().failed
        return 1 if over_tolerance(status=self.status, failed=failed, tolerated=self.tolerated_failures, error=self.error) else 0
