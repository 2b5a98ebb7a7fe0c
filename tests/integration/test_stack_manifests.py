"""The manifests Batch Operations and Distributed Map read, through the synthesized stack (moto's interpreter, every
function under its role): a Parquet and an ORC S3 Inventory whose data files are the listing's shards, and a JSONL
object list naming versions, each copied exactly."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pytest

from bench.inventory_copy import encode
from s3bulk.testing.stack import Execution, StackOnMoto, synthesize
from tests.integration.helpers import md5
from tests.integration.test_stack_on_moto import ENV, report

pytestmark = pytest.mark.moto

SRC, DST, MAN = "src-bucket", "dst-bucket", "man-bucket"
CONTEXT: dict[str, object] = {"read_buckets": f"{SRC},{DST},{MAN}", "write_buckets": DST}
N = 240


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return synthesize(CONTEXT)


@pytest.fixture
def stack(template: dict[str, Any]) -> Iterator[StackOnMoto]:
    with StackOnMoto(template, buckets=(SRC, DST, MAN), env=ENV) as s:
        yield s


def inventory_rows(keys: list[str], bodies: dict[str, bytes]) -> pa.Table:
    n = len(keys)
    return pa.table(
        {
            "bucket": [SRC] * n,
            "key": keys,
            "version_id": pa.array([None] * n, pa.string()),
            "is_latest": [True] * n,
            "is_delete_marker": [False] * n,
            "size": pa.array([len(bodies[k]) for k in keys], pa.int64()),
            "last_modified_date": pa.array([datetime(2026, 11, 20, tzinfo=UTC)] * n, pa.timestamp("ms", tz="UTC")),
            "e_tag": [md5(bodies[k]) for k in keys],
            "storage_class": ["STANDARD"] * n,
        }
    )


def copy_from(stack: StackOnMoto, prefix: str, manifest: dict[str, str], batch_size: int) -> tuple[Execution, dict[str, Any]]:
    """A copy of what the manifest lists under `prefix` to DST's c/ or j/ (its first letter's), run to its end."""
    job = {
        "operation": "copy",
        "source": {"bucket": SRC, "prefix": prefix, "manifest": manifest},
        "destination": {"bucket": DST, "prefix": {"in/": "c/", "v/": "j/"}[prefix]},
        "options": {"batch_size": batch_size},
    }
    ex = stack.run(job, timeout=120)
    assert ex.status == "SUCCEEDED", (ex.description.get("error"), str(ex.description.get("cause"))[:1500])
    return ex, report(stack, ex.description.get("output"))


def copied(stack: StackOnMoto, prefix: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for page in stack.s3.get_paginator("list_objects_v2").paginate(Bucket=DST, Prefix=prefix):
        out.update({o["Key"]: o["ETag"].strip('"') for o in page.get("Contents", [])})
    return out


@pytest.mark.parametrize("fmt", ["Parquet", "ORC"])
def test_an_inventory_in_parquet_or_orc_is_listed_a_data_file_a_shard_and_copies_exactly_what_it_lists(
    stack: StackOnMoto, fmt: str
) -> None:
    keys = [f"in/{i % 6}/object {i:04d}+ü.bin" for i in range(N)]
    bodies = {k: f"{i}:{k}".encode() * (1 + i % 3) for i, k in enumerate(keys)}
    for k, b in bodies.items():
        stack.s3.put_object(Bucket=SRC, Key=k, Body=b)
    stack.s3.put_object(Bucket=SRC, Key="in/not-listed.bin", Body=b"left alone")
    rows = inventory_rows(keys, bodies)
    files = []
    for n, part in enumerate((rows.slice(0, 100), rows.slice(100, 90), rows.slice(190))):
        data = encode(part, fmt, 50)
        stack.s3.put_object(Bucket=MAN, Key=f"inv/data/part-{n}.{fmt.lower()}", Body=data)
        files.append({"key": f"inv/data/part-{n}.{fmt.lower()}", "size": len(data), "MD5checksum": "unchecked"})
    manifest = {"destinationBucket": f"arn:aws:s3:::{MAN}", "fileFormat": fmt, "fileSchema": "(the data files' own)", "files": files}
    stack.s3.put_object(Bucket=MAN, Key="inv/manifest.json", Body=json.dumps(manifest).encode())
    ex, r = copy_from(stack, "in/", {"bucket": MAN, "key": "inv/manifest.json", "format": "inventory"}, 40)
    assert len(json.loads(ex.description["output"])["plan"]["shards"]) == 3  # one shard per data file
    assert (r["listed"], r["succeeded"], r["failed"]) == (N, N, 0), r
    assert copied(stack, "c/") == {"c/" + k[3:]: md5(b) for k, b in bodies.items()}


def test_a_jsonl_object_list_naming_versions_copies_each_named_version(stack: StackOnMoto) -> None:
    s3 = stack.s3
    s3.put_bucket_versioning(Bucket=SRC, VersioningConfiguration={"Status": "Enabled"})
    rows, want = [], {}
    for i in range(60):
        key = f"v/doc-{i:03d}.txt"
        first = s3.put_object(Bucket=SRC, Key=key, Body=f"first {i}".encode())["VersionId"]
        s3.put_object(Bucket=SRC, Key=key, Body=f"second {i}".encode())
        if i % 2:  # the older version named; the others by key alone (the current one)
            rows.append({"bucket": SRC, "key": key, "version_id": first})
            want[f"j/doc-{i:03d}.txt"] = md5(f"first {i}".encode())
        else:
            rows.append({"bucket": SRC, "key": key})
            want[f"j/doc-{i:03d}.txt"] = md5(f"second {i}".encode())
    s3.put_object(Bucket=MAN, Key="lists/objects.jsonl", Body="".join(json.dumps(r) + "\n" for r in rows).encode())
    _, r = copy_from(stack, "v/", {"bucket": MAN, "key": "lists/objects.jsonl", "format": "jsonl"}, 16)
    assert (r["listed"], r["succeeded"], r["failed"]) == (60, 60, 0), r
    assert copied(stack, "j/") == want


def test_a_delete_by_a_manifest_naming_versions_is_refused_before_anything_is_sent_on_a_deployment_not_granted_it() -> None:
    """A row's version id makes its delete DeleteObjectVersion, which only -c allow_version_delete grants: the job fails
    at PlanListing in one line naming the row and the flag, instead of each object failing AccessDenied late; every
    version is still there."""
    template = synthesize({**CONTEXT, "delete_buckets": SRC})
    with StackOnMoto(template, buckets=(SRC, DST, MAN), env=ENV) as stack:
        s3 = stack.s3
        s3.put_bucket_versioning(Bucket=SRC, VersioningConfiguration={"Status": "Enabled"})
        rows = []
        for i in range(30):
            key = f"v/old-{i:03d}.txt"
            first = s3.put_object(Bucket=SRC, Key=key, Body=b"first")["VersionId"]
            s3.put_object(Bucket=SRC, Key=key, Body=b"second")
            rows.append(f"{SRC},{key},{first}\n" if i == 20 else f"{SRC},{key}\n")  # one row, deep in the page, names a version
        s3.put_object(Bucket=MAN, Key="lists/doomed.csv", Body="".join(rows).encode())
        job = {"operation": "delete", "source": {"bucket": SRC, "prefix": "v/", "manifest": {"bucket": MAN, "key": "lists/doomed.csv"}}}
        ex = stack.run(job, timeout=60)
        assert (ex.status, ex.description.get("error")) == ("FAILED", "JobFailed"), (ex.description, ex.entered()[-5:])
        cause = str(ex.description.get("cause"))
        assert (
            "job.source.manifest: a row names version" in cause and "'v/old-020.txt'" in cause and "-c allow_version_delete=true" in cause
        )
        assert "ListShards" not in ex.entered() and sum(stack.queue_depths().values()) == 0  # nothing listed, nothing sent
        versions = s3.list_object_versions(Bucket=SRC, Prefix="v/")
        assert len(versions.get("Versions", [])) == 60 and not versions.get("DeleteMarkers")
