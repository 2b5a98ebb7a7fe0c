"""A multipart copy keeps bytes, Content-Type, headers, user metadata and tags, on both servers."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from s3bulk.job import MiB, parse_job
from s3bulk.local.engine import Engine
from s3bulk.s3.stores import S3Store
from tests.integration.conftest import client_for
from tests.integration.helpers import md5


@pytest.fixture(params=["seaweed", "moto_endpoint"])
def client(request: pytest.FixtureRequest) -> Any:
    return client_for(request.getfixturevalue(request.param))


def test_multipart_copy_keeps_type_metadata_headers_and_tags(client: Any, bucket_factory: Callable[[Any, str], str]) -> None:
    src, dst = bucket_factory(client, "src"), bucket_factory(client, "dst")
    body = bytes(range(256)) * (13 * MiB // 256) + b"end"
    client.put_object(
        Bucket=src,
        Key="in/big.bin",
        Body=body,
        ContentType="application/x-parquet",
        CacheControl="max-age=60",
        Metadata={"origin": "cam-7", "note": "x y"},
        Tagging="team=media&class=hot%20data",
    )
    doc = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "in/"},
        "destination": {"bucket": dst, "prefix": "out/"},
        "options": {"multipart_threshold": 8 * MiB, "part_size": 5 * MiB},
    }
    report = Engine(parse_job(json.dumps(doc)), S3Store(client), concurrency=4).run()
    assert (report.status, list(report.tally.failures())) == ("succeeded", [])
    head = client.head_object(Bucket=dst, Key="out/big.bin")
    assert head["ETag"].strip('"').endswith("-3")  # three parts: it really took the multipart path
    assert head["ContentLength"] == len(body)
    assert head["ContentType"] == "application/x-parquet"
    assert head.get("CacheControl") == "max-age=60"
    assert head["Metadata"] == {"origin": "cam-7", "note": "x y"}
    tags = client.get_object_tagging(Bucket=dst, Key="out/big.bin")["TagSet"]
    assert {t["Key"]: t["Value"] for t in tags} == {"team": "media", "class": "hot data"}
    assert md5(client.get_object(Bucket=dst, Key="out/big.bin")["Body"].read()) == md5(body)
    assert client.list_multipart_uploads(Bucket=dst).get("Uploads", []) == []
