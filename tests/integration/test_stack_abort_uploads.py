"""abort-uploads through the synthesized stack on moto (every call checked against the role the template gives its
function): the Lister lists open uploads in shards, the workers abort those initiated before the cutoff."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from s3bulk.testing.stack import StackOnMoto, synthesize
from tests.integration.moto_uploads import faithful_uploads
from tests.integration.test_stack_on_moto import ENV, report

SRC, READ_ONLY = "src-bucket", "read-only-bucket"
CONTEXT: dict[str, object] = {"read_buckets": f"{SRC},{READ_ONLY}", "write_buckets": "", "delete_buckets": SRC}
KEYS = [f"in/{i % 8}/part-{i:03d}" for i in range(160)]


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return synthesize(CONTEXT)


@pytest.fixture
def stack(template: dict[str, Any]) -> Iterator[StackOnMoto]:
    # Pages of 5 uploads: the planner cuts the open uploads into several shards.
    with faithful_uploads(), StackOnMoto(template, buckets=(SRC, READ_ONLY), env={**ENV, "S3BULK_LIST_PAGE_SIZE": "5"}) as s:
        yield s


def open_uploads(stack: StackOnMoto, bucket: str) -> set[tuple[str, str]]:
    pages = stack.s3.get_paginator("list_multipart_uploads").paginate(Bucket=bucket)
    return {(u["Key"], u["UploadId"]) for page in pages for u in page.get("Uploads", ())}


def test_the_stack_aborts_only_the_uploads_begun_before_the_cutoff(stack: StackOnMoto) -> None:
    s3 = stack.s3
    old = {(k, s3.create_multipart_upload(Bucket=SRC, Key=k)["UploadId"]) for k in KEYS for _ in range(1 + KEYS.index(k) % 2)}
    s3.put_object(Bucket=SRC, Key=KEYS[0], Body=b"a finished object under the same key")
    time.sleep(1.1)
    cutoff = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    time.sleep(1.1)
    new = {(k, s3.create_multipart_upload(Bucket=SRC, Key=k)["UploadId"]) for k in KEYS[::5]}
    job = {"operation": "abort-uploads", "source": {"bucket": SRC, "prefix": "in/", "modified_before": cutoff}}
    ex = stack.run(job, timeout=120)
    assert ex.status == "SUCCEEDED", (ex.description.get("error"), str(ex.description.get("cause"))[:1500], ex.entered()[-6:])
    assert ex.entered().count("ListShard") >= 2  # listed in shards
    r = report(stack, ex.description.get("output"))
    assert (r["listed"], r["succeeded"], r["failed"]) == (len(old), len(old), 0)
    assert open_uploads(stack, SRC) == new
    assert s3.get_object(Bucket=SRC, Key=KEYS[0])["Body"].read() == b"a finished object under the same key"


def test_a_bucket_outside_the_delete_allow_list_is_refused_before_anything_is_listed(stack: StackOnMoto) -> None:
    upload = stack.s3.create_multipart_upload(Bucket=READ_ONLY, Key="in/x")["UploadId"]
    job = {"operation": "abort-uploads", "source": {"bucket": READ_ONLY, "prefix": "in/", "modified_before": "2099-01-01T00:00:00Z"}}
    ex = stack.run(job, timeout=60)
    assert ex.status == "FAILED"
    assert "delete allow-list" in str(ex.description.get("cause")) and "job.source.bucket" in str(ex.description.get("cause"))
    assert open_uploads(stack, READ_ONLY) == {("in/x", upload)}
