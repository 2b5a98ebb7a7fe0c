"""set-encryption on the whole stack (moto, with S3's UpdateObjectEncryption rules from tests/integration/moto_s3.py):
each object is re-keyed in place by the worker under its synthesized role (s3:UpdateObjectEncryption and the KMS
actions on the deployer's key, via S3), bodies and ETags kept; a locked object gets an in-place copy; a key the
deployment was not given is refused at Validate, before any object is touched."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from s3bulk.testing.stack import StackOnMoto, synthesize
from tests.integration import moto_s3
from tests.integration.aws_harness import REGION

pytestmark = pytest.mark.moto

BUCKET = "enc-stack-bucket"
KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
CONTEXT: dict[str, object] = {"read_buckets": BUCKET, "write_buckets": BUCKET, "kms_keys": KEY, "allow_object_lock": "true"}
N = 24


def job(key: str = KEY) -> dict[str, Any]:
    return {
        "operation": "set-encryption",
        "source": {"bucket": BUCKET, "prefix": "in/"},
        "encryption": {"sse": "aws:kms", "kms_key_id": key, "bucket_key": True},
        "options": {"batch_size": 5},
    }


def test_set_encryption_rekeys_every_object_in_place_under_the_workers_role_and_keeps_bodies_and_etags() -> None:
    with StackOnMoto(synthesize(CONTEXT), buckets=(), env={"S3BULK_POLL_SECONDS": "1"}) as stack:
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET, ObjectLockEnabledForBucket=True)
        for i in range(N):
            s3.put_object(
                Bucket=BUCKET, Key=f"in/{i:02d}", Body=f"body {i}".encode(), ServerSideEncryption="AES256", Metadata={"n": str(i)}
            )
        until = datetime.now(UTC) + timedelta(days=2)
        s3.put_object_retention(Bucket=BUCKET, Key="in/03", Retention={"Mode": "GOVERNANCE", "RetainUntilDate": until})
        etags = {f"in/{i:02d}": s3.head_object(Bucket=BUCKET, Key=f"in/{i:02d}")["ETag"] for i in range(N)}
        moto_s3.calls.clear()

        ex = stack.run({**job(), "job_id": "rekey"}, timeout=90)
        report = json.loads(stack.s3.get_object(Bucket=stack.bucket_of("Reports"), Key="jobs/rekey/report.json")["Body"].read())
        assert ex.status == "SUCCEEDED", (report.get("failures", [])[:3], stack.describe())
        assert (report["listed"], report["succeeded"], report["failed"]) == (N, N, 0), report
        assert len(moto_s3.calls) == N - 1  # in place, no data moved: all but the object under Object Lock
        for i in range(N):
            key = f"in/{i:02d}"
            h = s3.head_object(Bucket=BUCKET, Key=key)
            assert (h.get("ServerSideEncryption"), h.get("SSEKMSKeyId"), h.get("BucketKeyEnabled")) == ("aws:kms", KEY, True), (key, h)
            assert (h["ServerSideEncryption"], h["SSEKMSKeyId"], h.get("BucketKeyEnabled")) == ("aws:kms", KEY, True), key
            assert s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() == f"body {i}".encode() and h["Metadata"] == {"n": str(i)}
            if key != "in/03":
                assert h["ETag"] == etags[key]
        locked = s3.head_object(Bucket=BUCKET, Key="in/03")  # a new version under the key, still under its retention
        assert locked["ObjectLockMode"] == "GOVERNANCE"

        again = stack.run({**job(), "job_id": "rekey-again"}, timeout=90)  # every object already as asked: skipped
        assert again.status == "SUCCEEDED"
        r2 = json.loads(stack.s3.get_object(Bucket=stack.bucket_of("Reports"), Key="jobs/rekey-again/report.json")["Body"].read())
        assert (r2["skipped"], r2["succeeded"]) == (N, 0) and len(moto_s3.calls) == N - 1

        other = "arn:aws:kms:us-east-1:123456789012:key/99999999-0000-0000-0000-000000000000"
        refused = stack.run({**job(other), "job_id": "rekey-other"}, timeout=30)
        assert (refused.status, refused.description.get("error")) == ("FAILED", "InvalidJob")
        assert "job.encryption.kms_key_id" in str(refused.description.get("cause")) and "-c kms_keys" in str(
            refused.description.get("cause")
        )
