"""Reading manifests: rows/s and peak Python memory for CSV and S3 Inventory manifests of growing size.

Shows that reading stays flat in memory (one data file streamed at a time) and that
parsing is far faster than the work each row stands for.

python -m bench.manifest [--rows 100000,1000000]
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
import tracemalloc
from urllib.parse import quote_plus

from s3bulk.job import parse_job
from s3bulk.source.manifest import ManifestReader
from s3bulk.testing.memstore import MemoryStore

SCHEMA = "Bucket, Key, Size, LastModifiedDate, ETag, StorageClass"


def build(store: MemoryStore, rows: int) -> None:
    """A CSV manifest and an inventory of four gzip parts, each listing `rows` keys."""
    keys = [f"data/{i % 97:02d}/part {i:08d}+ü.bin" for i in range(rows)]
    store.put_object("man-b", "keys.csv", gzip.compress("".join(f"src-b,{quote_plus(k, safe='/')}\n" for k in keys).encode(), 1))
    files = []
    per = -(-rows // 4)
    for n in range(4):
        text = "".join(
            f'"src-b","{quote_plus(k, safe="/")}","{i}","2026-11-20T01:00:00.000Z","0cc175b9c0f1b6a831c399e269772661","STANDARD"\n'
            for i, k in enumerate(keys[n * per : (n + 1) * per])
        )
        store.put_object("man-b", f"inv/data/{n}.csv.gz", gzip.compress(text.encode(), 1))
        files.append({"key": f"inv/data/{n}.csv.gz", "size": 0, "MD5checksum": ""})
    doc = {"destinationBucket": "arn:aws:s3:::man-b", "fileFormat": "CSV", "fileSchema": SCHEMA, "files": files}
    store.put_object("man-b", "inv/manifest.json", json.dumps(doc).encode())


def measure(store: MemoryStore, key: str, fmt: str) -> tuple[int, float, int]:
    job = parse_job(
        json.dumps({"operation": "delete", "source": {"bucket": "src-b", "manifest": {"bucket": "man-b", "key": key, "format": fmt}}})
    )
    reader = ManifestReader(store, job.source)
    tracemalloc.start()
    t0 = time.perf_counter()
    n = sum(1 for row in reader.rows() if row.obj is not None)
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return n, seconds, peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", default="100000,1000000")
    args = ap.parse_args()
    print(f"{'rows':>10} {'format':>10} {'rows/s':>10} {'peak MiB':>9}")
    for rows in (int(r) for r in args.rows.split(",")):
        store = MemoryStore()
        store.create_bucket("man-b")
        build(store, rows)
        for key, fmt in (("keys.csv", "csv"), ("inv/manifest.json", "inventory")):
            n, seconds, peak = measure(store, key, fmt)
            assert n == rows, (n, rows)
            print(f"{rows:>10,} {fmt:>10} {n / seconds:>10,.0f} {peak / 2**20:>9.1f}")


if __name__ == "__main__":
    main()
