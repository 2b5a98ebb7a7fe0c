"""ObjectReader against the usual ways to read one large object, over a link with S3-like latency.

    python -m bench.reader [--size-mib 1024] [--latency-ms 20] [--runs 3] [--ranges 1,4,8,16,32] [--prefetch 0,2,4,8]
    python -m bench.reader --quick          # 128 MiB, ranges 1,8 x prefetch 0,4, one run: proves the harness
    python -m bench.reader --write-docs     # also writes docs/benchmarks-reader.md and docs/benchmarks-reader.png

One object of --size-mib MiB in SeaweedFS, read through toxiproxy (+latency-ms per request, half
each way; 0 reads the server directly). Every read runs in a fresh child process
(`python -m bench.reader child ...`), so nothing is warm from the read before, and its peak RSS is
its own: the child's VmHWM (the AWS CLI's: its ru_maxrss, taken by the relay). The readers:
  ObjectReader  s3bulk.bodies.reader.open_object with each range size and prefetch depth, read(1 MiB)
                in a loop, the bytes discarded;
  get_object    get_object()["Body"].read(): the whole body in memory, so its first byte comes with its last;
  s3transfer    boto3's download_fileobj with its defaults (8 MiB parts, 10 threads) into a write-only sink,
                which s3transfer treats as a pipe and writes in order;
  aws s3 cp     the AWS CLI to stdout (`aws s3 cp s3://b/k -`), read by a relay that discards it; its clock
                includes the CLI's own start;
  idle          the child's imports and S3 client, no read: the floor under every peak RSS.
Time to first byte is until the first 64 KiB are in the caller's hands; MB/s (10^6 bytes) is the size over
the time to the last byte. The Python readers' clocks start just before their first request (the HEAD,
where there is one), the CLI's when it is spawned.
Runs are interleaved (every reader once, then again), so a slow minute on the machine hits them all alike.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import boto3
from botocore.config import Config as BotoConfig

from bench.tools import BIN, measure, tool_env
from bench.toxiproxy import Toxiproxy, build
from s3bulk.bodies.reader import PREFETCH, RANGE_SIZE, ObjectReader, open_object
from s3bulk.bodies.writer import ObjectWriter
from s3bulk.local.server import ACCESS_KEY, SECRET_KEY, SeaweedServer
from s3bulk.s3.clients import ClientSettings, S3Clients, make_config, make_s3_client
from s3bulk.s3.faststore import open_store

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "benchmarks-reader.md"
BUCKET = "bench-reader"
KEY = "large/object.bin"
MiB = 1024 * 1024
CHUNK = MiB  # what each read() asks for, as a caller streaming the object would
FIRST = 64 * 1024  # "first byte": the first 64 KiB in the caller's hands
PEERS = ("get_object", "s3transfer", "aws s3 cp")
DEFAULT = (RANGE_SIZE // MiB, PREFETCH)
NOISE_MIB = 2  # peak RSS differences this small are run-to-run noise, not a cost


@dataclass(frozen=True)
class Config:
    """One way to read the object: a peer (kind), or the ObjectReader with its range size and prefetch depth."""

    kind: str  # "reader", one of PEERS, or "idle"
    range_mib: int = 0
    prefetch: int = 0

    @property
    def default(self) -> bool:
        return self.kind == "reader" and (self.range_mib, self.prefetch) == DEFAULT

    @property
    def label(self) -> str:
        if self.kind == "reader":
            return "ObjectReader (default)" if self.default else "ObjectReader"
        return {"get_object": "get_object().read()", "s3transfer": "s3transfer download_fileobj", "idle": "idle (imports + client)"}.get(
            self.kind, self.kind
        )


def grid(ranges: Sequence[int], prefetches: Sequence[int], peers: Sequence[str] = PEERS) -> list[Config]:
    """The peers, the idle floor, then every range size x prefetch depth."""
    return [*(Config(p) for p in peers), Config("idle"), *(Config("reader", r, p) for r in ranges for p in prefetches)]


@dataclass(frozen=True)
class Sample:
    """One read as its child saw it (times, bytes, GETs) and as the parent did (CPU)."""

    ttfb: float
    seconds: float
    bytes: int
    requests: int  # GETs sent (ranged or whole); -1 where the tool does not say
    peak_rss_mib: float
    cpu_seconds: float


@dataclass
class Row:
    """A reader's samples over the runs; the table and the plot show their medians."""

    config: Config
    samples: list[Sample] = field(default_factory=list)

    def median(self, value: Callable[[Sample], float]) -> float:
        return statistics.median(value(s) for s in self.samples)

    @property
    def mbps(self) -> float:
        return self.median(lambda s: s.bytes / s.seconds / 1e6 if s.seconds else 0.0)

    @property
    def rss(self) -> float:
        return self.median(lambda s: s.peak_rss_mib)


# -- the child: one read, timed from the inside -------------------------------------------------------


class Clock:
    """Times one read: started before the first request, told every block the caller gets."""

    def __init__(self) -> None:
        self.t0 = 0.0
        self.ttfb: float | None = None
        self.bytes = 0

    def start(self) -> None:
        self.t0 = time.perf_counter()

    def got(self, n: int) -> None:
        self.bytes += n
        if self.ttfb is None and self.bytes >= FIRST:
            self.ttfb = time.perf_counter() - self.t0


class Sink:
    """A write-only file: s3transfer sees no seek(), so it writes parts in order, as to a pipe, and the bytes go nowhere."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def seekable(self) -> bool:
        return False

    def write(self, data: bytes) -> int:
        self.clock.got(len(data))
        return len(data)


def _counted(client: Any) -> list[int]:
    """A counter of the GetObject calls `client` makes, s3transfer's ranged ones included."""
    count = [0]

    def hook(**_: Any) -> None:
        count[0] += 1

    client.meta.events.register("before-call.s3.GetObject", hook)
    return count


def high_water_mib() -> float:
    """This process's peak RSS (VmHWM), in MiB.

    Not ru_maxrss: exec carries the spawning process's high-water mark into the child's, so every
    child of the (larger) bench process would report at least the bench's own RSS. VmHWM belongs to
    the address space exec made, so it is the read's alone.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def s3transfer_client(settings: ClientSettings) -> Any:
    """s3bulk's client settings with boto3's default response checksums ("when_supported"), as a boto3 user has them.

    With "when_required" (s3bulk's choice for local endpoints) s3transfer 0.19 skips its HEAD and schedules
    the other parts from inside the first part's task; into a write-only target that deadlocks once the
    object has more than max_in_memory_download_chunks (10) parts: the in-order window waits for the
    first part to be released, and the first part's task is the one waiting.
    """
    session = boto3.session.Session(aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY, region_name="us-east-1")
    config = make_config(settings, 10).merge(BotoConfig(response_checksum_validation="when_supported"))  # 10: one per s3transfer thread
    return session.client("s3", endpoint_url=settings.endpoint_url, config=config)


def child(argv: Sequence[str]) -> int:
    """Read the object once with one reader; write what the clock saw as JSON to the last argument."""
    kind, endpoint, bucket, key, range_mib, prefetch, out = argv
    settings = ClientSettings(endpoint_url=endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY)
    clock, requests, peak = Clock(), -1, 0.0
    if kind == "reader":
        # A connection pool with room for every prefetch and the caller's own GET.
        store = open_store(S3Clients(settings, max(10, int(prefetch) + 2)))
        clock.start()
        with open_object(store, bucket, key, range_size=int(range_mib) * MiB, prefetch=int(prefetch)) as f:
            while block := f.read(CHUNK):
                clock.got(len(block))
            requests = cast(ObjectReader, f.raw).requests
    elif kind == "get_object":
        client = make_s3_client(settings, 10)
        clock.start()
        body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        clock.got(len(body))  # the first byte is the caller's only now, with the last
        del body
        requests = 1
    elif kind == "s3transfer":
        client = s3transfer_client(settings)
        count = _counted(client)
        clock.start()
        client.download_fileobj(bucket, key, Sink(clock))
        requests = count[0]
    elif kind == "aws s3 cp":
        clock.start()
        argv_cli = [str(BIN / "aws"), "--endpoint-url", endpoint, "s3", "cp", "--quiet", f"s3://{bucket}/{key}", "-"]
        proc = subprocess.Popen(argv_cli, stdout=subprocess.PIPE, bufsize=0)
        assert proc.stdout is not None
        pipe = cast(Any, proc.stdout)  # unbuffered: a FileIO with readinto
        buffer = bytearray(CHUNK)
        while n := pipe.readinto(buffer):
            clock.got(n)
        pipe.close()
        # The CLI's own peak: its ru_maxrss starts at this relay's high-water mark (its imports, ~40 MiB), well under the CLI's.
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"aws s3 cp exited {proc.returncode}")
        peak = usage.ru_maxrss / 1024
    elif kind == "idle":
        make_s3_client(settings, 10)  # built, not used: the imports and a client are the floor
    else:
        raise SystemExit(f"unknown reader kind {kind!r}")
    seconds = time.perf_counter() - clock.t0 if clock.t0 else 0.0
    ttfb = clock.ttfb if clock.ttfb is not None else seconds
    doc = {"ttfb": ttfb, "seconds": seconds, "bytes": clock.bytes, "requests": requests, "peak_rss_mib": peak or high_water_mib()}
    Path(out).write_text(json.dumps(doc))
    return 0


# -- the parent: seed, sweep, tabulate ----------------------------------------------------------------


def seed(endpoint: str, bucket: str, key: str, size: int) -> str:
    """Upload `size` random bytes with ObjectWriter (multipart, as a large object is); returns the ETag."""
    store = open_store(S3Clients(ClientSettings(endpoint_url=endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY), 8))
    with ObjectWriter(store, bucket, key, size_hint=size) as writer:
        for at in range(0, size, MiB):
            writer.write(os.urandom(min(MiB, size - at)))
    return writer.etag


def child_env() -> dict[str, str]:
    """The bench tools' environment (local keys, no AWS config, so the CLI runs with its defaults), the repository importable."""
    env = tool_env()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def sweep(endpoint: str, bucket: str, key: str, size: int, configs: Sequence[Config], runs: int, *, quiet: bool = False) -> list[Row]:
    """Every config read `runs` times in fresh children, interleaved; a read that returns a wrong byte count fails the sweep."""
    env = child_env()
    rows = [Row(c) for c in configs]
    timeout = 120 + size / MiB  # generous (a second per MiB), so a hung reader fails the sweep instead of stalling it
    with tempfile.TemporaryDirectory(prefix="s3bulk-bench-reader-") as tmp:
        for run in range(runs):
            for i, row in enumerate(rows):
                c = row.config
                out = Path(tmp) / f"{run}-{i}.json"
                dims = [str(c.range_mib), str(c.prefetch)]
                argv = [sys.executable, "-m", "bench.reader", "child", c.kind, endpoint, bucket, key, *dims, str(out)]
                try:
                    m = measure(argv, env, timeout=timeout)
                except (TimeoutError, RuntimeError) as exc:
                    raise RuntimeError(f"{c.label} {c.range_mib}x{c.prefetch}, run {run + 1}: {exc}") from exc
                got = json.loads(out.read_text())
                if c.kind != "idle" and got["bytes"] != size:
                    raise RuntimeError(f"{c.label} {c.range_mib}x{c.prefetch} read {got['bytes']:,} bytes of {size:,}")
                row.samples.append(Sample(got["ttfb"], got["seconds"], got["bytes"], got["requests"], got["peak_rss_mib"], m.cpu_seconds))
                if not quiet:
                    s = row.samples[-1]
                    rate = f"{s.bytes / s.seconds / 1e6:8.1f} MB/s  ttfb {s.ttfb * 1000:7.0f} ms" if s.bytes else " " * 29
                    shape = f"{c.range_mib:>2} MiB x {c.prefetch}" if c.kind == "reader" else ""
                    print(f"  run {run + 1}/{runs}  {c.label:<30} {shape:<10} {rate}  rss {s.peak_rss_mib:6.0f} MiB", flush=True)
    return rows


def table(rows: Sequence[Row]) -> str:
    """Medians per reader, with throughput ratios against each peer measured in the same run."""
    peers = {r.config.kind: r.mbps for r in rows if r.config.kind in PEERS}
    names = {"get_object": "get_object", "s3transfer": "s3transfer", "aws s3 cp": "aws s3 cp"}
    head = "| reader | range MiB | prefetch | bound MiB | TTFB ms | MB/s (median) | min-max | peak RSS MiB | GETs | CPU s |"
    head += "".join(f" x {names[k]} |" for k in peers)
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * len(peers)]
    for r in rows:
        c = r.config
        reader = c.kind == "reader"
        shape = f"{c.range_mib} | {c.prefetch} | {c.range_mib * (1 + c.prefetch)}" if reader else "- | - | -"
        gets = r.median(lambda s: s.requests)
        gets_text = "-" if gets < 0 else f"{gets:,.0f}"
        cpu = f"{r.median(lambda s: s.cpu_seconds):.1f}"
        if c.kind == "idle":
            lines.append(f"| {c.label} | {shape} | - | - | - | {r.rss:.0f} | - | {cpu} |" + " - |" * len(peers))
            continue
        rates = [s.bytes / s.seconds / 1e6 for s in r.samples]
        ratios = "".join(f" {r.mbps / v:.2f}x |" for v in peers.values())
        label = f"**{c.label}**" if c.default else c.label
        lines.append(
            f"| {label} | {shape} | {r.median(lambda s: s.ttfb) * 1000:,.0f} | {r.mbps:,.1f} | {min(rates):,.0f}-{max(rates):,.0f} | "
            f"{r.rss:,.0f} | {gets_text} | {cpu} |" + ratios
        )
    return "\n".join(lines)


def frontier(readers: Sequence[Row]) -> list[Row]:
    """The configurations no other one beats (faster for no more peak RSS, give or take NOISE_MIB), leanest first."""

    def beaten(r: Row) -> bool:
        return any(o.mbps > r.mbps and o.rss <= r.rss + NOISE_MIB for o in readers if o is not r)

    return sorted((r for r in readers if not beaten(r)), key=lambda r: r.rss)


def findings(rows: Sequence[Row]) -> list[str]:
    """What the table says about the defaults, computed so the prose cannot drift from the numbers."""
    readers = [r for r in rows if r.config.kind == "reader"]
    if not readers:
        return []
    idle = next((r.rss for r in rows if r.config.kind == "idle"), 0.0)
    best = max(readers, key=lambda r: r.mbps)
    peers = {r.config.kind: r for r in rows if r.config.kind in PEERS}

    def name(r: Row) -> str:
        return f"{r.config.range_mib} MiB x {r.config.prefetch}"

    def ttfb(r: Row) -> str:
        return f"{r.median(lambda s: s.ttfb) * 1000:,.0f} ms"

    edge = frontier(readers)
    out = [
        f"- Fastest ObjectReader: {name(best)}, {best.mbps:,.0f} MB/s at {best.rss:,.0f} MiB peak RSS ({best.rss - idle:,.0f} above idle).",
        f"- The throughput/memory frontier (no other configuration faster for no more memory, {NOISE_MIB} MiB being noise), leanest first: "
        + "; ".join(f"{name(r)} {r.mbps:,.0f} MB/s at {r.rss:,.0f} MiB" for r in edge)
        + ".",
    ]
    by_range: dict[int, list[Row]] = {}
    for r in readers:
        by_range.setdefault(r.config.range_mib, []).append(r)

    def cpu(group: Sequence[Row]) -> str:
        low, high = (f"{f(g.median(lambda s: s.cpu_seconds) for g in group):.1f}" for f in (min, max))
        return f"{low} s CPU" if low == high else f"{low}-{high} s CPU"

    out.append(
        "- Requests and CPU per read, by range size: "
        + "; ".join(
            f"{size} MiB {group[0].median(lambda s: s.requests):,.0f} GETs, {cpu(group)}" for size, group in sorted(by_range.items())
        )
        + "."
    )
    default = next((r for r in readers if r.config.default), None)
    if default is None:
        out.append(f"- The defaults ({DEFAULT[0]} MiB x {DEFAULT[1]}) were not in this grid.")
        return out
    out.append(
        f"- The defaults, {name(default)}: {default.mbps:,.0f} MB/s ({default.mbps / best.mbps:.0%} of the fastest), "
        f"{ttfb(default)} to the first 64 KiB, {default.rss:,.0f} MiB peak RSS ({default.rss - idle:,.0f} above idle)."
    )
    for peer in peers.values():
        out.append(
            f"- Against {peer.config.label}: {default.mbps / peer.mbps:.2f}x its throughput, "
            f"{default.rss:,.0f} vs {peer.rss:,.0f} MiB peak RSS, {ttfb(default)} vs {ttfb(peer)} to the first 64 KiB."
        )
    # A clearly better default: at least 5% faster for no more memory.
    better = [r for r in readers if r.mbps >= 1.05 * default.mbps and r.rss <= default.rss + NOISE_MIB]
    dearer = [r for r in edge if r.mbps > default.mbps]
    costs = "; ".join(f"{name(r)} +{r.mbps / default.mbps - 1:.0%} MB/s for +{r.rss - default.rss:,.0f} MiB" for r in dearer)
    if better:
        top = max(better, key=lambda r: r.mbps)
        out.append(
            f"- Verdict: {name(top)} is a better default: {top.mbps / default.mbps - 1:.0%} faster than the defaults "
            f"at {top.rss:,.0f} MiB peak RSS (the defaults: {default.rss:,.0f})."
        )
    else:
        on_edge = "on the frontier" if default in edge else "not on the frontier, but nothing measured beats them by 5% at their memory"
        out.append(
            f"- Verdict: the numbers support the defaults. They are {on_edge}: no configuration measured is 5% faster "
            f"for the same peak RSS, and more throughput costs memory" + (f" ({costs})." if costs else ".")
        )
    return out


def draw(rows: Sequence[Row], path: Path, title: str) -> None:
    """MB/s and peak RSS against range size, one line per prefetch depth; peers as horizontal lines; the defaults starred."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    readers = [r for r in rows if r.config.kind == "reader"]
    ranges = sorted({r.config.range_mib for r in readers})
    depths = sorted({r.config.prefetch for r in readers})
    colors = plt.get_cmap("viridis")
    peer_styles = {
        "get_object": ("#8c564b", "--"),
        "s3transfer": ("#d62728", ":"),
        "aws s3 cp": ("#000000", "-."),
        "idle": ("#999999", "-"),
    }
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    panels: list[tuple[Any, Callable[[Row], float], str]] = [
        (axes[0], lambda r: r.mbps, "MB/s (median)"),
        (axes[1], lambda r: r.rss, "peak RSS, MiB (median, log scale)"),
    ]
    for ax, value, unit in panels:
        for n, depth in enumerate(depths):
            line = sorted((r for r in readers if r.config.prefetch == depth), key=lambda r: r.config.range_mib)
            ax.plot(
                [r.config.range_mib for r in line],
                [value(r) for r in line],
                marker="o",
                color=colors(n / max(1, len(depths) - 1) * 0.85),
                label=f"ObjectReader, prefetch {depth}",
            )
        for r in rows:
            if r.config.kind in peer_styles and (r.config.kind != "idle" or ax is axes[1]):
                hue, dash = peer_styles[r.config.kind]
                ax.axhline(value(r), color=hue, linestyle=dash, linewidth=1.3, label=r.config.label)
        default = next((r for r in readers if r.config.default), None)
        if default is not None:
            ax.plot([default.config.range_mib], [value(default)], marker="*", markersize=18, color="#ff7f0e", linestyle="none", zorder=5)
            ax.annotate(
                f"default {DEFAULT[0]} MiB x {DEFAULT[1]}",
                (default.config.range_mib, value(default)),
                textcoords="offset points",
                xytext=(8, -14),
                color="#ff7f0e",
                fontsize=9,
                fontweight="bold",
            )
        ax.set_xscale("log", base=2)
        ax.set_xticks(ranges, [str(r) for r in ranges])
        ax.set_xlabel("range size, MiB")
        ax.set_ylabel(unit)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    axes[1].set_yscale("log")
    axes[1].yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axes[1].yaxis.set_major_formatter(ScalarFormatter())
    axes[1].yaxis.set_minor_formatter(NullFormatter())
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def command(args: argparse.Namespace) -> str:
    """The command line that reproduces this run, and its make target when it is that one."""
    flags = [f"--runs {args.runs}"]
    for name, value, default in (
        ("--size-mib", args.size_mib, 1024),
        ("--latency-ms", args.latency_ms, 20),
        ("--ranges", args.ranges, "1,4,8,16,32"),
        ("--prefetch", args.prefetch, "0,2,4,8"),
    ):
        if value != default:
            flags.append(f"{name} {value}")
    line = f"python -m bench.reader {' '.join(flags)} --write-docs"
    return f"`make bench-reader` (`{line}`)" if len(flags) == 1 and args.runs == 3 else f"`{line}`"


def report(rows: Sequence[Row], args: argparse.Namespace, elapsed: float, load: float, plot: str) -> str:
    """docs/benchmarks-reader.md: how it was measured, the table, what it says about the defaults."""
    link = f"+{args.latency_ms} ms per request (toxiproxy, {args.latency_ms // 2} ms each way)" if args.latency_ms else "no added latency"
    trimmed = args.ranges != "1,4,8,16,32" or args.prefetch != "0,2,4,8"
    return "\n".join(
        [
            "# ObjectReader benchmark",
            "",
            f"Reproduce: {command(args)}. One {args.size_mib:,} MiB object in SeaweedFS on loopback, read through {link},",
            "by `s3bulk.bodies.reader.ObjectReader` over a grid of range sizes and prefetch depths, and by three",
            "peers measured in the same run. Written by the script; edit `bench/reader.py`, not this file.",
            *(["", f"The grid was trimmed to ranges {args.ranges} MiB x prefetch {args.prefetch}."] if trimmed else []),
            "",
            "## Method",
            "",
            "- **ObjectReader**: `open_object(store, bucket, key, range_size=..., prefetch=...)` on `open_store`",
            "  (the store a job runs on, one HEAD included), `read(1 MiB)` in a loop, the bytes discarded.",
            "  `bound` is the reader's own memory bound, `range x (1 + prefetch)`.",
            '- **get_object().read()**: `get_object()["Body"].read()`, the whole body in memory. Its first byte',
            "  reaches the caller with its last, so its time to first byte is its total time.",
            "- **s3transfer download_fileobj**: boto3's managed download with its defaults (8 MiB parts,",
            "  10 threads) into a write-only sink. Without `seek()` s3transfer treats it as a pipe: it writes",
            "  in order and holds parts that arrive early, at most `max_in_memory_download_chunks` (10).",
            "- **aws s3 cp**: `aws s3 cp s3://bucket/key -` (the CLI with its own defaults, s3transfer underneath)",
            "  into a pipe that a relay drains and discards. Its clock starts when the CLI is spawned, so its",
            "  time to first byte and MB/s include the CLI's own start-up.",
            "- **idle**: the child's imports and one S3 client, no read: the floor under every peak RSS.",
            "",
            "Every read runs in a fresh child process, so no connection or buffer is warm from the read before.",
            "Peak RSS is the child's own `VmHWM` (`/proc/self/status`) at the end of the read, not the parent's",
            "`ru_maxrss` for it: exec carries the spawning process's high-water mark into the child's, so every",
            "child of the bench process would report at least the bench's own RSS. The CLI's peak is its",
            "`ru_maxrss` as seen by the small relay that spawned it. CPU s is the child's user + system time",
            "(the CLI's included). Runs are interleaved (every reader once, then every reader again), so a slow",
            "minute on the machine hits them all alike.",
            "",
            "The Python readers' clocks start just before their first request. They share s3bulk's client",
            "settings (`s3bulk.s3.clients`: retries, timeouts, path-style, checksums only where required), except",
            "that the s3transfer peer validates response checksums `when_supported`, boto3's default. With",
            "`when_required`, s3transfer 0.19 skips its HEAD and schedules the other parts from inside the first",
            "part's task; into a pipe-like target that deadlocks once the object has more than 10 parts (the",
            "in-order window waits for the first part to be released, and the first part's task is the one",
            "waiting). This object carries no checksums, so nothing is validated either way.",
            "",
            '"TTFB" is the time until the first 64 KiB are in the caller\'s hands; MB/s is 10^6 bytes per second',
            "to the last byte. Every read is checked to return exactly the object's size.",
            f"Medians of {args.runs} run{'s' if args.runs != 1 else ''}; min-max is the range of the runs' MB/s.",
            f"Machine: {os.cpu_count()} cores ({platform.machine()}), Python {platform.python_version()}, shared with other work",
            f"(load average {load:.1f} when the run started); SeaweedFS and toxiproxy ran on the same cores as the",
            "readers, so absolute MB/s are this machine's, not S3's: the comparisons are what carries over.",
            f"The whole run took {elapsed / 60:.1f} minutes.",
            "",
            "## Results",
            "",
            table(rows),
            "",
            f"![MB/s and peak RSS against range size, one line per prefetch depth]({plot})",
            "",
            "## The defaults",
            "",
            *findings(rows),
            "",
            "How to read it: with prefetch 0 every range waits out a full round trip before the next one is",
            "asked for, so small ranges are latency-bound; prefetch keeps up to `prefetch` further ranges on",
            "the wire while the caller reads, and larger ranges spend fewer round trips per byte. Both cost",
            "memory, which the reader bounds at `range x (1 + prefetch)` however large the object, and a range",
            "arrives whole before its first byte is served, so the time to the first byte grows with the range",
            "size. A default should sit at the knee: close to the best throughput on a link with S3's latency",
            "for tens of MiB, not the whole object.",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["child"]:
        return child(argv[1:])
    # A plain SIGTERM would skip the `with` blocks; as SystemExit they stop SeaweedFS and toxiproxy on the way out.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    p.add_argument("--size-mib", type=int, default=None, help="the object's size (default 1024; 128 with --quick)")
    p.add_argument("--latency-ms", type=int, default=20, help="added per request by toxiproxy, half each way; 0: direct")
    p.add_argument("--runs", type=int, default=None, help="reads of each reader (default 3; 1 with --quick); medians reported")
    p.add_argument("--ranges", default=None, help="range sizes in MiB (default 1,4,8,16,32; 1,8 with --quick)")
    p.add_argument("--prefetch", default=None, help="prefetch depths (default 0,2,4,8; 0,4 with --quick)")
    p.add_argument("--quick", action="store_true", help="a fast check of the harness: 128 MiB, ranges 1,8, prefetch 0,4, one run")
    p.add_argument("--write-docs", action="store_true", help="write docs/benchmarks-reader.md and .png (never without this flag)")
    args = p.parse_args(argv)
    args.size_mib = args.size_mib or (128 if args.quick else 1024)
    args.runs = args.runs or (1 if args.quick else 3)
    args.ranges = args.ranges or ("1,8" if args.quick else "1,4,8,16,32")
    args.prefetch = args.prefetch or ("0,4" if args.quick else "0,2,4,8")
    configs = grid([int(x) for x in args.ranges.split(",")], [int(x) for x in args.prefetch.split(",")])
    size = args.size_mib * MiB
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    with SeaweedServer() as server:
        make_s3_client(ClientSettings(endpoint_url=server.endpoint_url, access_key=ACCESS_KEY, secret_key=SECRET_KEY), 4).create_bucket(
            Bucket=BUCKET
        )
        seed(server.endpoint_url, BUCKET, KEY, size)
        print(f"seeded {args.size_mib:,} MiB in {time.perf_counter() - t0:.0f} s; {len(configs)} readers x {args.runs} run(s)", flush=True)
        if args.latency_ms:
            binary = build()
            if binary is None:
                raise SystemExit("toxiproxy could not be built (needs Go): see bench/toxiproxy.py, or pass --latency-ms 0")
            with Toxiproxy(binary, server.port, args.latency_ms // 2) as proxy:
                rows = sweep(proxy.endpoint_url, BUCKET, KEY, size, configs, args.runs)
        else:
            rows = sweep(server.endpoint_url, BUCKET, KEY, size, configs, args.runs)
    elapsed = time.perf_counter() - t0
    text = table(rows)
    print(f"\n{args.size_mib:,} MiB, +{args.latency_ms} ms, medians of {args.runs}, {elapsed:.0f} s in all\n\n{text}\n")
    print("\n".join(findings(rows)))
    if args.write_docs:
        plot = DOCS.with_suffix(".png")
        draw(rows, plot, f"ObjectReader, {args.size_mib:,} MiB object, +{args.latency_ms} ms per request, medians of {args.runs}")
        DOCS.write_text(report(rows, args, elapsed, load, plot.name))
        print(f"wrote {DOCS.relative_to(ROOT)} and {plot.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
