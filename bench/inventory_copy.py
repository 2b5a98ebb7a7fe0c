"""A copy from a Parquet and from an ORC S3 Inventory of 100,000 rows, end to end on SeaweedFS, with peak RSS.

The suite runs this at 30,000 objects in groups of 1,000 (100,000 took 4 to 8 minutes of a 2-core
machine's suite); this runs the whole thing: 100,000 objects seeded with s5cmd, an
inventory of them written in each format (two data files, row groups / stripes of 10,000, as
S3 Inventory splits a report), then `s3bulk run` copies each inventory's objects to a bucket of
its own. Each copy is checked exactly (every key there, its ETag the source's MD5, nothing
else) and its peak RSS is read from its own high-water mark; a 10,000-row run of the same
shape says whether memory grows with the rows.

python -m bench.inventory_copy [--objects 100000] [--groups 10000]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq

from bench.tools import run_with_peak_rss, tool_env
from s3bulk.local.server import ACCESS_KEY, SECRET_KEY, SeaweedServer
from s3bulk.s3.clients import ClientSettings, make_s3_client


def body(i: int) -> bytes:
    return f"object {i:06d}\n".encode() * (1 + i % 7)


def key(i: int) -> str:
    return f"in/logs/2026/11/{i % 500:03d}/object-{i:06d}.json"


def seed(endpoint: str, bucket: str, n: int, tmp: Path) -> None:
    """The objects, uploaded by s5cmd from a local tree (far faster than one PutObject at a time from Python)."""
    root = tmp / "seed"
    for i in range(n):
        path = root / key(i)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body(i))
    out, _ = run_with_peak_rss(
        [str(Path(sys.executable).parent / "s5cmd"), "--endpoint-url", endpoint, "--numworkers", "64", "cp", f"{root}/", f"s3://{bucket}/"],
        tool_env(),
        timeout=1800,
    )
    shutil.rmtree(root)  # 100,000 small files: not left behind
    if out.returncode != 0:
        raise RuntimeError(f"s5cmd cp failed: {out.stderr[-1500:]}")


def table(bucket: str, rows: range) -> pa.Table:
    n = len(rows)
    return pa.table(
        {
            "bucket": [bucket] * n,
            "key": [key(i) for i in rows],
            "version_id": pa.array([None] * n, pa.string()),
            "is_latest": [True] * n,
            "is_delete_marker": [False] * n,
            "size": pa.array([len(body(i)) for i in rows], pa.int64()),
            "last_modified_date": pa.array([datetime(2026, 11, 20, tzinfo=UTC)] * n, pa.timestamp("ms", tz="UTC")),
            "e_tag": [hashlib.md5(body(i)).hexdigest() for i in rows],
            "storage_class": ["STANDARD"] * n,
        }
    )


def encode(data: pa.Table, fmt: str, group_rows: int) -> bytes:
    out = io.BytesIO()
    if fmt == "ORC":
        with orc.ORCWriter(out, stripe_size=1) as writer:  # a stripe per write
            for batch in data.to_batches(max_chunksize=group_rows):
                writer.write(pa.Table.from_batches([batch]))
    else:
        pq.write_table(data, out, row_group_size=group_rows)
    return out.getvalue()


def put_inventory(client: Any, bucket: str, name: str, fmt: str, rows: int, group_rows: int, source: str) -> dict[str, str]:
    files = []
    half = rows // 2
    for n, part in enumerate((range(0, half), range(half, rows))):
        data = encode(table(source, part), fmt, group_rows)
        k = f"inv/{name}/data/part-{n}.{fmt.lower()}"
        client.put_object(Bucket=bucket, Key=k, Body=data)
        files.append({"key": k, "size": len(data), "MD5checksum": "unchecked"})
    doc = {"destinationBucket": f"arn:aws:s3:::{bucket}", "fileFormat": fmt, "fileSchema": "(the data files' own)", "files": files}
    client.put_object(Bucket=bucket, Key=f"inv/{name}/manifest.json", Body=json.dumps(doc).encode())
    return {"bucket": bucket, "key": f"inv/{name}/manifest.json", "format": "inventory"}


def copied(client: Any, bucket: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        out.update({o["Key"]: o["ETag"].strip('"') for o in page.get("Contents", [])})
    return out


def copy(endpoint: str, tmp: Path, manifest: dict[str, str], source: str, dest: str) -> tuple[float, int, dict[str, Any]]:
    job = tmp / f"{dest}.json"
    job.write_text(
        json.dumps(
            {
                "operation": "copy",
                "source": {"bucket": source, "prefix": "in/", "manifest": manifest},
                "destination": {"bucket": dest, "prefix": "c/"},
            }
        )
    )
    report = tmp / f"{dest}-report.json"
    env = {**tool_env(), "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
    argv = [
        sys.executable,
        "-m",
        "s3bulk",
        "run",
        str(job),
        "--endpoint-url",
        endpoint,
        "--state-dir",
        str(tmp / "state"),
        "--report",
        str(report),
    ]
    t0 = time.perf_counter()
    out, peak = run_with_peak_rss(argv, env, timeout=1800)
    seconds = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"s3bulk run exited {out.returncode}: {out.stderr[-2000:]}")
    return seconds, peak, json.loads(report.read_text())


@dataclass(frozen=True)
class Copied:
    fmt: str
    rows: int
    seconds: float
    peak_rss: int  # bytes: the s3bulk run's own high-water mark
    exact: bool  # every listed object there with its source's MD5, nothing else, the report saying so
    report: dict[str, Any]


def inventory_copies(endpoint: str, tmp: Path, objects: int, row_counts: tuple[int, ...], groups: int = 10_000) -> Iterator[Copied]:
    """Seed `objects` objects, then for each format and row count, an inventory of that many and its copy, checked."""
    client = make_s3_client(ClientSettings(endpoint_url=endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY), 16)
    run = secrets.token_hex(3)  # bucket names of this run's own: the server may be shared (a test session's)
    src, man = f"inv-src-{run}", f"inv-man-{run}"
    for b in (src, man):
        client.create_bucket(Bucket=b)
    seed(endpoint, src, objects, tmp)
    want = {"c/" + key(i).removeprefix("in/"): hashlib.md5(body(i)).hexdigest() for i in range(objects)}
    for fmt in ("Parquet", "ORC"):
        for rows in row_counts:
            dest = f"inv-dst-{run}-{fmt.lower()}-{rows}"
            client.create_bucket(Bucket=dest)
            manifest = put_inventory(client, man, f"{fmt}-{rows}", fmt, rows, min(groups, rows), src)
            seconds, peak, report = copy(endpoint, tmp, manifest, src, dest)
            expected = {k: v for k, v in want.items() if int(k[-11:-5]) < rows}
            exact = copied(client, dest) == expected and (report["succeeded"], report["failed"]) == (rows, 0)
            yield Copied(fmt, rows, seconds, peak, exact, report)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--objects", type=int, default=100_000)
    ap.add_argument("--groups", type=int, default=10_000, help="rows per Parquet row group / ORC stripe")
    args = ap.parse_args(argv)
    n = args.objects
    with tempfile.TemporaryDirectory(prefix="s3bulk-bench-") as tmpdir, SeaweedServer(volume_size_mb=256) as server:
        print(f"{'format':>8} {'rows':>8} {'seconds':>8} {'objects/s':>10} {'peak RSS MB':>12}  exact", flush=True)
        for c in inventory_copies(server.endpoint_url, Path(tmpdir), n, (max(n // 10, 1), n), args.groups):
            print(
                f"{c.fmt:>8} {c.rows:>8,} {c.seconds:>8.1f} {c.rows / c.seconds:>10,.0f} {c.peak_rss / 2**20:>12.0f}  {c.exact}", flush=True
            )
            if not c.exact:
                print(f"  report: {c.report['succeeded']} succeeded, {c.report['failed']} failed", flush=True)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
