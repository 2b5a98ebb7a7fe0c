"""Versions: delete all, noncurrent, copy all in order, manifests with version ids, Object Lock refusals.

SeaweedFS keeps versions as S3 does, pages ListObjectVersions exactly and lists a key's
versions and delete markers in one newest-first sequence, so the listings here run 7 entries
a page. moto (5.2.5) falls short on four counts, so its tests below list in one page and
compare without order:
- its XML lists a page's versions first and its delete markers after them, not in order;
- it sends LastModified in whole seconds, so the order cannot be rebuilt from times either;
- a KeyMarker without a VersionIdMarker drops the first version at or after the marker
  instead of skipping the marker key, so its pages lose and repeat entries;
- its DeleteObjects refuses every version of a key whose newest version is locked.
"""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from s3bulk.job import parse_job
from s3bulk.local.engine import Engine
from s3bulk.s3.faststore import FastS3Store
from s3bulk.s3.stores import S3Store
from tests.integration.conftest import cli_env, client_for, run_cli, run_job_cli

# Each key's history, oldest first: "p" a PUT (its body says which), "d" a delete without a version id (a delete marker).
HISTORIES = {
    "v/plain-a": "ppp",
    "v/plain b+c": "ppp",  # space and plus survive the url-encoded listing
    "v/ünï/ç": "ppp",
    "v/gone": "pppd",  # current version is a delete marker
    "v/back": "pdpp",  # a marker in the middle
    "v/only-marker": "d",
    "v/x0": "ppp",
    "v/x1": "ppp",
    "v/x2": "ppp",
    "v/x3": "pp",
}
OUTSIDE = "w/keep"  # outside the prefix: never touched


@pytest.fixture
def client(seaweed: str) -> Any:
    return client_for(seaweed)


@pytest.fixture(params=["fast", "botocore"])
def store_for(request: pytest.FixtureRequest) -> Callable[[Any], S3Store]:
    """Both request paths list versions: the fast path reads the XML in order, botocore's path restores its order."""

    def make(client: Any) -> S3Store:
        return FastS3Store(client, 16, max_keys=7) if request.param == "fast" else S3Store(client, max_keys=7)

    return make


def versioned(client: Any, role: str, *, lock: bool = False) -> str:
    name = f"{role}-{uuid.uuid4().hex[:10]}"
    if lock:
        client.create_bucket(Bucket=name, ObjectLockEnabledForBucket=True)
    else:
        client.create_bucket(Bucket=name)
        client.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    return name


def seed(client: Any, bucket: str) -> None:
    for key, history in {**HISTORIES, OUTSIDE: "pp"}.items():
        for n, event in enumerate(history):
            if event == "p":
                client.put_object(Bucket=bucket, Key=key, Body=f"{key}#{n}".encode())
            else:
                client.delete_object(Bucket=bucket, Key=key)


def history(client: Any, bucket: str, prefix: str = "") -> dict[str, list[str]]:
    """Each key's versions oldest first, by content ("-" for a delete marker), read with boto3 in the response's order."""
    out: dict[str, list[str]] = {}
    paginator = client.get_paginator("list_object_versions")
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
        entries = [(v["Key"], v["VersionId"], False) for v in page.get("Versions", ())]
        entries += [(m["Key"], m["VersionId"], True) for m in page.get("DeleteMarkers", ())]
        for key, version, marker in entries:
            body = "-" if marker else client.get_object(Bucket=bucket, Key=key, VersionId=version)["Body"].read().decode()
            out.setdefault(key, []).append((version, body))  # type: ignore[arg-type]
    # Order by each version's position in the key's history: HeadObject/GetObject give no order, so ask per key.
    ordered: dict[str, list[str]] = {}
    for key in out:
        ids = [v["VersionId"] for v in _key_entries(client, bucket, key)]
        by_id: dict[str, str] = dict(out[key])  # type: ignore[arg-type]
        ordered[key] = [by_id[i] for i in reversed(ids)]
    return ordered


def _key_entries(client: Any, bucket: str, key: str) -> list[dict[str, Any]]:
    """A key's entries newest first, in the server's order: from the raw XML, since boto3 splits versions from markers."""
    seen: list[dict[str, Any]] = []

    def grab(response_dict: dict[str, Any], **kwargs: Any) -> None:
        from xml.etree import ElementTree

        root = ElementTree.fromstring(response_dict["body"])
        for c in root:
            tag = c.tag.rsplit("}", 1)[-1]
            if tag in ("Version", "DeleteMarker"):
                k = next(x.text for x in c if x.tag.endswith("Key"))
                v = next(x.text for x in c if x.tag.endswith("VersionId"))
                if k == key:
                    seen.append({"VersionId": v})

    client.meta.events.register("before-parse.s3.ListObjectVersions", grab, unique_id="test-grab")
    try:
        client.list_object_versions(Bucket=bucket, Prefix=key, EncodingType="url")
    finally:
        client.meta.events.unregister("before-parse.s3.ListObjectVersions", unique_id="test-grab")
    return seen


def expected(key: str, events: str) -> list[str]:
    return [f"{key}#{n}" if e == "p" else "-" for n, e in enumerate(events)]


def run(store: S3Store, doc: dict[str, Any]) -> dict[str, Any]:
    report = Engine(parse_job(json.dumps(doc)), store, concurrency=8).run()
    return report.summary() | {"failures": list(report.tally.failures())}


def test_delete_all_versions_leaves_no_version_and_no_marker_under_the_prefix(client: Any, store_for: Callable[[Any], S3Store]) -> None:
    bucket = versioned(client, "va")
    seed(client, bucket)
    total = sum(len(h) for h in HISTORIES.values())
    s = run(store_for(client), {"operation": "delete", "source": {"bucket": bucket, "prefix": "v/", "versions": "all"}})
    assert (s["listed"], s["succeeded"], s["failed"]) == (total, total, 0)
    r = client.list_object_versions(Bucket=bucket, Prefix="v/")
    assert r.get("Versions", []) == [] and r.get("DeleteMarkers", []) == []
    assert history(client, bucket) == {OUTSIDE: expected(OUTSIDE, "pp")}


def test_delete_noncurrent_leaves_exactly_each_keys_current_version(client: Any, store_for: Callable[[Any], S3Store]) -> None:
    bucket = versioned(client, "vn")
    seed(client, bucket)
    noncurrent = sum(len(h) - 1 for h in HISTORIES.values())
    s = run(store_for(client), {"operation": "delete", "source": {"bucket": bucket, "prefix": "v/", "versions": "noncurrent"}})
    assert (s["listed"], s["succeeded"], s["failed"]) == (noncurrent, noncurrent, 0)
    after = history(client, bucket)
    assert after == {key: expected(key, events)[-1:] for key, events in HISTORIES.items()} | {OUTSIDE: expected(OUTSIDE, "pp")}


def test_undelete_removes_exactly_the_delete_markers_that_are_current_and_their_keys_come_back(
    client: Any, store_for: Callable[[Any], S3Store]
) -> None:
    bucket = versioned(client, "vu")
    seed(client, bucket)
    current_markers = [key for key, events in HISTORIES.items() if events.endswith("d")]  # v/gone, v/only-marker
    s = run(store_for(client), {"operation": "delete", "source": {"bucket": bucket, "prefix": "v/", "versions": "delete-markers"}})
    assert (s["listed"], s["succeeded"], s["failed"]) == (len(current_markers), len(current_markers), 0)
    after = history(client, bucket)
    # Each current marker gone, nothing else touched: v/gone's last version is current again; v/back's older marker stays.
    assert after == {key: [e for e in expected(key, events)] for key, events in HISTORIES.items() if key != "v/only-marker"} | {
        "v/gone": expected("v/gone", "ppp"),
        OUTSIDE: expected(OUTSIDE, "pp"),
    }
    assert client.get_object(Bucket=bucket, Key="v/gone")["Body"].read() == b"v/gone#2"
    again = run(store_for(client), {"operation": "delete", "source": {"bucket": bucket, "prefix": "v/", "versions": "delete-markers"}})
    assert again["listed"] == 0  # nothing is deleted any more


def test_an_undelete_of_1000_deleted_keys_brings_each_back_at_its_previous_version_and_undo_hides_them_again(
    client: Any, tmp_path: Path, seaweed: str
) -> None:
    bucket = versioned(client, "vk")
    keys = [f"d/{i // 100:02d}/key {i:04d}+ü" for i in range(1000)]

    def write(key: str) -> None:
        for n in range(2):
            client.put_object(Bucket=bucket, Key=key, Body=f"{key}#{n}".encode())
        client.delete_object(Bucket=bucket, Key=key)

    with ThreadPoolExecutor(32) as pool:
        list(pool.map(write, keys))
    client.put_object(Bucket=bucket, Key="d/alive", Body=b"never deleted")
    doc = {"operation": "delete", "source": {"bucket": bucket, "prefix": "d/", "versions": "delete-markers"}}
    code, report, lines, err = run_job_cli(seaweed, tmp_path, "undelete", doc)
    assert code == 0, err
    assert (report["listed"], report["succeeded"], report["failed"]) == (1000, 1000, 0)
    live = {o["Key"] for p in client.get_paginator("list_objects_v2").paginate(Bucket=bucket) for o in p.get("Contents", [])}
    assert live == {*keys, "d/alive"}
    assert all(client.get_object(Bucket=bucket, Key=k)["Body"].read() == f"{k}#1".encode() for k in keys[::37])
    assert sum(1 for line in lines if (line.get("undo") or {}).get("what") == "version") == 1000

    done = run_cli("undo", str(tmp_path / "undelete-keys.jsonl"), "--endpoint-url", seaweed, env=cli_env(tmp_path))
    assert done.returncode == 0, done.stderr
    live = {o["Key"] for p in client.get_paginator("list_objects_v2").paginate(Bucket=bucket) for o in p.get("Contents", [])}
    assert live == {"d/alive"}  # each key hidden again, under a new delete marker; every version kept
    versions = client.list_object_versions(Bucket=bucket, Prefix=keys[0])
    assert (len(versions.get("Versions", [])), len(versions.get("DeleteMarkers", []))) == (2, 1)


def test_copy_all_versions_reproduces_each_keys_history_in_order_and_a_rerun_adds_nothing(
    client: Any, store_for: Callable[[Any], S3Store], tmp_path: Path
) -> None:
    src, dst = versioned(client, "vs"), versioned(client, "vd")
    seed(client, src)
    doc = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "v/", "versions": "all"},
        "destination": {"bucket": dst, "prefix": "c/"},
    }
    s = run(store_for(client), doc)
    assert (s["listed"], s["succeeded"], s["failed"]) == (len(HISTORIES), len(HISTORIES), 0)
    want = {"c/" + key[2:]: expected(key, events) for key, events in HISTORIES.items()}
    assert history(client, dst) == want
    again = run(store_for(client), doc)
    assert (again["succeeded"], again["skipped"], again["failed"]) == (0, len(HISTORIES), 0)
    assert history(client, dst) == want


def test_copy_all_versions_refuses_a_destination_without_versioning_before_copying(
    client: Any, bucket_factory: Callable[[Any, str], str], tmp_path: Path, seaweed: str
) -> None:
    src, dst = versioned(client, "vs"), bucket_factory(client, "plain")
    seed(client, src)
    doc = {"operation": "copy", "source": {"bucket": src, "prefix": "v/", "versions": "all"}, "destination": {"bucket": dst}}
    code, report, _, _ = run_job_cli(seaweed, tmp_path, "unversioned", doc)
    assert code != 0
    assert "DestinationNotVersioned" in report["error"] and "enable versioning" in report["error"]
    assert report["succeeded"] == 0
    assert client.list_objects_v2(Bucket=dst).get("KeyCount") == 0


def test_csv_manifest_rows_with_version_ids_act_on_exactly_those_versions(client: Any, tmp_path: Path, seaweed: str) -> None:
    bucket = versioned(client, "vm")
    seed(client, bucket)
    chosen = {}
    for key in ("v/plain-a", "v/plain b+c", "v/back"):
        versions = [v for v in client.list_object_versions(Bucket=bucket, Prefix=key)["Versions"] if v["Key"] == key]
        oldest = min(versions, key=lambda v: _position(client, bucket, key, v["VersionId"]))
        chosen[key] = oldest["VersionId"]
    from urllib.parse import quote_plus

    rows = "".join(f"{bucket},{quote_plus(k, safe='/')},{v}\n" for k, v in chosen.items())
    client.put_object(Bucket=bucket, Key="m/rows.csv", Body=rows.encode())
    doc = {"operation": "delete", "source": {"bucket": bucket, "manifest": {"bucket": bucket, "key": "m/rows.csv"}}}
    code, report, lines, err = run_job_cli(seaweed, tmp_path, "manifest-versions", doc)
    assert code == 0, err
    assert (report["succeeded"], report["failed"]) == (3, 0)
    assert sorted((line["key"], line["version_id"]) for line in lines) == sorted(chosen.items())
    after = history(client, bucket, "v/")
    for key, events in HISTORIES.items():
        want = expected(key, events)
        if key in chosen:
            want = want[1:]  # the oldest version (a PUT in each chosen key) is gone, nothing else
        assert after.get(key, []) == want, key


def _position(client: Any, bucket: str, key: str, version: str) -> int:
    """How old a version is: 0 for the oldest."""
    ids = [e["VersionId"] for e in _key_entries(client, bucket, key)]
    return len(ids) - 1 - ids.index(version)


def test_deleting_every_version_fails_only_the_locked_ones_and_deletes_the_rest(client: Any, store_for: Callable[[Any], S3Store]) -> None:
    bucket = versioned(client, "vl", lock=True)
    seed(client, bucket)
    until = datetime.now(UTC) + timedelta(days=1)
    locked = client.put_object(Bucket=bucket, Key="v/x1", Body=b"locked", ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until)[
        "VersionId"
    ]
    held = client.put_object(Bucket=bucket, Key="v/x2", Body=b"held", ObjectLockLegalHoldStatus="ON")["VersionId"]
    total = sum(len(h) for h in HISTORIES.values()) + 2
    s = run(store_for(client), {"operation": "delete", "source": {"bucket": bucket, "prefix": "v/", "versions": "all"}})
    assert (s["listed"], s["succeeded"], s["failed"]) == (total, total - 2, 2)
    failed = {(f["key"], f["message"].split(":")[0]) for f in s["failures"]}
    assert failed == {("v/x1", f"version {locked}"), ("v/x2", f"version {held}")}
    assert {f["error"] for f in s["failures"]} == {"AccessDenied"}
    left = client.list_object_versions(Bucket=bucket, Prefix="v/")
    assert sorted((v["Key"], v["VersionId"]) for v in left.get("Versions", [])) == [("v/x1", locked), ("v/x2", held)]
    assert left.get("DeleteMarkers", []) == []


@pytest.fixture
def moto(moto_endpoint: str) -> Any:
    return client_for(moto_endpoint)


def entries(client: Any, bucket: str, prefix: str) -> set[tuple[str, str, bool]]:
    r = client.list_object_versions(Bucket=bucket, Prefix=prefix)
    return {(v["Key"], v["VersionId"], False) for v in r.get("Versions", ())} | {
        (m["Key"], m["VersionId"], True) for m in r.get("DeleteMarkers", ())
    }


@pytest.mark.parametrize("versions", ["all", "noncurrent"])
def test_on_moto_delete_by_version_removes_exactly_the_listed_versions(moto: Any, versions: str) -> None:
    bucket = versioned(moto, "mv")
    seed(moto, bucket)
    before = entries(moto, bucket, "v/")
    current = {(k, v, m) for k, v, m in before if any(x["VersionId"] == v and x["IsLatest"] for x in _latest(moto, bucket, k))}
    gone = before if versions == "all" else before - current
    s = run(FastS3Store(moto, 16), {"operation": "delete", "source": {"bucket": bucket, "prefix": "v/", "versions": versions}})
    assert (s["listed"], s["succeeded"], s["failed"]) == (len(gone), len(gone), 0)
    assert entries(moto, bucket, "v/") == before - gone
    assert len(entries(moto, bucket, "w/")) == 2


def _latest(client: Any, bucket: str, key: str) -> list[dict[str, Any]]:
    r = client.list_object_versions(Bucket=bucket, Prefix=key)
    return [x for x in [*r.get("Versions", ()), *r.get("DeleteMarkers", ())] if x["Key"] == key]


def test_on_moto_a_locked_version_fails_its_key_and_every_other_version_is_deleted(moto: Any) -> None:
    bucket = versioned(moto, "ml", lock=True)
    seed(moto, bucket)
    until = datetime.now(UTC) + timedelta(days=1)
    body = b"locked"
    md5 = base64.b64encode(hashlib.md5(body, usedforsecurity=False).digest()).decode()
    locked = moto.put_object(
        Bucket=bucket, Key="v/locked", Body=body, ContentMD5=md5, ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until
    )  # a key of its own: moto's DeleteObjects judges every version of a key by its newest one (SeaweedFS, above, per version)
    total = len(entries(moto, bucket, "v/"))
    s = run(FastS3Store(moto, 16), {"operation": "delete", "source": {"bucket": bucket, "prefix": "v/", "versions": "all"}})
    assert (s["succeeded"], s["failed"]) == (total - 1, 1), s["failures"]
    assert [(f["key"], f["error"]) for f in s["failures"]] == [("v/locked", "AccessDenied")]
    assert entries(moto, bucket, "v/") == {("v/locked", locked["VersionId"], False)}
