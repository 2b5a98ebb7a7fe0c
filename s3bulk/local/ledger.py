"""The local engine's durable job ledger: SQLite, the counterpart of the DynamoDB ledger on AWS.

A batch is the unit of commitment, as on AWS: its counts and failures are written
in one transaction when every object of it has a final outcome, and never before.
A process killed with -9 therefore loses only batches in flight, and those are
redone on resume (every task is idempotent). Each batch records the key range it
covers in listing order, (after, last]; a resume lists again from the end of the
unbroken run of finished ranges (the watermark) and skips keys inside the few
finished ranges beyond it, so finished work is neither redone nor recounted, and
memory stays bounded by the batches that were in flight.

A run the failure breaker stopped says so (`finish`'s reason), and its resume redoes the objects that failed:
they leave their batches' counts for the `redo` table, and are counted again, apart from the ranges, as they finish.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any, Protocol

from s3bulk.job import Job

SCHEMA = """
CREATE TABLE IF NOT EXISTS job (id TEXT PRIMARY KEY, spec TEXT NOT NULL, spec_hash TEXT NOT NULL,
    status TEXT NOT NULL, created REAL NOT NULL, updated REAL NOT NULL, runs INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS batch (after TEXT, last TEXT NOT NULL, scanned INTEGER NOT NULL, listed INTEGER NOT NULL,
    listed_bytes INTEGER NOT NULL, succeeded INTEGER NOT NULL, skipped INTEGER NOT NULL, failed INTEGER NOT NULL,
    bytes INTEGER NOT NULL, retried INTEGER NOT NULL, run INTEGER NOT NULL, PRIMARY KEY (last));
CREATE TABLE IF NOT EXISTS failure (batch_last TEXT NOT NULL, key TEXT NOT NULL, error TEXT NOT NULL, message TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tail (id INTEGER PRIMARY KEY CHECK (id = 1), scanned INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS canary (key TEXT NOT NULL, version TEXT NOT NULL, size INTEGER NOT NULL, failed INTEGER NOT NULL,
    PRIMARY KEY (key, version));
CREATE TABLE IF NOT EXISTS deleting (last TEXT PRIMARY KEY, entry TEXT NOT NULL, failures TEXT NOT NULL, items TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS origin (id INTEGER PRIMARY KEY CHECK (id = 1), settings TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS canary_totals (id INTEGER PRIMARY KEY CHECK (id = 1), scanned INTEGER NOT NULL, listed INTEGER NOT NULL,
    listed_bytes INTEGER NOT NULL, succeeded INTEGER NOT NULL, skipped INTEGER NOT NULL, failed INTEGER NOT NULL, bytes INTEGER NOT NULL,
    retried INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS stop (id INTEGER PRIMARY KEY CHECK (id = 1), reason TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS redo (key TEXT NOT NULL, version TEXT NOT NULL, PRIMARY KEY (key, version));
CREATE TABLE IF NOT EXISTS redo_totals (id INTEGER PRIMARY KEY CHECK (id = 1), listed INTEGER NOT NULL, succeeded INTEGER NOT NULL,
    skipped INTEGER NOT NULL, failed INTEGER NOT NULL, bytes INTEGER NOT NULL, retried INTEGER NOT NULL);
"""
# The failures of the canary's objects (options.canary) are kept under this batch name: no listing range is called that.
CANARY_BATCH = ""  # no S3 key (nor a manifest position) is empty
# The failures of objects redone after the failure breaker (take_for_redo) are kept under this one: no S3 key holds U+0000.
REDO_BATCH = "\x00redo"


# The status of a run a --restart of its job started over from (set_aside).
SET_ASIDE = "set-aside"


class _Releasable(Protocol):
    def release(self) -> None: ...


class LedgerError(Exception):
    """A ledger that cannot be used as asked; str() is the one-line message."""


def state_dir() -> Path:
    """$S3BULK_STATE_DIR, else $XDG_STATE_HOME/s3bulk, else ~/.local/state/s3bulk."""
    explicit = os.environ.get("S3BULK_STATE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "s3bulk"


def spec_hash(job: Job) -> str:
    """What makes two job files the same job: everything but the id and dry_run."""
    doc = job.model_dump(mode="json", exclude={"job_id"})
    doc["options"].pop("dry_run", None)
    doc["options"].pop("concurrency", None)
    doc["options"].pop("canary", None)  # `--resume` after a canary runs the same job without it
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class BatchEntry:
    after: str | None  # None: the batch starts at the beginning of the listing
    last: str
    scanned: int
    listed: int
    listed_bytes: int
    succeeded: int
    skipped: int
    failed: int
    bytes: int
    retried: int


@dataclass(frozen=True, slots=True)
class Totals:
    scanned: int
    listed: int
    listed_bytes: int
    succeeded: int
    skipped: int
    failed: int
    bytes: int
    retried: int
    batches: int


class LocalLedger:
    """One job's SQLite file (WAL: a commit survives the process being killed)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._lock = threading.RLock()  # every use of the connection, from any thread, and close()
        self._closed = False
        self._held: _Releasable | None = None  # the run's job lock (hold)

    # -- opening -----------------------------------------------------------------------------
    @classmethod
    def create(cls, directory: Path, job_id: str, job: Job, origin: dict[str, str | None] | None = None) -> LocalLedger:
        """A new job's ledger; `origin` is where the run points (endpoint, Region, profile: never keys), so --resume goes there."""
        path = directory / f"{job_id}.sqlite"
        if path.exists():
            raise LedgerError(f"job {job_id!r} already has a ledger at {path}; pass --resume to continue it, or use another job_id")
        ledger = cls(path)
        now = time.time()
        ledger._run("BEGIN IMMEDIATE")
        ledger._run("INSERT INTO job VALUES (?, ?, ?, 'running', ?, ?, 1)", (job_id, job.model_dump_json(), spec_hash(job), now, now))
        if origin is not None:
            ledger._run("INSERT INTO origin VALUES (1, ?)", (json.dumps(origin, sort_keys=True),))
        ledger._run("COMMIT")
        return ledger

    def origin(self) -> dict[str, str | None] | None:
        """Where the run pointed (create's `origin`); None for a ledger written before runs remembered it."""
        row = self._one("SELECT settings FROM origin")
        return None if row is None else dict(json.loads(row[0]))

    @classmethod
    def open(cls, directory: Path, job_id: str) -> LocalLedger:
        path = directory / f"{job_id}.sqlite"
        if not path.exists():
            raise LedgerError(f"--resume {job_id}: no ledger at {path}; check the job id (or S3BULK_STATE_DIR)")
        if cls.peek(directory, job_id)[1] == SET_ASIDE:
            raise LedgerError(
                f"--resume {job_id}: that run was set aside by a --restart of its job, which started over; "
                "resume the newer run (--resume without an id finds it), or --restart again"
            )
        ledger = cls(path)
        ledger._run("UPDATE job SET runs = runs + 1, status = 'running', updated = ?", (time.time(),))
        return ledger

    @classmethod
    def reading(cls, directory: Path, job_id: str) -> LocalLedger:
        """A run's ledger to read its totals, not to resume it: `open` marks the run running again, which a rerun of
        its job file then refuses as unfinished."""
        return cls(directory / f"{job_id}.sqlite")

    @classmethod
    def peek(cls, directory: Path, job_id: str) -> tuple[str, str]:
        """(spec hash, status) of a run, read only: what a resume locks (joblock.py) before it opens the ledger."""
        path = directory / f"{job_id}.sqlite"
        if not path.exists():
            raise LedgerError(f"--resume {job_id}: no ledger at {path}; check the job id (or S3BULK_STATE_DIR)")
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT spec_hash, status FROM job").fetchone()
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"--resume {job_id}: {path} is not a readable ledger ({exc})") from None
        finally:
            db.close()
        if row is None:
            raise LedgerError(f"--resume {job_id}: {path} holds no job")
        return str(row[0]), str(row[1])

    @classmethod
    def unfinished(cls, directory: Path, job: Job) -> list[tuple[str, str]]:
        """(job id, status) of every run of the same job spec that neither finished nor was set aside, newest first."""
        want = spec_hash(job)
        found: list[tuple[float, str, str]] = []
        for path in directory.glob("*.sqlite") if directory.is_dir() else ():
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                row = db.execute("SELECT id, spec_hash, status, updated FROM job").fetchone()
            except sqlite3.DatabaseError:
                continue
            finally:
                db.close()
            if row and row[1] == want and row[2] not in {"finished", SET_ASIDE}:
                found.append((row[3], row[0], row[2]))
        return [(job_id, status) for _, job_id, status in sorted(found, reverse=True)]

    @classmethod
    def find_unfinished(cls, directory: Path, job: Job) -> str | None:
        """The newest unfinished run of the same job spec, for `--resume` without an id."""
        runs = cls.unfinished(directory, job)
        return runs[0][0] if runs else None

    @classmethod
    def set_aside(cls, directory: Path, job_id: str) -> None:
        """A run a --restart started over from: never resumed, nor found by a bare --resume (its file stays, for reading)."""
        db = sqlite3.connect(str(directory / f"{job_id}.sqlite"), isolation_level=None)
        try:
            db.execute("UPDATE job SET status = ?, updated = ?", (SET_ASIDE, time.time()))
        finally:
            db.close()

    def hold(self, lock: _Releasable) -> None:
        """The run's job lock (joblock.py), released when the ledger closes."""
        self._held = lock

    @property
    def job_id(self) -> str:
        return str(self._one("SELECT id FROM job")[0])

    @property
    def run_number(self) -> int:
        return int(self._one("SELECT runs FROM job")[0])

    def spec(self) -> str:
        return str(self._one("SELECT spec FROM job")[0])

    # -- writing -----------------------------------------------------------------------------
    def finish_batch(self, rec: BatchEntry, failures: list[tuple[str, str, str]]) -> None:
        """One transaction: the batch's range and counts, and its failures."""
        with self._lock:
            self._run("BEGIN IMMEDIATE")
            try:
                self._run(
                    "INSERT OR REPLACE INTO batch VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        rec.after,
                        rec.last,
                        rec.scanned,
                        rec.listed,
                        rec.listed_bytes,
                        rec.succeeded,
                        rec.skipped,
                        rec.failed,
                        rec.bytes,
                        rec.retried,
                        self.run_number,
                    ),
                )
                self._run("DELETE FROM failure WHERE batch_last = ?", (rec.last,))
                self._run("DELETE FROM deleting WHERE last = ?", (rec.last,))
                self._many("INSERT INTO failure VALUES (?, ?, ?, ?)", [(rec.last, *f) for f in failures])
                self._run("UPDATE job SET updated = ?", (time.time(),))
                self._run("COMMIT")
            except BaseException:
                self._run("ROLLBACK")
                raise

    def begin_deletes(self, rec: BatchEntry, failures: list[tuple[str, str, str]], items: list[tuple[str, str, int]]) -> None:
        """A move batch about to delete its sources: its counts so far, its failures and the confirmed copies' (key, version
        id, size). finish_batch clears it; a run killed in between leaves it for `deletes_to_finish`."""
        row = (rec.last, json.dumps(astuple(rec)), json.dumps(failures), json.dumps(items))
        with self._lock:
            self._run("INSERT OR REPLACE INTO deleting VALUES (?, ?, ?, ?)", row)

    def deletes_to_finish(self) -> list[tuple[BatchEntry, list[tuple[str, str, str]], list[tuple[str, str, int]]]]:
        """Move batches a killed run left between journaling their deletes and committing (begin_deletes)."""
        out: list[tuple[BatchEntry, list[tuple[str, str, str]], list[tuple[str, str, int]]]] = []
        for entry, failures, items in self._all("SELECT entry, failures, items FROM deleting ORDER BY last"):
            fails = [(str(k), str(c), str(m)) for k, c, m in json.loads(failures)]
            out.append((BatchEntry(*json.loads(entry)), fails, [(str(k), str(v), int(n)) for k, v, n in json.loads(items)]))
        return out

    def finish_canary(
        self, objects: list[tuple[str, str, int]], rec: BatchEntry, failures: list[tuple[str, str, str]], *, removes_source: bool
    ) -> int:
        """One transaction: a canary batch's objects (key, version id, size), counted, and the done ones remembered so the
        rest of the job skips them (outside the listing's ranges, which the rest of the job lists as usual).

        Objects that failed are kept apart: the resumed run does them again (drop_canary_failures). Returns the objects
        counted as scanned: those a delete or move removed, which the resumed listing will not see again."""
        failed = {key for key, _, _ in failures}
        rows = [(k, v, s, int(k in failed)) for k, v, s in objects]
        scanned = sum(1 for row in rows if not row[3]) if removes_source else 0
        with self._lock:
            self._run("BEGIN IMMEDIATE")
            try:
                self._many("INSERT OR REPLACE INTO canary VALUES (?, ?, ?, ?)", rows)
                self._run("INSERT OR IGNORE INTO canary_totals VALUES (1, 0, 0, 0, 0, 0, 0, 0, 0)")
                self._run(
                    "UPDATE canary_totals SET scanned = scanned + ?, listed = listed + ?, listed_bytes = listed_bytes + ?,"
                    " succeeded = succeeded + ?, skipped = skipped + ?, failed = failed + ?, bytes = bytes + ?, retried = retried + ?",
                    (
                        scanned,
                        len(objects),
                        sum(max(s, 0) for _, _, s in objects),
                        rec.succeeded,
                        rec.skipped,
                        rec.failed,
                        rec.bytes,
                        rec.retried,
                    ),
                )
                self._many("INSERT INTO failure VALUES (?, ?, ?, ?)", [(CANARY_BATCH, *f) for f in failures])
                self._run("UPDATE job SET updated = ?", (time.time(),))
                self._run("COMMIT")
            except BaseException:
                self._run("ROLLBACK")
                raise
        return scanned

    def canary_objects(self) -> set[tuple[str, str]]:
        """The (key, version id) pairs a canary did: the rest of the job lists them but does not act on them again."""
        return {(str(k), str(v)) for k, v in self._all("SELECT key, version FROM canary WHERE failed = 0")}

    def drop_canary_failures(self) -> None:
        """Forget the canary's failed objects (their counts and failure rows): the resumed run lists them and does them again."""
        with self._lock:
            self._run("BEGIN IMMEDIATE")
            try:
                n, size = self._one("SELECT COUNT(*), COALESCE(SUM(MAX(size, 0)), 0) FROM canary WHERE failed = 1")
                self._run("UPDATE canary_totals SET failed = 0, listed = listed - ?, listed_bytes = listed_bytes - ?", (n, size))
                self._run("DELETE FROM canary WHERE failed = 1")
                self._run("DELETE FROM failure WHERE batch_last = ?", (CANARY_BATCH,))
                self._run("COMMIT")
            except BaseException:
                self._run("ROLLBACK")
                raise

    def record_tail(self, scanned: int) -> None:
        """Keys scanned after the last selected key (the filters dropped them): counted once, when listing ends."""
        with self._lock:
            self._run("INSERT OR REPLACE INTO tail VALUES (1, ?)", (scanned,))

    def finish(self, status: str, reason: str | None = None) -> None:
        """interrupted and stopped (an endpoint unreachable, the failure breaker: `reason`) stay resumable; anything else
        is finished."""
        kept = status if status in {"interrupted", "stopped", "canary"} else "finished"
        with self._lock:
            self._run("BEGIN IMMEDIATE")
            try:
                self._run("UPDATE job SET status = ?, updated = ?", (kept, time.time()))
                self._run("DELETE FROM stop")
                if reason is not None:
                    self._run("INSERT INTO stop VALUES (1, ?)", (reason,))
                self._run("COMMIT")
            except BaseException:
                self._run("ROLLBACK")
                raise

    def stopped_by(self) -> str | None:
        """Why the last run stopped (finish's `reason`), if it gave one."""
        row = self._one("SELECT reason FROM stop")
        return None if row is None else str(row[0])

    # -- redoing what the failure breaker's run failed -------------------------------------------------
    def take_for_redo(self, version_of: Callable[[str, str], str | None]) -> int:
        """The failed objects of every batch (and of earlier redos) become objects to redo: their failure rows go, their
        batches count them neither listed nor failed, and `redo` holds them until a run commits them (finish_redo).
        `version_of(error, message)` names the version a failure is of ("" the current one), or None for a failure that
        names no object to redo (a manifest row the job refused): those stay failed. The canary's failures are done
        again anyway (drop_canary_failures). Clears the stop reason. Returns the objects to redo."""
        with self._lock:
            self._run("BEGIN IMMEDIATE")
            try:
                taken: dict[str, int] = {}
                after = -1
                while rows := self._all(
                    "SELECT rowid, batch_last, key, error, message FROM failure WHERE rowid > ? AND batch_last != ? ORDER BY rowid LIMIT 1000",
                    (after, CANARY_BATCH),
                ):
                    after = rows[-1][0]
                    chosen = [(rowid, last, key, version_of(error, message)) for rowid, last, key, error, message in rows]
                    chosen = [c for c in chosen if c[3] is not None]
                    self._many("INSERT OR IGNORE INTO redo VALUES (?, ?)", [(key, version) for _, _, key, version in chosen])
                    self._many("DELETE FROM failure WHERE rowid = ?", [(rowid,) for rowid, _, _, _ in chosen])
                    for _, last, _, _ in chosen:
                        taken[last] = taken.get(last, 0) + 1
                for last, n in taken.items():
                    if last == REDO_BATCH:
                        self._run("UPDATE redo_totals SET failed = failed - ?, listed = listed - ?", (n, n))
                    else:
                        self._run("UPDATE batch SET failed = failed - ?, listed = listed - ? WHERE last = ?", (n, n, last))
                self._run("DELETE FROM stop")
                self._run("COMMIT")
            except BaseException:
                self._run("ROLLBACK")
                raise
        return self.redo_left()

    def redo_left(self) -> int:
        """Objects still to redo (take_for_redo), none once every one was committed."""
        return int(self._one("SELECT COUNT(*) FROM redo")[0])

    def to_redo(self) -> Iterator[tuple[str, str]]:
        """(key, version id) of every object still to redo, in key order, streamed from disk."""
        after = ("", "")
        while rows := self._all("SELECT key, version FROM redo WHERE (key, version) > (?, ?) ORDER BY key, version LIMIT 1000", after):
            yield from ((str(k), str(v)) for k, v in rows)
            after = (rows[-1][0], rows[-1][1])

    def finish_redo(self, objects: list[tuple[str, str]], rec: BatchEntry, failures: list[tuple[str, str, str]]) -> None:
        """One transaction: a batch of redone objects, counted (listed again, as take_for_redo uncounted them) and no
        longer to redo; what failed again is kept under REDO_BATCH."""
        with self._lock:
            self._run("BEGIN IMMEDIATE")
            try:
                self._many("DELETE FROM redo WHERE key = ? AND version = ?", objects)
                self._run("INSERT OR IGNORE INTO redo_totals VALUES (1, 0, 0, 0, 0, 0, 0)")
                self._run(
                    "UPDATE redo_totals SET listed = listed + ?, succeeded = succeeded + ?, skipped = skipped + ?, failed = failed + ?,"
                    " bytes = bytes + ?, retried = retried + ?",
                    (len(objects), rec.succeeded, rec.skipped, rec.failed, rec.bytes, rec.retried),
                )
                self._many("INSERT INTO failure VALUES (?, ?, ?, ?)", [(REDO_BATCH, *f) for f in failures])
                self._run("UPDATE job SET updated = ?", (time.time(),))
                self._run("COMMIT")
            except BaseException:
                self._run("ROLLBACK")
                raise

    # -- reading -----------------------------------------------------------------------------
    def resume_point(self) -> tuple[str | None, list[tuple[str, str]]]:
        """(watermark, finished ranges beyond it as (after, last) pairs, in key order).

        The watermark is the end of the chain of finished ranges that starts at the
        beginning of the listing; None when nothing from the start is finished.
        """
        rows = self._all("SELECT after, last FROM batch ORDER BY last")
        watermark: str | None = None
        rest: list[tuple[str, str]] = []
        chained = True
        for after, last in rows:
            # A range joins the chain when it starts at or before the chain's end: a resumed run's
            # batch can start before a range finished out of order and end after it.
            joins = after is None if watermark is None else (after is not None and after <= watermark)
            if chained and joins:
                watermark = last
            else:
                chained = False
                rest.append((after or "", last))
        return watermark, rest

    def totals(self) -> Totals:
        with self._lock:  # one consistent view of the three tables
            row = self._one(
                "SELECT COALESCE(SUM(scanned),0), COALESCE(SUM(listed),0), COALESCE(SUM(listed_bytes),0), COALESCE(SUM(succeeded),0),"
                " COALESCE(SUM(skipped),0), COALESCE(SUM(failed),0), COALESCE(SUM(bytes),0), COALESCE(SUM(retried),0), COUNT(*) FROM batch"
            )
            tail = self._one("SELECT scanned FROM tail")
            canary = self._one("SELECT scanned, listed, listed_bytes, succeeded, skipped, failed, bytes, retried FROM canary_totals")
            redo = self._one("SELECT 0, listed, 0, succeeded, skipped, failed, bytes, retried FROM redo_totals")
        extra = (*canary, 0) if canary else (0,) * 9
        again = (*redo, 0) if redo else (0,) * 9
        ours = (row[0] + (tail[0] if tail else 0), *row[1:])
        return Totals(*(a + b + c for a, b, c in zip(ours, extra, again, strict=True)))

    def failures(self) -> Iterator[tuple[str, str, str]]:
        """Streamed from disk, in key order."""
        after: tuple[str, int] = ("", -1)
        while rows := self._all(
            "SELECT key, error, message, rowid FROM failure WHERE (key, rowid) > (?, ?) ORDER BY key, rowid LIMIT 1000", after
        ):
            yield from ((k, e, m) for k, e, m, _ in rows)
            after = (rows[-1][0], rows[-1][3])

    def discard_if_unused(self) -> None:
        """Close, and remove the file of a first run that a check refused before its first batch: no run to resume."""
        used = self.run_number > 1 or self._one("SELECT EXISTS(SELECT 1 FROM batch) OR EXISTS(SELECT 1 FROM canary)")[0]
        self.close()
        if not used:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def close(self) -> None:
        """Waits for a write in progress; any later call raises LedgerError (SQLite would crash the process)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._db.close()
            if self._held is not None:
                self._held.release()
                self._held = None

    # -- the connection, behind one lock ----------------------------------------------------------
    def _open_db(self) -> sqlite3.Connection:
        if self._closed:
            raise LedgerError(f"the ledger {self.path} is closed")
        return self._db

    def _run(self, sql: str, params: Sequence[Any] = ()) -> None:
        with self._lock:
            self._open_db().execute(sql, params)

    def _many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self._lock:
            self._open_db().executemany(sql, rows)

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        with self._lock:
            return self._open_db().execute(sql, params).fetchone()

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            return self._open_db().execute(sql, params).fetchall()
