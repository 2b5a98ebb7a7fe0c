"""`s3bulk doctor --endpoint-url URL --bucket B` on servers that differ where S3 implementations do (issue 50).

Each test runs the real CLI against moto (S3's key semantics), SeaweedFS, versitygw or the quirk proxy, asserts the
rows each server is known for (tests/integration/test_server_quirks.py pins the same facts with plain boto3), and
lists the bucket with plain boto3 afterwards: the probe leaves no scratch key behind, and touches no other key.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from s3bulk.cli.doctor import probe_stores
from s3bulk.local.probe import Probe, probe_server
from s3bulk.local.server import ACCESS_KEY, SECRET_KEY
from s3bulk.s3.clients import ClientSettings
from tests.integration.conftest import cli_env, run_cli
from tests.integration.helpers import plain_client

USER_KEY = "keep/me.txt"  # an object of the user's: the probe must leave it as it was


@pytest.fixture
def quirkproxy() -> Any:
    """s3bulk/testing/quirkproxy.py: the suite's proxy that makes a server answer as others do."""
    from s3bulk.testing import quirkproxy

    return quirkproxy


def bucket_with_user_object(client: Any) -> str:
    bucket = f"doctor-{uuid.uuid4().hex[:10]}"
    client.create_bucket(Bucket=bucket)
    client.put_object(Bucket=bucket, Key=USER_KEY, Body=b"the user's")
    return bucket


def all_keys(client: Any, bucket: str) -> list[str]:
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys += [o["Key"] for o in page.get("Contents", ())]
    return keys


def doctor_json(endpoint: str, bucket: str, tmp_path: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The CLI's --json document, and its findings by probe name (exit 0 and nothing on stderr asserted)."""
    done = run_cli("doctor", "--endpoint-url", endpoint, "--bucket", bucket, "--json", env=cli_env(tmp_path), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    doc = json.loads(done.stdout)
    return doc, {f["probe"]: f for f in doc["findings"]}


def assert_clean(client: Any, bucket: str, doc: dict[str, Any]) -> None:
    assert doc["left_behind"] == []
    assert doc["prefix"].startswith(".s3bulk-doctor/")
    assert all_keys(client, bucket) == [USER_KEY]
    assert client.get_object(Bucket=bucket, Key=USER_KEY)["Body"].read() == b"the user's"


@pytest.mark.moto
def test_on_moto_every_probe_finds_s3s_behaviour_and_no_scratch_key_is_left(moto_endpoint: str, tmp_path: Path) -> None:
    client = plain_client(moto_endpoint)
    bucket = bucket_with_user_object(client)
    doc, rows = doctor_json(moto_endpoint, bucket, tmp_path)
    assert {name: row["verdict"] for name, row in rows.items()} == {
        "key order": "trust",
        "XML namespace": "trust",
        "url encoding": "trust",
        "control characters": "trust",
        "delimiter": "trust",
        "'//' and leading '/'": "trust",
        "copy source": "trust",
        "ETags": "trust",
        "checksums": "trust",
        "conditional writes": "not used",
        "tagging": "trust",
        "ACLs": "trust",
    }
    assert rows["url encoding"]["seen"] == "says EncodingType url and encodes keys"
    assert rows["conditional writes"]["seen"] == "If-None-Match: * on an existing key: 412"
    assert rows["checksums"]["seen"].startswith("keeps CRC32")
    assert doc["seconds"] < 15
    assert_clean(client, bucket, doc)


@pytest.mark.seaweed
def test_on_seaweedfs_folder_first_order_is_refused_and_collapsed_slashes_are_named(seaweed: str, tmp_path: Path) -> None:
    client = plain_client(seaweed)
    bucket = bucket_with_user_object(client)
    doc, rows = doctor_json(seaweed, bucket, tmp_path)
    order = rows["key order"]
    assert order["verdict"] == "refuse"
    assert order["seen"].startswith("lists a/b < a b"), order
    assert "ListingOutOfOrder" in order["does"] and "a folder's keys before its siblings'" in order["does"]
    slashes = rows["'//' and leading '/'"]
    assert (slashes["verdict"], slashes["seen"]) == ("unchecked", "stores 'a//b' as 'a/b' and '/lead' without its '/'")
    assert rows["url encoding"]["verdict"] == "trust"
    assert rows["copy source"]["verdict"] == "trust"
    assert_clean(client, bucket, doc)


def test_on_versitygw_raw_keys_unreadable_control_characters_and_missing_acls_show(versitygw: str, tmp_path: Path) -> None:
    client = plain_client(versitygw)
    bucket = bucket_with_user_object(client)
    env = {**cli_env(tmp_path), "COLUMNS": "400"}  # the table's rows, one line each
    done = run_cli("doctor", "--endpoint-url", versitygw, "--bucket", bucket, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = {line.split("│")[1].strip(): line for line in done.stdout.splitlines() if line.count("│") == 5}
    assert "ignores encoding-type=url: keys raw, and says so" in lines["url encoding"]
    assert "refuse" in lines["control characters"] and "UnreadableKey" in lines["control characters"]
    assert "stores 'a//b' as 'a/b' and '/lead' without its '/'" in lines["'//' and leading '/'"]
    assert "GetObjectAcl: 501 NotImplemented" in lines["ACLs"] and "refuse" in lines["ACLs"]
    assert "S3's UTF-8 byte order" in lines["key order"]
    assert all_keys(client, bucket) == [USER_KEY]


@pytest.mark.moto
def test_through_the_quirk_proxy_each_claim_the_server_gets_wrong_is_checked_or_refused(
    moto_endpoint: str, tmp_path: Path, quirkproxy: Any
) -> None:
    client = plain_client(moto_endpoint)  # the ground truth: moto itself, not through the proxy
    bucket = bucket_with_user_object(client)
    quirks = quirkproxy.Quirks(
        raw_keys_claim_url=True,
        namespace=True,
        omit_prefixes=True,
        not_implemented=frozenset({"PutObjectTagging", "ConditionalWrite"}),
    )
    with quirkproxy.QuirkProxy(int(urlsplit(moto_endpoint).port or 0), quirks) as proxy:
        doc, rows = doctor_json(proxy.endpoint_url, bucket, tmp_path)
        applied = dict(proxy.stats.applied)
    assert {"raw_keys_claim_url", "namespace", "omit_prefixes", "not_implemented"} <= applied.keys(), applied
    enc = rows["url encoding"]
    assert (enc["verdict"], enc["seen"]) == ("check", "says EncodingType url but sends keys raw")
    assert rows["XML namespace"]["verdict"] == "check"
    assert "not S3's" in rows["XML namespace"]["seen"]
    assert rows["delimiter"]["verdict"] == "check"
    assert rows["delimiter"]["seen"].startswith("leaves out d/2024/")
    assert rows["tagging"]["verdict"] == "refuse"
    assert rows["conditional writes"]["seen"].startswith("not supported: NotImplemented (501)")
    assert rows["key order"]["verdict"] == "trust"
    assert_clean(client, bucket, doc)


@pytest.mark.moto
def test_keys_it_could_not_delete_are_printed_and_the_probe_still_exits_0(moto_endpoint: str, tmp_path: Path, quirkproxy: Any) -> None:
    client = plain_client(moto_endpoint)
    bucket = bucket_with_user_object(client)
    quirks = quirkproxy.Quirks(not_implemented=frozenset({"DeleteObject", "DeleteObjects"}))
    with quirkproxy.QuirkProxy(int(urlsplit(moto_endpoint).port or 0), quirks) as proxy:
        done = run_cli("doctor", "--endpoint-url", proxy.endpoint_url, "--bucket", bucket, "--json", env=cli_env(tmp_path), timeout=120)
    assert done.returncode == 0, done.stderr
    left = json.loads(done.stdout)["left_behind"]
    scratch = sorted(k for k in all_keys(client, bucket) if k != USER_KEY)
    assert left == scratch and len(scratch) > 20
    assert f"warning: {len(left)} scratch key(s) could not be deleted from s3://{bucket}" in done.stderr
    assert repr(scratch[0]) in done.stderr or ascii(scratch[0]) in done.stderr
    for key in scratch:
        client.delete_object(Bucket=bucket, Key=key)


@pytest.mark.moto
def test_scratch_keys_are_deleted_when_a_probe_raises(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    client = plain_client(moto_endpoint)
    bucket = bucket_with_user_object(client)

    def boom(self: Probe) -> None:
        raise RuntimeError("a bug in a probe")

    monkeypatch.setattr(Probe, "delimiter", boom)  # after the key order, encoding and control character probes wrote theirs
    settings = ClientSettings(endpoint_url=moto_endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY)
    with pytest.raises(RuntimeError, match="a bug in a probe"):
        probe_server(*probe_stores(settings), bucket, moto_endpoint)
    assert all_keys(client, bucket) == [USER_KEY]


@pytest.mark.moto
def test_a_missing_bucket_is_one_line_and_exit_1(moto_endpoint: str, tmp_path: Path) -> None:
    done = run_cli(
        "doctor", "--endpoint-url", moto_endpoint, "--bucket", f"absent-{uuid.uuid4().hex[:8]}", env=cli_env(tmp_path), timeout=60
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1
    assert "no such bucket at" in done.stderr


def test_endpoint_without_bucket_is_a_usage_error_naming_bucket(tmp_path: Path) -> None:
    done = run_cli("doctor", "--endpoint-url", "http://127.0.0.1:9", env=cli_env(tmp_path), timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and "--bucket BUCKET" in done.stderr
    assert len(done.stderr.splitlines()) == 1
