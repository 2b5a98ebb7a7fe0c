"""The baseline from the public write-up this project answers: a serial listing, then boto3 calls
in a ThreadPoolExecutor of os.cpu_count() + 4 workers (the executor's default), one request per object.

    python -m bench.baseline copy ENDPOINT SRC_BUCKET SRC_PREFIX DST_BUCKET DST_PREFIX
    python -m bench.baseline delete ENDPOINT BUCKET PREFIX
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor

import boto3
from botocore.config import Config


def main(argv: list[str]) -> int:
    op, endpoint = argv[0], argv[1]
    client = boto3.client(
        "s3", endpoint_url=endpoint, config=Config(s3={"addressing_style": "path"}, request_checksum_calculation="when_required")
    )
    bucket, prefix = argv[2], argv[3]
    keys = [
        o["Key"]
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        for o in page.get("Contents", ())
    ]
    with ThreadPoolExecutor() as pool:  # os.cpu_count() + 4 threads, botocore's default pool of 10 connections
        if op == "copy":
            dst_bucket, dst_prefix = argv[4], argv[5]
            list(
                pool.map(
                    lambda k: client.copy_object(
                        Bucket=dst_bucket, Key=dst_prefix + k[len(prefix) :], CopySource={"Bucket": bucket, "Key": k}
                    ),
                    keys,
                )
            )
        else:
            list(pool.map(lambda k: client.delete_object(Bucket=bucket, Key=k), keys))
    print(f"{op} {len(keys)} objects with {min(32, (os.cpu_count() or 1) + 4)} threads", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
