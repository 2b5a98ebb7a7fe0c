"""Keys are opaque byte strings: the hostile-key corpus survives copy, move and delete exactly (moto keeps keys as S3 does)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from s3bulk.job import parse_job
from s3bulk.local.engine import Engine
from s3bulk.s3.faststore import FastS3Store
from s3bulk.s3.stores import S3Store
from tests.corpus import MOTO_CASES, body_of
from tests.integration.conftest import client_for
from tests.integration.helpers import list_keys, md5

ODD_KEYS = [c.key for c in MOTO_CASES]
TOO_LONG_UNDER_PREFIX = {c.key for c in MOTO_CASES if c.under_prefix == "KeyTooLongError"}


@pytest.fixture
def client(moto_endpoint: str) -> Any:
    return client_for(moto_endpoint)


def seed(client: Any, bucket: str) -> dict[str, str]:
    out = {}
    for case in MOTO_CASES:
        body = body_of(case)
        client.put_object(Bucket=bucket, Key=case.key, Body=body)
        out[case.key] = md5(body)
    return out


@pytest.fixture(params=["fast", "botocore"], autouse=True)
def request_path(request: pytest.FixtureRequest) -> str:
    PATH[0] = request.param
    return str(request.param)


PATH = ["fast"]


def run(client: Any, doc: dict[str, Any]) -> dict[str, Any]:
    store = FastS3Store(client, 16) if PATH[0] == "fast" else S3Store(client)
    report = Engine(parse_job(json.dumps(doc)), store, concurrency=8).run()
    return report.summary() | {"failures": list(report.tally.failures())}


def bodies(client: Any, bucket: str) -> dict[str, str]:
    return {k: md5(client.get_object(Bucket=bucket, Key=k)["Body"].read()) for k in list_keys(client, bucket)}


def test_server_keeps_the_odd_keys_exactly(client: Any, bucket_factory: Callable[[Any, str], str]) -> None:
    bucket = bucket_factory(client, "raw")
    seed(client, bucket)
    assert sorted(list_keys(client, bucket)) == sorted(ODD_KEYS)


def test_copy_keeps_every_odd_key_and_its_bytes(client: Any, bucket_factory: Callable[[Any, str], str]) -> None:
    src, dst = bucket_factory(client, "src"), bucket_factory(client, "dst")
    expected = seed(client, src)
    summary = run(client, {"operation": "copy", "source": {"bucket": src}, "destination": {"bucket": dst}})
    assert summary["failures"] == []
    assert summary["succeeded"] == len(ODD_KEYS)
    assert bodies(client, dst) == expected


def test_copy_under_a_new_prefix_prepends_it_byte_exactly(client: Any, bucket_factory: Callable[[Any, str], str]) -> None:
    src, dst = bucket_factory(client, "src"), bucket_factory(client, "dst")
    expected = seed(client, src)
    summary = run(
        client,
        {"operation": "copy", "source": {"bucket": src, "prefix": "d", "raw_prefix": True}, "destination": {"bucket": dst, "prefix": "x/"}},
    )
    selected = {k: v for k, v in expected.items() if k.startswith("d")}
    assert summary["succeeded"] == len(selected) == 5
    assert bodies(client, dst) == {"x/" + k[1:]: v for k, v in selected.items()}


def test_keys_too_long_under_a_prefix_fail_one_by_one_and_the_rest_copy(client: Any, bucket_factory: Callable[[Any, str], str]) -> None:
    src, dst = bucket_factory(client, "src"), bucket_factory(client, "dst")
    expected = seed(client, src)
    summary = run(client, {"operation": "copy", "source": {"bucket": src}, "destination": {"bucket": dst, "prefix": "x/"}})
    assert {(f["key"], f["error"]) for f in summary["failures"]} == {(k, "KeyTooLongError") for k in TOO_LONG_UNDER_PREFIX}
    assert (summary["succeeded"], summary["failed"]) == (len(ODD_KEYS) - 2, 2)
    assert bodies(client, dst) == {"x/" + k: v for k, v in expected.items() if k not in TOO_LONG_UNDER_PREFIX}


def test_move_moves_every_odd_key_and_leaves_the_source_empty(client: Any, bucket_factory: Callable[[Any, str], str]) -> None:
    src, dst = bucket_factory(client, "src"), bucket_factory(client, "dst")
    expected = seed(client, src)
    summary = run(client, {"operation": "move", "source": {"bucket": src}, "destination": {"bucket": dst}})
    assert (summary["succeeded"], summary["failures"]) == (len(ODD_KEYS), [])
    assert list_keys(client, src) == []
    assert bodies(client, dst) == expected


def test_delete_all_removes_every_odd_key(client: Any, bucket_factory: Callable[[Any, str], str]) -> None:
    bucket = bucket_factory(client, "del")
    seed(client, bucket)
    summary = run(client, {"operation": "delete", "source": {"bucket": bucket, "all": True}})
    assert (summary["succeeded"], summary["failures"]) == (len(ODD_KEYS), [])
    assert list_keys(client, bucket) == []


def test_delete_by_prefix_leaves_lookalike_keys(client: Any, bucket_factory: Callable[[Any, str], str]) -> None:
    bucket = bucket_factory(client, "del")
    seed(client, bucket)
    summary = run(client, {"operation": "delete", "source": {"bucket": bucket, "prefix": "dir/"}})
    assert summary["succeeded"] == 2
    remaining = set(list_keys(client, bucket))
    assert remaining == set(ODD_KEYS) - {"dir/", "dir/zero-byte"}


def test_parallel_listing_matches_serial_listing_on_the_server(
    client: Any, bucket_factory: Callable[[Any, str], str], request_path: str
) -> None:
    from s3bulk.source.listing import iter_objects
    from s3bulk.source.shards import iter_objects_parallel

    bucket = bucket_factory(client, "list")
    seed(client, bucket)
    for i in range(120):
        client.put_object(Bucket=bucket, Key=f"tree/{i % 9} ü+%/{i % 4}/leaf-{i:03d}", Body=b"")
    store = FastS3Store(client, 16, max_keys=7) if request_path == "fast" else S3Store(client, max_keys=7)
    for prefix in ("", "tree/", "dir"):
        serial = [o.key for o in iter_objects(store, bucket, prefix)]
        assert [o.key for o in iter_objects_parallel(store, bucket, prefix, workers=6)] == serial
        assert len(serial) > 0
