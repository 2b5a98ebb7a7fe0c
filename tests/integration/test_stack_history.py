"""Step Functions' history limit on the whole stack (s3bulk/aws/history.py): AWS fails an execution at 25,000 history
events, and a job may wait on its workers for days. The harness enforces the limit (scaled down here, as the point at
which a job goes on in a new execution is): a job goes on in a fresh execution before it, and ends exact; an execution
that reaches it anyway is a stop, resumable, never a failure that cancels the job's queued batches."""

from __future__ import annotations

import json
import threading
from typing import Any

import boto3
import pytest

from s3bulk.aws import remote
from s3bulk.aws.ledger import DynamoLedger
from s3bulk.aws.remote import Deployment
from s3bulk.s3.clients import ClientSettings
from s3bulk.testing.stack import StackOnMoto, synthesize
from tests.integration.aws_harness import REGION

SRC, DST = "src-bucket", "dst-bucket"
CONTEXT: dict[str, object] = {"read_buckets": f"{SRC},{DST}", "write_buckets": DST}
N = 120
LIMIT = 150  # the history limit, scaled down from 25,000: a poll cycle of 1 s adds about a dozen events


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return synthesize(CONTEXT)


def seed() -> set[str]:
    s3 = boto3.client("s3", region_name=REGION)
    keys = {f"in/{i % 3}/obj-{i:04d}" for i in range(N)}
    for key in keys:
        s3.put_object(Bucket=SRC, Key=key, Body=key.encode())
    return keys


def job(job_id: str) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "operation": "copy",
        "source": {"bucket": SRC, "prefix": "in/"},
        "destination": {"bucket": DST, "prefix": "out/"},
        "options": {"batch_size": 20},
    }


def copied(stack: StackOnMoto) -> dict[str, bytes]:
    keys = [o["Key"] for p in stack.s3.get_paginator("list_objects_v2").paginate(Bucket=DST) for o in p.get("Contents", [])]
    return {k: stack.s3.get_object(Bucket=DST, Key=k)["Body"].read() for k in keys}


def report(stack: StackOnMoto, job_id: str) -> dict[str, Any]:
    return dict(json.loads(stack.s3.get_object(Bucket=stack.bucket_of("Reports"), Key=f"jobs/{job_id}/report.json")["Body"].read()))


def resume_workers_after(stack: StackOnMoto, seconds: float) -> threading.Thread:
    """The workers come back once the job has waited long enough for its history to grow."""
    t = threading.Timer(seconds, stack.worker_source.resume)
    t.start()
    return t


def test_a_job_that_outwaits_its_executions_history_goes_on_in_new_executions_and_ends_exact(template: dict[str, Any]) -> None:
    env = {"S3BULK_POLL_SECONDS": "1", "S3BULK_HISTORY_RENEW_AT": "60"}
    with StackOnMoto(template, buckets=(SRC, DST), env=env, history_limit=LIMIT) as stack:
        keys = seed()
        stack.worker_source.pause()  # the job waits on its workers: its completion wait adds events each poll
        arn = stack.sfn.start_execution(stateMachineArn=stack.state_machine_arn, input=json.dumps(job("long-wait")), name="long-wait-1")[
            "executionArn"
        ]
        waker = resume_workers_after(stack, 12)
        chain = stack.follow_job(arn, "long-wait", timeout=180)
        waker.join()
        statuses = [(e.status, "ContinuedInNewExecution" in e.entered()) for e in chain]
        failed_tasks = json.dumps([e for x in chain for e in x.events if e["type"] == "TaskFailed"][:2], default=str)
        assert len(chain) >= 2 and statuses[:-1] == [("SUCCEEDED", True)] * (len(chain) - 1), (statuses, failed_tasks, stack.describe())
        assert chain[-1].status == "SUCCEEDED" and "JobSucceeded" in chain[-1].entered(), (chain[-1].description, stack.describe())
        assert all("AdoptJob" in e.entered() and "Validate" not in e.entered() for e in chain[1:])  # adopted, not submitted again
        assert stack.history_failed == [] and all(len(e.events) < LIMIT for e in chain)
        r = report(stack, "long-wait")
        assert (r["status"], r["listed"], r["succeeded"], r["failed"]) == ("succeeded", N, N, 0)
        assert copied(stack) == {"out/" + k[3:]: k.encode() for k in keys}  # every object once, where it belongs
        ledger = DynamoLedger(stack.ddb, stack.bucket_of("Ledger"))
        assert ledger.load("long-wait").execution == chain[-1].arn.rsplit(":", 1)[1]


def test_an_execution_that_reaches_the_history_limit_stops_its_job_resumably_and_the_resume_finishes_it(
    template: dict[str, Any],
) -> None:
    env = {"S3BULK_POLL_SECONDS": "1", "S3BULK_HISTORY_RENEW_AT": str(10**9)}  # never goes on in a new execution
    with StackOnMoto(template, buckets=(SRC, DST), env=env, history_limit=LIMIT) as stack:
        keys = seed()
        stack.worker_source.pause()
        ex = stack.run(job("hit-limit"), timeout=120, name="hit-limit-1")
        assert stack.history_failed == [ex.arn] and ex.description["error"] == "States.Runtime", stack.describe()
        stack.settle()
        ledger = DynamoLedger(stack.ddb, stack.bucket_of("Ledger"))
        assert ledger.status("hit-limit") == "STOPPED"  # a stop: its queued batches are kept, not cancelled
        r = report(stack, "hit-limit")
        assert r["status"] == "stopped" and "history limit" in r["error"] and "s3bulk resume hit-limit" in r["error"]
        assert (r["succeeded"], r["failed"]) == (0, 0)

        stack.worker_source.resume()
        deployment = Deployment(stack.state_machine_arn, ledger.table, stack.bucket_of("Reports"))
        stack.history_limit = 10**6  # the resumed execution finishes well within it
        again = stack.follow(remote.resume(deployment, "hit-limit", ClientSettings(region=REGION)), timeout=120)
        assert again.status == "SUCCEEDED", (again.description, stack.describe())
        r = report(stack, "hit-limit")
        assert (r["status"], r["listed"], r["succeeded"], r["failed"]) == ("succeeded", N, N, 0)
        assert copied(stack) == {"out/" + k[3:]: k.encode() for k in keys}
