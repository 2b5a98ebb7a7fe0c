"""The Lambda handlers copy from a source bucket in another Region: moto over HTTP, S3 behind the Region-enforcing proxy.

The handlers build their clients from the environment (s3bulk/aws/env.py), so the
test points them the way a user would: AWS_ENDPOINT_URL at moto for DynamoDB and SQS,
AWS_ENDPOINT_URL_S3 at the proxy. The stack's Region is us-east-1; the source bucket
lives in eu-west-1.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
import pytest

from functions.finalize import handler as finalize_handler
from functions.lister import handler as lister_handler
from functions.validate import handler as validate_handler
from functions.worker import handler as worker_handler
from s3bulk.aws.ledger import DynamoLedger
from s3bulk.testing.faultproxy import FaultPlan, FaultProxy
from tests.integration.aws_harness import REGION, Context, create_table, pump
from tests.integration.helpers import md5

pytestmark = pytest.mark.slow

N = 60
PAGE = 25


def clear_caches() -> None:
    validate_handler.config.cache_clear()
    lister_handler.deps.cache_clear()
    worker_handler.service.cache_clear()
    finalize_handler.deps.cache_clear()


def test_a_copy_job_from_a_source_in_eu_west_1_runs_through_the_handlers(
    moto_endpoint: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    src, dst, reports, table = f"src-{suffix}", f"dst-{suffix}", f"reports-{suffix}", f"ledger-{suffix}"
    creds: dict[str, Any] = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "endpoint_url": moto_endpoint}
    s3 = boto3.client("s3", region_name=REGION, **creds)  # straight to moto, which ignores Regions
    sqs, ddb = (boto3.client(name, region_name=REGION, **creds) for name in ("sqs", "dynamodb"))
    eu = boto3.client("s3", region_name="eu-west-1", **creds)
    eu.create_bucket(Bucket=src, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    for bucket in (dst, reports):
        s3.create_bucket(Bucket=bucket)
    expected = {}
    for i in range(N):
        body = f"object {i}".encode() * (i % 4 + 1)
        s3.put_object(Bucket=src, Key=f"in/obj-{i:03d}", Body=body)
        expected[f"out/obj-{i:03d}"] = md5(body)
    create_table(ddb, table)
    queue = sqs.create_queue(QueueName=f"work-{suffix}", Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]

    plan = FaultPlan(bucket_regions={src: "eu-west-1", dst: REGION, reports: REGION})
    with FaultProxy(int(urlsplit(moto_endpoint).port or 0), plan) as proxy:
        for k, v in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ENDPOINT_URL": moto_endpoint,
            "AWS_ENDPOINT_URL_S3": proxy.endpoint_url,
            "AWS_CONFIG_FILE": str(tmp_path / "none"),
            "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
            "AWS_EC2_METADATA_DISABLED": "true",
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_METRICS_NAMESPACE": "S3Bulk",
            "POWERTOOLS_SERVICE_NAME": "s3bulk",
            "S3BULK_TABLE": table,
            "S3BULK_QUEUE_URL": queue,
            "S3BULK_REPORT_BUCKET": reports,
            "S3BULK_READ_BUCKETS": f"{src},{dst}",
            "S3BULK_WRITE_BUCKETS": dst,
            "S3BULK_DELETE_BUCKETS": "",
            "S3BULK_CONCURRENCY": "8",
            "S3BULK_LIST_PAGE_SIZE": str(PAGE),
            "S3BULK_REQUEST_PATH": "fast",  # real HTTP here, so the fast path runs too
        }.items():
            monkeypatch.setenv(k, v)
        monkeypatch.delenv("AWS_PROFILE", raising=False)
        clear_caches()
        try:
            result = run_job(src, dst, ddb, sqs, queue, queue_arn, table)
        finally:
            clear_caches()

    assert (result["status"], result["over_threshold"]) == ("succeeded", False)
    report = json.loads(s3.get_object(Bucket=reports, Key=f"jobs/{result['job_id']}/report.json")["Body"].read())
    assert (report["listed"], report["succeeded"], report["failed"]) == (N, N, 0)
    got = {k: md5(s3.get_object(Bucket=dst, Key=k)["Body"].read()) for k in expected}
    assert got == expected
    # The lister and the worker each discovered the source's Region once (one HeadBucket redirect per
    # process-wide store); no LIST or COPY was ever sent to the wrong Region.
    redirected = Counter({op: n for (bucket, op), n in proxy.stats.redirected.items() if bucket == src})
    assert set(redirected) == {"HeadBucket"} and 1 <= redirected["HeadBucket"] <= 2, proxy.stats.redirected
    assert proxy.stats.forwarded["ListObjectsV2"] >= -(-N // PAGE)


def run_job(src: str, dst: str, ddb: Any, sqs: Any, queue: str, queue_arn: str, table: str) -> dict[str, Any]:
    """What the state machine does: Validate, put the ledger item, List until done, work the queue, Finalize."""
    event = {"operation": "copy", "source": {"bucket": src, "prefix": "in/"}, "destination": {"bucket": dst, "prefix": "out/"}}
    out = validate_handler.handler({"job": event}, Context())
    ddb.put_item(TableName=table, Item=out["item"], ConditionExpression="attribute_not_exists(pk)")
    job_id = str(out["job_id"])
    for shard in lister_handler.handler({"job_id": job_id}, Context())["shards"]:
        for _ in range(50):
            if lister_handler.handler({"job_id": job_id, "shard": shard}, Context([600.0, 600.0, 5.0]))["done"]:
                break
        else:
            raise AssertionError("listing never finished")
    deliveries = list(pump(sqs, queue, queue_arn, worker_handler.handler, lambda: Context([600.0])))
    assert deliveries and all(not d.failed_ids for d in deliveries)
    rec = DynamoLedger(ddb, table).load(job_id)
    assert (rec.counters["succeeded"], rec.counters["failed"], rec.counters["pending"]) == (N, 0, 0)
    return {**finalize_handler.handler({"job_id": job_id}, Context()), "job_id": job_id}
