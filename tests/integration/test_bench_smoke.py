"""The benchmark harness runs end to end on a tiny dataset (numbers are not judged here)."""

from __future__ import annotations

from bench.concurrency_sweep import sweep, table


def test_concurrency_sweep_harness_runs_and_tabulates(seaweed: str) -> None:
    rows = sweep(seaweed, objects=40, threads=[2, 8], runs=1)
    assert [r.threads for r in rows] == [2, 8]
    assert all(r.median > 0 and r.low <= r.median <= r.high for r in rows)
    text = table(rows, 40, 1)
    assert "| 2 |" in text and "| 8 |" in text
    assert "100%" in text
