"""source.tags through the synthesized stack: its state machine on moto's interpreter, its handlers as the Lambdas,
every call checked against the role the template gives it (GetObjectVersionTagging on the source, here).

Delete markers are left out with no request: the batch message says which entries are markers (the listing knows), so
the worker never asks GetObjectTagging of one (S3 answers 405 MethodNotAllowed, moto 404 NoSuchVersion, which would read
as an object gone since it was listed)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from s3bulk.testing.stack import StackOnMoto, synthesize
from tests.integration.test_stack_on_moto import ENV, report

SRC = "src-bucket"
CONTEXT: dict[str, object] = {"read_buckets": SRC, "delete_buckets": SRC, "allow_version_delete": "true"}
KEYS = 24  # each with an old version tagged purge=yes and a current one without
KEPT = 3  # keys with one version, tagged purge=no
MARKED = 4  # keys whose one version, tagged purge=yes, is hidden under a delete marker


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return synthesize(CONTEXT)


@pytest.fixture
def stack(template: dict[str, Any]) -> Iterator[StackOnMoto]:
    with StackOnMoto(template, buckets=(SRC,), env=ENV) as s:
        s.s3.put_bucket_versioning(Bucket=SRC, VersioningConfiguration={"Status": "Enabled"})
        yield s


def test_a_delete_of_versions_filtered_by_tags_removes_only_the_tagged_versions_on_the_stack(stack: StackOnMoto) -> None:
    s3 = stack.s3
    for i in range(KEYS):
        s3.put_object(Bucket=SRC, Key=f"v/k{i:03d}", Body=f"old {i}".encode(), Tagging="purge=yes&team=x")
        s3.put_object(Bucket=SRC, Key=f"v/k{i:03d}", Body=f"new {i}".encode(), Tagging="team=x")
    for i in range(KEPT):
        s3.put_object(Bucket=SRC, Key=f"v/m{i}", Body=b"kept", Tagging="purge=no")
    for i in range(MARKED):
        s3.put_object(Bucket=SRC, Key=f"v/x{i}", Body=b"deleted", Tagging="purge=yes")
        s3.delete_object(Bucket=SRC, Key=f"v/x{i}")

    delete = {
        "operation": "delete",
        "source": {"bucket": SRC, "prefix": "v/", "versions": "all", "tags": {"purge": "yes"}},
        "options": {"batch_size": 10},
    }
    ex = stack.run(delete, timeout=120)
    assert ex.status == "SUCCEEDED", (ex.description.get("error"), str(ex.description.get("cause"))[:1500])
    r = report(stack, ex.description.get("output"))
    listed, purged = KEYS * 2 + KEPT + MARKED * 2, KEYS + MARKED
    assert (r["listed"], r["succeeded"], r["skipped"], r["failed"]) == (listed, purged, listed - purged, 0)
    left = s3.list_object_versions(Bucket=SRC, Prefix="v/")
    bodies = {
        (v["Key"], s3.get_object(Bucket=SRC, Key=v["Key"], VersionId=v["VersionId"])["Body"].read().decode()) for v in left["Versions"]
    }
    assert bodies == {(f"v/k{i:03d}", f"new {i}") for i in range(KEYS)} | {(f"v/m{i}", "kept") for i in range(KEPT)}
    assert sorted(m["Key"] for m in left.get("DeleteMarkers", [])) == [f"v/x{i}" for i in range(MARKED)]  # no tags: kept
