"""SSE-KMS on the whole stack under the IAM check, with the KMS actions S3 asks of the caller (stack/kms.py):
a copy from a bucket whose default encryption is key A to objects under key B passes when -c kms_keys names both
(small objects by CopyObject, a large one by a multipart copy), on both request paths; a deployment not granted A
cannot read the source (kms:Decrypt refused, each object failed by key, nothing written); and a destination key
the deployment lacks is refused at Validate in one line, before anything is listed."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from s3bulk.testing.stack import StackOnMoto, synthesize
from s3bulk.testing.stack.moto_stack import ACCOUNT
from tests.integration.aws_harness import REGION

pytestmark = pytest.mark.moto

SRC, DST = "kms-src", "kms-dst"
KEY_A = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/aaaaaaaa-0000-0000-0000-000000000001"
KEY_B = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/bbbbbbbb-0000-0000-0000-000000000002"
N = 12
MiB = 1024 * 1024
BIG = 6 * MiB  # over the job's 5 MiB threshold: copied in two parts


def context(*keys: str) -> dict[str, object]:
    return {"read_buckets": f"{SRC},{DST}", "write_buckets": DST, "kms_keys": ",".join(keys)}


def copy_job(job_id: str) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "operation": "copy",
        "source": {"bucket": SRC, "prefix": "in/"},
        "destination": {"bucket": DST, "prefix": "out/", "sse": "aws:kms", "kms_key_id": KEY_B},
        "options": {"batch_size": 4, "multipart_threshold": 5 * MiB, "part_size": 5 * MiB},
    }


def seed(s3: Any) -> dict[str, bytes]:
    for b in (SRC, DST):
        s3.create_bucket(Bucket=b)
    rule = {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": KEY_A}}
    s3.put_bucket_encryption(Bucket=SRC, ServerSideEncryptionConfiguration={"Rules": [rule]})
    bodies = {f"in/{i:03d}": f"body {i}".encode() for i in range(N)}
    bodies["in/big"] = bytes(range(256)) * (BIG // 256)
    for key, body in bodies.items():
        s3.put_object(Bucket=SRC, Key=key, Body=body)
    assert s3.head_object(Bucket=SRC, Key="in/000")["SSEKMSKeyId"] == KEY_A  # under key A, by the bucket's default
    return bodies


def report(stack: StackOnMoto, job_id: str) -> dict[str, Any]:
    body = stack.s3.get_object(Bucket=stack.bucket_of("Reports"), Key=f"jobs/{job_id}/report.json")["Body"].read()
    return dict(json.loads(body))


@pytest.mark.parametrize("path", ["fast", "botocore"])
def test_an_sse_kms_source_copies_to_another_key_when_kms_keys_name_both(path: str) -> None:
    with StackOnMoto(synthesize(context(KEY_A, KEY_B)), env={"S3BULK_POLL_SECONDS": "1", "S3BULK_REQUEST_PATH": path}) as stack:
        s3 = boto3.client("s3", region_name=REGION)
        bodies = seed(s3)
        ex = stack.run(copy_job("kms"), timeout=120)
        r = report(stack, "kms")
        assert ex.status == "SUCCEEDED", (r.get("failures", [])[:3], stack.describe())
        assert (r["listed"], r["succeeded"], r["failed"]) == (N + 1, N + 1, 0), r
        for key, body in bodies.items():
            out = key.replace("in/", "out/", 1)
            h = s3.head_object(Bucket=DST, Key=out)
            assert (h["ServerSideEncryption"], h["SSEKMSKeyId"]) == ("aws:kms", KEY_B), (out, h)
            assert s3.get_object(Bucket=DST, Key=out)["Body"].read() == body
        assert s3.head_object(Bucket=DST, Key="out/big")["ETag"].endswith('-2"')  # the multipart path was taken


def test_a_deployment_without_the_source_key_cannot_read_an_sse_kms_source() -> None:
    with StackOnMoto(synthesize(context(KEY_B)), env={"S3BULK_POLL_SECONDS": "1"}, check_iam=False) as stack:
        s3 = boto3.client("s3", region_name=REGION)
        seed(s3)
        stack.run(copy_job("no-source-key"), timeout=120)
        r = report(stack, "no-source-key")
        assert r["succeeded"] == 0 and r["failed"] >= 1, r
        assert {f["error"] for f in r.get("failures", [])} == {"AccessDenied"}, r.get("failures", [])[:3]
        assert s3.list_objects_v2(Bucket=DST).get("KeyCount") == 0
        assert stack.iam.denied and all(f"kms:Decrypt on {KEY_A}" in d for d in stack.iam.denied), stack.iam.denied[:3]


def test_a_destination_key_the_deployment_lacks_is_refused_at_validate_in_one_line() -> None:
    with StackOnMoto(synthesize(context(KEY_A)), env={"S3BULK_POLL_SECONDS": "1"}) as stack:
        s3 = boto3.client("s3", region_name=REGION)
        seed(s3)
        ex = stack.run(copy_job("no-destination-key"), timeout=30)
        assert (ex.status, ex.description.get("error")) == ("FAILED", "InvalidJob")
        cause = json.loads(str(ex.description.get("cause")))["errorMessage"]  # Lambda's error, as the execution shows it
        assert cause.startswith("job.destination.kms_key_id:") and "\n" not in cause and "-c kms_keys" in cause, cause
        assert s3.list_objects_v2(Bucket=DST).get("KeyCount") == 0
        assert not any(s.startswith("List") for s in ex.entered()), ex.entered()
