"""The commands that run a job here: `run`, `plan` and `undo` (and the question a destructive run asks first)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.table import Table

from s3bulk.cli.contract import DESTRUCTIVE, EXIT_CANCELLED, EXIT_FAILED, EXIT_OK
from s3bulk.cli.ledgers import job_file, open_ledger, state_of
from s3bulk.job import Destination, Job, JobError, Source, differ, load_job
from s3bulk.local import preflight, reach
from s3bulk.local.engine import JobAbort, resolve_concurrency
from s3bulk.local.interrupt import Interrupt
from s3bulk.local.ledger import LocalLedger
from s3bulk.local.plan import STACK_LIST_SHARDS, STACK_WORKERS, cost, eta_seconds, load_prices, make_plan, stack_pace, storage_saved
from s3bulk.local.preflight import UsageError, check_report_path, check_state_dir, profile_problem
from s3bulk.local.progress import human_bytes, mapping_lines
from s3bulk.local.run import execute
from s3bulk.local.undo import undo_log
from s3bulk.ops.extraneous import empty_source_message, first_selected
from s3bulk.ops.pools import connections_needed
from s3bulk.ops.process import ProcessCode, load_code
from s3bulk.report.keylog import open_for_append
from s3bulk.s3.clients import ClientSettings, S3Clients, for_side
from s3bulk.s3.faststore import open_store
from s3bulk.s3.ratecontrol import RateControl
from s3bulk.s3.stores import S3Store
from s3bulk.source.manifest import ManifestError
from s3bulk.store import StoreError

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
    if job.operation == "abort-uploads" and job.source.modified_before is not None:
        cutoff = job.source.modified_before.isoformat().replace("+00:00", "Z")
        what = (
            f"abort {plan.objects:,} incomplete multipart uploads ({human_bytes(plan.bytes)} of parts) begun before {cutoff} under {where}"
        )
    elif job.operation in DESTRUCTIVE:
        what = f"{job.operation} {plan.objects:,} objects ({human_bytes(plan.bytes)}) from {where}"
    elif job.options.delete_extraneous and job.destination is not None:
        dst = f"s3://{job.destination.bucket}/{job.destination.prefix}"
        what = f"copy {plan.objects:,} objects from {where} and delete {plan.extraneous:,} objects of {dst} that {where} lacks"
    else:
        what = f"{job.operation} {plan.objects:,} objects ({human_bytes(plan.bytes)}) under {where}"
    answer = ask(f"This run would {what}. Go on? [y/N] ")
    if answer.strip().lower() not in {"y", "yes"}:
        raise Declined()


def request_path(args: argparse.Namespace) -> str:
    """--request-path, else $S3BULK_REQUEST_PATH (as the stack's functions read it), else fast."""
    if args.request_path is not None:
        return str(args.request_path)
    env = os.environ.get("S3BULK_REQUEST_PATH", "").strip()
    if not env:
        return "fast"
    if env not in {"fast", "botocore"}:
        raise UsageError(f"$S3BULK_REQUEST_PATH: {env!r} is neither fast nor botocore; set one of them, or unset it (fast)")
    return env


def _open_key_log(path: str | None, flag: str = "--key-log") -> IO[str] | None:
    """Opened before any work, so a bad path fails in one line, not after the job; appended to, so a resume adds to it."""
    if not path:
        return None
    try:
        return open_for_append(path)
    except OSError as exc:
        raise UsageError(f"{flag} {path}: {exc.strerror}; give a writable file path") from None


def _process_code(job: Job, job_file: str | None, settings: ClientSettings, concurrency: int) -> ProcessCode | None:
    """Import the job's process function (or connect its Lambda) before anything runs: a bad one is exit 2."""
    if job.process is None:
        return None
    from s3bulk.aws.invoke import lambda_invoker  # a process job's Lambda target only: other runs never load it

    search = [Path(job_file).resolve().parent] if job_file else []
    search.append(Path.cwd())
    return load_code(job.process, search, lambda_invoker(settings, concurrency))


def _stores(
    job: Job,
    settings: ClientSettings,
    connections: int,
    *,
    fast: bool = True,
    rate: RateControl | None = None,
    names: Mapping[str, str] | None = None,
    first_contact: bool = True,
) -> tuple[S3Store, S3Store | None]:
    """The source's store, and the destination's when it is another endpoint or profile (None: the same one).

    Each bucket is looked at once first (reach.py): an endpoint that never answers fails in seconds on `first_contact`
    (not a resume: its endpoint answered before), and a missing bucket in one line. `names`: what named each setting."""
    _check_sides(job)
    src = for_side(settings, job.source)
    preflight.require_credentials(src)
    src_clients = S3Clients(src, connections)
    sides = [_side(src_clients, job.source, "source", names)]
    dst_clients: S3Clients | None = None
    if job.destination is not None and differ(job.source, job.destination):
        dst = for_side(settings, job.destination)
        what = f"job.destination.profile: no credentials for profile {dst.profile!r}; configure it or drop the field"
        preflight.require_credentials(dst, what if dst.profile else preflight.NO_CREDENTIALS)
        dst_clients = S3Clients(dst, connections)
    if job.destination is not None:
        sides.append(_side(dst_clients or src_clients, job.destination, "destination", names))
    for side in sides:
        if side.clients.settings.endpoint_url is None:
            reach.check_region(side.clients.settings.region, side.endpoint_name or "--region")
    for side in sides:
        reach.probe(side, first_contact=first_contact)
    store = open_store(src_clients, fast=fast, rate=rate)
    return store, None if dst_clients is None else open_store(dst_clients, fast=fast, rate=rate)


def _side(clients: S3Clients, side: Source | Destination, role: str, names: Mapping[str, str] | None) -> reach.Side:
    """A bucket to look at first, with what named its endpoint (or, on AWS, its Region) for the one line."""
    named = names or {}
    if side.endpoint_url:
        name = f"job.{role}.endpoint_url"
    elif clients.settings.endpoint_url is not None:
        name = named.get("endpoint_url", "--endpoint-url")
    elif side.region:
        name = f"job.{role}.region"
    else:
        name = named.get("region", "--region") if clients.settings.region else ""
    return reach.Side(clients, side.bucket, f"job.{role}.bucket", name)


def _check_sides(job: Job) -> None:
    """A side's own profile must exist (boto3 would raise ProfileNotFound at the first request)."""
    for side, name in ((job.source, "source"), (job.destination, "destination")):
        if side is not None and side.profile and (problem := profile_problem(side.profile)):
            raise UsageError(f"job.{name}.profile: {problem}")


def _require_credentials(here: ClientSettings, job: Job) -> None:
    _check_sides(job)
    preflight.require_credentials(for_side(here, job.source))


def run(args: argparse.Namespace, console: Console, interrupt: Interrupt) -> int:
    # Everything that can be wrong with the job or the arguments fails here, in one line, before any object is touched.
    if args.resume is not None or args.retry_failed:  # a ledger is read, or the retry's manifest written, in the state dir
        check_state_dir(*state_of(args))
    early = job_file(args) if args.job else None
    if early is not None and args.resume is None and _no_one_to_ask(early, console, yes=args.yes):
        raise UsageError(NO_TERMINAL)
    check_report_path(args.report)
    fast = request_path(args) == "fast"
    if args.resume is None and not args.retry_failed and not (args.no_ledger or args.dry_run or (early and early.options.dry_run)):
        check_state_dir(*state_of(args))  # a new ledger is kept there
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
        job, ledger = open_ledger(args, here or ClientSettings())
        concurrency = resolve_concurrency(job, args.concurrency)
        if here is None:
            assert ledger is not None
            here = preflight.settings(args, ledger.origin(), ledger.job_id)
            code = _process_code(job, args.job, here, concurrency)
            _require_credentials(here, job)
        rate = RateControl(enabled=job.options.adaptive_rate)
        fresh = args.resume is None
        names = {k: v[1] for k, v in preflight.given(args).items()} if fresh else None
        store, dst_store = _stores(job, here, connections_needed(concurrency), fast=fast, rate=rate, names=names, first_contact=fresh)
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
    except (JobError, UsageError):  # refused before the job started (a missing bucket, no answer): no run to resume
        if ledger is not None:
            ledger.discard_if_unused()
            ledger = None
        if key_log is not None:
            key_log.close()
        raise
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
            state=ledger.path.parent if ledger is not None else state_of(args)[0],
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


def plan(args: argparse.Namespace, console: Console) -> int:

    job = load_job(args.job)
    try:
        prices = load_prices(args.prices)
    except (OSError, ValueError) as exc:
        raise UsageError(f"--prices {args.prices}: {exc}; pass a JSON file like s3bulk/data/prices.json") from None
    fast = request_path(args) == "fast"
    settings = preflight.settings(args)
    concurrency = resolve_concurrency(job)
    names = {k: v[1] for k, v in preflight.given(args).items()}
    store, dst_store = _stores(job, settings, connections_needed(concurrency), fast=fast, names=names)
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
    on_stack = stack_pace(plan)
    doc: dict[str, Any] = {
        "operation": plan.operation,
        "scanned": plan.scanned,
        "objects": plan.objects,
        "bytes": plan.bytes,
        "skipped": plan.skipped,
        "extraneous_to_delete": plan.extraneous,
        "invalid_manifest_rows": plan.invalid_rows,
        "key_mappings": [{"source": src, "destination": dst} for src, dst in plan.mappings],
        "by_storage_class": {k: {"objects": v[0], "bytes": v[1]} for k, v in sorted(plan.by_class.items())},
        "by_size": {k: {"objects": v[0], "bytes": v[1]} for k, v in plan.by_size.items()},
        "requests": dict(sorted(plan.requests.items())),
        "undo_journal_requests": dict(sorted(plan.journal.items())),
        "filter_requests": dict(sorted(plan.filter_requests.items())),
        "kms_requests": dict(sorted(plan.kms.items())),
        "objects_upper_bound": job.source.tags is not None or job.source.content_type is not None,
        "cost_usd": {k: round(v, 6) for k, v in dollars.items()},
        "prices": {"region": prices["region"], "as_of": prices["as_of"]},
        "eta_seconds": {
            "local": round(eta_seconds(plan, concurrency), 1),
            "stack": round(on_stack.seconds, 1),
        },
        "stack_pace": {
            "bound": on_stack.bound,
            "objects_per_s": round(on_stack.per_s, 1),
            "rates": {name: round(rate, 1) for name, rate in on_stack.rates},
        },
    }
    if job.operation == "abort-uploads":
        saved = storage_saved(plan, prices)
        doc["uploads"] = {
            "uploads": plan.objects,
            "parts_bytes": plan.bytes,
            "list_parts_requests": plan.requests.get("ListParts", 0),
            **({"storage_saved_usd_month": round(saved, 6)} if saved is not None else {}),
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
    if "uploads" in doc:
        up = doc["uploads"]
        saving = (
            f"; aborting them saves ${up['storage_saved_usd_month']:.4f} a month of S3 Standard storage"
            if "storage_saved_usd_month" in up
            else ""
        )
        console.print(
            f"abort-uploads: {up['uploads']:,} incomplete uploads holding {human_bytes(up['parts_bytes'])} of parts; the plan read "
            f"their sizes with one ListParts per upload ({up['list_parts_requests']:,}, priced above; the run makes none){saving}",
            markup=False,
        )
    if plan.kms:
        calls = ", ".join(f"{k} {v:,}" for k, v in doc["kms_requests"].items())
        console.print(
            f"KMS requests S3 makes for SSE-KMS objects without an S3 Bucket Key: {calls} (a Bucket Key on the buckets cuts them "
            "by up to 99%; KMS allows 5,500-50,000 a second per account and Region, shared by every caller)",
            markup=False,
        )
    if plan.journal:
        journal = ", ".join(f"{k} {v:,}" for k, v in doc["undo_journal_requests"].items())
        console.print(f"undo journal reads (always on the stack; here with --key-log): {journal}", markup=False)
    c = doc["cost_usd"]
    console.print(
        f"cost ({prices['region']} list prices as of {prices['as_of']}): deployed stack ${c['stack_total']:.4f} "
        f"(S3 requests ${c['s3_requests']:.4f}"
        + (f", undo journal reads ${c['undo_journal']:.4f}" if c["undo_journal"] else "")
        + (f", restore retrieval ${c['restore_retrieval']:.4f}" if c["restore_retrieval"] else "")
        + (f", KMS requests ${c['kms_requests']:.4f}" if c["kms_requests"] else "")
        + (f", Lambda invocations ${c['process_invocations']:.4f}" if c["process_invocations"] else "")
        + f") vs S3 Batch Operations ${c['batch_operations_total']:.4f}"
        + (f" (of which one invocation per object ${c['batch_operations_invocations']:.4f})" if c["batch_operations_invocations"] else ""),
        markup=False,
    )
    eta = doc["eta_seconds"]
    rates = doc["stack_pace"]["rates"]
    console.print(
        f"ETA: {eta['local']:,.0f} s here at {concurrency} threads; {eta['stack']:,.0f} s on the stack (defaults: {STACK_LIST_SHARDS} "
        f"listing shards, {STACK_WORKERS} workers, a new destination prefix), bound by {on_stack.bound} at {on_stack.per_s:,.0f} objects/s "
        f"(listing {rates['listing']:,.0f}/s, workers {rates['workers']:,.0f}/s, S3 {rates['S3 request rate']:,.0f}/s; "
        "docs/cost-model.md has the rest)",
        markup=False,
    )
    if doc["objects_upper_bound"]:
        reads = ", ".join(f"{k} {v:,}" for k, v in doc["filter_requests"].items()) or "none"
        console.print(
            f"source.tags / content_type: {plan.objects:,} objects is an upper bound, since only reading each tells which "
            f"match; the filter's reads ({reads}) are in the requests and cost above, and the rest are counted as if all matched",
            markup=False,
        )
    if plan.skipped or plan.extraneous:
        console.print(f"skipped as existing/unchanged: {plan.skipped:,}; extraneous to delete: {plan.extraneous:,}", markup=False)
    for line in mapping_lines(plan.mappings):
        console.print(line, markup=False, highlight=False)
    if plan.invalid_rows:
        console.print(f"manifest rows that would fail (run reports each with its line): {plan.invalid_rows:,}", markup=False)
    return EXIT_OK


def undo(args: argparse.Namespace, console: Console) -> int:
    settings = preflight.settings(args)
    preflight.require_credentials(settings)
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
