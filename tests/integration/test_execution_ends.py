"""No job ends RUNNING without a report: every way an execution can end, through the synthesized stack on moto.

The state machine reports on the paths it controls (Finalize, ReportFailure). The rest (a user's
StopExecution, a timeout, an error no Catch takes, a report step that itself failed) reach the
ExecutionEnded function through the stack's EventBridge rule, which the harness delivers as AWS
would: the execution's status-change event, matched against the rule's own pattern.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

import s3bulk.aws.validation as validation
from s3bulk import cli
from s3bulk.aws import assembly, lister, remote
from s3bulk.aws.ledger import DynamoLedger
from s3bulk.aws.remote import Deployment
from s3bulk.aws.reportbucket import ReportBucket
from s3bulk.job import JobError, parse_job
from s3bulk.s3.clients import ClientSettings
from s3bulk.s3.faststore import FastS3Store
from s3bulk.testing.stack import Execution, StackOnMoto, cli_flags, synthesize
from tests.integration.aws_harness import REGION

SRC, DST = "src-bucket", "dst-bucket"
CONTEXT: dict[str, object] = {"read_buckets": f"{SRC},{DST}", "write_buckets": DST}
ENV = {"S3BULK_POLL_SECONDS": "30"}
N = 120
BATCH = 20


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return synthesize(CONTEXT)


def seed(n: int = N, **extra: Any) -> list[str]:
    s3 = boto3.client("s3", region_name=REGION)
    keys = [f"in/{i % 3}/obj-{i:04d}" for i in range(n)]
    for i, key in enumerate(keys):
        s3.put_object(Bucket=SRC, Key=key, Body=f"object {i}".encode(), **extra)
    return keys


def copy_job(job_id: str | None = None, **options: Any) -> dict[str, Any]:
    job: dict[str, Any] = {
        "operation": "copy",
        "source": {"bucket": SRC, "prefix": "in/"},
        "destination": {"bucket": DST, "prefix": "out/"},
        "options": {"batch_size": BATCH, **options},
    }
    if job_id:
        job["job_id"] = job_id
    return job


def ledger(stack: StackOnMoto) -> DynamoLedger:
    [table] = [v for k, v in stack.names.items() if k.startswith("Ledger") and "." not in k]
    return DynamoLedger(stack.ddb, table)


def jobs(stack: StackOnMoto) -> dict[str, dict[str, Any]]:
    """Every job item in the ledger: job id -> its status and report URI."""
    items = stack.ddb.scan(TableName=ledger(stack).table)["Items"]
    return {
        i["pk"]["S"].removeprefix("job#"): {"status": i["status"]["S"], "report": i.get("report", {}).get("S")}
        for i in items
        if i["sk"]["S"] == "job"
    }


def report_of(stack: StackOnMoto, job_id: str) -> dict[str, Any]:
    body = stack.s3.get_object(Bucket=stack.bucket_of("Reports"), Key=f"jobs/{job_id}/report.json")["Body"].read()
    return dict(json.loads(body))


def assert_nothing_left_running(stack: StackOnMoto) -> dict[str, dict[str, Any]]:
    """The issue's rule: no job item is RUNNING, and each has a report that exists."""
    found = jobs(stack)
    for job_id, item in found.items():
        assert item["status"] != "RUNNING", (job_id, item)
        assert item["report"] == f"s3://{stack.bucket_of('Reports')}/jobs/{job_id}/report.json", (job_id, item)
        assert report_of(stack, job_id)["job_id"] == job_id
    return found


def why(stack: StackOnMoto, ex: Execution) -> str:
    return f"{ex.status} {ex.description.get('error')}: {str(ex.description.get('cause'))[:1500]}\n{ex.entered()[-6:]}\n{stack.describe()}"


@pytest.fixture
def stack(template: dict[str, Any]) -> Iterator[StackOnMoto]:
    with StackOnMoto(template, buckets=(SRC, DST), env=ENV) as s:
        yield s


def test_a_succeeded_execution_wrote_its_report_and_the_rule_ignores_it(stack: StackOnMoto) -> None:
    seed()
    # A user's rule for the jobs' status-change events (as they would route Batch Operations' to SNS or a ticket).
    events, sqs = boto3.client("events", region_name=REGION), boto3.client("sqs", region_name=REGION)
    inbox = sqs.create_queue(QueueName="job-events")["QueueUrl"]
    inbox_arn = sqs.get_queue_attributes(QueueUrl=inbox, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="s3bulk-jobs", EventPattern=json.dumps({"source": ["s3bulk"], "detail-type": ["s3bulk Job Status Change"]}))
    events.put_targets(Rule="s3bulk-jobs", Targets=[{"Id": "inbox", "Arn": inbox_arn}])
    ex = stack.run(copy_job(), timeout=60)
    assert ex.status == "SUCCEEDED", why(stack, ex)
    assert ex.ended == []  # the rule matches FAILED, TIMED_OUT and ABORTED only
    [(job_id, item)] = assert_nothing_left_running(stack).items()
    assert item["status"] == "SUCCEEDED" and report_of(stack, job_id)["succeeded"] == N
    [message] = sqs.receive_message(QueueUrl=inbox, MaxNumberOfMessages=10).get("Messages", [])
    detail = json.loads(message["Body"])["detail"]
    assert (detail["job_id"], detail["status"], detail["ledger_status"], detail["succeeded"], detail["failed"]) == (
        job_id,
        "succeeded",
        "SUCCEEDED",
        N,
        0,
    )
    assert detail["report"].endswith(f"/jobs/{job_id}/report.json")


def test_a_job_validate_refuses_makes_no_ledger_entry(stack: StackOnMoto) -> None:
    ex = stack.run({**copy_job(), "source": {"bucket": "not-allowed", "prefix": ""}}, timeout=30)
    assert (ex.status, ex.description.get("error")) == ("FAILED", "InvalidJob"), why(stack, ex)
    [ended] = ex.ended
    assert ended["finalized"] is False and "ledger entry" in ended["reason"]
    assert jobs(stack) == {}


def test_too_many_failures_ends_failed_with_the_report_finalize_wrote(stack: StackOnMoto) -> None:
    seed(N - 5)
    archived = [f"in/archived-{i}" for i in range(5)]
    for key in archived:  # copying an archived object fails: InvalidObjectState
        stack.s3.put_object(Bucket=SRC, Key=key, Body=b"cold", StorageClass="GLACIER")
    ex = stack.run(copy_job(), timeout=60)
    assert (ex.status, ex.description.get("error")) == ("FAILED", "TooManyFailures"), why(stack, ex)
    [ended] = ex.ended
    assert ended["finalized"] is False and ended["reason"] == "already reported (FAILED)"
    [job_id] = assert_nothing_left_running(stack)
    r = report_of(stack, job_id)
    assert (r["succeeded"], r["failed"]) == (N - 5, 5)
    assert sorted(f["key"] for f in r["failures"]) == archived


def test_a_step_that_fails_for_good_is_reported_by_the_execution_itself(template: dict[str, Any]) -> None:
    with StackOnMoto(template, buckets=(DST,), env=ENV) as stack:  # the source bucket does not exist: PlanListing fails
        ex = stack.run(copy_job(), timeout=60)
        assert (ex.status, ex.description.get("error")) == ("FAILED", "JobFailed"), why(stack, ex)
        assert "ReportFailure" in ex.entered()
        [ended] = ex.ended
        assert ended["finalized"] is False and ended["reason"] == "already reported (FAILED)"
        [(job_id, _)] = assert_nothing_left_running(stack).items()
        assert "NoSuchBucket" in report_of(stack, job_id)["error"]


def test_a_report_step_that_fails_too_is_made_good_when_the_execution_ends(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = ReportBucket.put_report
    calls: list[str] = []

    def fails_once(self: ReportBucket, job_id: str, summary: dict[str, Any], digest: Any) -> str:
        calls.append(job_id)
        if len(calls) == 1:
            raise RuntimeError("report bucket unreachable")
        return real(self, job_id, summary, digest)

    monkeypatch.setattr(ReportBucket, "put_report", fails_once)
    with StackOnMoto(template, buckets=(DST,), env=ENV) as stack:
        ex = stack.run(copy_job(), timeout=60)
        assert ex.status == "FAILED" and "MarkFailed" in ex.entered(), why(stack, ex)
        [ended] = ex.ended
        assert ended["finalized"] is True and ended["status"] == "failed"
        [(job_id, _)] = assert_nothing_left_running(stack).items()
        assert report_of(stack, job_id)["error"].startswith("execution FAILED: JobFailed")
        assert len(calls) == 2


def test_an_error_no_catch_takes_still_ends_with_a_report(template: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """A Pass state's missing path is a States.Runtime error, which no Catch (not even States.ALL) takes."""
    real = validation.validate

    def loses_poll_seconds(*args: Any, **kwargs: Any) -> dict[str, Any]:
        out = real(*args, **kwargs)
        del out["poll_seconds"]
        return out

    monkeypatch.setattr(validation, "validate", loses_poll_seconds)
    with StackOnMoto(template, buckets=(SRC, DST), env=ENV) as stack:
        seed(10)
        ex = stack.run(copy_job(), timeout=60)
        assert ex.status == "FAILED" and ex.entered()[-1] == "KeepIdsOnly", why(stack, ex)
        [ended] = ex.ended
        assert ended["finalized"] is True
        [(job_id, item)] = assert_nothing_left_running(stack).items()
        assert item["status"] == "FAILED"
        assert report_of(stack, job_id)["error"].startswith("execution FAILED: States.Runtime")


def test_a_timed_out_execution_gets_its_report(stack: StackOnMoto) -> None:
    """No deployed execution times out before a year; the rule and function are checked on the event AWS would send."""
    job = copy_job("timed-out-job")
    ledger(stack).create("timed-out-job", parse_job(json.dumps(job)))
    desc = {
        "executionArn": f"{stack.state_machine_arn.replace(':stateMachine:', ':execution:')}:x",
        "stateMachineArn": stack.state_machine_arn,
        "name": "x",
        "status": "TIMED_OUT",
        "input": json.dumps(job),
    }
    [ended] = stack.publish_status(desc)
    assert ended["finalized"] is True and ended["job_id"] == "timed-out-job"
    assert ended["unasked"] is True  # counted for the early-end alarm (ExecutionsEndedUnasked): nobody asked for this
    asked = {**desc, "name": "y", "status": "ABORTED", "error": "User.Stopped", "executionArn": desc["executionArn"][:-1] + "y"}
    [stopped] = stack.publish_status(asked)
    assert stopped["unasked"] is False  # s3bulk stop: its owner's, no alarm
    assert_nothing_left_running(stack)
    assert report_of(stack, "timed-out-job")["error"] == "execution TIMED_OUT: TIMED_OUT: "
    other = {**desc, "stateMachineArn": desc["stateMachineArn"] + "-other"}
    assert stack.publish_status(other) == []  # another state machine's executions are not this stack's


def test_an_ended_execution_whose_failures_take_several_calls_to_read_gets_its_whole_report(
    stack: StackOnMoto, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ExecutionEnded cannot loop in a state machine: when failures.jsonl is not complete by its time, it invokes itself
    asynchronously with the same event and goes on from the last uploaded part, until the report is written."""
    monkeypatch.setattr(assembly, "ASSEMBLY_MARGIN_S", 1e9)  # "time is short" after every part: one 8 MiB part per call
    job = copy_job("ended-big")
    ledger(stack).create("ended-big", parse_job(json.dumps(job)))
    bucket = stack.bucket_of("Reports")
    for p in range(280):  # about 18 MiB of failures: three parts
        lines = [json.dumps({"key": f"in/{p:04d}/k{i:03d}", "error": "AccessDenied", "message": "x" * 600}) for i in range(100)]
        body = "\n".join(lines) + "\n"
        stack.s3.put_object(Bucket=bucket, Key=f"jobs/ended-big/failures/0000-{p:09d}-rows.jsonl", Body=body.encode())
    desc = {
        "executionArn": f"{stack.state_machine_arn.replace(':stateMachine:', ':execution:')}:big",
        "stateMachineArn": stack.state_machine_arn,
        "name": "big",
        "status": "ABORTED",
        "input": json.dumps(job),
    }
    [first] = stack.publish_status(desc)
    assert (first["finalized"], first["report_done"]) == (False, False)
    stack.settle()
    [ended] = [f for f in stack.functions.values() if f.name.startswith("ExecutionEnded")]
    assert (ended.invocations, dict(ended.errors)) == (3, {})  # the first, then two it started itself
    r = report_of(stack, "ended-big")
    assert r["failures_by_code"] == {"AccessDenied": 28000} and r["failures_not_listed"] == 27000
    written = stack.s3.get_object(Bucket=bucket, Key="jobs/ended-big/failures.jsonl")["Body"].read().splitlines()
    assert len(written) == len(set(written)) == 28000
    assert stack.s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    assert_nothing_left_running(stack)


def test_an_execution_its_owner_stops_is_a_resumable_stop_its_batches_held_and_the_resume_finishes_exactly(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The owner stops a job while it lists. Its report says stopped (done, not done), its listers send no more pages,
    its queued batches are held (handed back uncounted, never cancelled), and `s3bulk resume` finishes it: every
    object once, nothing failed.

    A lister invocation already running goes on until it next asks whether its job still runs (as on AWS: stopping an
    execution does not stop a running Lambda). While it ran, the same job submitted again was refused, by the CLI
    before starting anything and by the state machine (ReopenJob) for an execution started some other way, and the
    refused execution's end left the job alone.
    """
    real = DynamoLedger.checkpoint

    def slow_pages(self: DynamoLedger, *args: Any, **kwargs: Any) -> bool:
        time.sleep(0.8)  # a page every 0.8 s, so the owner's stop lands while the job lists
        return real(self, *args, **kwargs)

    monkeypatch.setattr(DynamoLedger, "checkpoint", slow_pages)
    monkeypatch.setattr(lister, "STATUS_EVERY_S", 0.0)  # a lister asks before every page (30 s on AWS)
    monkeypatch.setattr(lister, "PAGES_PER_STEP", 1)  # a checkpoint a page: the slow checkpoints pace the listing page by page
    # One listing shard of 12 pages. SQS's in-flight limit (120,000 on AWS) scaled to 3: a stopped job's batches handed
    # back to the queue would hold it, and every other job's receives would be refused.
    env = {**ENV, "S3BULK_LIST_PAGE_SIZE": "10", "S3BULK_LIST_SHARDS": "1", "S3BULK_OUTAGE_STOP_S": "2"}
    with StackOnMoto(template, buckets=(SRC, DST), env=env, in_flight_limit=3) as stack:
        keys = seed()
        source = stack.worker_source
        source.pause()  # the batches wait in the queue, as a big job's would when its owner stops it
        job_id = "copy-stopped-by-owner"
        deployment = Deployment(stack.state_machine_arn, ledger(stack).table, stack.bucket_of("Reports"))
        settings = ClientSettings(region=REGION)
        refused: list[Execution] = []

        def some_listed() -> bool:
            try:
                listed = ledger(stack).counters(job_id).get("listed", 0)
            except KeyError:
                return False
            if listed >= BATCH and not refused:
                with pytest.raises(JobError, match=f"job.job_id: '{job_id}' is running; follow it with s3bulk status {job_id}"):
                    remote.submit(deployment, parse_job(json.dumps(copy_job(job_id))), settings)
                refused.append(stack.run(copy_job(job_id), timeout=30))
            return listed >= BATCH

        ex = stack.run(copy_job(job_id), timeout=60, stop_when=some_listed)
        [again_while_running] = refused
        assert (again_while_running.status, again_while_running.description.get("error")) == ("FAILED", "JobAlreadyRunning")
        assert "ReopenJob" in again_while_running.entered() and "ListShards" not in again_while_running.entered()
        assert again_while_running.ended[0]["finalized"] is False  # the refused execution's end is not the job's
        assert ex.status == "ABORTED", why(stack, ex)
        [ended] = ex.ended
        assert (ended["finalized"], ended["status"]) == (True, "stopped"), ended
        assert_nothing_left_running(stack)
        r = report_of(stack, job_id)
        assert r["status"] == "stopped" and r["error"].startswith("stopped by its owner (execution ABORTED: User.Stopped")
        assert f"s3bulk resume {job_id}" in r["error"]
        assert BATCH <= r["listed"] < N and (r["done"], r["not_done"], r["failed"]) == (0, r["listed"], 0)
        time.sleep(2)
        # A lister in the middle of a page ends it, then stops; the report waited for it (its lease), so it agrees.
        assert ledger(stack).counters(job_id)["listed"] == r["listed"]
        assert ledger(stack).working(job_id) == 0

        source.resume()  # the workers find the job stopped: each batch is parked off the queue, uncounted, none copied
        deadline = time.monotonic() + 30
        while (
            _parked(stack, job_id) < ledger(stack).counters(job_id)["pending"] or sum(stack.queue_depths().values()) > 0
        ) and time.monotonic() < deadline:
            time.sleep(0.1)
        counters = ledger(stack).counters(job_id)
        assert (counters.get("failed", 0), counters.get("succeeded", 0)) == (0, 0), stack.describe()
        parked = _parked(stack, job_id)
        assert counters["pending"] == parked >= 3 and source.stats.returned == 0, stack.describe()
        assert sum(stack.queue_depths().values()) == 0  # nothing cycles through the queue while the job is stopped
        over_before = source.stats.over_limit  # while the 4 batches were in a worker's hands
        time.sleep(1)
        assert source.stats.over_limit == over_before  # parked, they no longer hold the queue's in-flight limit
        assert "Contents" not in stack.s3.list_objects_v2(Bucket=DST)
        assert _failure_parts(stack, job_id) == {}

        # Resumed, under an execution name of its own: reopened, it lists the rest from its checkpoints, the held
        # batches are worked, and every key is copied once. A spec changed under the same id is refused rather than
        # run as the old one.
        with pytest.raises(JobError, match="was submitted before with another spec; resume it as it was"):
            remote.submit(deployment, parse_job(json.dumps(copy_job(job_id, if_exists="skip"))), settings)
        again = stack.follow(remote.resume(deployment, job_id, settings), timeout=120)
        assert again.status == "SUCCEEDED" and "ReopenJob" in again.entered(), why(stack, again)
        assert again.arn.rsplit(":", 1)[1].startswith(f"{job_id}-")
        final = report_of(stack, job_id)
        assert (final["status"], final["listed"], final["succeeded"], final["failed"], "error" in final) == ("succeeded", N, N, 0, False)
        copied = {o["Key"] for o in stack.s3.list_objects_v2(Bucket=DST, MaxKeys=1000).get("Contents", [])}
        assert copied == {"out/" + k[3:] for k in keys}


def test_s3bulk_stop_stops_a_running_job_resumably_and_s3bulk_resume_finishes_it(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = DynamoLedger.checkpoint

    def slow_pages(self: DynamoLedger, *args: Any, **kwargs: Any) -> bool:
        time.sleep(0.5)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(DynamoLedger, "checkpoint", slow_pages)
    monkeypatch.setattr(lister, "STATUS_EVERY_S", 0.0)
    monkeypatch.setattr(lister, "PAGES_PER_STEP", 1)  # a checkpoint a page: the slow checkpoints pace the listing page by page
    env = {**ENV, "S3BULK_LIST_PAGE_SIZE": "10", "S3BULK_LIST_SHARDS": "1", "S3BULK_OUTAGE_STOP_S": "2"}
    with StackOnMoto(template, buckets=(SRC, DST), env=env) as stack:
        keys = seed()
        stack.worker_source.pause()
        job_id = "stopped-from-the-cli"
        deployment = Deployment(stack.state_machine_arn, ledger(stack).table, stack.bucket_of("Reports"))
        flags = cli_flags(deployment)
        _, arn = remote.submit(deployment, parse_job(json.dumps(copy_job(job_id))), ClientSettings(region=REGION))

        def listed() -> int:
            try:
                return int(ledger(stack).counters(job_id).get("listed", 0))
            except KeyError:  # Validate has not made its ledger entry yet
                return 0

        deadline = time.monotonic() + 30
        while listed() < BATCH and time.monotonic() < deadline:
            time.sleep(0.1)
        assert cli.main(["stop", job_id, *flags]) == 0
        assert f"go on with: s3bulk resume {job_id}" in capsys.readouterr().out
        ex = stack.follow(arn, timeout=30)
        assert ex.status == "ABORTED" and ex.ended[0]["status"] == "stopped", ex.ended
        r = report_of(stack, job_id)
        assert (r["status"], r["done"], r["failed"]) == ("stopped", 0, 0) and r["not_done"] == r["listed"] < N
        assert "stopped with s3bulk stop" in r["error"]
        assert cli.main(["stop", job_id, *flags]) == 2  # not running any more: nothing to stop, said in one line
        assert f"'{job_id}' is not running (STOPPED)" in capsys.readouterr().err

        stack.worker_source.resume()
        assert cli.main(["resume", job_id, *flags]) == 0
        resumed = capsys.readouterr().out.split("execution ")[1].split()[0]
        again = stack.follow(resumed, timeout=120)
        assert again.status == "SUCCEEDED", why(stack, again)
        final = report_of(stack, job_id)
        assert (final["status"], final["listed"], final["succeeded"], final["failed"]) == ("succeeded", N, N, 0)
        copied = {o["Key"] for o in stack.s3.list_objects_v2(Bucket=DST, MaxKeys=1000).get("Contents", [])}
        assert copied == {"out/" + k[3:] for k in keys}


def test_s3bulk_cancel_mid_job_drops_queued_work_uncounted_and_the_report_says_exactly_what_was_done(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cancel is final: the batches a worker had in hand when it was cancelled finish and count (the report waits for
    them), no batch starts after `cancel` returns, queued ones are dropped uncounted, the report says cancelled with
    `done` and `not_done` agreeing with the ledger, `report` exits 5, and resuming it is refused."""
    real = DynamoLedger.checkpoint

    def slow_pages(self: DynamoLedger, *args: Any, **kwargs: Any) -> bool:
        time.sleep(0.5)  # the job is still listing when it is cancelled
        return real(self, *args, **kwargs)

    copy = FastS3Store.copy_object

    def slow_copies(self: FastS3Store, *args: Any, **kwargs: Any) -> str:
        time.sleep(0.2)  # workers slower than the listing, so batches queue up behind them
        return str(copy(self, *args, **kwargs))

    monkeypatch.setattr(DynamoLedger, "checkpoint", slow_pages)
    monkeypatch.setattr(FastS3Store, "copy_object", slow_copies)
    monkeypatch.setattr(lister, "STATUS_EVERY_S", 0.0)
    monkeypatch.setattr(lister, "PAGES_PER_STEP", 1)  # a checkpoint a page: the slow checkpoints pace the listing page by page
    env = {**ENV, "S3BULK_LIST_PAGE_SIZE": "10", "S3BULK_LIST_SHARDS": "1", "S3BULK_CONCURRENCY": "2", "S3BULK_REQUEST_CONCURRENCY": "2"}
    with StackOnMoto(template, buckets=(SRC, DST), env=env) as stack:
        seed()
        job_id = "cancelled-from-the-cli"
        deployment = Deployment(stack.state_machine_arn, ledger(stack).table, stack.bucket_of("Reports"))
        flags = cli_flags(deployment)
        _, arn = remote.submit(deployment, parse_job(json.dumps(copy_job(job_id, batch_size=5))), ClientSettings(region=REGION))

        def done() -> int:
            try:
                c = ledger(stack).counters(job_id)
            except KeyError:
                return 0
            return int(c.get("succeeded", 0))

        deadline = time.monotonic() + 30
        while done() < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        stack.worker_source.pause()  # what is queued now stays queued; invocations under way go on
        assert cli.main(["cancel", job_id, *flags]) == 0
        assert "no batch starts from now on" in capsys.readouterr().out
        ex = stack.follow(arn, timeout=60)
        # ExecutionEnded writes the report, or finds it written: a lister that saw CANCELLING before the execution was
        # stopped takes its JobHalted to Finalize, which writes the same cancelled report (as on AWS, in the moment
        # between cancel's mark and its StopExecution; after the stop the harness, as AWS, starts no task).
        assert ex.status == "ABORTED", ex.ended
        assert ex.ended and all(e.get("status") == "cancelled" or e.get("reason") == "already reported (CANCELLED)" for e in ex.ended)
        r = report_of(stack, job_id)
        c = ledger(stack).counters(job_id)
        assert r["status"] == "cancelled" and "cancelled by its owner with s3bulk cancel" in r["error"]
        assert (r["done"], r["failed"], r["listed"]) == (c["succeeded"], 0, c["listed"]) and r["done"] >= 10
        assert r["not_done"] == r["listed"] - r["done"] > 0 and r["listed"] < N
        assert ledger(stack).load(job_id).status == "CANCELLED" and ledger(stack).working(job_id) == 0

        stack.worker_source.resume()  # the queued batches reach workers, which drop them uncounted
        _drain(stack)
        assert ledger(stack).counters(job_id) == c  # nothing counted after the report
        copied = stack.s3.list_objects_v2(Bucket=DST, MaxKeys=1000).get("KeyCount", 0)
        assert copied == r["done"]  # nothing copied after the cancel but what was in hand
        assert cli.main(["report", job_id, *flags]) == 5
        capsys.readouterr()
        assert cli.main(["resume", job_id, *flags]) == 2
        assert "was cancelled, which is final" in capsys.readouterr().err
        assert cli.main(["cancel", job_id, *flags]) == 2
        assert f"'{job_id}' has ended (CANCELLED)" in capsys.readouterr().err


def test_cancelling_a_stopped_job_writes_its_cancelled_report_from_the_cli(
    template: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """A job no execution runs any more (stopped by its owner, an outage or the breaker) is cancelled by the CLI itself:
    its held batches are dropped, and the report (written again) says cancelled."""
    with StackOnMoto(template, buckets=(SRC, DST), env={**ENV, "S3BULK_OUTAGE_STOP_S": "1"}) as stack:
        seed()
        stack.worker_source.pause()
        job_id = "stopped-then-cancelled"
        deployment = Deployment(stack.state_machine_arn, ledger(stack).table, stack.bucket_of("Reports"))
        flags = cli_flags(deployment)
        _, arn = remote.submit(deployment, parse_job(json.dumps(copy_job(job_id))), ClientSettings(region=REGION))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and sum(v for k, v in stack.queue_depths().items() if k.startswith("Work")) < 2:
            time.sleep(0.1)
        assert cli.main(["stop", job_id, *flags]) == 0
        assert stack.follow(arn, timeout=30).status == "ABORTED"
        assert report_of(stack, job_id)["status"] == "stopped"
        assert cli.main(["cancel", job_id, *flags]) == 0
        assert "report written to s3://" in capsys.readouterr().out
        r = report_of(stack, job_id)
        assert (r["status"], r["done"], r["not_done"]) == ("cancelled", 0, r["listed"])
        assert ledger(stack).load(job_id).status == "CANCELLED"
        stack.worker_source.resume()
        _drain(stack)
        assert "Contents" not in stack.s3.list_objects_v2(Bucket=DST)
        assert ledger(stack).counters(job_id)["succeeded"] == 0


def _drain(stack: StackOnMoto, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while sum(stack.queue_depths().values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sum(stack.queue_depths().values()) == 0, stack.describe()


def _parked(stack: StackOnMoto, job_id: str) -> int:
    """The job's batches parked in the report bucket while it is stopped (s3bulk/aws/held.py)."""
    found = stack.s3.list_objects_v2(Bucket=stack.bucket_of("Reports"), Prefix=f"jobs/{job_id}/parked/")
    return sum(1 for o in found.get("Contents", []) if o["Size"])


def _failure_parts(stack: StackOnMoto, job_id: str) -> dict[str, str]:
    """key -> error code from every failures part the workers wrote for the job."""
    bucket = stack.bucket_of("Reports")
    out: dict[str, str] = {}
    for o in stack.s3.list_objects_v2(Bucket=bucket, Prefix=f"jobs/{job_id}/failures/").get("Contents", []):
        for line in stack.s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read().decode().splitlines():
            failure = json.loads(line)
            out[failure["key"]] = failure["error"]
    return out
