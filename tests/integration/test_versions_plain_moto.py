"""Point in time on moto as it ships (no harness patch): it lists every version, then every delete marker, with whole
seconds, so only LastModified says which entry of a key came first. A copy as of T, a rewind to T and a copy of every
version must each be exact there, on both request paths; every result is read back with plain boto3.

Writes are a second and more apart (moto's dates are whole seconds), so each phase has its own LastModified.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import client_for, run_job_cli

pytestmark = pytest.mark.moto

PATHS = ["fast", "botocore"]


def _bucket(client: Any, role: str, *, versioned: bool = True) -> str:
    name = f"{role}-{uuid.uuid4().hex[:10]}"
    client.create_bucket(Bucket=name)
    if versioned:
        client.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    return name


def _tick() -> None:
    time.sleep(1.1)  # the next write's LastModified is a later whole second


def _history(client: Any, bucket: str) -> datetime:
    """Four keys around a time T, returned: gone-before (deleted before T), changed-after (a new version after T),
    born-after (first written after T), deleted-after (deleted after T)."""
    for key in ("in/gone-before", "in/changed-after", "in/deleted-after"):
        client.put_object(Bucket=bucket, Key=key, Body=f"{key} then".encode())
    _tick()
    client.delete_object(Bucket=bucket, Key="in/gone-before")
    _tick()
    as_of = datetime.now(UTC)
    _tick()
    client.put_object(Bucket=bucket, Key="in/changed-after", Body=b"in/changed-after now")
    client.put_object(Bucket=bucket, Key="in/born-after", Body=b"in/born-after now")
    client.delete_object(Bucket=bucket, Key="in/deleted-after")
    return as_of


def _current(client: Any, bucket: str, prefix: str) -> dict[str, bytes]:
    listed = client.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
    return {o["Key"]: client.get_object(Bucket=bucket, Key=o["Key"])["Body"].read() for o in listed}


@pytest.mark.parametrize("path", PATHS)
def test_a_copy_as_of_t_copies_each_key_as_it_was_then_on_unpatched_moto(moto_plain: str, tmp_path: Path, path: str) -> None:
    client = client_for(moto_plain)
    src, dst = _bucket(client, "src"), _bucket(client, "dst", versioned=False)
    as_of = _history(client, src)
    doc = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "in/", "as_of": as_of.isoformat()},
        "destination": {"bucket": dst, "prefix": "out/"},
    }
    code, report, _, err = run_job_cli(moto_plain, tmp_path, "copy-as-of", doc, "--request-path", path)
    assert code == 0, err
    # gone-before was a delete marker at T, born-after did not exist: neither is copied.
    assert _current(client, dst, "out/") == {"out/changed-after": b"in/changed-after then", "out/deleted-after": b"in/deleted-after then"}
    assert (report["succeeded"], report["failed"]) == (2, 0)


@pytest.mark.parametrize("path", PATHS)
def test_a_rewind_to_t_leaves_every_key_as_it_was_then_on_unpatched_moto(moto_plain: str, tmp_path: Path, path: str) -> None:
    client = client_for(moto_plain)
    bucket = _bucket(client, "rw")
    as_of = _history(client, bucket)
    doc = {"operation": "rewind", "source": {"bucket": bucket, "prefix": "in/", "as_of": as_of.isoformat()}}
    code, report, _, err = run_job_cli(moto_plain, tmp_path, "rewind", doc, "--request-path", path, "--yes")
    assert code == 0, err
    assert _current(client, bucket, "in/") == {"in/changed-after": b"in/changed-after then", "in/deleted-after": b"in/deleted-after then"}
    assert report["failed"] == 0


@pytest.mark.parametrize("path", PATHS)
def test_a_copy_of_every_version_keeps_each_keys_history_in_order_markers_included_on_unpatched_moto(
    moto_plain: str, tmp_path: Path, path: str
) -> None:
    client = client_for(moto_plain)
    src, dst = _bucket(client, "src"), _bucket(client, "dst")
    client.put_object(Bucket=src, Key="in/ends-deleted", Body=b"one")
    client.put_object(Bucket=src, Key="in/ends-written", Body=b"one")
    _tick()
    client.put_object(Bucket=src, Key="in/ends-deleted", Body=b"two")
    client.delete_object(Bucket=src, Key="in/ends-written")
    _tick()
    client.delete_object(Bucket=src, Key="in/ends-deleted")
    client.put_object(Bucket=src, Key="in/ends-written", Body=b"three")
    doc = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "in/", "versions": "all"},
        "destination": {"bucket": dst, "prefix": "in/"},
    }
    code, report, _, err = run_job_cli(moto_plain, tmp_path, "all-versions", doc, "--request-path", path)
    assert code == 0, err
    # The last entry of each history is what the destination ends with: deleted, or the third body.
    assert _current(client, dst, "in/") == {"in/ends-written": b"three"}
    listed = client.list_object_versions(Bucket=dst, Prefix="in/")
    versions = sorted(v["Key"] for v in listed.get("Versions", []))
    markers = sorted(m["Key"] for m in listed.get("DeleteMarkers", []))
    assert (versions, markers) == (
        ["in/ends-deleted", "in/ends-deleted", "in/ends-written", "in/ends-written"],
        ["in/ends-deleted", "in/ends-written"],
    )
    bodies = {client.get_object(Bucket=dst, Key=v["Key"], VersionId=v["VersionId"])["Body"].read() for v in listed["Versions"]}
    assert bodies == {b"one", b"two", b"three"}
    assert report["failed"] == 0
