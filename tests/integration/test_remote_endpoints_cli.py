"""The stack commands, run as a user runs them, with S3 on one server and everything else on another: the report bucket
behind $AWS_ENDPOINT_URL_S3 (SeaweedFS), DynamoDB, Step Functions and CloudFormation behind $AWS_ENDPOINT_URL (moto).

The stack harness (s3bulk/testing/stack/__init__.py) runs moto in-process (mock_aws), where no child process can
reach it; this deployment is the shape `s3bulk submit` and friends read (test_remote_cli.py's), on moto's server."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest

from s3bulk.aws.ledger import initial_item
from s3bulk.job import parse_job
from tests.integration.aws_harness import REGION, create_table
from tests.integration.conftest import cli_env, client_for, run_cli

pytestmark = pytest.mark.seaweed

JOB = {"operation": "copy", "source": {"bucket": "src-bucket", "prefix": "in/"}, "destination": {"bucket": "dst-bucket"}}


def test_submit_status_watch_cancel_and_retry_send_s3_to_aws_endpoint_url_s3_and_the_rest_to_aws_endpoint_url(
    seaweed: str, moto_endpoint: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    def moto(service: str) -> Any:
        session = boto3.session.Session(aws_access_key_id="k", aws_secret_access_key="s", region_name=REGION)
        return session.client(service, endpoint_url=moto_endpoint)  # type: ignore[call-overload]

    s3 = client_for(seaweed)
    reports = bucket_factory(s3, "reports")
    ddb, sfn = moto("dynamodb"), moto("stepfunctions")
    table, stack = f"ledger-{uuid.uuid4().hex[:8]}", f"S3Bulk{uuid.uuid4().hex[:8]}"
    create_table(ddb, table)
    role = moto("iam").create_role(RoleName=f"r-{stack}", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    arn = sfn.create_state_machine(
        name=f"jobs-{stack}", definition=json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}), roleArn=role
    )["stateMachineArn"]
    outputs = {"StateMachineArn": arn, "LedgerTable": table, "ReportBucket": reports}
    template = {"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}, "Outputs": {k: {"Value": v} for k, v in outputs.items()}}
    moto("cloudformation").create_stack(StackName=stack, TemplateBody=json.dumps(template))
    assert reports not in {b["Name"] for b in moto("s3").list_buckets()["Buckets"]}  # S3 is only on SeaweedFS

    env = cli_env(tmp_path) | {"AWS_ENDPOINT_URL_S3": seaweed, "AWS_ENDPOINT_URL": moto_endpoint, "AWS_DEFAULT_REGION": REGION}
    job_file = tmp_path / "job.json"
    job_file.write_text(json.dumps(JOB))

    def cli(*args: str) -> str:
        done = run_cli(*args, "--stack", stack, env=env, timeout=120)
        assert done.returncode in {0, 1}, f"{args}: {done.returncode}\n{done.stdout}{done.stderr}"
        assert "Traceback" not in done.stderr, done.stderr
        return done.stdout + f"\nexit {done.returncode}"

    # submit: the stack's outputs from CloudFormation, the execution on Step Functions
    out = cli("submit", str(job_file))
    job_id = out.split()[1]
    [execution] = sfn.list_executions(stateMachineArn=arn)["executions"]
    assert execution["name"].startswith(f"{job_id}-") and out.endswith("exit 0")

    # status and cancel: the ledger on DynamoDB, the running execution stopped on Step Functions
    ddb.put_item(TableName=table, Item=initial_item(job_id, parse_job(json.dumps(JOB)), execution=execution["name"]))
    assert "RUNNING" in cli("status", job_id)
    assert "stopped; its report will say cancelled" in cli("cancel", job_id)
    assert sfn.describe_execution(executionArn=execution["executionArn"])["status"] == "ABORTED"

    # watch and retry: an ended job's report and failures.jsonl in the report bucket on SeaweedFS
    item = initial_item("job-done", parse_job(json.dumps(JOB)))
    item["status"] = {"S": "FAILED"}
    ddb.put_item(TableName=table, Item=item)
    doc = {"job_id": "job-done", "status": "failed", "listed": 3, "succeeded": 1, "failed": 2, "failures_by_code": {"AccessDenied": 2}}
    s3.put_object(Bucket=reports, Key="jobs/job-done/report.json", Body=json.dumps(doc).encode())
    failures = [{"key": f"in/k{i}", "error": "AccessDenied", "message": "denied"} for i in range(2)]
    s3.put_object(Bucket=reports, Key="jobs/job-done/failures.jsonl", Body="".join(json.dumps(f) + "\n" for f in failures).encode())
    watched = cli("watch", "job-done", "--every", "1")
    assert "AccessDenied" in watched and watched.endswith("exit 1")  # the report's outcome: failed
    retried = cli("retry", "job-done")
    assert "retrying 2 failed object(s) of job-done as job job-done-retry-1" in retried
    manifest = s3.get_object(Bucket=reports, Key="jobs/job-done-retry-1/retry-manifest.csv")["Body"].read().decode()
    assert manifest.splitlines() == ["src-bucket,in/k0", "src-bucket,in/k1"]
    assert len(sfn.list_executions(stateMachineArn=arn)["executions"]) == 2
