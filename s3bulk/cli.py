"""`s3bulk`: parse, build the client, call the engine, print, exit with the contract's code.

Exit codes: 0 every selected object succeeded (or a dry run), 1 some objects or
the listing failed (the report names each), 2 the job or arguments are invalid
(nothing was touched), 3 stopped: an endpoint unreachable for options.outage_seconds
(resumable; docs/outage.md), 4 stopped by the failure breaker (resumable), 5 cancelled by
its owner (a deployed job: final), 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.table import Table

from s3bulk import __version__
from s3bulk.aws.doctor import check_concurrency
from s3bulk.aws.invoke import lambda_invoker
from s3bulk.aws.ledger import JobRecord
from s3bulk.aws.remote import (
    DEFAULT_STACK,
    Deployment,
    DeploymentError,
    cancel,
    confirm,
    deploy_file_defaults,
    fetch_report,
    recent_jobs,
    resume,
    retry,
    status,
    stop,
    submit,
    tune,
)
from s3bulk.bodies.malloc import pin_mmap_threshold
from s3bulk.breaker import EXIT_BREAKER, STOP_REASON
from s3bulk.job import Job, JobError, differ, json_schema, load_job, new_job_id, parse_job
from s3bulk.local import preflight
from s3bulk.local.demo import run_demo
from s3bulk.local.engine import JobAbort, resolve_concurrency
from s3bulk.local.interrupt import Interrupt, handling_signals
from s3bulk.local.ledger import LedgerError, LocalLedger, spec_hash, state_dir
from s3bulk.local.plan import STACK_THREADS, STACK_WORKERS, cost, eta_seconds, load_prices, make_plan
from s3bulk.local.preflight import UsageError, check_report_path, origin_of, profile_problem
from s3bulk.local.progress import human_bytes, human_seconds
from s3bulk.local.retry import retry_failed
from s3bulk.local.run import execute
from s3bulk.local.undo import undo_log
from s3bulk.local.watch import watch
from s3bulk.manifest import ManifestError
from s3bulk.ops.batch import connections_needed
from s3bulk.ops.extraneous import empty_source_message, first_selected
from s3bulk.ops.process import ProcessCode, load_code
from s3bulk.outage import EndpointUnreachable
from s3bulk.report import Snapshot
from s3bulk.s3.clients import ClientSettings, S3Clients, for_side, has_credentials
from s3bulk.s3.ratecontrol import RateControl
from s3bulk.s3.stores import S3Store, open_store
from s3bulk.store import StoreError

EXIT_OK, EXIT_FAILED, EXIT_INVALID, EXIT_STOPPED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_CANCELLED = 5  # a deployed job its owner cancelled (s3bulk cancel)
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell tool killed by it would report


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="s3bulk", description="Copy, move and delete any number of S3 objects.")
    p.add_argument("--version", action="version", version=f"s3bulk {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a job file")
    run.add_argument("job", nargs="?", help="path to the job JSON (see docs/job.schema.json)")
    run.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="JOB_ID",
        help="continue an interrupted run: by id, or (no id) the newest unfinished run of the same job file",
    )
    run.add_argument("--state-dir", metavar="DIR", help="where job ledgers live (default $S3BULK_STATE_DIR or ~/.local/state/s3bulk)")
    run.add_argument("--no-ledger", action="store_true", help="keep no job ledger (the run cannot be resumed)")
    run.add_argument("--endpoint-url", help="an S3-compatible endpoint instead of AWS")
    run.add_argument("--region", help="AWS region (default: the standard chain; us-east-1 with --endpoint-url)")
    run.add_argument("--profile", help="AWS profile name")
    run.add_argument("--report", metavar="PATH", help="write the JSON report (every failure with key and code) here")
    run.add_argument(
        "--key-log",
        metavar="PATH.jsonl",
        dest="key_log",
        help="append one JSON line per object (key, sizes, ETags/checksums, attempts, outcome, error) here; see docs/key-log.md",
    )
    # The old name of --key-log, kept for one release: "ledger" now means only the job ledger (--no-ledger, --resume).
    run.add_argument("--ledger", metavar="PATH.jsonl", dest="key_log_deprecated", help="deprecated alias of --key-log")
    run.add_argument("--concurrency", type=int, metavar="N", help="worker threads, overriding options.concurrency")
    run.add_argument("--dry-run", action="store_true", help="list and count only; change nothing")
    run.add_argument(
        "--canary",
        type=int,
        metavar="N",
        help="first run the job on N objects sampled across the selection, check them, and stop (options.canary); --resume does the rest",
    )
    run.add_argument("--yes", action="store_true", help="start a delete, move or sync without asking first on a terminal")
    run.add_argument(
        "--retry-failed",
        metavar="REPORT.json|KEYS.jsonl",
        help="run the job again over exactly the objects a run of it failed, from its report or key log (nothing listed again)",
    )
    run.add_argument("--progress", choices=("auto", "on", "off"), default="auto", help="live progress (auto: on a terminal)")
    run.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    run.add_argument(
        "--request-path",
        choices=("fast", "botocore"),
        default="fast",
        help="fast: CopyObject/DeleteObjects signed and sent directly (3x less CPU); botocore: every call through botocore",
    )

    plan = sub.add_parser("plan", help="list what a job would do, its S3 requests, cost and ETA; change nothing")
    plan.add_argument("job")
    plan.add_argument("--endpoint-url", help="an S3-compatible endpoint instead of AWS")
    plan.add_argument("--region", help="AWS region")
    plan.add_argument("--profile", help="AWS profile name")
    plan.add_argument("--prices", metavar="PATH", help="a prices JSON like s3bulk/data/prices.json (default: that file)")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")

    val = sub.add_parser("validate", help="check a job file without running it")
    val.add_argument("job")

    sub.add_parser("schema", help="print the job file's JSON Schema")

    def deployed(name: str, help_text: str) -> argparse.ArgumentParser:
        cmd = sub.add_parser(name, help=help_text)
        cmd.add_argument("--stack", default=DEFAULT_STACK, help=f"the deployed CloudFormation stack (default {DEFAULT_STACK})")
        cmd.add_argument("--region", help="AWS region of the stack")
        cmd.add_argument("--profile", help="AWS profile name")
        cmd.add_argument("--endpoint-url", help=argparse.SUPPRESS)
        cmd.add_argument("--state-machine-arn", help="instead of reading the stack's outputs")
        cmd.add_argument("--table", help="ledger table name, instead of the stack's outputs")
        cmd.add_argument("--report-bucket", help="report bucket name, instead of the stack's outputs")
        return cmd

    submit_cmd = deployed("submit", "start a job on the deployed stack")
    submit_cmd.add_argument("job")
    submit_cmd.add_argument(
        "--yes", action="store_true", help="start a delete, move or sync at once, without the hold for s3bulk confirm it gets by default"
    )
    deployed("doctor", "check what the deployed stack needs from its account (Lambda concurrency)")
    deployed("resume", "go on with a stopped or failed deployed job from its checkpoints").add_argument("job_id")
    deployed("stop", "stop a running deployed job; its queued work is held for s3bulk resume").add_argument("job_id")
    retry_cmd = deployed("retry", "run a deployed job again over exactly the objects it failed (nothing listed again)")
    retry_cmd.add_argument("job_id")
    retry_cmd.add_argument("--job-id", dest="new_job_id", metavar="ID", help="the retry's job id (default JOB_ID-retry-N)")
    deployed("cancel", "end a deployed job for good: queued work dropped, report cancelled, never resumed").add_argument("job_id")
    deployed("confirm", "let a deployed job held by options.confirm go on").add_argument("job_id")
    tune_cmd = deployed("tune", "change how many workers the deployed stack runs at once, while jobs run")
    tune_cmd.add_argument("--max-concurrency", type=int, required=True, metavar="N", help="workers at once, 2-1000")
    jobs_cmd = deployed("jobs", "list the deployed stack's recent jobs, newest first")
    jobs_cmd.add_argument("--limit", type=int, default=20, help="how many (default 20)")
    jobs_cmd.add_argument("--json", action="store_true", help="one JSON document instead of a table")
    deployed("status", "show a deployed job's state and counters").add_argument("job_id")
    watch_cmd = deployed("watch", "follow a deployed job's progress until it ends; exit by its outcome (0, 1, 3, 4, 5)")
    watch_cmd.add_argument("job_id")
    watch_cmd.add_argument("--every", type=float, default=5.0, metavar="SECONDS", help="seconds between polls (default 5)")
    report_cmd = deployed("report", "fetch a finished deployed job's JSON report")
    report_cmd.add_argument("job_id")
    report_cmd.add_argument("--output", "-o", metavar="PATH", help="write the report here instead of printing it")

    undo = sub.add_parser(
        "undo",
        help="put back what a tag, set-storage-class, set-legal-hold, set-acl or set-retention (GOVERNANCE) job changed, from its --key-log",
    )
    undo.add_argument("log", metavar="LOG.jsonl", help="the job's per-key log (s3bulk run --key-log)")
    undo.add_argument("--dry-run", action="store_true", help="count what would be restored; change nothing")
    undo.add_argument("--endpoint-url", help="an S3-compatible endpoint instead of AWS")
    undo.add_argument("--region", help="AWS region")
    undo.add_argument("--profile", help="AWS profile name")
    undo.add_argument("--concurrency", type=int, default=16, metavar="N", help="objects undone at once (default 16)")

    demo = sub.add_parser("demo", help="run a copy job end to end on an embedded local S3 server")
    demo.add_argument("--objects", type=int, default=3000, metavar="N", help="objects to seed (default 3000)")
    demo.add_argument("--report", metavar="PATH", help="write the JSON report here")
    demo.add_argument("--progress", choices=("auto", "on", "off"), default="auto")
    return p


# What deletes objects: submitted from the CLI, such a job is held for s3bulk confirm unless the job says otherwise.
DESTRUCTIVE = frozenset({"delete", "move"})


NO_TERMINAL = "job.options.confirm: this run would ask on a terminal, and it has none; pass --yes to run it without asking"


def _no_one_to_ask(job: Job, console: Console, *, yes: bool) -> bool:
    """The job asks to be confirmed (options.confirm true), and no terminal is there to ask."""
    asks = "confirm" in job.options.model_fields_set and job.options.confirm and not yes and not job.options.dry_run
    return asks and not (sys.stdin.isatty() and console.is_terminal)


class Declined(Exception):
    """Its owner answered no when asked to confirm a run: nothing was started."""


def confirm_on_terminal(
    job: Job, store: S3Store, dst_store: S3Store | None, console: Console, *, yes: bool, ask: Callable[[str], str] = input
) -> None:
    """A delete, a move or a sync run from a terminal shows what it would delete, counted from a complete listing, and
    asks once before it starts (`--yes`, or `options.confirm: false`, skips the question). `options.confirm: true`
    asks whatever the job does, and refuses to run where there is no one to ask."""
    explicit = "confirm" in job.options.model_fields_set
    wanted = job.options.confirm if explicit else job.operation in DESTRUCTIVE or job.options.delete_extraneous
    if not wanted or yes or job.options.dry_run:
        return
    if not (sys.stdin.isatty() and console.is_terminal):
        if explicit:
            raise UsageError(NO_TERMINAL)
        return
    console.print("counting what the job would change, before it starts (--yes skips this)...", markup=False)
    try:
        plan = make_plan(job, store, dst_store)
    except StoreError as exc:
        raise UsageError(f"job.options.confirm: counting failed ({exc.code}: {exc.message}); nothing was changed") from None
    where = f"s3://{job.source.bucket}/{job.source.prefix}"
    if job.operation in DESTRUCTIVE:
        what = f"{job.operation} {plan.objects:,} objects ({human_bytes(plan.bytes)}) from {where}"
    elif job.options.delete_extraneous and job.destination is not None:
        dst = f"s3://{job.destination.bucket}/{job.destination.prefix}"
        what = f"copy {plan.objects:,} objects from {where} and delete {plan.extraneous:,} objects of {dst} that {where} lacks"
    else:
        what = f"{job.operation} {plan.objects:,} objects ({human_bytes(plan.bytes)}) under {where}"
    answer = ask(f"This run would {what}. Go on? [y/N] ")
    if answer.strip().lower() not in {"y", "yes"}:
        raise Declined()


def holds_for_confirmation(job: Job, *, yes: bool) -> bool:
    """A delete, a move or a sync submitted without `--yes` and without its own `options.confirm` waits for `s3bulk
    confirm` (as Batch Operations can hold a job): a typo'd prefix costs a look at the count, not the data."""
    destructive = job.operation in DESTRUCTIVE or job.options.delete_extraneous
    return destructive and not yes and not job.options.dry_run and "confirm" not in job.options.model_fields_set


def _job_file(args: argparse.Namespace) -> Job:
    """The job file's job, with the command line's overrides; with --retry-failed, that job over what a run of it failed."""
    job = _with_overrides(load_job(args.job), args)
    if getattr(args, "retry_failed", None):
        state = Path(args.state_dir) if args.state_dir else state_dir()
        job = retry_failed(job, Path(args.retry_failed), state)
    return job


def _with_overrides(job: Job, args: argparse.Namespace) -> Job:
    if args.concurrency is not None and args.concurrency < 1:
        raise UsageError("--concurrency: must be at least 1; pass a positive number of threads")
    canary = getattr(args, "canary", None)
    if canary is not None:
        doc = job.model_dump(mode="json", exclude_none=True)
        doc["options"]["canary"] = canary
        doc["options"]["dry_run"] = doc["options"].get("dry_run", False) or bool(args.dry_run)
        job = parse_job(json.dumps(doc))  # the job's own rules: a canary in a dry run or a sync is refused in one line
    if args.dry_run:
        return job.model_copy(update={"options": job.options.model_copy(update={"dry_run": True})})
    return job


def _open_ledger(args: argparse.Namespace, here: ClientSettings) -> tuple[Job, LocalLedger | None]:
    """The job to run and its ledger: a new one (remembering where the run points), or the interrupted run --resume names."""
    state = Path(args.state_dir) if args.state_dir else state_dir()
    try:
        if args.resume is None:
            if not args.job:
                raise UsageError("run: give a job file, or --resume JOB_ID to continue an interrupted run")
            job = _job_file(args)
            if job.options.canary is not None and args.no_ledger:
                raise UsageError("--no-ledger: a canary's rest runs with --resume, which needs the job ledger; drop --no-ledger")
            if job.options.dry_run or args.no_ledger:
                return job, None
            return job, LocalLedger.create(state, new_job_id(job), job, origin_of(here))
        if args.resume:
            ledger = LocalLedger.open(state, args.resume)
            stored = parse_job(ledger.spec())
            job = _job_file(args) if args.job else _with_overrides(stored, args)
            if spec_hash(job) != spec_hash(stored):
                ledger.close()
                raise UsageError(f"--resume {args.resume}: the job file differs from the one that started it; pass the original file")
            return job, ledger
        if not args.job:
            raise UsageError("--resume without an id needs the job file; pass JOB.json or --resume JOB_ID")
        job = _job_file(args)
        found = LocalLedger.find_unfinished(state, job)
        if found is None:
            raise UsageError(f"--resume: no unfinished run of this job in {state}; run it without --resume")
        return job, LocalLedger.open(state, found)
    except LedgerError as exc:
        raise UsageError(str(exc)) from None


def _open_key_log(path: str | None, flag: str = "--key-log") -> IO[str] | None:
    """Opened before any work, so a bad path fails in one line, not after the job; appended to, so a resume adds to it."""
    if not path:
        return None
    try:
        return open(path, "a", encoding="utf-8", buffering=1024 * 1024)
    except OSError as exc:
        raise UsageError(f"{flag} {path}: {exc.strerror}; give a writable file path") from None


def _process_code(job: Job, job_file: str | None, settings: ClientSettings, concurrency: int) -> ProcessCode | None:
    """Import the job's process function (or connect its Lambda) before anything runs: a bad one is exit 2."""
    if job.process is None:
        return None
    search = [Path(job_file).resolve().parent] if job_file else []
    search.append(Path.cwd())
    return load_code(job.process, search, lambda_invoker(settings, concurrency))


def _stores(
    job: Job, settings: ClientSettings, connections: int, *, fast: bool = True, rate: RateControl | None = None
) -> tuple[S3Store, S3Store | None]:
    """The source's store, and the destination's when it is another endpoint or profile (None: the same one)."""
    _check_sides(job)
    src = for_side(settings, job.source)
    if not has_credentials(src):
        raise UsageError("no AWS credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or pass --profile")
    store = open_store(S3Clients(src, connections), fast=fast, rate=rate)
    if job.destination is None or not differ(job.source, job.destination):
        return store, None
    dst = for_side(settings, job.destination)
    if not has_credentials(dst):
        raise UsageError(f"job.destination.profile: no credentials for profile {dst.profile!r}; configure it or drop the field")
    return store, open_store(S3Clients(dst, connections), fast=fast, rate=rate)


def _check_sides(job: Job) -> None:
    """A side's own profile must exist (boto3 would raise ProfileNotFound at the first request)."""
    for side, name in ((job.source, "source"), (job.destination, "destination")):
        if side is not None and side.profile and (problem := profile_problem(side.profile)):
            raise UsageError(f"job.{name}.profile: {problem}")


def _require_credentials(here: ClientSettings, job: Job) -> None:
    _check_sides(job)
    if not has_credentials(for_side(here, job.source)):
        raise UsageError("no AWS credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or pass --profile")


def _run(args: argparse.Namespace, console: Console, interrupt: Interrupt) -> int:
    # Everything that can be wrong with the job or the arguments fails here, in one line, before any object is touched.
    early = _job_file(args) if args.job else None
    if early is not None and args.resume is None and _no_one_to_ask(early, console, yes=args.yes):
        raise UsageError(NO_TERMINAL)
    check_report_path(args.report)
    if args.key_log_deprecated is not None and args.key_log is not None:
        raise UsageError("--ledger is the old name of --key-log; pass only --key-log PATH.jsonl")
    # Where this run points; a resume goes where its run pointed, from the ledger (and refuses anywhere else).
    here = preflight.settings(args) if args.resume is None else None
    code = None
    if here is not None and early is not None:
        code = _process_code(early, args.job, here, resolve_concurrency(early, args.concurrency))
        _require_credentials(here, early)
    if args.key_log_deprecated is not None:
        print("warning: --ledger is deprecated and will be removed; use --key-log PATH.jsonl", file=sys.stderr)
    flag = "--key-log" if args.key_log_deprecated is None else "--ledger"
    key_log = _open_key_log(args.key_log or args.key_log_deprecated, flag)
    ledger: LocalLedger | None = None
    try:
        job, ledger = _open_ledger(args, here or ClientSettings())
        concurrency = resolve_concurrency(job, args.concurrency)
        if here is None:
            assert ledger is not None
            here = preflight.settings(args, ledger.origin(), ledger.job_id)
            code = _process_code(job, args.job, here, concurrency)
            _require_credentials(here, job)
        rate = RateControl(enabled=job.options.adaptive_rate)
        store, dst_store = _stores(job, here, connections_needed(concurrency), fast=args.request_path == "fast", rate=rate)
        if args.resume is None:
            confirm_on_terminal(job, store, dst_store, console, yes=args.yes)
    except Declined:
        if ledger is not None:
            ledger.discard_if_unused()
            ledger = None
        if key_log is not None:
            key_log.close()
        console.print("not started: nothing was changed", markup=False)
        return EXIT_CANCELLED
    except BaseException:
        if ledger is not None:
            ledger.close()
        if key_log is not None:
            key_log.close()
        raise
    extra = f" --state-dir {shlex.quote(args.state_dir)}" if args.state_dir else ""
    try:
        report = execute(
            job,
            store,
            concurrency=concurrency,
            console=console,
            progress=args.progress,
            quiet=args.quiet,
            report_path=args.report,
            ledger=ledger,
            key_log=key_log,
            code=code,
            dst_store=dst_store,
            interrupt=interrupt,
            resume_args=extra,
        )
    except (JobError, UsageError):  # refused before any object was touched (the delete guard, an empty sync source)
        if ledger is not None:
            ledger.discard_if_unused()
            ledger = None
        raise
    finally:
        if ledger is not None:
            ledger.close()
        if key_log is not None:
            key_log.close()
    return report.exit_code


def _plan(args: argparse.Namespace, console: Console) -> int:

    job = load_job(args.job)
    try:
        prices = load_prices(args.prices)
    except (OSError, ValueError) as exc:
        raise UsageError(f"--prices {args.prices}: {exc}; pass a JSON file like s3bulk/data/prices.json") from None
    settings = preflight.settings(args)
    concurrency = resolve_concurrency(job)
    store, dst_store = _stores(job, settings, connections_needed(concurrency))
    try:
        if job.options.delete_extraneous and not job.options.allow_empty_source and first_selected(job, store) is None:
            raise UsageError(empty_source_message(job))  # as `run` refuses it
        plan = make_plan(job, store, dst_store)
    except StoreError as exc:  # as `run` does: the job was valid, the listing failed (a missing bucket, a denied List)
        print(f"error: listing for the plan failed: {exc.code}: {exc.message}", file=sys.stderr)
        return EXIT_FAILED
    except (JobAbort, ManifestError) as exc:  # an unusable destination, an unreadable manifest: `run` exits 1 too
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    dollars = cost(plan, prices)
    doc: dict[str, Any] = {
        "operation": plan.operation,
        "scanned": plan.scanned,
        "objects": plan.objects,
        "bytes": plan.bytes,
        "skipped": plan.skipped,
        "extraneous_to_delete": plan.extraneous,
        "invalid_manifest_rows": plan.invalid_rows,
        "by_storage_class": {k: {"objects": v[0], "bytes": v[1]} for k, v in sorted(plan.by_class.items())},
        "by_size": {k: {"objects": v[0], "bytes": v[1]} for k, v in plan.by_size.items()},
        "requests": dict(sorted(plan.requests.items())),
        "undo_journal_requests": dict(sorted(plan.journal.items())),
        "cost_usd": {k: round(v, 6) for k, v in dollars.items()},
        "prices": {"region": prices["region"], "as_of": prices["as_of"]},
        "eta_seconds": {
            "local": round(eta_seconds(plan, concurrency), 1),
            "stack": round(eta_seconds(plan, STACK_THREADS, STACK_WORKERS), 1),
        },
    }
    if args.json:
        print(json.dumps(doc, indent=1))
        return EXIT_OK
    for title, rows in (("by storage class", doc["by_storage_class"]), ("by size", doc["by_size"])):
        table = Table(title=f"{plan.operation}: {plan.objects:,} objects, {plan.bytes:,} bytes {title}")
        for col in ("", "objects", "bytes"):
            table.add_column(col, justify="right" if col else "left")
        for name, row in rows.items():
            table.add_row(name, f"{row['objects']:,}", f"{row['bytes']:,}")
        console.print(table)
    console.print("requests: " + ", ".join(f"{k} {v:,}" for k, v in doc["requests"].items()), markup=False)
    if plan.journal:
        journal = ", ".join(f"{k} {v:,}" for k, v in doc["undo_journal_requests"].items())
        console.print(f"undo journal reads (always on the stack; here with --key-log): {journal}", markup=False)
    c = doc["cost_usd"]
    console.print(
        f"cost ({prices['region']} list prices as of {prices['as_of']}): deployed stack ${c['stack_total']:.4f} "
        f"(S3 requests ${c['s3_requests']:.4f}"
        + (f", undo journal reads ${c['undo_journal']:.4f}" if c["undo_journal"] else "")
        + (f", restore retrieval ${c['restore_retrieval']:.4f}" if c["restore_retrieval"] else "")
        + (f", Lambda invocations ${c['process_invocations']:.4f}" if c["process_invocations"] else "")
        + f") vs S3 Batch Operations ${c['batch_operations_total']:.4f}"
        + (f" (of which one invocation per object ${c['batch_operations_invocations']:.4f})" if c["batch_operations_invocations"] else ""),
        markup=False,
    )
    eta = doc["eta_seconds"]
    console.print(f"ETA: {eta['local']:,.0f} s here at {concurrency} threads; {eta['stack']:,.0f} s on the stack", markup=False)
    if plan.skipped or plan.extraneous:
        console.print(f"skipped as existing/unchanged: {plan.skipped:,}; extraneous to delete: {plan.extraneous:,}", markup=False)
    if plan.invalid_rows:
        console.print(f"manifest rows that would fail (run reports each with its line): {plan.invalid_rows:,}", markup=False)
    return EXIT_OK


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


def _remote(args: argparse.Namespace, console: Console) -> int:
    beside = deploy_file_defaults()
    if args.region is None and "region" in beside:  # the stack is where cdk deploy put it, whatever AWS_REGION says
        args.region = beside["region"]
    if args.stack == DEFAULT_STACK and "stack_name" in beside:
        args.stack = beside["stack_name"]
    settings = preflight.settings(args)
    if args.command == "submit":
        job = load_job(args.job)  # refuse a bad job before touching AWS
    if not has_credentials(settings):
        raise UsageError("no AWS credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or pass --profile")
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
        try:
            before, after = tune(settings, args.stack, args.max_concurrency)
        except DeploymentError as exc:
            raise UsageError(str(exc)) from None
        was = f"{before:,}" if before is not None else "unlimited"
        console.print(
            f"workers: at most {after:,} at once (was {was}), for every job of this stack; "
            "s3bulk doctor checks the account's concurrency against it",
            markup=False,
            soft_wrap=True,
        )
        return EXIT_OK
    if args.command == "confirm":
        confirm(dep, args.job_id, settings)
        console.print(f"confirmed {args.job_id}; follow it with: s3bulk watch {args.job_id}", markup=False, soft_wrap=True)
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
            rec = status(dep, args.job_id, settings)
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
        console.print(table)
        return EXIT_OK
    doc = fetch_report(dep, args.job_id, settings)
    text = json.dumps(doc, indent=1, ensure_ascii=False)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    return _exit_for(doc)


def job_row(rec: JobRecord, now: float) -> dict[str, str | int]:
    """One line of `s3bulk jobs`: the job, its outcome so far, when it started, and how long it ran (or has run)."""
    c = rec.counters
    ended = rec.updated_at if rec.status not in {"RUNNING", "STOPPING"} and rec.updated_at else now
    return {
        "job_id": rec.job_id,
        "operation": rec.job.operation,
        "status": rec.status,
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


def _undo(args: argparse.Namespace, console: Console) -> int:
    if args.concurrency < 1:
        raise UsageError("--concurrency: must be at least 1")
    settings = preflight.settings(args)
    if not has_credentials(settings):
        raise UsageError("no AWS credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or pass --profile")
    try:
        log = open(args.log, "rb")  # noqa: SIM115 - closed below, after the store is built
    except OSError as exc:
        raise UsageError(f"{args.log}: {exc.strerror}; pass the --key-log file of the job to undo") from None
    with log:
        store = open_store(S3Clients(settings, connections_needed(args.concurrency)))
        result = undo_log(log, store, concurrency=args.concurrency, dry_run=args.dry_run)
    verb = "would restore" if args.dry_run else "restored"
    unreadable = f"; unreadable lines skipped {result.unreadable:,}" if result.unreadable else ""
    console.print(
        f"{verb} {result.restored:,}; left alone (changed since the job) {result.changed_since:,}; failed {result.failed:,}{unreadable}",
        markup=False,
    )
    for line in result.examples:
        console.print(f"  {line}", markup=False, highlight=False)
    return EXIT_FAILED if result.failed else EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    interrupt = Interrupt()
    with handling_signals(interrupt):
        try:
            return _main(argv, interrupt)
        except BrokenPipeError:
            # `s3bulk schema | head -1`: the reader left; end quietly (nothing more can be printed to it).
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return EXIT_BROKEN_PIPE


def _main(argv: Sequence[str] | None, interrupt: Interrupt) -> int:
    args = _parser().parse_args(argv)
    pin_mmap_threshold()  # relayed and processed bodies go back to the OS when freed (bodies/malloc.py)
    console = Console(stderr=False, highlight=False)
    errors = Console(stderr=True, highlight=False)
    try:
        if args.command == "validate":
            job = load_job(args.job)
            dst = f" -> s3://{job.destination.bucket}/{job.destination.prefix}" if job.destination else ""
            console.print(f"ok: {job.operation} s3://{job.source.bucket}/{job.source.prefix}{dst}", markup=False)
            return EXIT_OK
        if args.command == "schema":
            print(json.dumps(json_schema(), indent=2))
            return EXIT_OK
        if args.command == "demo":
            return run_demo(objects=args.objects, console=console, report_path=args.report, progress=args.progress)
        if args.command == "plan":
            return _plan(args, console)
        if args.command in {
            "submit",
            "resume",
            "retry",
            "stop",
            "cancel",
            "confirm",
            "tune",
            "jobs",
            "status",
            "watch",
            "report",
            "doctor",
        }:
            return _remote(args, console)
        if args.command == "undo":
            return _undo(args, console)
        return _run(args, console, interrupt)
    except (JobError, UsageError) as exc:
        errors.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        return EXIT_INVALID
    except EndpointUnreachable as exc:  # outside a run (plan, a destination check): nothing was changed
        errors.print(f"stopped: {exc}", markup=False, highlight=False, soft_wrap=True)
        return EXIT_STOPPED
    except KeyboardInterrupt:  # before a job started (a run's own Ctrl-C ends in its summary and report)
        errors.print("interrupted before the job started; nothing was changed")
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
