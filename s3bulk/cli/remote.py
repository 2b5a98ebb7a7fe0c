"""The deployed stack's commands: submit, resume, stop, cancel, confirm, retry, tune, jobs, status, watch, report, doctor."""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from s3bulk.aws import DEFAULT_STACK
from s3bulk.aws.doctor import check_concurrency
from s3bulk.aws.ledger import JobRecord
from s3bulk.aws.remote import (
    NO_REGION,
    Deployment,
    DeploymentError,
    cancel,
    confirm,
    deploy_file_defaults,
    fetch_report,
    recent_jobs,
    resume,
    retry,
    starting,
    status,
    stop,
    submit,
    tune,
    tune_job,
)
from s3bulk.breakers.failure import EXIT_BREAKER, STOP_REASON
from s3bulk.cli.contract import DESTRUCTIVE, EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, EXIT_STOPPED
from s3bulk.job import Job, JobError, load_job
from s3bulk.local import preflight
from s3bulk.local.preflight import UsageError
from s3bulk.local.progress import human_bytes, human_seconds
from s3bulk.local.watch import STARTING, watch
from s3bulk.report import Snapshot
from s3bulk.s3.clients import ClientSettings, region_of


def holds_for_confirmation(job: Job, *, yes: bool) -> bool:
    """A delete, a move or a sync submitted without `--yes` and without its own `options.confirm` waits for `s3bulk
    confirm` (as Batch Operations can hold a job): a typo'd prefix costs a look at the count, not the data."""
    destructive = job.operation in DESTRUCTIVE or job.options.delete_extraneous
    return destructive and not yes and not job.options.dry_run and "confirm" not in job.options.model_fields_set


def _warn_if_short(settings: ClientSettings, stack: str) -> None:
    """One line on stderr when the account cannot run a whole job at once; never in the way of the submit."""
    try:
        found = check_concurrency(settings, stack)
    except Exception:  # noqa: BLE001 - no permission to ask, an older stack: the doctor says more
        return
    if not found.ok:
        Console(stderr=True).print(
            f"note: {found.lines()[0]}; jobs will be throttled (s3bulk doctor says what to request)", markup=False, soft_wrap=True
        )


def remote(args: argparse.Namespace, console: Console) -> int:
    beside = deploy_file_defaults()
    if args.region is None and "region" in beside:  # the stack is where cdk deploy put it, whatever AWS_REGION says
        args.region = beside["region"]
    if args.stack == DEFAULT_STACK and "stack_name" in beside:
        args.stack = beside["stack_name"]
    settings = preflight.settings(args)
    if args.command == "submit":
        job = load_job(args.job)  # refuse a bad job before touching AWS
    preflight.require_credentials(settings)
    if region_of(settings) is None:  # every stack command reads its DynamoDB, Step Functions or CloudFormation
        raise UsageError(f"--region: {NO_REGION}")
    try:
        dep = Deployment.resolve(
            settings, args.stack, state_machine_arn=args.state_machine_arn, table=args.table, report_bucket=args.report_bucket
        )
    except DeploymentError as exc:
        raise UsageError(str(exc)) from None
    if args.command == "doctor":
        try:
            found = check_concurrency(settings, args.stack)
        except DeploymentError as exc:
            raise UsageError(str(exc)) from None
        for line in found.lines():
            console.print(line, markup=False, soft_wrap=True)
        return EXIT_OK if found.ok else EXIT_FAILED
    if args.command == "submit":
        _warn_if_short(settings, args.stack)
        held = holds_for_confirmation(job, yes=args.yes)
        if held:
            job = job.model_copy(update={"options": job.options.model_copy(update={"confirm": True})})
        job_id, execution = submit(dep, job, settings)
        console.print(f"submitted {job_id}\nexecution {execution}\nfollow it with: s3bulk status {job_id}", markup=False, soft_wrap=True)
        if held:
            console.print(
                f"held before it changes anything: once its count looks right, s3bulk confirm {job_id} (or s3bulk cancel {job_id}); "
                "submit --yes starts such a job at once",
                markup=False,
                soft_wrap=True,
            )
        return EXIT_OK
    if args.command == "resume":
        execution = resume(dep, args.job_id, settings)
        console.print(
            f"resumed {args.job_id}\nexecution {execution}\nfollow it with: s3bulk status {args.job_id}", markup=False, soft_wrap=True
        )
        return EXIT_OK
    if args.command == "tune":
        return _tune(args, dep, settings, console)
    if args.command == "confirm":
        would = would_do(status(dep, args.job_id, settings), settings)
        confirm(dep, args.job_id, settings)
        what = f" ({would})" if would else ""
        console.print(f"confirmed {args.job_id}{what}; follow it with: s3bulk watch {args.job_id}", markup=False, soft_wrap=True)
        return EXIT_OK
    if args.command == "stop":
        execution = stop(dep, args.job_id, settings)
        console.print(
            f"stopping {args.job_id}\nexecution {execution}\nits report will say stopped; go on with: s3bulk resume {args.job_id}",
            markup=False,
            soft_wrap=True,
        )
        return EXIT_OK
    if args.command == "retry":
        new_id, execution, count = retry(dep, args.job_id, settings, args.new_job_id)
        console.print(
            f"retrying {count:,} failed object(s) of {args.job_id} as job {new_id}\nexecution {execution}\n"
            f"follow it with: s3bulk watch {new_id}",
            markup=False,
            soft_wrap=True,
        )
        return EXIT_OK
    if args.command == "cancel":
        said = cancel(dep, args.job_id, settings)
        console.print(f"cancelled {args.job_id}: no batch starts from now on\n{said}", markup=False, soft_wrap=True)
        return EXIT_OK
    if args.command == "jobs":
        if not 1 <= args.limit <= 1000:
            raise UsageError("--limit: between 1 and 1000")
        rows = [job_row(rec, time.time()) for rec in recent_jobs(dep, settings, args.limit)]
        if args.json:
            print(json.dumps(rows, indent=1))
            return EXIT_OK
        table = Table(title=f"recent jobs ({len(rows)})")
        for col in ("job_id", "operation", "status", "listed", "done", "failed", "started", "running"):
            table.add_column(col, overflow="fold")
        for row in rows:
            table.add_row(*(f"{v:,}" if isinstance(v, int) else str(v) for v in row.values()))
        console.print(table)
        return EXIT_OK
    if args.command == "watch":
        if args.every < 1:
            raise UsageError("--every: poll at most once a second (each poll reads the job's ledger items)")

        def poll() -> tuple[str, Snapshot]:
            try:
                rec = status(dep, args.job_id, settings)
            except JobError:
                if not starting(dep, args.job_id, settings):  # submitted moments ago: Validate has not recorded it yet
                    raise
                return STARTING, Snapshot(0, 0, 0, False, 0, 0, 0, 0)
            return rec.status, rec.snapshot()

        ended = watch(args.job_id, poll, console, every=args.every)
        try:
            doc = fetch_report(dep, args.job_id, settings)
        except JobError:
            console.print(f"{args.job_id} ended {ended}; no report yet (s3bulk report {args.job_id})", markup=False)
            return {"SUCCEEDED": EXIT_OK, "STOPPED": EXIT_STOPPED, "CANCELLED": EXIT_CANCELLED}.get(ended, EXIT_FAILED)
        fields = ("status", "listed", "succeeded", "skipped", "failed", "bytes", "seconds", "not_done", "error", "failures_by_code")
        table = Table(title=f"{args.job_id}: {doc.get('status')}", show_header=False)
        for name in fields:
            if name in doc:
                value = doc[name]
                table.add_row(name, f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value))
        console.print(table)
        return _exit_for(doc)
    if args.command == "status":
        rec = status(dep, args.job_id, settings)
        table = Table(title=f"{rec.job.operation}: {rec.status}", show_header=False)
        for name, value in rec.summary().items():
            table.add_row(name, f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value))
        if rec.awaiting_confirmation:
            table.add_row("would do", confirming(rec, settings))
        console.print(table)
        return EXIT_OK
    doc = fetch_report(dep, args.job_id, settings)
    text = json.dumps(doc, indent=1, ensure_ascii=False)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    return _exit_for(doc)


def _tune(args: argparse.Namespace, dep: Deployment, settings: ClientSettings, console: Console) -> int:
    """One job's cap (JOB_ID --concurrency N), or the stack's worker concurrency (--max-concurrency N), not both."""
    one_job = args.job_id is not None and args.concurrency is not None and args.max_concurrency is None
    the_stack = args.job_id is None and args.concurrency is None and args.max_concurrency is not None
    if not (one_job or the_stack):
        raise UsageError("tune: give JOB_ID --concurrency N (one job's batches at once) or --max-concurrency N (the stack's workers)")
    if args.job_id is not None:
        was = tune_job(dep, args.job_id, settings, args.concurrency)
        before = f"{was:,}" if was is not None else "no cap of its own"
        now = f"at most {args.concurrency:,} of its batches at once" if args.concurrency else "no cap of its own"
        console.print(f"{args.job_id}: {now} (was {before}), for the batches that start from now on", markup=False, soft_wrap=True)
        return EXIT_OK
    try:
        before_all, after = tune(settings, args.stack, args.max_concurrency)
    except DeploymentError as exc:
        raise UsageError(str(exc)) from None
    was_all = f"{before_all:,}" if before_all is not None else "unlimited"
    console.print(
        f"workers: at most {after:,} at once (was {was_all}), for every job of this stack; "
        "s3bulk doctor checks the account's concurrency against it",
        markup=False,
        soft_wrap=True,
    )
    return EXIT_OK


def confirming(rec: JobRecord, settings: ClientSettings | None = None) -> str:
    """A job held for `s3bulk confirm`: what it would do, and the command that lets it."""
    would = would_do(rec, settings)
    return f"{would}; s3bulk confirm {rec.job_id} to go on" if would else "its selection is being counted"


def would_do(rec: JobRecord, settings: ClientSettings | None = None) -> str | None:
    """What a job would do by the count made before its listing: objects, bytes and the stack's cost by `s3bulk plan`'s
    model (prices.json), each object at the count's average size; None until every shard is counted. With `settings`,
    the buckets' default encryption is read too, so S3's KMS requests are priced (a bucket it may not read: none)."""
    if rec.selection is None:
        return None
    from s3bulk.local.plan import cost, from_count, load_prices  # the cost model: only for a job that awaits confirmation
    from s3bulk.s3.clients import S3Clients
    from s3bulk.s3.faststore import open_store

    objects, size = rec.selection
    store = open_store(S3Clients(settings, 2), fast=False) if settings is not None else None
    dollars = cost(from_count(rec.job, objects, size, store), load_prices())["stack_total"]
    extra = " before retrieval fees" if rec.job.operation == "restore" else ""
    return f"{objects:,} objects, {human_bytes(size)}, about ${dollars:,.2f}{extra}"


def job_row(rec: JobRecord, now: float) -> dict[str, str | int]:
    """One line of `s3bulk jobs`: the job, its outcome so far, when it started, and how long it ran (or has run)."""
    c = rec.counters
    ended = rec.updated_at if rec.status not in {"RUNNING", "STOPPING"} and rec.updated_at else now
    return {
        "job_id": rec.job_id,
        "operation": rec.job.operation,
        "status": f"AWAITING CONFIRMATION: {confirming(rec)}" if rec.awaiting_confirmation else rec.status,
        "listed": c.get("listed", 0),
        "done": c.get("succeeded", 0) + c.get("skipped", 0),
        "failed": c.get("failed", 0),
        "started": datetime.fromtimestamp(rec.created_at, UTC).strftime("%Y-%m-%d %H:%M:%SZ"),
        "running": human_seconds(max(0.0, ended - rec.created_at)),
    }


def _exit_for(doc: dict[str, Any]) -> int:
    """A deployed job's exit code, from its report (as `s3bulk run` exits for a local one: 4 when the failure breaker
    stopped it, 3 for any other stop)."""
    outcome = doc.get("status")
    if outcome == "cancelled":
        return EXIT_CANCELLED
    if outcome == "stopped":
        return EXIT_BREAKER if doc.get("stop_reason") == STOP_REASON else EXIT_STOPPED
    return EXIT_OK if outcome in {"succeeded", "dry-run"} else EXIT_FAILED
