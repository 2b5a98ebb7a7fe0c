"""s3bulk against an earlier s3bulk: the same small-object copy and delete, the two interleaved, ratios in one run.

    python -m bench.ab --base REV                 # REV: a commit, tag or branch of this repository
    python -m bench.ab --base REV --objects 20000 --runs 5

A change that adds checks to every object (issue 50's identity and listing checks) must not slow the workloads the
benchmark compares with peers: this measures by how much. The base's package is taken with `git archive` into a
temporary folder and run from there (`python -m s3bulk` with PYTHONPATH on it) in this venv, so only s3bulk's own code
differs. Rounds alternate which side goes first; each copy lands under a prefix of its own, and the delete removes that
copy, so both sides delete the same number of objects. Wall time and CPU come from each run's own rusage
(bench/tools.py::measure). SeaweedFS on loopback, as bench.run.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from bench.run import ROOT, compile_bytecode, s5cmd, seed_local_dir
from bench.tools import Measure, measure, s3bulk_job, tool_env
from s3bulk.local.server import ACCESS_KEY, SECRET_KEY, SeaweedServer
from s3bulk.s3.clients import ClientSettings, make_s3_client

SIDES = ("base", "head")


def checkout(rev: str, into: Path) -> Path:
    """The package as it was at `rev`, extracted under `into` (nothing of the working tree's)."""
    archive = subprocess.run(["git", "archive", rev, "s3bulk"], cwd=ROOT, check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(into / "s3bulk")], check=True)
    return into


def run(side_root: Path, tmp: Path, endpoint: str, doc: dict[str, object]) -> Measure:
    env = tool_env() | {"PYTHONPATH": str(side_root)}
    job = s3bulk_job(tmp, doc)
    return measure([sys.executable, "-m", "s3bulk", "run", str(job), "--endpoint-url", endpoint, "-q", "--no-ledger"], env)


def compare(base: str, objects: int, runs: int) -> list[dict[str, object]]:
    """Both sides' copy and delete of `objects` small objects, in `runs` interleaved rounds: a row per workload."""
    compile_bytecode()
    seconds: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="s3bulk-ab-") as tmpdir, SeaweedServer() as server:
        tmp = Path(tmpdir)
        roots = {"base": checkout(base, tmp / "base"), "head": ROOT}
        admin = make_s3_client(ClientSettings(endpoint_url=server.endpoint_url, access_key=ACCESS_KEY, secret_key=SECRET_KEY), 16)
        for b in ("ab-src", "ab-dst"):
            admin.create_bucket(Bucket=b)
        s5cmd(server.endpoint_url, "cp", str(seed_local_dir(tmp / "small", objects, 1024)) + "/*", "s3://ab-src/small/")
        for r in range(runs):
            order = SIDES if r % 2 == 0 else SIDES[::-1]
            for work in ("copy", "delete"):
                for side in order:
                    prefix = f"{side}/{r}/"
                    doc: dict[str, object] = (
                        {
                            "operation": "copy",
                            "source": {"bucket": "ab-src", "prefix": "small/"},
                            "destination": {"bucket": "ab-dst", "prefix": prefix},
                        }
                        if work == "copy"
                        else {"operation": "delete", "source": {"bucket": "ab-dst", "prefix": prefix}}
                    )
                    m = run(roots[side], tmp, server.endpoint_url, doc)
                    seconds.setdefault((work, side), []).append(m.seconds)
                    cpu.setdefault((work, side), []).append(m.cpu_seconds)
                    print(
                        f"  round {r + 1} {work:<6} {side:<4} {objects / m.seconds:>8,.0f} objects/s  {m.cpu_seconds:6.2f} s CPU",
                        flush=True,
                    )
    rows: list[dict[str, object]] = []
    for work in ("copy", "delete"):
        rate = {s: objects / statistics.median(seconds[(work, s)]) for s in SIDES}
        per = {s: 1000 * statistics.median(cpu[(work, s)]) / objects for s in SIDES}
        row: dict[str, object] = {"workload": work}
        row |= {f"{s}_objects_per_s": round(rate[s]) for s in SIDES} | {f"{s}_cpu_ms": round(per[s], 3) for s in SIDES}
        row |= {"speed_ratio": round(rate["head"] / rate["base"], 3), "cpu_ratio": round(per["head"] / per["base"], 3)}
        rows.append(row)
    return rows


def table(rows: list[dict[str, object]]) -> str:
    lines = [
        "| workload | base objects/s | head objects/s | head/base speed | base CPU ms/object | head CPU ms/object | head/base CPU |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        keys = ("base_objects_per_s", "head_objects_per_s", "speed_ratio", "base_cpu_ms", "head_cpu_ms", "cpu_ratio")
        lines.append("| " + " | ".join([str(row["workload"]), *(f"{row[k]}" for k in keys)]) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base", required=True, help="the earlier revision to compare with")
    p.add_argument("--objects", type=int, default=10_000)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args(argv)
    rows = compare(args.base, args.objects, args.runs)
    print(f"\n{args.objects:,} x 1 KiB, medians of {args.runs} interleaved rounds, base {args.base}, cpu_count {os.cpu_count()}")
    print(table(rows))
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
