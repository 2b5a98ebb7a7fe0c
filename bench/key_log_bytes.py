"""Bytes a key log stores per object, in both runtimes (docs/key-log.md quotes the numbers).

    python -m bench.key_log_bytes --objects 20000

Locally: `s3bulk run --key-log keys.jsonl.gz` of the demo copy on the embedded SeaweedFS. On the stack: the same
kind of copy through the whole stack on moto (s3bulk/testing/stack), its gzip'd key-log parts summed from the report
bucket. Each prints bytes stored per object and, for the local log, its lines' size as plain JSON; the stack also
prints the report bucket's PUTs per million objects by the role that made them (the harness logs every S3 request):
the Worker's key-log parts and the Lister's intents, one a step of pages (lister.PAGES_PER_STEP).
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import os
import subprocess
import sys
import tempfile
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WRITES: dict[str, int] = {}  # ReportBucket calls on the stack, by method


def local(objects: int) -> tuple[int, float, float]:
    """(objects logged, bytes stored per object, bytes per object as plain lines) for a local gzip'd key log."""
    from s3bulk.local.serve import seed
    from s3bulk.local.server import ACCESS_KEY, SECRET_KEY, SeaweedServer

    with SeaweedServer() as server, tempfile.TemporaryDirectory() as work:
        seed(server.endpoint_url, objects)
        log = Path(work) / "keys.jsonl.gz"
        env = {**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "HOME": work}
        cmd = [sys.executable, "-m", "s3bulk", "run", str(ROOT / "events" / "demo-copy.json"), "--endpoint-url", server.endpoint_url]
        subprocess.run([*cmd, "-q", "--no-ledger", "--key-log", str(log)], env=env, check=True, timeout=1800)
        raw = log.read_bytes()
        plain = gzip.decompress(raw)
        n = len(plain.splitlines())
        return n, len(raw) / n, len(plain) / n


def stack(objects: int) -> tuple[int, float, dict[str, int]]:
    """(objects copied, bytes its key-log parts store per object, the report bucket's PUTs by role) for a copy through
    the whole stack on moto."""
    os.environ.setdefault("CDK_OUTDIR", tempfile.mkdtemp(prefix="s3bulk-bench-cdk-"))
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    import boto3

    from s3bulk.aws.reportbucket import ReportBucket
    from s3bulk.testing.stack import StackOnMoto, synthesize
    from s3bulk.testing.stack.aws import REGION

    for name in ("put_keys", "put_failures", "put_intent", "discard"):  # what each report-bucket write is for
        real = getattr(ReportBucket, name)
        if getattr(real, "counted", False):
            continue  # wrapped by an earlier call in this process

        def counted(self: ReportBucket, *args: object, _real: Any = real, _name: str = name, **kwargs: object) -> object:
            WRITES[_name] = WRITES.get(_name, 0) + 1
            return _real(self, *args, **kwargs)

        counted.counted = True  # type: ignore[attr-defined]
        setattr(ReportBucket, name, counted)
    template = synthesize({"read_buckets": "kl-src,kl-dst", "write_buckets": "kl-dst", "aws:cdk:bundling-stacks": []})
    with StackOnMoto(template, buckets=("kl-src", "kl-dst"), env={"S3BULK_POLL_SECONDS": "2"}, staged_assets=False) as run:
        s3 = boto3.client("s3", region_name=REGION)
        keys = [f"logs/2026/11/{i % 30:02d}/host-{i % 17:02d}/events-{i:08d}.json" for i in range(objects)]
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda k: s3.put_object(Bucket="kl-src", Key=k, Body=os.urandom(64)), keys))
        job = {
            "job_id": "key-log-bytes",
            "operation": "copy",
            "source": {"bucket": "kl-src"},
            "destination": {"bucket": "kl-dst", "prefix": "copy/"},
        }
        ex = run.run(job, timeout=1800)
        if ex.status != "SUCCEEDED":
            raise RuntimeError(f"the stack's copy ended {ex.status}: {run.describe()}")
        reports = run.bucket_of("Reports")
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=reports, Prefix="jobs/key-log-bytes/keys/")
        stored = sum(o["Size"] for p in pages for o in p.get("Contents", []))
        copied = json.loads(s3.get_object(Bucket=reports, Key="jobs/key-log-bytes/report.json")["Body"].read())["succeeded"]
        puts: dict[str, int] = {}
        for principal, op, bucket, *_ in run.iam.s3_requests:
            if bucket == reports and op == "PutObject":
                puts[principal] = puts.get(principal, 0) + 1  # the function's logical id
        return int(copied), stored / copied, puts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=20000)
    args = parser.parse_args(argv)
    n, stored, plain = local(args.objects)
    print(f"local: {n:,} objects, {stored:.1f} bytes an object stored gzip'd, {plain:.0f} as plain lines")
    copied, per, puts = stack(args.objects)
    print(f"stack: {copied:,} objects, {per:.1f} bytes an object stored in gzip'd parts")
    for role, n in sorted(puts.items()):
        print(f"stack: report-bucket PUTs by {role}: {n:,} ({n / copied * 1e6:,.0f} per million objects)")
    print("stack: report-bucket writes by kind: " + ", ".join(f"{k} {n:,}" for k, n in sorted(WRITES.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
