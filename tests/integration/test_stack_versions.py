"""Jobs on versions through the synthesized stack: its state machine on moto's interpreter, its handlers as the Lambdas.

moto lists a page's delete markers after its versions (tests/integration/test_versions.py says
where else it falls short), so the copy here has only PUT histories, whose order moto keeps; the
delete takes the markers too, whose order does not matter to it. Listings stay in one page.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from typing import Any

import pytest

from s3bulk.local.undo import undo_log
from s3bulk.s3.stores import S3Store
from s3bulk.testing.stack import StackOnMoto, synthesize
from tests.integration.test_stack_on_moto import ENV, report

SRC, DST = "src-bucket", "dst-bucket"
# A delete of versions is permanent, so the deployment opts in to DeleteObjectVersion (least privilege by default).
CONTEXT: dict[str, object] = {"read_buckets": f"{SRC},{DST}", "write_buckets": DST, "delete_buckets": SRC, "allow_version_delete": "true"}
KEYS = 40  # each with 3 versions
MARKED = 5  # keys under m/ whose newest version is a delete marker


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return synthesize(CONTEXT)


@pytest.fixture
def stack(template: dict[str, Any]) -> Iterator[StackOnMoto]:
    with StackOnMoto(template, buckets=(SRC, DST), env=ENV) as s:
        for b in (SRC, DST):
            s.s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
        yield s


def bodies_newest_first(s3: Any, bucket: str, key: str) -> list[str]:
    versions = [v for v in s3.list_object_versions(Bucket=bucket, Prefix=key)["Versions"] if v["Key"] == key]
    return [s3.get_object(Bucket=bucket, Key=key, VersionId=v["VersionId"])["Body"].read().decode() for v in versions]


def test_a_copy_of_all_versions_then_a_delete_of_all_versions_run_exactly_on_the_stack(stack: StackOnMoto) -> None:
    s3 = stack.s3
    for i in range(KEYS):
        for n in range(3):
            s3.put_object(Bucket=SRC, Key=f"v/k{i:03d}", Body=f"k{i:03d}#{n}".encode())
    for i in range(MARKED):
        s3.put_object(Bucket=SRC, Key=f"m/g{i}", Body=b"x")
        s3.delete_object(Bucket=SRC, Key=f"m/g{i}")

    copy = {
        "operation": "copy",
        "source": {"bucket": SRC, "prefix": "v/", "versions": "all"},
        "destination": {"bucket": DST, "prefix": "c/"},
        "options": {"batch_size": 7},
    }
    ex = stack.run(copy, timeout=120)
    assert ex.status == "SUCCEEDED", (ex.description.get("error"), str(ex.description.get("cause"))[:1500])
    r = report(stack, ex.description.get("output"))
    assert (r["listed"], r["succeeded"], r["failed"]) == (KEYS, KEYS, 0)
    for i in range(KEYS):
        assert bodies_newest_first(s3, DST, f"c/k{i:03d}") == [f"k{i:03d}#{n}" for n in (2, 1, 0)]

    delete = {"operation": "delete", "source": {"bucket": SRC, "all": True, "versions": "all"}, "options": {"batch_size": 50}}
    ex = stack.run(delete, timeout=120)
    assert ex.status == "SUCCEEDED", (ex.description.get("error"), str(ex.description.get("cause"))[:1500])
    r = report(stack, ex.description.get("output"))
    total = KEYS * 3 + MARKED * 2
    assert (r["listed"], r["succeeded"], r["failed"]) == (total, total, 0)
    left = s3.list_object_versions(Bucket=SRC)
    assert left.get("Versions", []) == [] and left.get("DeleteMarkers", []) == []


def test_a_copy_of_all_versions_into_a_bucket_without_versioning_fails_before_copying(stack: StackOnMoto) -> None:
    stack.s3.put_bucket_versioning(Bucket=DST, VersioningConfiguration={"Status": "Suspended"})
    stack.s3.put_object(Bucket=SRC, Key="v/a", Body=b"1")
    copy = {"operation": "copy", "source": {"bucket": SRC, "prefix": "v/", "versions": "all"}, "destination": {"bucket": DST}}
    ex = stack.run(copy, timeout=60)
    assert (ex.status, ex.description.get("error")) == ("FAILED", "JobFailed")
    assert "DestinationNotVersioned" in str(ex.description.get("cause"))
    assert "ListShards" not in ex.entered()
    assert stack.s3.list_objects_v2(Bucket=DST).get("KeyCount") == 0


def test_an_undelete_on_the_stack_brings_back_each_deleted_key_and_undo_of_its_key_log_hides_them_again(stack: StackOnMoto) -> None:
    s3 = stack.s3
    for i in range(KEYS):
        for n in range(2):
            s3.put_object(Bucket=SRC, Key=f"u/k{i:03d}", Body=f"k{i:03d}#{n}".encode())
        if i % 4:  # three keys in four deleted
            s3.delete_object(Bucket=SRC, Key=f"u/k{i:03d}")
    deleted = [f"u/k{i:03d}" for i in range(KEYS) if i % 4]
    job = {"operation": "delete", "source": {"bucket": SRC, "prefix": "u/", "versions": "delete-markers"}, "options": {"batch_size": 8}}
    ex = stack.run({**job, "job_id": "undelete"}, timeout=120)
    assert ex.status == "SUCCEEDED", (ex.description.get("error"), str(ex.description.get("cause"))[:1500])
    r = report(stack, ex.description.get("output"))
    assert (r["listed"], r["succeeded"], r["failed"]) == (len(deleted), len(deleted), 0)
    live = {o["Key"] for o in s3.list_objects_v2(Bucket=SRC, Prefix="u/")["Contents"]}
    assert live == {f"u/k{i:03d}" for i in range(KEYS)}
    assert all(s3.get_object(Bucket=SRC, Key=k)["Body"].read() == f"{k[2:]}#1".encode() for k in deleted)

    reports = stack.bucket_of("Reports")
    parts = [o["Key"] for o in s3.list_objects_v2(Bucket=reports, Prefix="jobs/undelete/keys/")["Contents"]]
    log = b"".join(s3.get_object(Bucket=reports, Key=k)["Body"].read() for k in sorted(parts))  # gzip members, as downloaded
    lines = gzip.decompress(log).splitlines()
    assert sum(1 for line in lines if b'"what": "version"' in line or b'"what":"version"' in line) == len(deleted)
    s3.put_object(Bucket=SRC, Key=deleted[0], Body=b"written after the undelete")
    result = undo_log(io.BytesIO(log), S3Store(s3))
    assert (result.restored, result.changed_since, result.failed) == (len(deleted) - 1, 1, 0), result.examples
    live = {o["Key"] for o in s3.list_objects_v2(Bucket=SRC, Prefix="u/")["Contents"]}
    assert live == {f"u/k{i:03d}" for i in range(KEYS) if not i % 4} | {deleted[0]}
