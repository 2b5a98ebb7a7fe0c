"""The synthesized state machine, executed by moto's Step Functions interpreter.

Lambda tasks return canned results (moto runs no Lambda code without Docker);
the ledger entry and the Wait/CheckProgress loop run for real against moto's
DynamoDB, so the loop's exit conditions are what is being tested.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_cdk.assertions import Template
from moto import mock_aws
from moto.awslambda_simple.models import lambda_simple_backends
from moto.core.models import DEFAULT_ACCOUNT_ID

from app import build_app
from s3bulk.aws.ledger import initial_item
from s3bulk.job import parse_job
from tests.integration.aws_harness import REGION, create_table

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
TABLE = "s3bulk-ledger"
JOB = {"operation": "copy", "source": {"bucket": "src-bucket", "prefix": "in/"}, "destination": {"bucket": "dst-bucket", "prefix": "out/"}}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    app = build_app({"read_buckets": "src-bucket,dst-bucket", "write_buckets": "dst-bucket", "schedules_file": ""})
    return dict(Template.from_stack(app.node.find_child("S3Bulk")).to_json())  # type: ignore[arg-type]


def resolve(value: Any, names: dict[str, str]) -> str:
    """Enough of CloudFormation's intrinsics for a state machine definition."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return str(sep).join(resolve(p, names) for p in parts)
    if "Ref" in value:
        return names[value["Ref"]]
    if "Fn::GetAtt" in value:
        return names[f"{value['Fn::GetAtt'][0]}.{value['Fn::GetAtt'][1]}"]
    raise AssertionError(f"unexpected intrinsic {value}")


@pytest.fixture
def aws(template: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(k, v)
    with mock_aws(config={"lambda": {"use_docker": False}, "stepfunctions": {"execute_state_machine": True}}):
        ddb = boto3.client("dynamodb", region_name=REGION)
        create_table(ddb, TABLE)
        iam = boto3.client("iam", region_name=REGION)
        role = iam.create_role(RoleName="sfn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        lam = boto3.client("lambda", region_name=REGION)
        names = {
            "AWS::Partition": "aws",
            "AWS::Region": REGION,
            "AWS::AccountId": DEFAULT_ACCOUNT_ID,
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": "S3Bulk",
        }
        for logical, res in template["Resources"].items():
            if res["Type"] == "AWS::Lambda::Function":
                arn = lam.create_function(FunctionName=logical, Runtime="python3.11", Role=role, Handler="h.h", Code={"ZipFile": b"0"})[
                    "FunctionArn"
                ]
                names[f"{logical}.Arn"] = arn
            elif res["Type"] == "AWS::DynamoDB::Table":
                names[logical] = TABLE
                names[f"{logical}.Arn"] = f"arn:aws:dynamodb:{REGION}:{DEFAULT_ACCOUNT_ID}:table/{TABLE}"
        [sm] = [r for r in template["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
        definition = resolve(sm["Properties"]["DefinitionString"], names)
        sfn = boto3.client("stepfunctions", region_name=REGION)
        arn = sfn.create_state_machine(name="jobs", definition=definition, roleArn=role)["stateMachineArn"]
        queue = lambda_simple_backends[DEFAULT_ACCOUNT_ID][REGION].lambda_simple_results_queue
        queue.clear()
        yield {"sfn": sfn, "ddb": ddb, "arn": arn, "canned": queue, "definition": json.loads(definition)}
        queue.clear()


def canned(aws: dict[str, Any], *responses: dict[str, Any], over_threshold: bool = False) -> None:
    """Lambda results in invocation order: Validate, PlanListing, ListShard, AfterListing, then `responses` (AwaitCompletion, CheckProgress ...),
    then Finalize."""
    job = parse_job(json.dumps(JOB))
    item = initial_item("job-1", job)
    aws["canned"].extend(
        [
            json.dumps({"job_id": "job-1", "item": item, "poll_seconds": 1}),  # Validate
            json.dumps({"job_id": "job-1", "shards": [0], "guard": False}),  # PlanListing
            json.dumps({"job_id": "job-1", "shard": 0, "done": True, "pages": 3}),  # ListShard
            json.dumps({"job_id": "job-1", "listing_done": True}),  # AfterListing
            *(json.dumps(r) for r in responses),
            json.dumps(
                {"job_id": "job-1", "status": "failed" if over_threshold else "succeeded", "over_threshold": over_threshold}
            ),  # Finalize
        ]
    )


def resume_when_waiting(aws: dict[str, Any], execution: list[str]) -> threading.Thread:
    """Play the worker that counts the last batch: send the token the execution is waiting on."""

    def run() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if execution:
                for e in aws["sfn"].get_execution_history(executionArn=execution[0])["events"]:
                    params = e.get("taskScheduledEventDetails", {}).get("parameters")
                    if params and "token" in params:
                        token = json.loads(params)["Payload"]["token"]
                        aws["sfn"].send_task_success(taskToken=token, output=json.dumps({"job_id": "job-1", "complete": True}))
                        return
            time.sleep(0.1)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def run(aws: dict[str, Any], timeout: float = 60, started: list[str] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    sfn = aws["sfn"]
    arn = sfn.start_execution(stateMachineArn=aws["arn"], input=json.dumps(JOB))["executionArn"]
    if started is not None:
        started.append(arn)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        desc = sfn.describe_execution(executionArn=arn)
        if desc["status"] != "RUNNING":
            return desc, sfn.get_execution_history(executionArn=arn)["events"]
        time.sleep(0.2)
    raise AssertionError("execution did not finish")


def entered(events: list[dict[str, Any]]) -> list[str]:
    return [e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e]


def test_a_job_whose_last_batch_sends_the_token_finalizes_without_polling(aws: dict[str, Any]) -> None:
    canned(aws, {"job_id": "job-1", "resumed": False})
    started: list[str] = []
    resume_when_waiting(aws, started)
    desc, events = run(aws, started=started)
    assert desc["status"] == "SUCCEEDED"
    assert entered(events) == [
        "ContinuedFrom?",
        "Validate",
        "CreateLedgerEntry",
        "KeepIdsOnly",
        "PlanListing",
        "ContinuedJob?",
        "DeleteGuard?",
        "Confirm?",
        "ListShards",
        "ListShard",
        "ShardDone?",
        "ShardListed",
        "AfterListing",
        "ListingDone?",
        "AwaitCompletion",
        "Finalize",
        "ReportWritten?",
        "WithinTolerance?",
        "JobSucceeded",
    ]
    item = aws["ddb"].get_item(TableName=TABLE, Key={"pk": {"S": "job#job-1"}, "sk": {"S": "job"}})["Item"]
    assert item["spec"]["S"].startswith('{"operation":"copy"')  # the ledger entry came from the real PutItem


def test_when_no_token_comes_the_safety_net_asks_the_ledger_until_the_job_is_complete(aws: dict[str, Any]) -> None:
    waiting = {"job_id": "job-1", "resumed": False}
    canned(
        aws,
        waiting,
        {"job_id": "job-1", "complete": False, "pending": 2, "listing_done": True},
        waiting,
        {"job_id": "job-1", "complete": True, "pending": 0, "listing_done": True},
    )
    desc, events = run(aws)
    assert desc["status"] == "SUCCEEDED"
    names = entered(events)
    assert (names.count("AwaitCompletion"), names.count("CheckProgress")) == (2, 2)
    assert names[-4:] == ["Finalize", "ReportWritten?", "WithinTolerance?", "JobSucceeded"]
    # One wait-and-check cycle costs ~12 events (the 14-day bound in docs/architecture.md assumes at most 15).
    starts = [i for i, e in enumerate(events) if e.get("stateEnteredEventDetails", {}).get("name") in {"AwaitCompletion", "Finalize"}]
    assert (starts[-1] - starts[0]) / 2 <= 15


def test_failures_over_the_threshold_end_in_fail(aws: dict[str, Any]) -> None:
    canned(aws, {"job_id": "job-1", "resumed": False}, over_threshold=True)
    started: list[str] = []
    resume_when_waiting(aws, started)
    desc, events = run(aws, started=started)
    assert desc["status"] == "FAILED"
    failed = [e for e in events if e["type"] == "ExecutionFailed"]
    assert failed and failed[0]["executionFailedEventDetails"]["error"] == "TooManyFailures"


def test_finalize_is_called_again_until_its_report_is_written(aws: dict[str, Any]) -> None:
    canned(aws, {"job_id": "job-1", "resumed": False}, {"job_id": "job-1", "report_done": False}, {"job_id": "job-1", "report_done": False})
    started: list[str] = []
    resume_when_waiting(aws, started)
    desc, events = run(aws, started=started)
    assert desc["status"] == "SUCCEEDED"
    names = entered(events)
    assert names[names.index("Finalize") :] == [
        "Finalize",
        "ReportWritten?",
        "Finalize",
        "ReportWritten?",
        "Finalize",
        "ReportWritten?",
        "WithinTolerance?",
        "JobSucceeded",
    ]
