"""The failure breaker on the stack, at 6,000 objects with its default rule (more than half of at least 1,000 failed):
a destination whose bucket policy refuses every write stops the job after at most 2,000 objects were tried, and the
execution within seconds of the trip, whatever step it was in, resumably, with a report that names the error; the resume, after the fix, sends the batches the stop parked at once and redoes the objects the
breaker failed, so the printed command finishes the job; retry redoes exactly what failed after that."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.s3.models import s3_backends

from s3bulk import cli
from s3bulk.aws import remote
from s3bulk.aws.ledger import DynamoLedger
from s3bulk.aws.ledger.keys import job_key
from s3bulk.aws.remote import Deployment
from s3bulk.job import parse_job
from s3bulk.s3.clients import ClientSettings
from s3bulk.testing.stack import StackOnMoto, cli_flags, synthesize
from tests.integration.aws_harness import REGION

SRC, DST = "src-bucket", "dst-bucket"
CONTEXT: dict[str, object] = {"read_buckets": f"{SRC},{DST}", "write_buckets": DST}
N = 6_000  # the rule trips after 1,000 to 2,000 tried: thousands are left for the resume (20,000 took 3 min of the suite)
MOST_TRIED = 2_000  # the rule's 1,000, and what the workers had in hand when it tripped
POLL_S = 300  # the completion wait's safety net (600 s by default): far longer than a stop may take to end the execution
ENDS_WITHIN_S = 30  # a trip ends the execution within seconds (a loaded machine's), whatever step it is in


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return synthesize(CONTEXT)


def refuse_writes(stack: StackOnMoto, *resources: str) -> None:
    """The destination's bucket policy denies writes to `resources` to everyone: S3 answers 403 AccessDenied whatever
    the caller's role allows (the harness's IAM gate evaluates it, stack/iam.py); none: the policy is removed."""
    if not resources:
        stack.s3.delete_bucket_policy(Bucket=DST)
        return
    deny = {"Sid": "NoWrites", "Effect": "Deny", "Principal": "*", "Action": "s3:PutObject", "Resource": list(resources)}
    stack.s3.put_bucket_policy(Bucket=DST, Policy=json.dumps({"Version": "2012-10-17", "Statement": [deny]}))


def waiting(stack: StackOnMoto, job_id: str) -> int:
    """The job's batches parked in the report bucket, not yet sent again (s3bulk/aws/held.py empties those it sends)."""
    found = stack.s3.list_objects_v2(Bucket=stack.bucket_of("Reports"), Prefix=f"jobs/{job_id}/parked/").get("Contents", [])
    return sum(1 for o in found if o["Size"])


def copied(stack: StackOnMoto) -> int:
    pages = stack.s3.get_paginator("list_objects_v2").paginate(Bucket=DST)
    return sum(page.get("KeyCount", 0) for page in pages)


def trip_before_the_wait(stack: StackOnMoto, monkeypatch: pytest.MonkeyPatch) -> None:
    """The breaker trips after the listing's last look at the job's status and before the completion wait stores its
    token, the one order in which the worker that trips it has no token to send: the workers start once the listing
    is done (the wait's step has begun), and the wait's step stores its token once the job is stopping."""
    stack.worker_source.pause()
    real = DynamoLedger.await_completion

    def await_completion(self: DynamoLedger, job_id: str, token: str) -> None:
        stack.worker_source.resume()
        deadline = time.monotonic() + 120
        while self.status(job_id, consistent=True) == "RUNNING" and time.monotonic() < deadline:
            time.sleep(0.2)
        real(self, job_id, token)

    monkeypatch.setattr(DynamoLedger, "await_completion", await_completion)


def test_a_destination_refusing_every_write_trips_the_breaker_and_the_resume_after_the_fix_redoes_the_failed_and_sends_the_held_at_once(
    template: dict[str, Any], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The completion wait's safety net at half its default: a stop that only the safety net reports fails the run.
    env = {"S3BULK_POLL_SECONDS": str(POLL_S), "S3BULK_OUTAGE_STOP_S": "2", "S3BULK_CONCURRENCY": "4", "S3BULK_REQUEST_CONCURRENCY": "4"}
    with StackOnMoto(template, buckets=(SRC, DST), env=env) as stack:
        backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]  # setup, not under test: straight into moto's S3
        for i in range(N):
            backend.put_object(SRC, f"in/{i % 4}/obj-{i:05d}", f"body {i}".encode())
        refuse_writes(stack, f"arn:aws:s3:::{DST}/*")
        job = {
            "job_id": "refused",
            "operation": "copy",
            "source": {"bucket": SRC, "prefix": "in/"},
            "destination": {"bucket": DST, "prefix": "out/"},
            "options": {"batch_size": 250},  # the default failure_breaker: {"after": 1000, "rate": 0.5}
        }
        with monkeypatch.context() as hooked:
            trip_before_the_wait(stack, hooked)
            ex = stack.run(job, timeout=POLL_S - 20)
        assert (ex.status, ex.description.get("error")) == ("FAILED", "FailureBreaker"), (ex.description, stack.describe())
        ledger = DynamoLedger(stack.ddb, stack.bucket_of("Ledger"))
        tripped_at = float(stack.ddb.get_item(TableName=ledger.table, Key=job_key("refused"))["Item"]["stopped_at"]["N"])
        ended_in = ex.description["stopDate"].timestamp() - tripped_at
        with capsys.disabled():
            print(f"the execution ended {ended_in:.1f} s after the breaker tripped")
        assert ended_in < ENDS_WITHIN_S, ended_in  # not at the completion wait's safety net
        r = json.loads(stack.s3.get_object(Bucket=stack.bucket_of("Reports"), Key="jobs/refused/report.json")["Body"].read())
        assert (r["status"], r["stop_reason"], r["succeeded"]) == ("stopped", "failure_breaker", 0)
        assert r["failures_by_code"] == {"AccessDenied": r["failed"]} and 1_000 <= r["failed"] <= MOST_TRIED  # not every object tried
        with capsys.disabled():
            print(f"the breaker tripped after {r['failed']:,} of {N:,} objects were tried")
        assert r["error"].startswith("failure breaker:") and "AccessDenied" in r["error"] and "s3bulk resume refused" in r["error"]
        assert "Contents" not in stack.s3.list_objects_v2(Bucket=DST)
        assert ledger.status("refused") == "STOPPED"
        assert stack.iam.policy_refused >= r["failed"]  # refused by S3 itself, on the bucket's policy

        # The policy fixed, but for a few keys: the resume sends the batches the stop parked at once, and redoes the
        # objects the breaker failed; only those few fail again.
        stubborn = {f"out/{i % 4}/obj-{i:05d}" for i in (7, 1_234, 5_999)}
        refuse_writes(stack, *(f"arn:aws:s3:::{DST}/{k}" for k in sorted(stubborn)))
        deployment = Deployment(stack.state_machine_arn, ledger.table, stack.bucket_of("Reports"))
        reports = stack.bucket_of("Reports")
        parked = waiting(stack, "refused")
        depths = stack.queue_depths()
        with capsys.disabled():
            print(f"{parked} batches parked while stopped; queues {depths}")
        assert parked > 0 and depths[next(q for q in depths if q.startswith("Work"))] == 0  # off the queue, not cycling
        resumed_at = time.monotonic()
        arn = remote.resume(deployment, "refused", ClientSettings(region=REGION))
        while copied(stack) == 0 and time.monotonic() - resumed_at < 60:
            time.sleep(0.5)
        with capsys.disabled():
            print(f"first copies {time.monotonic() - resumed_at:.1f} s after the resume")
        assert copied(stack) > 0  # within a minute, not at the held batches' next 15-minute return
        again = stack.follow(arn, timeout=600)
        assert again.description.get("error") == "TooManyFailures", (again.description, stack.describe())
        final = json.loads(stack.s3.get_object(Bucket=reports, Key="jobs/refused/report.json")["Body"].read())
        # Every object done once: those the stop held, and those the breaker failed, redone after the fix.
        assert (final["listed"], final["succeeded"], final["failed"]) == (N, N - len(stubborn), len(stubborn)), final
        assert final["redone_after_breaker"] == r["failed"] and final["failures_by_code"] == {"AccessDenied": len(stubborn)}
        assert {f["key"] for f in final["failures"]} == {k.replace("out/", "in/", 1) for k in stubborn}
        refused = stack.iam.policy_refused
        assert copied(stack) == N - len(stubborn) == sum(1 for q in stack.fast_requests if q.startswith("CopyObject ")) - refused
        assert waiting(stack, "refused") == 0  # every parked batch sent again (and emptied)
        assert parse_job(json.dumps(job)).options.failure_breaker  # the rule the job ran with

        # s3bulk retry: a new job over exactly the objects that failed, read from failures.jsonl as a manifest kept in
        # the report bucket; nothing is listed again, and each failed object is copied once.
        refuse_writes(stack)
        flags = cli_flags(deployment)
        assert cli.main(["retry", "refused", *flags]) == 0
        said = capsys.readouterr().out
        assert f"retrying {len(stubborn)} failed object(s) of refused as job refused-retry-1" in said
        retried = stack.follow(said.split("execution ")[1].split()[0], timeout=300)
        assert retried.status == "SUCCEEDED", (retried.description, stack.describe())
        again_r = json.loads(stack.s3.get_object(Bucket=reports, Key="jobs/refused-retry-1/report.json")["Body"].read())
        assert (again_r["listed"], again_r["succeeded"], again_r["failed"]) == (len(stubborn), len(stubborn), 0)
        assert stack.iam.policy_refused == refused  # the policy is gone
        assert copied(stack) == N == sum(1 for q in stack.fast_requests if q.startswith("CopyObject ")) - refused  # each once
        spec = ledger.spec("refused-retry-1")
        assert spec.source.manifest is not None and spec.source.manifest.bucket == deployment.report_bucket
        assert cli.main(["retry", "refused-retry-1", *flags]) == 2  # nothing failed: nothing to retry, said in one line
        assert "has no failed object to retry" in capsys.readouterr().err
