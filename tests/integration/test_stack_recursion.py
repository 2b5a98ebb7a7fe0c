"""Lambda's recursive loop detection on the whole stack (stack/recursion.py): a chain of events that would invoke a
function a 17th time is stopped, its SQS message dead-lettered, unless the function allows loops.

A job capped with `s3bulk tune` parks its batches over the cap, and each release sends the next parked batch on: the
Worker invoked for one batch sends the one after it, one hop more each time. Capped at one batch at a time, a job of 40
batches makes a chain past 16 hops. As deployed (the Worker allows loops) the job ends exact; with Lambda's default
(Terminate) the harness dead-letters the 17th send and the job counts those objects failed, which is what AWS would do."""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
import pytest

from s3bulk import cli
from s3bulk.aws import remote
from s3bulk.aws.remote import Deployment
from s3bulk.job import parse_job
from s3bulk.s3.clients import ClientSettings
from s3bulk.s3.faststore import FastS3Store
from s3bulk.testing.stack import StackOnMoto, cli_flags, synthesize
from s3bulk.testing.stack.recursion import MAX_HOPS
from tests.integration.aws_harness import REGION
from tests.integration.test_stack_tune import ledger

pytestmark = pytest.mark.moto

SRC, DST = "loop-src", "loop-dst"
CONTEXT: dict[str, object] = {"read_buckets": f"{SRC},{DST}", "write_buckets": DST}
N, BATCH = 80, 2
ENV = {"S3BULK_POLL_SECONDS": "30", "S3BULK_CONCURRENCY": "2"}


def capped_run(monkeypatch: pytest.MonkeyPatch, template: dict[str, Any]) -> tuple[StackOnMoto, dict[str, Any], str, int]:
    """A copy capped at one batch at a time, run to its end: (the stopped stack, its report, the execution's status, the
    objects in the destination)."""
    copy = FastS3Store.copy_object

    def slow(self: FastS3Store, *args: Any, **kwargs: Any) -> str:
        time.sleep(0.2)  # a batch takes about half a second, while the others wait parked
        return str(copy(self, *args, **kwargs))

    monkeypatch.setattr(FastS3Store, "copy_object", slow)
    job = {"operation": "copy", "job_id": "looped", "source": {"bucket": SRC, "prefix": "k/"}, "destination": {"bucket": DST}}
    job["options"] = {"batch_size": BATCH}
    with StackOnMoto(template, buckets=(SRC, DST), env=ENV, pollers=4) as stack:
        s3 = boto3.client("s3", region_name=REGION)
        for i in range(N):
            s3.put_object(Bucket=SRC, Key=f"k/{i:03d}", Body=f"object {i}".encode())
        deployment = Deployment(stack.state_machine_arn, ledger(stack).table, stack.bucket_of("Reports"))
        stack.worker_source.pause()
        _, arn = remote.submit(deployment, parse_job(json.dumps(job)), ClientSettings(region=REGION))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if int(ledger(stack).counters("looped").get("listed", 0)) >= N:
                    break
            except KeyError:  # Validate has not made its ledger entry yet
                pass
            time.sleep(0.1)
        assert cli.main(["tune", "looped", "--concurrency", "1", *cli_flags(deployment)]) == 0
        stack.worker_source.resume()
        ex = stack.follow(arn, timeout=180)
        body = stack.s3.get_object(Bucket=stack.bucket_of("Reports"), Key="jobs/looped/report.json")["Body"].read()
        return stack, json.loads(body), ex.status, int(s3.list_objects_v2(Bucket=DST).get("KeyCount", 0))


def test_a_capped_jobs_batches_sent_on_by_more_than_16_releases_in_a_chain_still_copy_every_object_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stack, report, status, copied = capped_run(monkeypatch, synthesize(CONTEXT))
    stats = stack.worker_source.stats
    assert stats.max_hops > MAX_HOPS, stats  # the rule was in play: some chain passed the hops Lambda allows by default
    assert stats.loop_stopped == 0, stats
    assert status == "SUCCEEDED", stack.describe()
    assert (report["listed"], report["succeeded"], report["failed"]) == (N, N, 0), report
    assert copied == N


def test_with_lambdas_default_loop_detection_the_same_job_loses_its_waiting_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Why the Worker allows loops: without it, the harness, as AWS, dead-letters the 17th hop and those objects fail."""
    template = synthesize(CONTEXT)
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::Lambda::Function":
            resource["Properties"]["RecursiveLoop"] = "Terminate"
    stack, report, _, copied = capped_run(monkeypatch, template)
    assert stack.worker_source.stats.loop_stopped > 0, stack.worker_source.stats
    assert report["failed"] > 0 and report["succeeded"] < N and copied < N, report
