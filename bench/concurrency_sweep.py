"""Copy throughput of the engine by worker-thread count, on an embedded SeaweedFS.

Why: the default concurrency (s3bulk.ops.pools.DEFAULT_CONCURRENCY) must come from
a measurement on the machine class we run on, not a guess. Each setting copies
the same seeded objects into a fresh prefix; the median of --runs is reported
with min-max.

    python -m bench.concurrency_sweep --objects 2000 --runs 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any

from bench.toxiproxy import Toxiproxy, build
from s3bulk.job import parse_job
from s3bulk.local.demo import Seed, put_seeds
from s3bulk.local.engine import Engine
from s3bulk.local.server import ACCESS_KEY, SECRET_KEY, SeaweedServer
from s3bulk.ops.pools import connections_needed
from s3bulk.s3.clients import ClientSettings, make_s3_client
from s3bulk.s3.faststore import FastS3Store
from s3bulk.s3.stores import S3Store


@dataclass(frozen=True)
class Row:
    threads: int
    median: float
    low: float
    high: float
    cpu_ms_per_object: float


def sweep(endpoint: str, objects: int, threads: list[int], runs: int, *, fast: bool = True, target: str | None = None) -> list[Row]:
    """Seed through `endpoint`, measure through `target` (a latency proxy in front of it, or the same)."""
    target = target or endpoint
    settings = ClientSettings(endpoint_url=endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY)
    admin = make_s3_client(settings, 64)
    tag = uuid.uuid4().hex[:8]
    src, dst = f"sweep-src-{tag}", f"sweep-dst-{tag}"
    admin.create_bucket(Bucket=src)
    admin.create_bucket(Bucket=dst)
    put_seeds(admin, src, [Seed(f"in/{i:06d}", 1024) for i in range(objects)])
    rows = []
    for n in threads:
        rates, cpus = [], []
        for r in range(runs):
            doc = {
                "operation": "copy",
                "source": {"bucket": src, "prefix": "in/"},
                "destination": {"bucket": dst, "prefix": f"t{n}-r{r}/"},
                "options": {"concurrency": n},
            }
            client = make_s3_client(
                ClientSettings(endpoint_url=target, access_key=ACCESS_KEY, secret_key=SECRET_KEY), connections_needed(n)
            )
            store = FastS3Store(client, connections_needed(n)) if fast else S3Store(client)
            cpu0, t0 = time.process_time(), time.perf_counter()
            report = Engine(parse_job(json.dumps(doc)), store).run()
            wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            if report.status != "succeeded":
                raise SystemExit(f"sweep run failed: {report.summary()}")
            rates.append(objects / wall)
            cpus.append(cpu * 1000 / objects)
        rows.append(Row(n, statistics.median(rates), min(rates), max(rates), statistics.median(cpus)))
    return rows


def table(rows: list[Row], objects: int, runs: int) -> str:
    best = max(r.median for r in rows)
    lines = [
        f"Copy of {objects:,} x 1 KiB objects, median of {runs} runs (min-max), one process:",
        "",
        "| threads | objects/s | min-max | client CPU ms/object | share of best |",
        "|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r.threads} | {r.median:,.0f} | {r.low:,.0f}-{r.high:,.0f} | {r.cpu_ms_per_object:.2f} | {r.median / best:.0%} |" for r in rows
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--objects", type=int, default=2000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--threads", default="4,8,16,32,64,128")
    p.add_argument("--endpoint-url", help="use a running server instead of starting one")
    p.add_argument("--latency-ms", type=int, default=0, help="round trip added by toxiproxy in front of the server")
    p.add_argument("--request-path", choices=("fast", "botocore"), default="fast")
    args = p.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    server: Any = None
    endpoint = args.endpoint_url
    if endpoint is None:
        server = SeaweedServer().start()
        endpoint = server.endpoint_url
    try:
        fast = args.request_path == "fast"
        if args.latency_ms and server is not None:
            binary = build()
            if binary is None:
                raise SystemExit("toxiproxy could not be built; run without --latency-ms")
            with Toxiproxy(binary, server.port, args.latency_ms // 2) as proxy:
                rows = sweep(endpoint, args.objects, threads, args.runs, fast=fast, target=proxy.endpoint_url)
        else:
            rows = sweep(endpoint, args.objects, threads, args.runs, fast=fast)
        print(f"request path: {args.request_path}, added latency: {args.latency_ms} ms")
        print(table(rows, args.objects, args.runs))
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
