"""The benchmark harness runs end to end on a tiny dataset (numbers are not judged here)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import reader
from bench.concurrency_sweep import sweep, table
from tests.integration.conftest import client_for


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


def test_reader_bench_reads_every_byte_with_every_reader_and_tabulates(seaweed: str, bucket_factory: Callable[[Any, str], str]) -> None:
    """The reader bench's sweep on a small object, direct: each peer and one grid point read every byte, one row each."""
    size = 16 * reader.MiB
    bucket = bucket_factory(client_for(seaweed), "bench-reader")
    reader.seed(seaweed, bucket, "object.bin", size)
    rows = reader.sweep(seaweed, bucket, "object.bin", size, reader.grid([8], [4]), runs=1, quiet=True)
    assert [r.config for r in rows] == [
        reader.Config("get_object"),
        reader.Config("s3transfer"),
        reader.Config("aws s3 cp"),
        reader.Config("idle"),
        reader.Config("reader", 8, 4),
    ]
    reads = [s for r in rows if r.config.kind != "idle" for s in r.samples]
    assert len(reads) == 4 and all(s.bytes == size for s in reads)
    assert all(0 < s.ttfb <= s.seconds for s in reads) and all(s.peak_rss_mib > 0 for r in rows for s in r.samples)
    text = reader.table(rows)
    for label in (
        "get_object().read()",
        "s3transfer download_fileobj",
        "aws s3 cp",
        "idle (imports + client)",
        "**ObjectReader (default)** | 8 | 4 | 40",
    ):
        assert f"| {label} |" in text
    assert "x s3transfer" in text


def test_key_log_bytes_bench_measures_both_runtimes() -> None:
    from bench.key_log_bytes import local, stack

    n, stored, plain = local(200)
    assert n == 196 and 0 < stored < plain  # the demo job excludes its scratch objects
    copied, per, puts = stack(200)
    assert copied == 200 and per > 0
    # One page, one batch: the Worker's key-log part and the Lister's one intent (a step of pages), nothing per object.
    assert [n for role, n in puts.items() if role.startswith("Lister")] == [1], puts
    assert [n for role, n in puts.items() if role.startswith("Worker")] == [1], puts


def test_the_ab_bench_runs_both_checkouts_on_the_same_copy_and_delete_and_gives_ratios() -> None:
    from bench.ab import compare, table

    rows = compare("HEAD", objects=30, runs=1)
    assert [r["workload"] for r in rows] == ["copy", "delete"]
    for row in rows:
        assert all(float(str(row[k])) > 0 for k in ("base_objects_per_s", "head_objects_per_s", "speed_ratio", "cpu_ratio"))
    assert "| copy |" in table(rows) and "| delete |" in table(rows)
