"""DynamoDB's per-partition throughput on the whole stack (stack/partitions.py): no key the ledger reads or writes per
batch is hot, so a job runs hundreds of batches a second under DynamoDB's budgets, and where a partition is throttled
anyway, its calls are retried and the job ends exact, only slower.

A partition serves 3,000 read and 1,000 write units a second. The first test measures the units each key took over a
whole job, per batch: the hottest key bounds the batches a second a job can run on AWS (its budget over its units per
batch). The second divides the budgets by 600, so the same stack meets them at the harness's few batches a second."""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
import pytest

from s3bulk.testing.stack import StackOnMoto, synthesize
from s3bulk.testing.stack.partitions import READ_UNITS_S
from tests.integration.aws_harness import REGION

pytestmark = pytest.mark.moto

SRC, DST = "parts-src", "parts-dst"
CONTEXT: dict[str, object] = {"read_buckets": f"{SRC},{DST}", "write_buckets": DST, "list_shards": 8}
BATCH = 3
ENV = {"S3BULK_POLL_SECONDS": "30", "S3BULK_CONCURRENCY": "4"}


def run(job_id: str, n: int, scale: float, refuse_every: int = 0) -> tuple[StackOnMoto, dict[str, Any], float]:
    """A copy of n objects under 8 prefixes in batches of 3 on a stack at 1/scale of DynamoDB's partition budgets: (the
    stopped stack, its report, seconds taken). `refuse_every`: the destination's bucket policy denies the write of
    every that-many-th object, each a failure the job tolerates."""
    with StackOnMoto(synthesize(CONTEXT), buckets=(SRC, DST), env=ENV, pollers=6, partition_scale=scale) as stack:
        s3 = boto3.client("s3", region_name=REGION)
        for i in range(n):
            s3.put_object(Bucket=SRC, Key=f"{job_id}/{i % 8}/obj-{i:04d}", Body=f"object {i}".encode())
        # The destination key is the source key less the source prefix.
        refused = [f"arn:aws:s3:::{DST}/{i % 8}/obj-{i:04d}" for i in range(0, n, refuse_every)] if refuse_every else []
        if refused:
            deny = {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject", "Resource": refused}
            stack.s3.put_bucket_policy(Bucket=DST, Policy=json.dumps({"Version": "2012-10-17", "Statement": [deny]}))
        began = time.monotonic()
        job = {"operation": "copy", "job_id": job_id, "source": {"bucket": SRC, "prefix": f"{job_id}/"}, "destination": {"bucket": DST}}
        options = {"batch_size": BATCH, "tolerated_failures": len(refused), "failure_breaker": False}
        ex = stack.run({**job, "options": options}, timeout=240)
        took = time.monotonic() - began
        assert ex.status == "SUCCEEDED", stack.describe()
        body = stack.s3.get_object(Bucket=stack.bucket_of("Reports"), Key=f"jobs/{job_id}/report.json")["Body"].read()
        report = json.loads(body)
        assert (report["listed"], report["succeeded"], report["failed"]) == (n, n - len(refused), len(refused)), report
        assert s3.list_objects_v2(Bucket=DST).get("KeyCount") == n - len(refused)
        return stack, report, took


def test_no_ledger_key_takes_more_than_a_few_units_a_batch_so_a_job_runs_hundreds_of_batches_a_second_on_aws() -> None:
    n = 600
    stack, _, took = run("cool", n, 1.0)
    batches = n // BATCH
    per_batch = {kind: units / batches for kind, units in stack.limits.partitions.hottest().items()}
    ceiling = READ_UNITS_S / per_batch["job reads"]
    print(
        f"\n{batches} batches in {took:.1f} s; units per batch on the hottest key of each kind: "
        + ", ".join(f"{k} {v:.2f}" for k, v in sorted(per_batch.items()))
        + f"; the job item bounds a job near {ceiling:,.0f} batches/s"
    )
    assert not stack.limits.partitions.throttled
    # The job's own partition (its item and listing shards) is read once or twice a batch: the completion check, and
    # a container's status now and then; written only per listing page.
    assert per_batch["job reads"] <= 3.0, per_batch
    assert per_batch.get("job writes", 0.0) <= 1.0, per_batch
    # Every other key (32 counter and 32 lease shards, a marker per batch, ...) takes a small share of the batches.
    others = {k: v for k, v in per_batch.items() if not k.startswith("job ")}
    assert max(others.values()) <= 0.5, others


def test_batches_with_failures_read_no_more_of_the_jobs_partition_than_batches_without(capsys: pytest.CaptureFixture[str]) -> None:
    """Every batch holds a refused object: the failure breaker's weighing reads the job's counts at most every few
    seconds per container, never the listing shards per batch. Reads are charged by the bytes they return."""
    n = 300
    stack, report, took = run("failing", n, 1.0, refuse_every=BATCH)
    batches = n // BATCH
    per_batch = {kind: units / batches for kind, units in stack.limits.partitions.hottest().items()}
    with capsys.disabled():
        print(f"\n{batches} batches, each with a failure ({report['failed']} in all), in {took:.1f} s; read units per batch: "
              + ", ".join(f"{k} {v:.2f}" for k, v in sorted(per_batch.items()) if k.endswith("reads")))  # fmt: skip
    assert not stack.limits.partitions.throttled
    assert per_batch["job reads"] <= 3.0, per_batch  # as a job without failures (the test above)


def test_a_job_whose_ledger_partitions_are_throttled_is_slowed_and_still_ends_exact() -> None:
    stack, _, took = run("hot", 150, 600.0)  # 5 read units and 1.7 write units a second per partition
    throttled = stack.limits.partitions.throttled
    print(f"\n50 batches in {took:.1f} s at 1/600 of the budgets; throttled calls by item kind {dict(throttled)}")
    assert sum(throttled.values()) > 0, stack.describe()  # the budgets were met, and every throttled call was retried
