"""s3bulk watch's loop: the local run's live line from the ledger's counts, until the job ends."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from s3bulk.aws.ledger import JobRecord
from s3bulk.job import parse_job
from s3bulk.local.watch import watch
from s3bulk.report import Snapshot

JOB = parse_job(Path("events/copy-prefix.json").read_text())


def record(status: str, succeeded: int, failed: int = 0, *, listing_done: bool = True) -> JobRecord:
    counters = {"listed": 1000, "scanned": 1000, "succeeded": succeeded, "failed": failed, "bytes": succeeded * 1000}
    return JobRecord("job-w", JOB, status, listing_done, counters, created_at=0.0)


def test_watch_shows_each_change_of_the_line_until_the_job_ends_and_returns_its_last_status() -> None:
    polls = iter([record("RUNNING", 0, listing_done=False), record("RUNNING", 400), record("RUNNING", 400), record("STOPPING", 700, 3)])
    polls_after_end = [record("STOPPED", 700, 3)]
    seen = io.StringIO()
    clock = iter(float(t) for t in range(0, 100, 10))
    slept: list[float] = []

    def fetch() -> tuple[str, Snapshot]:
        rec = next(polls, None) or polls_after_end.pop()
        return rec.status, rec.snapshot()

    last = watch("job-w", fetch, Console(file=seen, width=200), every=10, sleep=slept.append, clock=lambda: next(clock))
    lines = seen.getvalue().splitlines()
    assert last == "STOPPED" and slept == [10, 10, 10, 10]
    assert lines[0].startswith("job-w running  0/1,000+ (listing)")
    assert "400/1,000" in lines[1] and "40 obj/s" in lines[1] and "ETA 0:00:15" in lines[1]
    assert len(lines) == 5 and "ETA" in lines[2]  # one line per poll whose line changed (the rate did)
    assert lines[-1].startswith("job-w stopped  703/1,000 3 failed")
