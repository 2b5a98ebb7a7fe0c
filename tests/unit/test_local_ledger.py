"""The local ledger's resume point: the unbroken chain of finished ranges, and the ranges beyond it."""

from __future__ import annotations

from pathlib import Path

from s3bulk.job import parse_job
from s3bulk.local.ledger import BatchEntry, LocalLedger

JOB = parse_job('{"operation": "copy", "source": {"bucket": "src-b"}, "destination": {"bucket": "dst-b"}}')


def rec(after: str | None, last: str) -> BatchEntry:
    return BatchEntry(after, last, 1, 1, 1, 1, 0, 0, 1, 0)


def test_a_batch_spanning_a_range_finished_out_of_order_extends_the_chain(tmp_path: Path) -> None:
    ledger = LocalLedger.create(tmp_path, "j1", JOB)
    ledger.finish_batch(rec(None, "b"), [])
    ledger.finish_batch(rec("f", "h"), [])  # finished out of order before a crash
    assert ledger.resume_point() == ("b", [("f", "h")])
    ledger.finish_batch(rec("b", "f"), [])  # the resumed run fills the gap
    ledger.finish_batch(rec("f", "k"), [])  # and its next batch starts where its own previous one ended
    assert ledger.resume_point() == ("k", [])
    totals = ledger.totals()
    assert (totals.succeeded, totals.batches) == (4, 4)
    ledger.close()


def test_nothing_from_the_start_finished_means_list_from_the_start(tmp_path: Path) -> None:
    ledger = LocalLedger.create(tmp_path, "j2", JOB)
    ledger.finish_batch(rec("m", "p"), [("n", "AccessDenied", "no")])
    assert ledger.resume_point() == (None, [("m", "p")])
    assert list(ledger.failures()) == [("n", "AccessDenied", "no")]
    ledger.close()
