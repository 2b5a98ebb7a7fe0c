"""Listing 100,000 keys: serial paging against the engine's parallel lister, nested and flat (StartAfter shards), direct and at +20 ms.

python -m bench.listing [--keys 100000] [--workers 8,16,32]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.run import s5cmd, seed_local_dir
from bench.toxiproxy import Toxiproxy, build
from s3bulk.local.server import ACCESS_KEY, SECRET_KEY, SeaweedServer
from s3bulk.s3.clients import ClientSettings, make_s3_client
from s3bulk.s3.faststore import FastS3Store
from s3bulk.source.shards import iter_objects_parallel


def rate(endpoint: str, prefix: str, workers: int, keys: int, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        client = make_s3_client(ClientSettings(endpoint_url=endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY), 64)
        store = FastS3Store(client, 64)
        t0 = time.perf_counter()
        n = sum(1 for _ in iter_objects_parallel(store, "bench-list", prefix, workers))
        assert n == keys, (n, keys)
        out.append(n / (time.perf_counter() - t0))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument("--workers", default="8,16,32")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--latency-ms", type=int, default=20)
    args = p.parse_args(argv)
    workers = [int(w) for w in args.workers.split(",")]
    with tempfile.TemporaryDirectory() as tmp, SeaweedServer() as server:
        make_s3_client(ClientSettings(endpoint_url=server.endpoint_url, access_key=ACCESS_KEY, secret_key=SECRET_KEY), 4).create_bucket(
            Bucket="bench-list"
        )
        s5cmd(
            server.endpoint_url,
            "cp",
            str(seed_local_dir(Path(tmp) / "nested", args.keys, 16, nested=100)) + "/*",
            "s3://bench-list/nested/",
        )
        s5cmd(server.endpoint_url, "cp", str(seed_local_dir(Path(tmp) / "flat", args.keys, 16)) + "/*", "s3://bench-list/flat/")
        legs = [("direct", server.endpoint_url, None)]
        binary = build() if args.latency_ms else None
        proxy = Toxiproxy(binary, server.port, args.latency_ms // 2) if binary else None
        print("| tree | latency | workers | keys/s (median) | min-max | vs serial |\n|---|---|---:|---:|---:|---:|")
        with proxy if proxy else tempfile.TemporaryDirectory():
            if proxy:
                legs.append((f"+{args.latency_ms} ms", proxy.endpoint_url, None))
            for label, endpoint, _ in legs:
                for tree, prefix in [(f"100 x {args.keys // 100:,} nested", "nested/"), (f"{args.keys:,} flat", "flat/")]:
                    serial = statistics.median(rate(endpoint, prefix, 1, args.keys, args.runs))
                    print(f"| {tree} | {label} | 1 (serial) | {serial:,.0f} | | 1.00x |", flush=True)
                    for w in workers:
                        rs = rate(endpoint, prefix, w, args.keys, args.runs)
                        print(
                            f"| {tree} | {label} | {w} | {statistics.median(rs):,.0f} | {min(rs):,.0f}-{max(rs):,.0f} | {statistics.median(rs) / serial:.2f}x |",
                            flush=True,
                        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
