"""s3transfer's managed copy() with its defaults (8 MiB threshold and parts, 10 threads): the large-object peer.

python -m bench.s3transfer_copy ENDPOINT DST_KEY
"""

from __future__ import annotations

import sys

import boto3
from botocore.config import Config


def main(argv: list[str]) -> int:
    endpoint, dst_key = argv
    client = boto3.client(
        "s3", endpoint_url=endpoint, config=Config(s3={"addressing_style": "path"}, request_checksum_calculation="when_required")
    )
    client.copy({"Bucket": "bench-src", "Key": "large/object.bin"}, "bench-dst", dst_key)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
