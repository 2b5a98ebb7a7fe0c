"""Peak RSS of `s3bulk run` relaying across endpoints (SeaweedFS to moto), against the object's size.

    python -m bench.relay_memory [--size-mib 200] [--small 999] [--runs 3]

Three runs of the real CLI in a child process, its peak RSS read from its own VmHWM:
a dry run (imports, clients, one listing: the floor), a relay of --small small objects,
and a relay of one --size-mib MiB object. A relay that held the object would peak above
the floor plus its size; s3bulk's stays near the floor plus one range and one part per
thread and its memory budget (docs/relay.md). Prints a markdown table of medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from moto.server import ThreadedMotoServer

from bench.tools import run_with_peak_rss
from s3bulk.local.demo import Seed, put_seeds
from s3bulk.local.server import ACCESS_KEY, SECRET_KEY, SeaweedServer
from s3bulk.s3.clients import ClientSettings, make_s3_client

MiB = 1024 * 1024


def run_cli(args: list[str], env: dict[str, str]) -> int:
    """Run `s3bulk` and return its peak RSS; raises if it fails."""
    done, peak = run_with_peak_rss([sys.executable, "-m", "s3bulk", *args], env)
    if done.returncode != 0:
        raise SystemExit(f"s3bulk exited {done.returncode}: {done.stderr[-500:]}")
    return peak


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size-mib", type=int, default=200)
    p.add_argument("--small", type=int, default=999)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY, AWS_EC2_METADATA_DISABLED="true")
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    try:
        with SeaweedServer() as weed_server, tempfile.TemporaryDirectory() as tmp:
            host, port = moto.get_host_and_port()
            moto_url = f"http://{host}:{port}"

            def client(url: str) -> Any:
                return make_s3_client(ClientSettings(endpoint_url=url, access_key=ACCESS_KEY, secret_key=SECRET_KEY), 16)

            weed, dst = client(weed_server.endpoint_url), client(moto_url)
            weed.create_bucket(Bucket="relay-src")
            put_seeds(weed, "relay-src", [Seed(f"small/{i:05d}", (i * 131) % 2048) for i in range(args.small)])
            weed.put_object(Bucket="relay-src", Key="big/object.bin", Body=os.urandom(args.size_mib * MiB))
            cases = {
                "dry run (floor)": ("small/", True),
                f"{args.small} small objects": ("small/", False),
                f"one {args.size_mib} MiB object": ("big/", False),
            }
            peaks: dict[str, list[int]] = {name: [] for name in cases}
            for run in range(args.runs):
                for name, (prefix, dry) in cases.items():
                    bucket = f"relay-dst-{run}-{len(peaks[name])}-{abs(hash(name)) % 10_000}"
                    dst.create_bucket(Bucket=bucket)
                    job = Path(tmp) / "job.json"
                    job.write_text(
                        json.dumps(
                            {
                                "operation": "copy",
                                "source": {"bucket": "relay-src", "prefix": prefix},
                                "destination": {"bucket": bucket, "endpoint_url": moto_url},
                            }
                        )
                    )
                    extra = ["--dry-run"] if dry else []
                    peaks[name].append(
                        run_cli(["run", str(job), "--endpoint-url", weed_server.endpoint_url, "-q", "--no-ledger", *extra], env)
                    )
    finally:
        moto.stop()
    print(f"| run (SeaweedFS -> moto, {args.runs} runs) | peak RSS MiB, median | min-max |")
    print("|---|--:|--:|")
    for name, values in peaks.items():
        print(f"| {name} | {statistics.median(values) / MiB:.0f} | {min(values) / MiB:.0f}-{max(values) / MiB:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
