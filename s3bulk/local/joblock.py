"""One run of a job at a time: a file lock per job spec in the state directory, held while the run keeps a ledger.

Two runs of the same job at once would copy, move or delete the same objects twice over and
keep two ledgers that each think they are the job. The lock is `flock` on STATE/SPEC_HASH.lock
(spec_hash: what makes two job files the same job), so a new run and a resume of the same job
exclude each other, and the kernel releases it when the process ends however it ends (kill -9
included): no stale lock to clear by hand. The file holds the holder's pid, for the one line the
other run prints. It is removed on release; a run that took the lock on a file already removed
(between another's open and unlink) sees the path changed and takes it again.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from types import TracebackType

from s3bulk.local.ledger import LedgerError


class JobLock:
    """The lock one run of a job holds (`take`), released by `release` or by the process ending."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def take(cls, directory: Path, spec: str, what: str = "this job") -> JobLock:
        """The lock of job spec `spec`, or LedgerError naming the pid of the run that holds it."""
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{spec}.lock"
        for _ in range(10):  # each turn loses only to a holder that released (and removed the file) meanwhile
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 32).decode(errors="replace").strip()
                os.close(fd)
                pid = f"pid {holder}" if holder.isdigit() else "another process"
                raise LedgerError(
                    f"{what} is running already ({pid}, lock {path}); wait for it to end, or stop it (Ctrl-C, kill -INT {holder or 'PID'}) "
                    "and go on with its --resume"
                ) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                return cls(path, fd)
            os.close(fd)
        raise LedgerError(f"{path}: could not take the job's lock; try again")

    def release(self) -> None:
        """Remove the file (while still holding it, so no other run holds a removed file's lock) and unlock."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> JobLock:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()
