"""s3bulk against s5cmd, rclone, the AWS CLI and the boto3 baseline, on the same data in the same run.

    python -m bench.run                 # full: 20,000 objects, 3 runs, +20 ms leg if toxiproxy builds
    python -m bench.run --quick         # smoke: tiny datasets, 1 run (the test suite runs this)
    python -m bench.run --workloads large --out /tmp/large.md   # just the 1 GiB copy leg (--large-runs rounds)

Writes docs/benchmarks.md (table, command, machine) and docs/benchmarks.png (plot).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.tools import BIN, Measure, copy_tools, delete_tools, measure, tool_env
from bench.toxiproxy import Toxiproxy, build
from s3bulk.local.server import ACCESS_KEY, SECRET_KEY, SeaweedServer
from s3bulk.s3.clients import ClientSettings, make_s3_client

ROOT = Path(__file__).resolve().parent.parent
NOTES = ROOT / "bench" / "benchmarks-notes.md"
# Issue 18's target for the +20 ms leg is s5cmd with 128 workers (its default is 256).
LATENCY_S5CMD = ("--numworkers", "128")


@dataclass
class Result:
    workload: str
    tool: str
    unit: str  # what `per_second` counts
    items: int
    runs: list[Measure] = field(default_factory=list)

    @property
    def rates(self) -> list[float]:
        return [self.items / m.seconds for m in self.runs]

    @property
    def median(self) -> float:
        return statistics.median(self.rates)

    def row(self, best_peer: float | None) -> dict[str, Any]:
        cpu = statistics.median(m.cpu_seconds for m in self.runs)
        return {
            "workload": self.workload,
            "tool": self.tool,
            "median": self.median,
            "min": min(self.rates),
            "max": max(self.rates),
            "unit": self.unit,
            "cpu_s_per_1000": cpu * 1000 / self.items,
            "peak_rss_mb": max(m.peak_rss_mb for m in self.runs),
            "ratio": (self.median / best_peer) if best_peer else None,
            "runs": len(self.runs),
        }


def seed_local_dir(root: Path, count: int, size: int, nested: int = 0) -> Path:
    """Files to upload with s5cmd (the fastest seeder here); nested > 0 spreads them over that many folders."""
    root.mkdir(parents=True, exist_ok=True)
    body = os.urandom(size)
    for i in range(count):
        path = root / (f"p{i % nested:03d}/o{i:07d}" if nested else f"o{i:07d}")
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(body)
    return root


def compile_bytecode() -> None:
    """s3bulk's bytecode, as `pip install` writes it: the Python peers (aws s3, boto3, s3transfer) load compiled site-packages,
    while a checkout run with PYTHONDONTWRITEBYTECODE=1 compiles s3bulk's modules from source at every start
    (~0.09 s of each run on the reference machine, ~2% of a 1 GiB copy)."""
    compileall.compile_dir(str(ROOT / "s3bulk"), quiet=1)


def s5cmd(endpoint: str, *args: str) -> None:
    subprocess.run([str(BIN / "s5cmd"), "--endpoint-url", endpoint, *args], env=tool_env(), check=True, capture_output=True, timeout=3600)


def copy_workload(
    name: str, endpoint: str, tmp: Path, items: int, runs: int, results: list[Result], tools: set[str], s5cmd_args: tuple[str, ...] = ()
) -> None:
    """Runs interleave the tools (round 1 of each, then round 2, ...), so the server's background work after one
    tool's writes, and any drift over the leg, fall on every tool alike rather than on whichever runs first."""
    chosen = {tool: fn for tool, fn in copy_tools(tmp, s5cmd_args=s5cmd_args).items() if tool in tools}
    res = {tool: Result(name, tool, "objects/s", items) for tool in chosen}
    for r in range(runs):
        for tool, fn in chosen.items():
            res[tool].runs.append(fn(endpoint, "bench-src", "small/", "bench-dst", f"{name}/{tool.replace(' ', '-')}/{r}/"))
    for tool in chosen:
        results.append(res[tool])
        print(f"  {name:<22} {tool:<15} {res[tool].median:>9,.0f} objects/s", flush=True)


def delete_workload(endpoint: str, tmp: Path, items: int, runs: int, results: list[Result], tools: set[str]) -> None:
    chosen = {tool: fn for tool, fn in delete_tools(tmp).items() if tool in tools}
    res = {tool: Result("delete", tool, "objects/s", items) for tool in chosen}
    for r in range(runs):  # interleaved, as copy_workload's
        for tool, fn in chosen.items():
            prefix = f"{tool.replace(' ', '-')}/{r}/"
            s5cmd(endpoint, "cp", "s3://bench-src/small/*", f"s3://bench-del/{prefix}")  # setup, not timed
            res[tool].runs.append(fn(endpoint, "bench-del", prefix))
    for tool in chosen:
        results.append(res[tool])
        print(f"  {'delete':<22} {tool:<15} {res[tool].median:>9,.0f} objects/s", flush=True)


def large_workload(endpoint: str, tmp: Path, size_mb: int, runs: int, results: list[Result]) -> None:
    """One large object: s3bulk's multipart copy against s3transfer's default managed copy().

    The runs interleave as copy_workload's, and each round swaps which tool goes first, so whatever the server is
    still doing after one 1 GiB copy (or after the legs before this one) falls on both tools alike.
    """
    big = tmp / "large.bin"
    with open(big, "wb") as fh:
        chunk = os.urandom(1 << 20)
        for _ in range(size_mb):
            fh.write(chunk)
    s5cmd(endpoint, "cp", str(big), "s3://bench-src/large/object.bin")
    big.unlink()
    env = tool_env()
    job = tmp / "large-job.json"
    tools = ("s3bulk", "s3transfer copy()")
    res = {tool: Result(f"large object ({size_mb} MiB)", tool, "MB/s", size_mb) for tool in tools}
    for r in range(runs):
        for tool in tools if r % 2 == 0 else tools[::-1]:
            if tool == "s3bulk":
                job.write_text(
                    json.dumps(
                        {
                            "operation": "copy",
                            "source": {"bucket": "bench-src", "prefix": "large/"},
                            "destination": {"bucket": "bench-dst", "prefix": f"large/{r}/"},
                        }
                    )
                )
                res[tool].runs.append(measure([str(BIN / "s3bulk"), "run", str(job), "--endpoint-url", endpoint, "-q"], env))
            else:
                res[tool].runs.append(measure([sys.executable, "-m", "bench.s3transfer_copy", endpoint, f"large-s3t/{r}/object.bin"], env))
    for tool in tools:
        results.append(res[tool])
        print(f"  {res[tool].workload:<22} {tool:<15} {res[tool].median:>9,.0f} MB/s", flush=True)


def memory_workload(keys: int, results: list[Result]) -> None:
    res = Result(f"synthetic {keys:,}-key copy", "s3bulk", "keys/s", keys)
    res.runs.append(measure([sys.executable, "-m", "bench.synthetic", "--keys", str(keys)], tool_env()))
    results.append(res)
    print(f"  {res.workload:<22} s3bulk          peak RSS {res.runs[0].peak_rss_mb:,.0f} MB", flush=True)


def rank(results: list[Result]) -> list[dict[str, Any]]:
    rows = []
    for workload in dict.fromkeys(r.workload for r in results):
        group = [r for r in results if r.workload == workload]
        peers = [r.median for r in group if r.tool != "s3bulk"]
        best = max(peers) if peers else None
        rows += [r.row(best) for r in group]
    return rows


def write_report(rows: list[dict[str, Any]], command: str, out: Path, plot: Path | None) -> None:
    lines = [
        "# Benchmarks",
        "",
        f"Reproduce: `{command}` (writes this file and the plot). Every tool runs on the same data in the same run,",
        "against SeaweedFS (`weed mini`) on loopback; the +20 ms leg puts toxiproxy in front of it (10 ms each way).",
        "Medians of the runs, with min-max; the tools' runs interleave (round 1 of each tool, then round 2, ...);",
        "the large-object leg has its own number of rounds (`--large-runs`), and each round swaps which tool goes first.",
        "CPU is the tool's own user+system time; ratio is against the best peer",
        "(s5cmd, rclone, aws s3, boto3 baseline) in the same workload.",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.system()} {platform.machine()}, Python {platform.python_version()}. The S3 server shares the cores.",
        "",
        "| workload | tool | throughput (median) | min-max | CPU s / 1,000 | peak RSS MB | vs best peer |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ratio = f"{r['ratio']:.2f}x" if r["ratio"] is not None and r["tool"] == "s3bulk" else ""
        lines.append(
            f"| {r['workload']} | {r['tool']} | {r['median']:,.0f} {r['unit']} | {r['min']:,.0f}-{r['max']:,.0f} | "
            f"{r['cpu_s_per_1000']:.2f} | {r['peak_rss_mb']:,.0f} | {ratio} |"
        )
    lines += ["", *targets(rows)]
    if NOTES.exists():  # the hand-written analysis (profiles, what limits a target), kept across regenerations
        lines += ["", NOTES.read_text().rstrip()]
    if plot is not None:
        lines += ["", f"![throughput by tool and workload]({plot.name})"]
    out.write_text("\n".join(lines) + "\n")


def targets(rows: list[dict[str, Any]]) -> list[str]:
    """Issue 18's targets, each from rows of this run: s3bulk against the named peer in the same workload."""

    def row(workload: str, tool: str) -> dict[str, Any] | None:
        return next((r for r in rows if r["workload"] == workload and r["tool"] == tool), None)

    out = [
        "## Targets (issue 18)",
        "",
        "Each from this run's medians; s5cmd runs with `--numworkers 128` in the +20 ms leg, its defaults elsewhere.",
        "",
        "| measure | target | s3bulk | peer | ratio | met |",
        "|---|---|---:|---:|---:|---|",
    ]
    copies = [w for w in dict.fromkeys(r["workload"] for r in rows) if w.startswith("copy 1 KiB")]
    for workload in sorted(copies, key=lambda w: "direct" in w):
        ours, s5 = row(workload, "s3bulk"), row(workload, "s5cmd")
        if ours is None or s5 is None:
            continue
        ratio = ours["median"] / s5["median"]
        n = ours["runs"]
        out.append(
            f"| {workload} ({n} runs) | >= 1.0x s5cmd | {ours['median']:,.0f}/s | {s5['median']:,.0f}/s | {ratio:.2f}x | {'yes' if ratio >= 1 else 'no'} |"
        )
        cpu, peer_cpu = ours["cpu_s_per_1000"], s5["cpu_s_per_1000"]
        out.append(
            f"| CPU s per 1,000 copies, {workload.removeprefix('copy 1 KiB, ')} | <= s5cmd's | {cpu:.2f} | {peer_cpu:.2f} | "
            f"{cpu / peer_cpu:.2f}x | {'yes' if cpu <= peer_cpu else 'no'} |"
        )
    ours = row("delete", "s3bulk")
    peers = [r for r in rows if r["workload"] == "delete" and r["tool"] in {"s5cmd", "rclone"}]
    if ours is not None and peers:
        best = max(peers, key=lambda r: r["median"])
        ratio = ours["median"] / best["median"]
        out.append(
            f"| delete ({ours['runs']} runs) | >= 1.0x the fastest of s5cmd, rclone | {ours['median']:,.0f}/s | "
            f"{best['median']:,.0f}/s ({best['tool']}) | {ratio:.2f}x | {'yes' if ratio >= 1 else 'no'} |"
        )
    memory = next((r for r in rows if r["workload"].startswith("synthetic") and r["tool"] == "s3bulk"), None)
    if memory is not None:
        mb = memory["peak_rss_mb"]
        out.append(f"| memory, {memory['workload']} | < 200 MB peak RSS | {mb:,.0f} MB | | | {'yes' if mb < 200 else 'no'} |")
    return out


def draw(rows: list[dict[str, Any]], path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    groups = [w for w in dict.fromkeys(r["workload"] for r in rows) if sum(1 for r in rows if r["workload"] == w) > 1]
    fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 4), squeeze=False)
    for ax, workload in zip(axes[0], groups, strict=True):
        group = [r for r in rows if r["workload"] == workload]
        colors = ["#d62728" if r["tool"] == "s3bulk" else "#7f7f7f" for r in group]
        ax.bar(
            [r["tool"] for r in group],
            [r["median"] for r in group],
            color=colors,
            yerr=[[r["median"] - r["min"] for r in group], [r["max"] - r["median"] for r in group]],
        )
        ax.set_title(workload, fontsize=10)
        ax.set_ylabel(group[0]["unit"])
        ax.tick_params(axis="x", rotation=35, labelsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--quick", action="store_true", help="tiny datasets and one run: proves the harness, measures nothing")
    p.add_argument("--objects", type=int, default=20_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--large-mb", type=int, default=1024)
    # One 1 GiB copy varies by +-30% from round to round here, so 3 rounds decide nothing; 7 cost ~70 s.
    p.add_argument("--large-runs", type=int, default=7, help="rounds of the large-object leg (each tool once per round)")
    p.add_argument("--memory-keys", type=int, default=1_000_000)
    p.add_argument("--latency-ms", type=int, default=20, help="round trip added by toxiproxy; 0 skips that leg")
    p.add_argument("--tools", default="s3bulk,s5cmd,rclone,aws s3,boto3 baseline")
    p.add_argument("--workloads", default="copy,copy-latency,delete,large,memory")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = p.parse_args(argv)
    if args.quick:
        args.objects, args.runs, args.large_mb, args.memory_keys, args.large_runs = 60, 1, 12, 20_000, 1
    tools = set(args.tools.split(","))
    workloads = set(args.workloads.split(","))
    results: list[Result] = []
    started = time.perf_counter()
    compile_bytecode()
    with tempfile.TemporaryDirectory(prefix="s3bulk-bench-") as tmpdir, SeaweedServer() as server:
        tmp = Path(tmpdir)
        admin = make_s3_client(ClientSettings(endpoint_url=server.endpoint_url, access_key=ACCESS_KEY, secret_key=SECRET_KEY), 16)
        for b in ("bench-src", "bench-dst", "bench-del"):
            admin.create_bucket(Bucket=b)
        if workloads & {"copy", "copy-latency", "delete"}:  # `--workloads large` alone needs no small objects
            print(f"seeding {args.objects:,} x 1 KiB objects", flush=True)
            s5cmd(server.endpoint_url, "cp", str(seed_local_dir(tmp / "small", args.objects, 1024)) + "/*", "s3://bench-src/small/")
        if "copy" in workloads:
            copy_workload("copy 1 KiB, direct", server.endpoint_url, tmp, args.objects, args.runs, results, tools)
        if "copy-latency" in workloads and args.latency_ms:
            binary = build()
            if binary is None:
                print("  toxiproxy could not be built (no Go toolchain?): skipping the latency leg", flush=True)
            else:
                with Toxiproxy(binary, server.port, args.latency_ms // 2) as proxy:
                    name = f"copy 1 KiB, +{args.latency_ms} ms"
                    copy_workload(name, proxy.endpoint_url, tmp, args.objects, args.runs, results, tools, LATENCY_S5CMD)
        if "delete" in workloads:
            delete_workload(server.endpoint_url, tmp, args.objects, args.runs, results, tools)
        if "large" in workloads:
            large_workload(server.endpoint_url, tmp, args.large_mb, args.large_runs, results)
    if "memory" in workloads:
        memory_workload(args.memory_keys, results)
    rows = rank(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    command = " ".join(["python -m bench.run", *(argv if argv is not None else sys.argv[1:])])
    plot = draw(rows, args.out.with_suffix(".png"))
    write_report(rows, command, args.out, plot)
    (args.out.with_suffix(".json")).write_text(json.dumps(rows, indent=1))
    print(f"wrote {args.out} in {time.perf_counter() - started:,.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
