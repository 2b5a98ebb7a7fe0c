"""Talk to a deployed stack: submit a job, read its ledger entry, fetch its report."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from s3bulk.aws.ledger import DynamoLedger, JobRecord
from s3bulk.aws.reportbucket import ReportBucket
from s3bulk.job import Job, JobError, new_job_id
from s3bulk.s3.clients import ClientSettings, make_client, make_s3_client

DEFAULT_STACK = "S3Bulk"


class DeploymentError(Exception):
    """The stack or its outputs could not be found; str() says what to pass instead."""


@dataclass(frozen=True, slots=True)
class Deployment:
    state_machine_arn: str
    table: str
    report_bucket: str

    @classmethod
    def resolve(
        cls,
        settings: ClientSettings,
        stack: str = DEFAULT_STACK,
        *,
        state_machine_arn: str | None = None,
        table: str | None = None,
        report_bucket: str | None = None,
    ) -> Deployment:
        """Explicit values win; anything missing comes from the CloudFormation stack's outputs."""
        if state_machine_arn and table and report_bucket:
            return cls(state_machine_arn, table, report_bucket)
        try:
            stacks = make_client("cloudformation", settings).describe_stacks(StackName=stack)["Stacks"]
        except Exception as exc:  # noqa: BLE001 - any failure here has the same remedy
            raise DeploymentError(
                f"--stack {stack}: could not read the stack ({exc}); deploy it or pass --state-machine-arn, --table and --report-bucket"
            ) from None
        outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
        try:
            return cls(
                state_machine_arn or outputs["StateMachineArn"], table or outputs["LedgerTable"], report_bucket or outputs["ReportBucket"]
            )
        except KeyError as missing:
            raise DeploymentError(f"--stack {stack}: output {missing} is missing; is this an s3bulk stack?") from None


def submit(deployment: Deployment, job: Job, settings: ClientSettings) -> tuple[str, str]:
    """Start an execution named after the job id, so status and report can find it."""
    job_id = new_job_id(job)
    doc = json.loads(job.model_dump_json(exclude_none=True))
    doc["job_id"] = job_id
    sfn = make_client("stepfunctions", settings)
    try:
        r = sfn.start_execution(stateMachineArn=deployment.state_machine_arn, name=job_id, input=json.dumps(doc))
    except sfn.exceptions.ExecutionAlreadyExists:
        raise JobError(f"job.job_id: {job_id!r} was already submitted; choose another job_id or drop it to get a fresh one") from None
    return job_id, str(r["executionArn"])


def status(deployment: Deployment, job_id: str, settings: ClientSettings) -> JobRecord:
    ledger = DynamoLedger(make_client("dynamodb", settings), deployment.table)
    try:
        return ledger.load(job_id)
    except KeyError:
        raise JobError(f"job_id: {job_id!r} is not in the ledger {deployment.table}; check the id (s3bulk submit prints it)") from None


def fetch_report(deployment: Deployment, job_id: str, settings: ClientSettings) -> dict[str, Any]:
    reports = ReportBucket(make_s3_client(settings, 4), deployment.report_bucket)
    try:
        return reports.read_report(job_id)
    except Exception as exc:  # noqa: BLE001 - NoSuchKey and friends: the job has not finished
        raise JobError(
            f"job_id: no report for {job_id!r} in s3://{deployment.report_bucket}/jobs/ yet ({type(exc).__name__}); it is written when the job finishes"
        ) from None
