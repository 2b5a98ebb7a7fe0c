"""A sync's deletes (delete_extraneous) never follow from an empty or failed selection, and a resumed sync still makes them."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from s3bulk.job import Job, JobError, parse_job
from s3bulk.local.engine import Engine
from s3bulk.local.interrupt import Interrupt
from s3bulk.local.ledger import LocalLedger
from s3bulk.local.run import execute
from s3bulk.store import StoreError
from s3bulk.testing.memstore import MemoryStore


def sync_job(prefix: str = "in/", **options: Any) -> Job:
    return parse_job(
        json.dumps(
            {
                "operation": "copy",
                "source": {"bucket": "src-b", "prefix": prefix},
                "destination": {"bucket": "dst-b", "prefix": "out/"},
                "options": {"if_exists": "skip-unchanged", "delete_extraneous": True, "batch_size": 10} | options,
            }
        )
    )


def stores(n: int = 60, extra: int = 25) -> MemoryStore:
    s = MemoryStore(page_size=10)
    s.create_bucket("src-b")
    s.create_bucket("dst-b")
    for i in range(n):
        s.put_object("src-b", f"in/{i:03d}", b"x")
    for i in range(extra):  # destination objects no source maps to, spread between the copies' keys
        s.put_object("dst-b", f"out/{i * 3:03d}-old", b"y")
    return s


def test_an_empty_selection_is_refused_before_any_delete(tmp_path: Path) -> None:
    s = stores()
    for dry in (False, True):
        with pytest.raises(JobError, match=r"selects no object.*allow_empty_source"):
            execute(sync_job("in/typo/", dry_run=dry), s, concurrency=4, console=Console(file=io.StringIO()), quiet=True)
    assert "DeleteObjects" not in s.calls and len(s.keys("dst-b")) == 25


def test_allow_empty_source_empties_the_destination_on_purpose() -> None:
    s = stores()
    report = Engine(sync_job("in/typo/", allow_empty_source=True), s, concurrency=4).run()
    assert report.summary()["deleted_extraneous"] == 25 and s.keys("dst-b") == []


def test_a_listing_that_fails_part_way_deletes_nothing() -> None:
    s = stores()
    pages = [0]

    def third_source_page_denied(op: str, bucket: str, key: str) -> StoreError | None:
        if op == "ListObjectsV2" and bucket == "src-b":
            pages[0] += 1
            if pages[0] == 3:
                return StoreError("AccessDenied", "denied", 403)
        return None

    s.faults.append(third_source_page_denied)
    report = Engine(sync_job(list_workers=1), s, concurrency=4).run()
    assert report.status == "failed" and report.error is not None and "AccessDenied" in report.error
    assert "DeleteObjects" not in s.calls  # the extraneous objects found before the failure are all still there
    assert len([k for k in s.keys("dst-b") if k.endswith("-old")]) == 25


def test_the_summary_shows_what_a_sync_deleted_and_would_delete() -> None:
    from s3bulk.local.progress import summary_table

    out = io.StringIO()
    for dry in (True, False):
        report = Engine(sync_job(dry_run=dry), stores(), concurrency=4).run()
        Console(file=out, width=120).print(summary_table(report, deletes=True))
    text = out.getvalue()
    assert "would delete" in text and "deleted (extraneous)" in text and text.count("25") >= 2


def test_a_resumed_sync_deletes_what_the_interrupted_run_had_found(tmp_path: Path) -> None:
    """The interrupted run found extraneous objects but deletes wait for a whole listing: the resume joins from the start."""
    s, job = stores(), sync_job(list_workers=1)
    interrupt = Interrupt()
    copies = [0]

    def stop_after_20_copies(op: str, bucket: str, key: str) -> StoreError | None:
        if op == "CopyObject":
            copies[0] += 1
            if copies[0] == 20:
                interrupt.request()
        return None

    s.faults.append(stop_after_20_copies)
    ledger = LocalLedger.create(tmp_path, "sync-1", job)
    first = execute(job, s, concurrency=2, console=Console(file=io.StringIO()), quiet=True, ledger=ledger, interrupt=interrupt)
    ledger.close()
    assert first.interrupted and "DeleteObjects" not in s.calls
    s.faults.clear()
    ledger = LocalLedger.open(tmp_path, "sync-1")
    done = execute(job, s, concurrency=2, console=Console(file=io.StringIO()), quiet=True, ledger=ledger)
    ledger.close()
    summary = done.summary()
    # copies the interrupted run made in a batch it never committed are found unchanged now: skipped, not copied twice
    assert (summary["status"], summary["listed"], summary["succeeded"] + summary["skipped"], summary["failed"]) == ("succeeded", 60, 60, 0)
    assert s.keys("dst-b") == [f"out/{i:03d}" for i in range(60)]  # every extraneous object deleted, every copy made
