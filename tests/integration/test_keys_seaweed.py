"""Control characters and line breaks in keys, on a real server that keeps them (SeaweedFS), on both request paths."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from s3bulk.job import parse_job
from s3bulk.local.engine import Engine
from s3bulk.s3.faststore import FastS3Store
from s3bulk.s3.stores import S3Store
from s3bulk.store import xml_safe
from tests.corpus import CASES, body_of
from tests.integration.conftest import client_for
from tests.integration.helpers import list_keys

pytestmark = pytest.mark.seaweed

CONTROL = [c for c in CASES if any(ch in c.key for ch in "\r\n\t\x7f") or not xml_safe(c.key)]


@pytest.mark.parametrize("path", ["fast", "botocore"])
def test_control_character_keys_copy_and_delete_exactly(seaweed: str, bucket_factory: Callable[[Any, str], str], path: str) -> None:
    client = client_for(seaweed)
    src, dst = bucket_factory(client, "src"), bucket_factory(client, "dst")
    for case in CONTROL:
        client.put_object(Bucket=src, Key=case.key, Body=body_of(case))

    def run(doc: dict[str, Any]) -> dict[str, Any]:
        store = FastS3Store(client, 16) if path == "fast" else S3Store(client)
        report = Engine(parse_job(json.dumps(doc)), store, concurrency=4).run()
        return report.summary() | {"failures": list(report.tally.failures())}

    copied = run({"operation": "copy", "source": {"bucket": src}, "destination": {"bucket": dst}})
    assert (copied["succeeded"], copied["failures"]) == (len(CONTROL), [])
    assert {k: client.get_object(Bucket=dst, Key=k)["Body"].read() for k in list_keys(client, dst)} == {c.key: body_of(c) for c in CONTROL}
    deleted = run({"operation": "delete", "source": {"bucket": dst, "all": True}})
    assert (deleted["succeeded"], deleted["failures"]) == (len(CONTROL), [])
    assert list_keys(client, dst) == []
    assert len(CONTROL) >= 9
