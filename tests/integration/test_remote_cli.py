"""`s3bulk submit / status / report` against a (moto) deployment, found through the stack's outputs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

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


def test_submit_starts_an_execution_named_after_the_job_id(deployed: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["submit", "events/copy-prefix.json"]) == 0
    out = capsys.readouterr().out
    job_id = out.split()[1]
    [execution] = deployed["sfn"].list_executions(stateMachineArn=deployed["arn"])["executions"]
    assert execution["name"] == job_id
    sent = json.loads(deployed["sfn"].describe_execution(executionArn=execution["executionArn"])["input"])
    assert sent["job_id"] == job_id and sent["source"]["bucket"] == "src-bucket"


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
    assert main(["report", "job-10"]) == 2
    assert "no report for 'job-10'" in capsys.readouterr().err


def test_a_missing_stack_is_a_usage_error_naming_the_flags(deployed: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "job-1", "--stack", "Elsewhere"]) == 2
    assert "--state-machine-arn, --table and --report-bucket" in capsys.readouterr().err
