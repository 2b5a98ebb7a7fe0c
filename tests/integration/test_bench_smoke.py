"""The benchmark harness runs end to end on a tiny dataset (numbers are not judged here)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.concurrency_sweep import sweep, table


def test_concurrency_sweep_harness_runs_and_tabulates(seaweed: str) -> None:
    rows = sweep(seaweed, objects=40, threads=[2, 8], runs=1)
    assert [r.threads for r in rows] == [2, 8]
    assert all(r.median > 0 and r.low <= r.median <= r.high for r in rows)
    text = table(rows, 40, 1)
    assert "| 2 |" in text and "| 8 |" in text
    assert "100%" in text


def test_benchmark_harness_quick_mode_measures_every_tool_and_writes_the_report(tmp_path: Path) -> None:
    from bench.run import main

    out = tmp_path / "benchmarks.md"
    assert main(["--quick", "--latency-ms", "0", "--out", str(out)]) == 0
    rows = json.loads(out.with_suffix(".json").read_text())
    copy = {r["tool"] for r in rows if r["workload"] == "copy 1 KiB, direct"}
    assert copy == {"s3bulk", "s5cmd", "rclone", "aws s3", "boto3 baseline"}
    assert all(r["median"] > 0 and r["peak_rss_mb"] > 0 for r in rows)
    assert {r["workload"] for r in rows} >= {"delete", "large object (12 MiB)", "synthetic 20,000-key copy"}
    assert "| copy 1 KiB, direct | s3bulk |" in out.read_text()
    assert out.with_suffix(".png").stat().st_size > 1000
