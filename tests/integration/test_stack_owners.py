"""Bucket owners pinned at deploy (-c bucket_owner) on the whole stack: every S3 statement on a pinned bucket names
its account (s3:ResourceAccount), and every request the functions send on it, on both request paths, carries that
account (ExpectedBucketOwner, and ExpectedSourceBucketOwner for a copy's source). The harness gives S3's answers: a
bucket marked as another account's is that account's for s3:ResourceAccount, and a request expecting another owner
is refused with 403. So a pinned bucket whose name another account took gets nothing written to it."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from s3bulk.testing.stack import StackOnMoto, synthesize
from s3bulk.testing.stack.moto_stack import ACCOUNT
from tests.integration.aws_harness import REGION

pytestmark = pytest.mark.moto

SRC, DST = "owned-src", "owned-dst"
PARTNER = "210987654321"  # the destination's account: a cross-account copy, pinned per bucket
N = 30


def context(owners: str) -> dict[str, object]:
    return {"read_buckets": f"{SRC},{DST}", "write_buckets": DST, "bucket_owner": owners}


def copy_job(job_id: str, **destination: Any) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "operation": "copy",
        "source": {"bucket": SRC, "prefix": "in/"},
        "destination": {"bucket": DST, "prefix": "out/", **destination},
        "options": {"batch_size": 4},
    }


def seed(s3: Any) -> None:
    for b in (SRC, DST):
        s3.create_bucket(Bucket=b)
    for i in range(N):
        s3.put_object(Bucket=SRC, Key=f"in/{i:03d}", Body=f"body {i}".encode())


def report(stack: StackOnMoto, job_id: str) -> dict[str, Any]:
    body = stack.s3.get_object(Bucket=stack.bucket_of("Reports"), Key=f"jobs/{job_id}/report.json")["Body"].read()
    return dict(json.loads(body))


@pytest.mark.parametrize("path", ["fast", "botocore"])
def test_every_request_on_a_pinned_bucket_carries_its_owner_on_both_request_paths(path: str) -> None:
    owners = {SRC: ACCOUNT, DST: PARTNER}
    with StackOnMoto(synthesize(context(f"self,{DST}={PARTNER}")), env={"S3BULK_POLL_SECONDS": "1", "S3BULK_REQUEST_PATH": path}) as stack:
        stack.iam.owners[DST] = PARTNER  # the partner's bucket, as S3 would tell s3:ResourceAccount
        s3 = boto3.client("s3", region_name=REGION)
        seed(s3)
        ex = stack.run(copy_job("pinned"), timeout=90)
        r = report(stack, "pinned")
        assert ex.status == "SUCCEEDED", (r.get("failures", [])[:3], stack.describe())
        assert (r["listed"], r["succeeded"], r["failed"]) == (N, N, 0), r
        for i in range(N):  # each copy checked on its own
            assert s3.get_object(Bucket=DST, Key=f"out/{i:03d}")["Body"].read() == f"body {i}".encode()

        mine = [q for q in stack.iam.s3_requests if q[2] in owners]
        assert {q[1] for q in mine} >= {"ListObjectsV2", "CopyObject"}, mine[:5]
        unpinned = [q for q in mine if q[3] != owners[q[2]]]
        assert not unpinned, unpinned[:5]  # every request named its bucket's pinned owner
        copies = [q for q in mine if q[1] == "CopyObject"]
        assert copies and all((q[4], q[5]) == (SRC, ACCOUNT) for q in copies), copies[:3]
        if path == "fast":  # the fast path's own requests were among them, not botocore's alone
            assert any(f.startswith("CopyObject ") for f in stack.fast_requests)


def test_a_pinned_bucket_another_account_owns_gets_nothing_written() -> None:
    with StackOnMoto(synthesize(context("self")), env={"S3BULK_POLL_SECONDS": "1"}, check_iam=False) as stack:
        stack.iam.owners[DST] = PARTNER  # the name was taken by another account after the deploy
        s3 = boto3.client("s3", region_name=REGION)
        seed(s3)
        ex = stack.run(copy_job("squatted"), timeout=90)
        assert ex.status == "FAILED", stack.describe()
        assert s3.list_objects_v2(Bucket=DST).get("KeyCount") == 0
        # IAM refused first: the grant on the bucket names this account as s3:ResourceAccount, not the partner
        assert stack.iam.denied and all(f"arn:aws:s3:::{DST}" in d for d in stack.iam.denied), stack.iam.denied[:3]


def test_a_request_expecting_another_owner_is_refused_by_s3_without_a_pin() -> None:
    """The harness's S3 rule on its own (no pin, so IAM allows): the job's own expected_owner is checked by S3."""
    with StackOnMoto(synthesize(context("")), env={"S3BULK_POLL_SECONDS": "1"}, check_iam=False) as stack:
        s3 = boto3.client("s3", region_name=REGION)
        seed(s3)
        ex = stack.run(copy_job("expects-partner", expected_owner=PARTNER), timeout=90)
        assert ex.status == "FAILED", stack.describe()
        assert s3.list_objects_v2(Bucket=DST).get("KeyCount") == 0
        assert stack.iam.denied and all(f"on {DST} expected owner {PARTNER}, but {ACCOUNT} owns it" in d for d in stack.iam.denied)


def test_a_job_expecting_another_owner_than_the_pin_is_refused_at_validate() -> None:
    with StackOnMoto(synthesize(context("self")), env={"S3BULK_POLL_SECONDS": "1"}) as stack:
        s3 = boto3.client("s3", region_name=REGION)
        seed(s3)
        ex = stack.run(copy_job("other-owner", expected_owner=PARTNER), timeout=30)
        assert (ex.status, ex.description.get("error")) == ("FAILED", "InvalidJob")
        cause = str(ex.description.get("cause"))
        assert "job.destination.expected_owner" in cause and "-c bucket_owner" in cause, cause
        assert s3.list_objects_v2(Bucket=DST).get("KeyCount") == 0
