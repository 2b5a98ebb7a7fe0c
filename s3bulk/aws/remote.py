"""Talk to a deployed stack: submit a job, read its ledger entry, fetch its report."""

from __future__ import annotations

import contextlib
import json
import secrets
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from s3bulk.aws import DEFAULT_STACK
from s3bulk.aws.allowlist import RETRY_MANIFEST
from s3bulk.aws.finish import OWNER_CANCELLED, OWNER_STOPPED, finalize
from s3bulk.aws.ledger import CANCELLED, CANCELLING, DynamoLedger, JobRecord
from s3bulk.aws.reportbucket import ReportBucket
from s3bulk.job import Job, JobError, Manifest, new_job_id
from s3bulk.job.retry import failed_objects, manifest_rows, refused_rows, retry_job
from s3bulk.s3.clients import ClientSettings, make_client, make_s3_client, region_of

# What a stack command says when it has no Region to find the stack in (botocore's NoRegionError).
NO_REGION = "no AWS Region is set; pass --region REGION (the stack's) or set AWS_REGION"


def deploy_file_defaults(path: Path = Path("deploy.json")) -> dict[str, str]:
    """The Region and stack name of the deploy file beside which the CLI runs (config/deploy.example.json), so
    submit and friends go where `cdk deploy` went without --region or --stack; nothing when there is none."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict):
        return {}
    return {k: str(doc[k]) for k in ("region", "stack_name") if isinstance(doc.get(k), str) and doc[k]}


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
        if region_of(settings) is None:  # "could not read the stack ... deploy it" would send its owner the wrong way
            raise DeploymentError(f"--stack {stack}: {NO_REGION}")
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


def execution_name(job_id: str) -> str:
    """A name of its own for each submission: Step Functions refuses a name used in the last 90 days, even by a
    closed execution, so a job resumed after a stop cannot reuse its first execution's name. The job id travels
    in the input (Validate and the end handler read it there); the name only has to start with it for people."""
    return f"{job_id[:71]}-{secrets.token_hex(4)}"


def submit(deployment: Deployment, job: Job, settings: ClientSettings) -> tuple[str, str]:
    """Start an execution of the job, refusing up front (no execution started) a job id that runs already or
    ran with another spec; the state machine refuses those too (ReopenJob), this says so sooner."""
    job_id = new_job_id(job)
    if job.job_id:
        _check_resubmission(deployment, job_id, job, settings)
    return job_id, _start(deployment, job_id, json.loads(job.model_dump_json(exclude_none=True)), settings)


def resume(deployment: Deployment, job_id: str, settings: ClientSettings) -> str:
    """Go on with a stopped, cancelled or failed job from its checkpoints: the spec it was submitted with, sent again
    under its id (ReopenJob). Counted batches are never redone; queued ones are worked once the job runs again."""
    rec = status(deployment, job_id, settings)
    _refuse_unless_resumable(job_id, rec.status)
    doc = json.loads(rec.job.model_dump_json(exclude_none=True))
    return _start(deployment, job_id, doc, settings)


def stop(deployment: Deployment, job_id: str, settings: ClientSettings) -> str:
    """Stop a running job: its execution is stopped (ABORTED), which the stack takes as a resumable stop (listers send
    no more pages, workers hold its queued batches uncounted, the report says stopped); `resume` goes on with it.

    A long job goes on in a new execution now and then (aws/history.py), which adopts it only while it is RUNNING
    (AdoptJob). So the ledger is marked STOPPING right after the execution is stopped, and no execution adopts the job
    from then on; one that adopted it in between is stopped too. One that its execution had just started, and that now
    cannot adopt it, leaves nobody to write the report: this command writes it. Returns the execution it stopped."""
    rec = status(deployment, job_id, settings)
    if rec.status != "RUNNING" or not rec.execution:
        raise JobError(f"job_id: {job_id!r} is not running ({rec.status}); nothing to stop (s3bulk status {job_id})")
    sfn = make_client("stepfunctions", settings)
    ledger = DynamoLedger(make_client("dynamodb", settings), deployment.table)
    arn = _stop_execution(sfn, deployment, rec.execution)
    reason = f"stopped by its owner (stopped with s3bulk stop); resume it with s3bulk resume {job_id}"
    marked = ledger.stop(job_id, reason)
    now = ledger.load(job_id)  # strongly consistent: the execution that holds the job now that none can adopt it
    if now.execution and now.execution != rec.execution:
        return _stop_execution(sfn, deployment, now.execution)  # it adopted the job before the mark
    if marked and sfn.describe_execution(executionArn=arn)["status"] == "SUCCEEDED":
        # It had handed the job on before the stop reached it, and its successor cannot adopt it now.
        reports = ReportBucket(make_s3_client(settings, 12), deployment.report_bucket)
        while not finalize(job_id, ledger=ledger, reports=reports, writer="stop", drain_s=CANCEL_DRAIN_S)["report_done"]:
            pass  # a report too big for one pass goes on where it left off
    return arn


def _stop_execution(sfn: Any, deployment: Deployment, execution: str) -> str:
    arn = f"{deployment.state_machine_arn.replace(':stateMachine:', ':execution:', 1)}:{execution}"
    with contextlib.suppress(sfn.exceptions.ExecutionDoesNotExist):
        if sfn.describe_execution(executionArn=arn)["status"] == "RUNNING":  # an ended one is left as it ended
            sfn.stop_execution(executionArn=arn, error=OWNER_STOPPED, cause="stopped with s3bulk stop")
    return arn


# How long `cancel` waits for work in flight (a worker's batch, a lister's call) before it writes the report of a job
# that no execution runs (one already stopped): such a job's workers only hand batches back, so this is seldom waited.
CANCEL_DRAIN_S = 60.0


def cancel(deployment: Deployment, job_id: str, settings: ClientSettings) -> str:
    """End a job for good: no batch starts after this returns (queued ones are dropped uncounted, listers send no
    more), the report says cancelled with what was done and not done, and it is never resumed. A running execution is
    stopped and its end writes the report; for a job no execution runs (stopped), the report is written here.
    Returns what happened, in a few words."""
    rec = status(deployment, job_id, settings)
    ledger = DynamoLedger(make_client("dynamodb", settings), deployment.table)
    before = ledger.cancel(job_id, f"cancelled by its owner with s3bulk cancel (it was {rec.status})")
    if before is None:
        raise JobError(
            f"job_id: {job_id!r} has ended ({ledger.status(job_id, consistent=True)}); nothing to cancel (s3bulk report {job_id})"
        )
    sfn = make_client("stepfunctions", settings)
    arn = f"{deployment.state_machine_arn.replace(':stateMachine:', ':execution:', 1)}:{rec.execution}" if rec.execution else ""
    running = False
    if arn:
        with contextlib.suppress(Exception):  # an execution that is gone (90 days) or never started runs nothing
            running = sfn.describe_execution(executionArn=arn)["status"] == "RUNNING"
    if running:
        sfn.stop_execution(executionArn=arn, error=OWNER_CANCELLED, cause="cancelled with s3bulk cancel")
        return f"execution {arn} stopped; its report will say cancelled"
    reports = ReportBucket(make_s3_client(settings, 12), deployment.report_bucket)
    while not finalize(job_id, ledger=ledger, reports=reports, writer="cancel", drain_s=CANCEL_DRAIN_S)["report_done"]:
        pass  # a report too big for one pass goes on where it left off
    return f"report written to s3://{deployment.report_bucket}/jobs/{job_id}/report.json"


def retry(deployment: Deployment, job_id: str, settings: ClientSettings, new_id: str | None = None) -> tuple[str, str, int]:
    """A new job over exactly the objects `job_id` failed (its failures.jsonl), as a manifest in the report bucket:
    nothing is listed again. Returns the new job's id, its execution and how many objects it retries."""
    rec = status(deployment, job_id, settings)
    if rec.status in {"RUNNING", "STOPPING", CANCELLING}:
        raise JobError(f"job_id: {job_id!r} is still running ({rec.status}); retry it once its report is written (s3bulk watch {job_id})")
    reports = ReportBucket(make_s3_client(settings, 4), deployment.report_bucket)
    refused: Counter[str] = Counter()
    failed = failed_objects(reports.failures(job_id), refused)
    if not failed:
        why = refused_rows(refused) or "it has no failed object to retry"
        raise JobError(f"job_id: {job_id!r}: {why} (s3bulk report {job_id})")
    ledger = DynamoLedger(make_client("dynamodb", settings), deployment.table)
    new_id = new_id or _next_retry_id(ledger, job_id)
    key = f"jobs/{new_id}/{RETRY_MANIFEST}"
    job = retry_job(rec.job, Manifest(bucket=deployment.report_bucket, key=key, format="csv"), new_id)
    _check_resubmission(deployment, new_id, job, settings)
    reports.put_retry_manifest(new_id, manifest_rows(rec.job.source.bucket, failed))
    return new_id, _start(deployment, new_id, job.model_dump(mode="json", exclude_none=True), settings), len(failed)


def _next_retry_id(ledger: DynamoLedger, job_id: str) -> str:
    """JOB-retry-N for the first N the ledger does not hold."""
    for n in range(1, 1000):
        candidate = f"{job_id[:64]}-retry-{n}"
        try:
            ledger.status(candidate)
        except KeyError:
            return candidate
    raise JobError(f"job_id: {job_id!r} was retried 999 times already; give the retry its own id with --job-id")


def confirm(deployment: Deployment, job_id: str, settings: ClientSettings) -> None:
    """Let a job held by options.confirm go on: send the token its execution waits on (once: it is removed as read)."""
    rec = status(deployment, job_id, settings)
    ledger = DynamoLedger(make_client("dynamodb", settings), deployment.table)
    token = ledger.take_confirmation(job_id) if rec.status == "RUNNING" else None
    if token is None:
        raise JobError(f"job_id: {job_id!r} is not waiting for a confirmation ({rec.status}); see s3bulk status {job_id}")
    sfn = make_client("stepfunctions", settings)
    sfn.send_task_success(taskToken=token, output=json.dumps({"job_id": job_id, "confirmed": True}))


# SQS event sources take MaximumConcurrency from 2 to 1,000.
MIN_WORKERS, MAX_WORKERS = 2, 1000


def tune(settings: ClientSettings, stack: str, max_concurrency: int) -> tuple[int | None, int]:
    """Change how many workers the deployment runs at once, while its jobs run (as Distributed Map's concurrency can
    be changed mid-run): the worker's SQS event source's MaximumConcurrency. Every job of the stack shares it.
    Returns (before, after)."""
    if not MIN_WORKERS <= max_concurrency <= MAX_WORKERS:
        raise JobError(f"--max-concurrency: {max_concurrency} is outside {MIN_WORKERS}-{MAX_WORKERS}, the range SQS event sources take")
    if region_of(settings) is None:
        raise DeploymentError(f"--stack {stack}: {NO_REGION}")
    try:
        stacks = make_client("cloudformation", settings).describe_stacks(StackName=stack)["Stacks"]
        outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
        mapping = outputs["WorkerEventSourceMapping"]
    except KeyError:
        raise DeploymentError(f"--stack {stack}: no WorkerEventSourceMapping output; redeploy the stack (cdk deploy)") from None
    except Exception as exc:  # noqa: BLE001 - any failure here has the same remedy
        raise DeploymentError(f"--stack {stack}: could not read the stack ({exc}); is it deployed in this Region?") from None
    client = make_client("lambda", settings)
    before = client.get_event_source_mapping(UUID=mapping).get("ScalingConfig", {}).get("MaximumConcurrency")
    client.update_event_source_mapping(UUID=mapping, ScalingConfig={"MaximumConcurrency": max_concurrency})
    return (int(before) if before is not None else None), max_concurrency


def tune_job(deployment: Deployment, job_id: str, settings: ClientSettings, concurrency: int) -> int | None:
    """Cap how many batches of one running job run at once (0: no cap of its own), effective for the batches that
    start from now on; every lease shard of the job learns it. Returns the cap before."""
    if not 0 <= concurrency <= MAX_WORKERS:
        raise JobError(f"--concurrency: {concurrency} is outside 0-{MAX_WORKERS}; give the batches at once (0 lifts the job's cap)")
    ledger = DynamoLedger(make_client("dynamodb", settings), deployment.table)
    try:
        rec = ledger.load(job_id)
    except KeyError:
        raise JobError(f"job_id: no job {job_id!r} in this stack's ledger; s3bulk jobs lists them") from None
    if rec.status in {"SUCCEEDED", "FAILED", CANCELLED}:
        raise JobError(f"job_id: {job_id!r} has ended ({rec.status}); there is nothing to tune")
    ledger.set_cap(job_id, concurrency or None)
    return rec.max_workers


def _start(deployment: Deployment, job_id: str, doc: dict[str, Any], settings: ClientSettings) -> str:
    doc["job_id"] = job_id
    sfn = make_client("stepfunctions", settings)
    r = sfn.start_execution(stateMachineArn=deployment.state_machine_arn, name=execution_name(job_id), input=json.dumps(doc))
    return str(r["executionArn"])


def _refuse_unless_resumable(job_id: str, current: str, field: str = "job_id") -> None:
    if current in {"RUNNING", "STOPPING"}:
        raise JobError(f"{field}: {job_id!r} is running; follow it with s3bulk status {job_id}, or give a new job another job_id")
    if current == "SUCCEEDED":
        raise JobError(f"{field}: {job_id!r} has finished (s3bulk report {job_id}); give the job another job_id to run it again")
    if current in {CANCELLING, CANCELLED}:
        raise JobError(
            f"{field}: {job_id!r} was cancelled, which is final (s3bulk report {job_id}); give the job another job_id to run it "
            "again, with options.if_exists skip to pass over what it did"
        )


def _check_resubmission(deployment: Deployment, job_id: str, job: Job, settings: ClientSettings) -> None:
    try:
        rec = status(deployment, job_id, settings)
    except JobError:
        return  # a new job id
    _refuse_unless_resumable(job_id, rec.status, "job.job_id")
    if rec.job.model_dump_json(exclude_none=True) != job.model_dump_json(exclude_none=True):
        raise JobError(
            f"job.job_id: {job_id!r} was submitted before with another spec; resume it as it was (s3bulk resume {job_id}) "
            "or give this job another job_id"
        )


def status(deployment: Deployment, job_id: str, settings: ClientSettings) -> JobRecord:
    ledger = DynamoLedger(make_client("dynamodb", settings), deployment.table)
    try:
        return ledger.load(job_id)
    except KeyError:
        raise JobError(f"job_id: {job_id!r} is not in the ledger {deployment.table}; check the id (s3bulk submit prints it)") from None


def starting(deployment: Deployment, job_id: str, settings: ClientSettings) -> bool:
    """Whether a job not yet in the ledger has an execution running (submitted moments ago: Validate records it first),
    so `watch` waits for it; an execution of it that ended before recording the job says why, as a JobError."""
    sfn = make_client("stepfunctions", settings)
    page = sfn.list_executions(stateMachineArn=deployment.state_machine_arn, maxResults=100)  # newest first
    prefix = f"{job_id[:71]}-"
    for ex in page.get("executions", ()):
        name = str(ex.get("name", ""))
        if not (name.startswith(prefix) and len(name) == len(prefix) + 8):
            continue
        if ex.get("status") == "RUNNING":
            return True
        described = sfn.describe_execution(executionArn=ex["executionArn"])
        why = described.get("cause") or described.get("error") or ex.get("status")
        raise JobError(f"job_id: {job_id!r} ended ({ex.get('status')}) before its ledger entry was made: {why}")
    return False


def recent_jobs(deployment: Deployment, settings: ClientSettings, limit: int = 20) -> list[JobRecord]:
    """The deployment's most recent jobs, newest first, each with its counters (one Query of the Jobs index, then a
    GetItem and a Query per job)."""
    ledger = DynamoLedger(make_client("dynamodb", settings), deployment.table)
    records = []
    for job_id in ledger.recent(limit):
        with contextlib.suppress(KeyError):  # expired between the index and the item
            records.append(ledger.load(job_id))
    return records


def fetch_report(deployment: Deployment, job_id: str, settings: ClientSettings) -> dict[str, Any]:
    reports = ReportBucket(make_s3_client(settings, 4), deployment.report_bucket)
    try:
        return reports.read_report(job_id)
    except Exception as exc:  # noqa: BLE001 - NoSuchKey and friends: the job has not finished
        raise JobError(
            f"job_id: no report for {job_id!r} in s3://{deployment.report_bucket}/jobs/ yet ({type(exc).__name__}); it is written when the job finishes"
        ) from None
