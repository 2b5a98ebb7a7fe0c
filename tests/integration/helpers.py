"""Seeding and byte-exact checks shared by the integration tests."""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

from s3bulk.local.demo import Seed, body_md5s, list_keys, put_seeds
from s3bulk.local.server import ACCESS_KEY, SECRET_KEY

__all__ = ["assert_exact_copy", "list_keys", "md5", "plain_client", "put_all", "seed_small", "snapshot", "write_job"]


def seed_small(client: Any, bucket: str, prefix: str, n: int) -> dict[str, str]:
    """n small objects of varied size (0 B to 2 KiB); returns key -> MD5."""
    return put_seeds(client, bucket, [Seed(f"{prefix}{i % 37:02d}/obj-{i:05d}", (i * 131) % 2048) for i in range(n)])


def snapshot(client: Any, bucket: str) -> dict[str, str]:
    """key -> ETag for a whole bucket: equal snapshots mean nothing changed."""
    out: dict[str, str] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        out.update({o["Key"]: o["ETag"] for o in page.get("Contents", ())})
    return out


def assert_exact_copy(client: Any, bucket: str, prefix: str, expected: dict[str, str]) -> None:
    got = body_md5s(client, bucket, list_keys(client, bucket, prefix))
    assert got.keys() == expected.keys()
    assert got == expected


def write_job(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc))
    return path


def md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def plain_client(endpoint: str) -> Any:
    """boto3 as a user would configure it for an S3-compatible server: path-style, checksums only where required."""
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name="us-east-1",
        config=Config(
            s3={"addressing_style": "path"},
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
            max_pool_connections=16,
        ),
    )


def put_all(client: Any, bucket: str, objects: dict[str, bytes]) -> dict[str, str]:
    """key -> MD5 of its body."""

    def put(item: tuple[str, bytes]) -> None:
        client.put_object(Bucket=bucket, Key=item[0], Body=item[1])

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(put, objects.items()))
    return {k: md5(b) for k, b in objects.items()}
