"""`s3bulk submit / status / report` against a (moto) deployment, found through the stack's outputs."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse, HTTPHeaders
from moto import mock_aws

from s3bulk.aws import doctor
from s3bulk.aws.ledger import initial_item
from s3bulk.cli import main
from s3bulk.job import parse_job
from tests.integration.aws_harness import REGION, create_table

TABLE, REPORTS = "s3bulk-ledger", "s3bulk-reports"


@pytest.fixture
def deployed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[dict[str, Any]]:
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name=REGION)
        create_table(ddb, TABLE)
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=REPORTS)
        role = boto3.client("iam", region_name=REGION).create_role(RoleName="r", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        sfn = boto3.client("stepfunctions", region_name=REGION)
        arn = sfn.create_state_machine(
            name="jobs", definition=json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}), roleArn=role
        )["stateMachineArn"]
        outputs = {"StateMachineArn": arn, "LedgerTable": TABLE, "ReportBucket": REPORTS}
        template = {"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}, "Outputs": {k: {"Value": v} for k, v in outputs.items()}}
        boto3.client("cloudformation", region_name=REGION).create_stack(StackName="S3Bulk", TemplateBody=json.dumps(template))
        yield {"sfn": sfn, "ddb": ddb, "s3": s3, "arn": arn}


def test_each_submission_has_an_execution_name_of_its_own_that_starts_with_the_job_id(
    deployed: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["submit", "events/copy-prefix.json"]) == 0
    job_id = capsys.readouterr().out.split()[1]
    [execution] = deployed["sfn"].list_executions(stateMachineArn=deployed["arn"])["executions"]
    assert execution["name"].startswith(f"{job_id}-") and len(execution["name"]) <= 80
    sent = json.loads(deployed["sfn"].describe_execution(executionArn=execution["executionArn"])["input"])
    assert sent["job_id"] == job_id and sent["source"]["bucket"] == "src-bucket"


def _ledger_entry(deployed: dict[str, Any], job_id: str, status: str, spec: str = "events/copy-prefix.json") -> None:
    item = initial_item(job_id, parse_job(Path(spec).read_text()))
    item["status"] = {"S": status}
    deployed["ddb"].put_item(TableName=TABLE, Item=item)


def test_resume_sends_the_stored_spec_again_under_a_new_execution_name(
    deployed: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    long_id = "j" * 80  # the longest job id still leaves room for the name's own suffix
    for job_id in ("job-stopped", long_id):
        _ledger_entry(deployed, job_id, "STOPPED")
        assert main(["resume", job_id]) == 0
        assert main(["resume", job_id]) == 0  # a second resume (after another stop) needs a name of its own again
    assert capsys.readouterr().out.startswith("resumed job-stopped\nexecution arn:")
    executions = deployed["sfn"].list_executions(stateMachineArn=deployed["arn"])["executions"]
    names = [e["name"] for e in executions]
    assert len(set(names)) == 4 and all(len(n) <= 80 for n in names)
    sent = [json.loads(deployed["sfn"].describe_execution(executionArn=e["executionArn"])["input"]) for e in executions]
    stored = json.loads(parse_job(Path("events/copy-prefix.json").read_text()).model_dump_json(exclude_none=True))
    assert sorted(s.pop("job_id") for s in sent) == sorted(["job-stopped"] * 2 + [long_id] * 2)
    assert all(s == stored for s in sent)


@pytest.mark.parametrize(
    ("status", "says"),
    [("RUNNING", "is running; follow it with s3bulk status job-x"), ("SUCCEEDED", "has finished (s3bulk report job-x)")],
)
def test_resume_refuses_a_running_or_succeeded_job_and_starts_nothing(
    deployed: dict[str, Any], capsys: pytest.CaptureFixture[str], status: str, says: str
) -> None:
    _ledger_entry(deployed, "job-x", status)
    assert main(["resume", "job-x"]) == 2
    assert capsys.readouterr().err == f"error: job_id: 'job-x' {says}" + (
        ", or give a new job another job_id\n" if status == "RUNNING" else "; give the job another job_id to run it again\n"
    )
    assert main(["resume", "job-unknown"]) == 2
    assert "is not in the ledger" in capsys.readouterr().err
    assert deployed["sfn"].list_executions(stateMachineArn=deployed["arn"])["executions"] == []


def test_submitting_a_job_id_again_with_another_spec_is_refused(
    deployed: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _ledger_entry(deployed, "job-y", "FAILED")
    changed = json.loads(Path("events/copy-prefix.json").read_text())
    changed["job_id"] = "job-y"
    changed["source"]["prefix"] = "elsewhere/"
    (tmp_path / "changed.json").write_text(json.dumps(changed))
    assert main(["submit", str(tmp_path / "changed.json")]) == 2
    assert (
        "job.job_id: 'job-y' was submitted before with another spec; resume it as it was (s3bulk resume job-y)" in capsys.readouterr().err
    )
    assert deployed["sfn"].list_executions(stateMachineArn=deployed["arn"])["executions"] == []


def test_submit_refuses_a_bad_job_before_touching_aws(deployed: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"operation": "delete", "source": {"bucket": "src-bucket"}}')
    assert main(["submit", str(bad)]) == 2
    assert capsys.readouterr().err.startswith("error: job.source.prefix:")
    assert deployed["sfn"].list_executions(stateMachineArn=deployed["arn"])["executions"] == []


def test_status_shows_the_ledger_counters(deployed: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    item = initial_item("job-7", parse_job(Path("events/copy-prefix.json").read_text()))
    item["succeeded"] = {"N": "1234"}
    deployed["ddb"].put_item(TableName=TABLE, Item=item)
    assert main(["status", "job-7"]) == 0
    out = capsys.readouterr().out
    assert "RUNNING" in out and "1,234" in out


def test_status_of_an_unknown_job_exits_2(deployed: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "nope"]) == 2
    assert "is not in the ledger" in capsys.readouterr().err


def test_report_fetches_the_finished_report_and_exits_by_its_status(
    deployed: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = {"job_id": "job-9", "status": "failed", "failed": 1, "failures": [{"key": "k", "error": "NoSuchKey", "message": "gone"}]}
    deployed["s3"].put_object(Bucket=REPORTS, Key="jobs/job-9/report.json", Body=json.dumps(doc).encode())
    assert main(["report", "job-9", "-o", str(tmp_path / "r.json")]) == 1
    assert json.loads((tmp_path / "r.json").read_text()) == doc
    tripped = {"job_id": "job-11", "status": "stopped", "stop_reason": "failure_breaker", "failed": 600}
    deployed["s3"].put_object(Bucket=REPORTS, Key="jobs/job-11/report.json", Body=json.dumps(tripped).encode())
    assert main(["report", "job-11"]) == 4  # the failure breaker's exit code, as a local run's
    assert main(["report", "job-10"]) == 2
    assert "no report for 'job-10'" in capsys.readouterr().err


def test_a_missing_stack_is_a_usage_error_naming_the_flags(deployed: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "job-1", "--stack", "Elsewhere"]) == 2
    assert "--state-machine-arn, --table and --report-bucket" in capsys.readouterr().err


@pytest.mark.parametrize(("needed", "reserved", "code"), [(70, 0, 0), (5000, 0, 1), (960, 940, 0), (960, 0, 1)])
def test_doctor_compares_the_accounts_unreserved_concurrency_with_what_a_job_needs(
    deployed: dict[str, Any], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, needed: int, reserved: int, code: int
) -> None:
    """What the Lister and the Worker reserve is theirs already (out of the unreserved count AWS reports): only the rest
    of a job's steps must fit in what is unreserved."""
    outputs = {"StateMachineArn": deployed["arn"], "LedgerTable": TABLE, "ReportBucket": REPORTS, "LambdaConcurrencyNeeded": str(needed)}
    if reserved:
        outputs["LambdaConcurrencyReserved"] = str(reserved)
    template = {"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}, "Outputs": {k: {"Value": v} for k, v in outputs.items()}}
    boto3.client("cloudformation", region_name=REGION).create_stack(StackName="Sized", TemplateBody=json.dumps(template))
    # moto (5.2) does not answer GetAccountSettings: AWS's answer for an account of 1,000 with 120 reserved, in its shape.
    limit = {"ConcurrentExecutions": 1000, "UnreservedConcurrentExecutions": 880, "CodeSizeZipped": 52428800}
    real = doctor.__dict__["make_client"]

    def make_client(service: str, *args: Any, **kwargs: Any) -> Any:
        client = real(service, *args, **kwargs)
        if service == "lambda":
            answer = {"AccountLimit": limit, "AccountUsage": {"FunctionCount": 7, "TotalCodeSize": 1}, "ResponseMetadata": {}}
            reply = AWSResponse("https://lambda.invalid", 200, HTTPHeaders(), None)
            client.meta.events.register("before-call.lambda.GetAccountSettings", lambda **_: (reply, answer))
        return client

    monkeypatch.setattr(doctor, "make_client", make_client)
    assert main(["doctor", "--stack", "Sized"]) == code
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        f"Lambda concurrency in {REGION}: {limit['UnreservedConcurrentExecutions']:,} unreserved of "
        f"{limit['ConcurrentExecutions']:,}; one job of this stack runs up to {needed:,} at once"
        + (f", {reserved:,} of them reserved by its Lister and Worker" if reserved else "")
    )
    if code:
        assert out[1].startswith("short: listers and workers will be throttled and retried") and "stops its job" in out[1]
        assert f"--quota-code L-B99A9384 --desired-value {needed + 120} " in out[2]  # the 120 reserved stay reserved
    else:
        assert out[1].startswith("ok: ")
    assert main(["submit", "events/copy-prefix.json", "--stack", "Sized"]) == 0  # a short account is told, not refused
    note = capsys.readouterr().err
    assert note.startswith("note: Lambda concurrency in ") == bool(code), note
    assert main(["doctor"]) == 2  # the fixture's stack predates the output
    assert "output LambdaConcurrencyNeeded is missing; redeploy it" in capsys.readouterr().err


def test_watch_follows_a_deployed_job_until_it_ends_then_shows_its_report_and_exits_by_it(
    deployed: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    item = initial_item("job-w", parse_job(Path("events/copy-prefix.json").read_text()))
    item["listed"], item["succeeded"] = {"N": "1000"}, {"N": "250"}
    deployed["ddb"].put_item(TableName=TABLE, Item=item)
    doc = {"job_id": "job-w", "status": "failed", "listed": 1000, "succeeded": 998, "failed": 2, "failures_by_code": {"AccessDenied": 2}}

    def finish() -> None:
        key = {"pk": {"S": "job#job-w"}, "sk": {"S": "job"}}
        deployed["s3"].put_object(Bucket=REPORTS, Key="jobs/job-w/report.json", Body=json.dumps(doc).encode())
        deployed["ddb"].update_item(
            TableName=TABLE,
            Key=key,
            UpdateExpression="SET #s = :s",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":s": {"S": "FAILED"}},
        )

    timer = threading.Timer(1.5, finish)
    timer.start()
    assert main(["watch", "job-w", "--every", "1"]) == 1  # the report's outcome: failed
    timer.join()
    out = capsys.readouterr().out
    assert out.startswith("job-w running  250/1,000")
    assert "job-w failed" in out and "AccessDenied" in out and "998" in out
    assert main(["watch", "job-w", "--every", "0.1"]) == 2
    assert "--every: poll at most once a second" in capsys.readouterr().err


def test_jobs_lists_the_recent_jobs_newest_first_from_the_ledgers_jobs_index(
    deployed: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    job = parse_job(Path("events/copy-prefix.json").read_text())
    for n, (job_id, status) in enumerate((("old-job", "SUCCEEDED"), ("mid-job", "FAILED"), ("new-job", "RUNNING"))):
        item = initial_item(job_id, job, now=1_790_000_000 + n * 3600)
        item["status"] = {"S": status}
        item["listed"], item["succeeded"] = {"N": str(100 * (n + 1))}, {"N": str(90 * (n + 1))}
        deployed["ddb"].put_item(TableName=TABLE, Item=item)
    deployed["ddb"].put_item(TableName=TABLE, Item={"pk": {"S": "job#new-job"}, "sk": {"S": "batch#b1"}})  # not a job item
    assert main(["jobs", "--json", "--limit", "2"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["job_id"], r["status"], r["listed"], r["done"]) for r in rows] == [
        ("new-job", "RUNNING", 300, 270),
        ("mid-job", "FAILED", 200, 180),
    ]
    assert rows[0]["started"] == "2026-09-21 16:13:20Z" and rows[0]["operation"] == "copy"
    assert main(["jobs"]) == 0
    out = capsys.readouterr().out
    assert out.index("new-job") < out.index("mid-job") < out.index("old-job")
    assert main(["jobs", "--limit", "0"]) == 2


def test_tune_changes_the_workers_event_source_concurrency_while_jobs_run_and_refuses_what_sqs_would(
    deployed: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    lam, sqs = boto3.client("lambda", region_name=REGION), boto3.client("sqs", region_name=REGION)
    role = boto3.client("iam", region_name=REGION).create_role(RoleName="w", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    lam.create_function(FunctionName="worker", Runtime="python3.11", Role=role, Handler="h.h", Code={"ZipFile": b"0"})
    queue = sqs.get_queue_attributes(QueueUrl=sqs.create_queue(QueueName="work")["QueueUrl"], AttributeNames=["QueueArn"])
    mapping = lam.create_event_source_mapping(
        EventSourceArn=queue["Attributes"]["QueueArn"], FunctionName="worker", ScalingConfig={"MaximumConcurrency": 50}
    )["UUID"]
    outputs = {"StateMachineArn": deployed["arn"], "LedgerTable": TABLE, "ReportBucket": REPORTS, "WorkerEventSourceMapping": mapping}
    template = {"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}, "Outputs": {k: {"Value": v} for k, v in outputs.items()}}
    boto3.client("cloudformation", region_name=REGION).create_stack(StackName="Tuned", TemplateBody=json.dumps(template))
    assert main(["tune", "--stack", "Tuned", "--max-concurrency", "200"]) == 0
    assert "at most 200 at once (was 50)" in capsys.readouterr().out
    assert lam.get_event_source_mapping(UUID=mapping)["ScalingConfig"] == {"MaximumConcurrency": 200}
    with pytest.raises(SystemExit) as refused:  # while parsing, before the stack is read
        main(["tune", "--stack", "Tuned", "--max-concurrency", "1"])
    assert refused.value.code == 2 and "--max-concurrency: 1 is outside 2-1000" in capsys.readouterr().err
    assert main(["tune", "--max-concurrency", "20"]) == 2  # the default stack predates the output: says to redeploy
    assert "no WorkerEventSourceMapping output; redeploy" in capsys.readouterr().err


def test_watch_right_after_submit_waits_for_the_job_to_be_recorded_then_follows_it(
    deployed: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Validate makes the ledger entry a moment after the execution starts: watch says the job is starting, not exit 2."""
    deployed["sfn"].start_execution(stateMachineArn=deployed["arn"], name="job-s-0123abcd", input=json.dumps({"job_id": "job-s"}))
    item = initial_item("job-s", parse_job(Path("events/copy-prefix.json").read_text()))
    item["listed"], item["succeeded"] = {"N": "10"}, {"N": "10"}
    doc = {"job_id": "job-s", "status": "succeeded", "listed": 10, "succeeded": 10, "failed": 0}

    def recorded() -> None:
        deployed["ddb"].put_item(TableName=TABLE, Item=item)

    def finished() -> None:
        deployed["s3"].put_object(Bucket=REPORTS, Key="jobs/job-s/report.json", Body=json.dumps(doc).encode())
        deployed["ddb"].update_item(
            TableName=TABLE,
            Key={"pk": {"S": "job#job-s"}, "sk": {"S": "job"}},
            UpdateExpression="SET #s = :s",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":s": {"S": "SUCCEEDED"}},
        )

    timers = [threading.Timer(1.5, recorded), threading.Timer(2.5, finished)]
    for t in timers:
        t.start()
    assert main(["watch", "job-s", "--every", "1"]) == 0
    for t in timers:
        t.join()
    out = capsys.readouterr().out
    assert out.startswith("job-s starting"), out
    assert "job-s running  10/10" in out or "job-s succeeded" in out, out
    assert main(["watch", "no-such-job", "--every", "1"]) == 2  # no execution of it either: the one-line error
    assert "'no-such-job' is not in the ledger" in capsys.readouterr().err
