"""Adaptive rate control against a prefix that allows R requests/s (503 SlowDown above it).

python -m bench.ratecontrol [--rate 300] [--objects 4000] [--threads 64]

A copy job into one prefix runs through the fault proxy twice: with the engine's rate
control (s3bulk.s3.ratecontrol on both request paths) and with it switched off
(retries and backoff only, the default: `options.adaptive_rate` is false). Targets: achieved copies/s >= 85% of R, and retries
<= 10% of requests.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from s3bulk.job import parse_job
from s3bulk.local.engine import Engine
from s3bulk.local.server import ACCESS_KEY, SECRET_KEY, SeaweedServer
from s3bulk.s3.clients import ClientSettings, make_s3_client
from s3bulk.s3.faststore import FastS3Store
from s3bulk.s3.ratecontrol import RateControl
from s3bulk.testing.faultproxy import FaultPlan, FaultProxy


def leg(endpoint: str, upstream_port: int, rate: float, objects: int, threads: int, control: bool, run: int) -> dict[str, float]:
    settings = ClientSettings(endpoint_url=endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY)
    job = parse_job(
        json.dumps(
            {
                "operation": "copy",
                "source": {"bucket": "rate-src", "prefix": "in/"},
                "destination": {"bucket": "rate-dst", "prefix": f"{'on' if control else 'off'}{run}/"},
                "options": {"concurrency": threads},
            }
        )
    )
    with FaultProxy(upstream_port, FaultPlan(rate_limit=rate, ops=frozenset({"CopyObject"}))) as proxy:
        client = make_s3_client(ClientSettings(endpoint_url=proxy.endpoint_url, access_key=ACCESS_KEY, secret_key=SECRET_KEY), threads + 8)
        store = FastS3Store(client, threads + 8, rate=RateControl(enabled=control))
        t0 = time.perf_counter()
        report = Engine(job, store, concurrency=threads).run()
        seconds = time.perf_counter() - t0
        summary = report.summary()
        assert summary["succeeded"] == objects, summary
        requests = proxy.stats.requests["CopyObject"]
        throttled = proxy.stats.injected["RateLimited"]
    del settings
    return {
        "copies_per_s": objects / seconds,
        "share_of_r": objects / seconds / rate,
        "retry_share": throttled / requests,
        "requests": requests,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rate", type=float, default=300.0, help="requests/s the prefix allows")
    p.add_argument("--objects", type=int, default=4000)
    p.add_argument("--threads", type=int, default=64)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args(argv)
    with SeaweedServer() as server:
        direct = make_s3_client(ClientSettings(endpoint_url=server.endpoint_url, access_key=ACCESS_KEY, secret_key=SECRET_KEY), 32)
        direct.create_bucket(Bucket="rate-src")
        direct.create_bucket(Bucket="rate-dst")
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(32) as pool:
            list(pool.map(lambda i: direct.put_object(Bucket="rate-src", Key=f"in/{i:06d}", Body=b"x" * 1024), range(args.objects)))
        print(
            f"Prefix limit R = {args.rate:.0f} CopyObject/s; {args.objects:,} objects; {args.threads} threads; medians of {args.runs} runs\n"
        )
        print("| client | copies/s | share of R | retries / requests |\n|---|---:|---:|---:|")
        for control in (True, False):
            runs = [leg(server.endpoint_url, server.port, args.rate, args.objects, args.threads, control, r) for r in range(args.runs)]
            med = {k: sorted(r[k] for r in runs)[len(runs) // 2] for k in runs[0]}
            name = "s3bulk (adaptive rate)" if control else "retries + backoff only"
            print(f"| {name} | {med['copies_per_s']:,.0f} | {med['share_of_r']:.0%} | {med['retry_share']:.1%} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
