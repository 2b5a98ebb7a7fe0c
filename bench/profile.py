"""Where s3bulk's CPU goes per object: py-spy records a live `s3bulk run` of a small-object copy (or delete).

Why: issue 18 asks that every change to the per-object path be based on a profile of a live
run, not a guess. The run is the CLI itself (ledger on, as a user runs it), sampled by py-spy
(no instrumentation, so the numbers are the real ones); the script prints the functions with the
most samples holding the GIL (the Python work; the process is bound by it), self and inclusive, as a share of the samples and as microseconds per object.

    python -m bench.profile --objects 20000            # direct
    python -m bench.profile --objects 20000 --latency-ms 20

py-spy is in requirements-dev.txt.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.run import s5cmd, seed_local_dir
from bench.tools import BIN, tool_env
from bench.toxiproxy import Toxiproxy, build
from s3bulk.local.server import ACCESS_KEY, SECRET_KEY, SeaweedServer
from s3bulk.s3.clients import ClientSettings, make_s3_client


def summarize(raw: Path, objects: int, seconds: float, top: int, rate: int) -> str:
    """Self and inclusive GIL-held samples per function from py-spy's collapsed stacks, in µs per object."""
    self_n: collections.Counter[str] = collections.Counter()
    incl_n: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        n = int(count)
        frames = [
            f.split(" (")[0] + " (" + f.split(" (")[1].split(":")[0].rsplit("/", 1)[-1] + ")" if " (" in f else f for f in stack.split(";")
        ]
        total += n
        self_n[frames[-1]] += n
        for f in set(frames):
            incl_n[f] += n
    us = 1e6 / rate / objects  # µs of CPU per object for one sample
    out = [f"{total} GIL-held samples at {rate}/s = {total / rate:.1f} s over {seconds:.1f} s; {total * us:.0f} µs per object", ""]
    for title, counter in (("self", self_n), ("inclusive", incl_n)):
        out.append(f"top {top} by {title} samples (share, µs per object):")
        for name, n in counter.most_common(top):
            out.append(f"  {100 * n / total:5.1f}%  {n * us:7.1f}  {name}")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--objects", type=int, default=20_000)
    p.add_argument("--latency-ms", type=int, default=0, help="round trip added by toxiproxy (0: direct)")
    p.add_argument("--operation", choices=("copy", "delete"), default="copy")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--raw", type=Path, help="keep py-spy's collapsed stacks here")
    p.add_argument("--rate", type=int, default=500, help="py-spy samples per second")
    p.add_argument("--concurrency", type=int, help="s3bulk run --concurrency")
    p.add_argument("--no-spy", action="store_true", help="no profile: the run's wall, user and system seconds only")
    args = p.parse_args(argv)
    spy = shutil.which("py-spy", path=str(BIN)) or shutil.which("py-spy")
    if spy is None:
        print("py-spy is not installed (pip install -r requirements-dev.txt)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="s3bulk-profile-") as tmpdir, SeaweedServer() as server:
        tmp = Path(tmpdir)
        admin = make_s3_client(ClientSettings(endpoint_url=server.endpoint_url, access_key=ACCESS_KEY, secret_key=SECRET_KEY), 16)
        for b in ("prof-src", "prof-dst"):
            admin.create_bucket(Bucket=b)
        s5cmd(server.endpoint_url, "cp", str(seed_local_dir(tmp / "small", args.objects, 1024)) + "/*", "s3://prof-src/small/")
        if args.operation == "copy":
            doc = {"operation": "copy", "source": {"bucket": "prof-src", "prefix": "small/"}, "destination": {"bucket": "prof-dst"}}
        else:
            doc = {"operation": "delete", "source": {"bucket": "prof-src", "prefix": "small/"}}
        job = tmp / "job.json"
        job.write_text(json.dumps(doc))
        raw = args.raw or tmp / "stacks.txt"
        extra = ["--concurrency", str(args.concurrency)] if args.concurrency else []

        def record(endpoint: str) -> float:
            if args.no_spy:
                t0 = time.perf_counter()
                report = tmp / "report.json"
                argv = [str(BIN / "s3bulk"), "run", str(job), "--endpoint-url", endpoint, "-q", "--report", str(report), *extra]
                proc = subprocess.Popen(argv, env=tool_env())
                _, status, usage = os.wait4(proc.pid, 0)
                seconds = time.perf_counter() - t0
                print(
                    f"exit {os.waitstatus_to_exitcode(status)}: {seconds:.2f} s wall, {usage.ru_utime:.2f} s user, {usage.ru_stime:.2f} s system; "
                    f"{1e6 * (usage.ru_utime + usage.ru_stime) / args.objects:.0f} µs CPU per object; "
                    f"the engine ran {json.loads(report.read_text())['seconds']:.2f} s of it"
                )
                return seconds
            # --gil: only the thread holding the GIL is sampled, so blocked threads (reads, queue waits) count nothing.
            argv = [
                spy,
                "record",
                "--gil",
                "-r",
                str(args.rate),
                "-f",
                "raw",
                "-o",
                str(raw),
                "--",
                str(BIN / "s3bulk"),
                "run",
                str(job),
                "--endpoint-url",
                endpoint,
                "-q",
            ]
            t0 = time.perf_counter()
            subprocess.run(argv, env=tool_env(), check=True, capture_output=True)
            return time.perf_counter() - t0

        if args.latency_ms:
            binary = build()
            if binary is None:
                print("toxiproxy could not be built", file=sys.stderr)
                return 2
            with Toxiproxy(binary, server.port, args.latency_ms // 2) as proxy:
                seconds = record(proxy.endpoint_url)
        else:
            seconds = record(server.endpoint_url)
        if not args.no_spy:
            print(summarize(raw, args.objects, seconds, args.top, args.rate))
    return 0


if __name__ == "__main__":
    sys.exit(main())
