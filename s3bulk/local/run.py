"""`s3bulk run` as a function: the engine under a progress display, then the summary and the report file.

The CLI and the demo both call `execute`, so the demo runs exactly what `s3bulk run` runs.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import IO

from rich.console import Console

from s3bulk.breakers.failure import STOP_REASON
from s3bulk.job import Job, JobError
from s3bulk.local import canary as sampling
from s3bulk.local.engine import Engine, JobAbort, finish_journaled_deletes
from s3bulk.local.interrupt import Interrupt, Interrupted, interruptible
from s3bulk.local.ledger import LocalLedger
from s3bulk.local.plan import make_plan
from s3bulk.local.progress import EndpointWatch, ProgressDisplay, failures_table, listed_where, mapping_lines, summary_table
from s3bulk.ops.extraneous import empty_source_message, first_selected
from s3bulk.ops.items import Item
from s3bulk.ops.process import ProcessCode
from s3bulk.report import Report, writes_stdout
from s3bulk.source.manifest import ManifestError
from s3bulk.store import ObjectStore, StoreError


def stop_message(report: Report, resume: str | None) -> str:
    """The one line a run stopped by the outage breaker prints: which endpoint, what error, since when, and how to go on."""
    assert report.outage is not None
    s = report.summary()
    how = resume or "run the job again (no ledger was kept, so it starts over)"
    return (
        f"stopped: {report.outage}; {s['done']:,} done, {s['failed']:,} failed, {s['not_done']:,} not done; "
        f"once the endpoint answers again: {how}"
    )


def guard_deletes(job: Job, store: ObjectStore, dst_store: ObjectStore | None = None) -> int:
    """Count first, then act: the deletes the job would make, from a complete listing; JobError over options.max_delete.

    The count is the plan's (the engine's own item stream, in a dry run), so it selects exactly
    what the run selects. On a resume, what is already deleted is no longer listed.
    """
    limit = job.options.max_delete
    if limit is None or job.options.dry_run:
        return 0
    try:
        plan = make_plan(job, store, dst_store)
    except StoreError as exc:
        raise JobError(f"job.options.max_delete: counting the deletes failed ({exc.code}: {exc.message}); nothing was deleted") from None
    except (JobAbort, ManifestError) as exc:
        raise JobError(f"job.options.max_delete: counting the deletes failed ({exc}); nothing was deleted") from None
    op = job.operation
    found = plan.markers if op == "rewind" else plan.objects if op in {"delete", "move"} else plan.extraneous
    if found > limit:
        what = {"rewind": "keys (each hidden under a delete marker)", "delete": "objects", "move": "objects"}.get(
            op, "extraneous destination objects"
        )
        raise JobError(
            f"job.options.max_delete: the job would delete {found:,} {what}, over max_delete {limit:,}; nothing was deleted. "
            "Narrow the selection, or raise max_delete if that many is right"
        )
    return found


def resume_command(job_id: str, extra: str = "") -> str:
    """The command that finishes a run, as printed: the ledger remembers the endpoint, Region and profile it ran with."""
    return f"s3bulk run --resume {job_id}{extra}"


def execute(
    job: Job,
    store: ObjectStore,
    *,
    concurrency: int | None,
    console: Console,
    progress: str = "auto",
    quiet: bool = False,
    report_path: str | None = None,
    ledger: LocalLedger | None = None,
    key_log: IO[str] | None = None,
    code: ProcessCode | None = None,
    dst_store: ObjectStore | None = None,
    interrupt: Interrupt | None = None,
    resume_args: str = "",
    state: Path | None = None,
) -> Report:
    """Run the engine with a progress display, then print the summary and write the report.

    Ctrl-C anywhere in here (`interrupt`, routed by the CLI) ends in the summary, the report file and a
    ledger that --resume finishes: steps that only read are left at once, and a running job stops
    taking objects and lets the ones in flight finish and commit.

    `state` (the run's state directory) takes what the report path cannot: every failure of a report sent to
    `-` or a device, and the report itself when its path cannot be written once the job is done.
    """
    interrupt = interrupt or Interrupt()
    started = time.monotonic()
    if ledger is not None and not job.options.dry_run:
        finish_journaled_deletes(job, store, ledger)  # a killed move's batch between its deletes and its commit
    with interrupt.defer():
        try:
            first_run = ledger is None or ledger.run_number == 1  # read here: the step's thread may outlive the ledger
            picked = interruptible(interrupt, lambda: _before(job, store, dst_store, first_run=first_run, keeps_ledger=ledger is not None))
        except Interrupted:
            engine = Engine(job, store, concurrency=concurrency, ledger=ledger, dst_store=dst_store, code=code)
            report = engine.interrupted_report(time.monotonic() - started)
        else:
            engine = Engine(
                job,
                store,
                concurrency=concurrency,
                ledger=ledger,
                key_log=key_log,
                code=code,
                dst_store=dst_store,
                sample=picked,
                interrupt=interrupt,
            )
            if ledger is not None and not quiet:
                verb = "resuming" if ledger.run_number > 1 else "job"
                hint = resume_command(engine.job_id, resume_args)
                console.print(f"{verb} {engine.job_id} (if interrupted: {hint})", markup=False, highlight=False, soft_wrap=True)
                if engine.redo:
                    console.print(f"redoing first the {engine.redo:,} objects that failed before the failure breaker stopped the job")
            show = not quiet and (progress == "on" or (progress == "auto" and console.is_terminal))
            if show:
                with ProgressDisplay(engine.tally, f"{job.operation}", console, breakers=engine.breakers):
                    report = engine.run()
            else:
                with EndpointWatch(engine.breakers, quiet=quiet):
                    report = engine.run()
            if picked is not None:
                report = _checked(
                    job, report, picked, store, dst_store or store, resume_command(engine.job_id, resume_args), console, quiet
                )
        _finish(job, report, engine, console, quiet=quiet, report_path=report_path, resume_args=resume_args, state=state)
    return report


def _before(job: Job, store: ObjectStore, dst_store: ObjectStore | None, *, first_run: bool, keeps_ledger: bool) -> list[Item] | None:
    """What runs before the first object and only reads (it may be left running on a stop, so it never touches the
    ledger): the delete guard's count, the sync's empty-source check, the canary's sample (returned; `keeps_ledger`: there is a
    ledger to keep the rest's place)."""
    guard_deletes(job, store, dst_store)
    if job.options.delete_extraneous and not job.options.allow_empty_source and first_run:
        try:
            found = first_selected(job, store)
        except StoreError as exc:
            raise JobError(
                f"options.delete_extraneous: checking that the source selects anything failed ({exc.code}: {exc.message}); "
                "nothing was deleted"
            ) from None
        if found is None:
            raise JobError(empty_source_message(job))
    if job.options.canary is not None and keeps_ledger and first_run:
        try:
            return sampling.sample(job, store, job.options.canary)
        except StoreError as exc:
            raise JobError(f"job.options.canary: sampling the selection failed ({exc.code}: {exc.message}); nothing was changed") from None
    return None


def write_report_file(report: Report, path: str, state: Path | None) -> tuple[str, Path | None]:
    """The report at `path`, or (that failing, once the work is done) in the state directory, said in one line on
    stderr: a report path that went away during the run must not cost the run's report. Returns where it went, and
    where every failure went when it does not list them all."""
    try:
        return path, report.write(path, spill_dir=state)
    except OSError as exc:
        why = exc.strerror or str(exc)
        if isinstance(exc, BrokenPipeError) and writes_stdout(path):  # the reader left: print nothing more to it
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if state is None:
        print(f"error: --report {path}: {why}; the report was not written", file=sys.stderr, flush=True)
        return path, None
    instead = state / f"{report.job_id}.report.json"
    try:
        state.mkdir(parents=True, exist_ok=True)
        every = report.write(instead, spill_dir=state)
    except OSError as again:
        print(
            f"error: --report {path}: {why}, and {instead}: {again.strerror or again}; the report was not written",
            file=sys.stderr,
            flush=True,
        )
        return path, None
    print(f"warning: --report {path}: {why}; the report is at {instead} instead", file=sys.stderr, flush=True)
    return str(instead), every


def _finish(
    job: Job,
    report: Report,
    engine: Engine,
    console: Console,
    *,
    quiet: bool,
    report_path: str | None,
    resume_args: str,
    state: Path | None = None,
) -> None:
    """The report file, the lines that say why a run ended early and how to go on, and the summary."""
    resumable = engine.ledger is not None
    every: Path | None = None
    if report_path:
        report_path, every = write_report_file(report, report_path, state)
    if report.outage is not None:  # on stderr even with --quiet: it says why the run stopped and how to finish it
        print(stop_message(report, resume_command(engine.job_id, resume_args) if resumable else None), file=sys.stderr, flush=True)
    if engine.trip is not None and report.stop_reason == STOP_REASON:  # on stderr even with --quiet, as an outage's
        how = resume_command(engine.job_id, resume_args) if resumable else "run the job again (no ledger was kept, so it starts over)"
        print(engine.trip.line(how), file=sys.stderr, flush=True)
    if report.interrupted:
        s = report.summary()
        how = resume_command(engine.job_id, resume_args) if resumable else "run the job again (no ledger was kept, so it starts over)"
        print(
            f"interrupted: {s.get('done', 0):,} done, {s['failed']:,} failed, {s.get('not_done', 0):,} listed and not done; "
            f"to finish: {how}",
            file=sys.stderr,
            flush=True,
        )
    if quiet:  # on stderr even with --quiet: a run that failed says so, and where its failures are
        _quiet_failures(report, report_path, every)
    else:
        console.print(summary_table(report, deletes=job.options.delete_extraneous))
        if job.options.dry_run:
            for line in mapping_lines(engine.mappings):
                console.print(line, markup=False, highlight=False)
        failures = failures_table(report, report_path, every)
        if failures is not None:
            console.print(failures)
        if report.error and report.outage is None and not report.interrupted and report.stop_reason is None:
            console.print(f"[red]error:[/] {report.error}")
        elif report.error is None and report.tally.snapshot().listed == 0:
            where = f"s3://{job.source.bucket}/{job.source.prefix}"
            console.print(f"[yellow]note:[/] {where} holds no object the job selects; check source.prefix and the filters")
    engine.tally.close()


# Failures --quiet prints (key, code, message), before the line saying where every one is listed.
QUIET_FAILURES = 10


def _quiet_failures(report: Report, report_path: str | None, every: Path | None) -> None:
    """--quiet's one line when objects failed, or the job did: how many, and where they are listed."""
    failed = report.tally.snapshot().failed
    ended = report.outage is not None or report.interrupted or report.stop_reason is not None  # said on stderr above
    if report.error and not ended:
        print(f"error: {report.error}", file=sys.stderr, flush=True)
    if failed:
        t = report.tally.snapshot()
        print(
            f"summary: {t.listed:,} listed, {t.succeeded:,} succeeded, {t.skipped:,} skipped, {failed:,} failed",
            file=sys.stderr,
            flush=True,
        )
        shown = report.tally.first_failures[:QUIET_FAILURES]
        for f in shown:  # each with its key and error code, as the report lists them
            print(f"  {repr(f['key'])[1:-1]}: {f['error']}: {f['message']}", file=sys.stderr, flush=True)
        rest = f"{failed - len(shown):,} more; " if failed > len(shown) else ""
        print(f"failed: {failed:,} object(s); {rest}{listed_where(report_path, every)}", file=sys.stderr, flush=True)


def _checked(
    job: Job, report: Report, picked: list[Item], store: ObjectStore, dst_store: ObjectStore, resume: str, console: Console, quiet: bool
) -> Report:
    """A canary's report, after checking its objects: failed when any object failed or did not check out."""
    failed = {f["key"] for f in report.tally.failures()}
    found = sampling.check(job, store, dst_store, picked, failed) if report.error is None and report.outage is None else None
    lines = [f"canary: {len(picked)} objects sampled across the selection; {len(failed)} failed"]
    if found is not None:
        lines.append(f"checked {found.checked}: {len(found.problems)} not as the job meant")
        lines += [f"  {p}" for p in found.problems[:20]]
    good = not failed and found is not None and not found.problems
    if good:
        lines.append(f"all good. Run the rest (the canary's objects are not redone): {resume}")
    elif report.error is None and report.outage is None:
        lines.append(f"fix what it found first; then {resume} runs the rest, or start over")
    if not quiet or not good:
        print("\n".join(lines), file=sys.stderr if not good or console.stderr else sys.stdout, flush=True)
    said = {"sampled": len(picked), "checked": found.checked if found is not None else 0, "rest": resume}
    if found is not None and found.problems and report.error is None:
        first = found.problems[0]
        more = f" (and {len(found.problems) - 1} more)" if len(found.problems) > 1 else ""
        return replace(report, error=f"canary: {first}{more}", status="failed", canary=said)
    return replace(report, canary=said)
