"""A local run's job and its ledger: the job file with the command line's overrides, the state directory, and the
ledger a run keeps (new, resumed, or refused while the same job runs or its last run is unfinished)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sqlite3
from pathlib import Path

from s3bulk.job import Job, load_job, new_job_id, parse_job
from s3bulk.local.joblock import JobLock
from s3bulk.local.ledger import LedgerError, LocalLedger, spec_hash, state_dir
from s3bulk.local.preflight import UsageError, origin_of
from s3bulk.local.retry import retry_failed
from s3bulk.s3.clients import ClientSettings


def job_file(args: argparse.Namespace) -> Job:
    """The job file's job, with the command line's overrides; with --retry-failed, that job over what a run of it failed."""
    job = with_overrides(load_job(args.job), args)
    if getattr(args, "retry_failed", None):
        state = Path(args.state_dir) if args.state_dir else state_dir()
        job = retry_failed(job, Path(args.retry_failed), state)
    return job


def with_overrides(job: Job, args: argparse.Namespace) -> Job:
    canary = getattr(args, "canary", None)
    if canary is not None:
        doc = job.model_dump(mode="json", exclude_none=True)
        doc["options"]["canary"] = canary
        doc["options"]["dry_run"] = doc["options"].get("dry_run", False) or bool(args.dry_run)
        job = parse_job(json.dumps(doc))  # the job's own rules: a canary in a dry run or a sync is refused in one line
    if args.dry_run:
        return job.model_copy(update={"options": job.options.model_copy(update={"dry_run": True})})
    return job


def state_of(args: argparse.Namespace) -> tuple[Path, str]:
    """The run's state directory, and what named it (for its errors): --state-dir, $S3BULK_STATE_DIR, or the default."""
    if args.state_dir:
        return Path(args.state_dir), "--state-dir"
    return state_dir(), "$S3BULK_STATE_DIR" if os.environ.get("S3BULK_STATE_DIR") else "the state directory"


def open_ledger(args: argparse.Namespace, here: ClientSettings) -> tuple[Job, LocalLedger | None]:
    """The job to run and its ledger: a new one (remembering where the run points), or the interrupted run --resume names.

    Either way the job's lock is taken first (joblock.py): a second run of the same job is refused naming the first's
    pid. A new run of a job whose last run did not finish is refused too, unless --restart sets that run aside."""
    state, named = state_of(args)
    lock: JobLock | None = None
    try:
        if args.resume is None:
            if not args.job:
                raise UsageError("run: give a job file, or --resume JOB_ID to continue an interrupted run")
            job = job_file(args)
            if job.options.canary is not None and args.no_ledger:
                raise UsageError("--no-ledger: a canary's rest runs with --resume, which needs the job ledger; drop --no-ledger")
            if job.options.dry_run or args.no_ledger:
                return job, None
            lock = JobLock.take(state, spec_hash(job), f"a run of {args.job}")
            set_aside_or_refuse(state, job, args)
            ledger = LocalLedger.create(state, new_job_id(job), job, origin_of(here))
        elif args.resume:
            lock = JobLock.take(state, LocalLedger.peek(state, args.resume)[0], f"--resume {args.resume}: its job")
            ledger = LocalLedger.open(state, args.resume)
            stored = parse_job(ledger.spec(), stored=True)
            job = job_file(args) if args.job else with_overrides(stored, args)
            if spec_hash(job) != spec_hash(stored):
                ledger.close()
                raise UsageError(f"--resume {args.resume}: the job file differs from the one that started it; pass the original file")
        else:
            if not args.job:
                raise UsageError("--resume without an id needs the job file; pass JOB.json or --resume JOB_ID")
            job = job_file(args)
            lock = JobLock.take(state, spec_hash(job), f"a run of {args.job}")
            found = LocalLedger.find_unfinished(state, job)
            if found is None:
                raise UsageError(f"--resume: no unfinished run of this job in {state}; run it without --resume")
            ledger = LocalLedger.open(state, found)
        ledger.hold(lock)
        lock = None
        return job, ledger
    except LedgerError as exc:
        raise UsageError(str(exc)) from None
    except (OSError, sqlite3.Error) as exc:  # passed check_state_dir, and still cannot hold a ledger (a full disk, a race)
        raise UsageError(
            f"{named} {state}: cannot keep the job ledger there ({exc}); give a writable directory, or pass --no-ledger"
        ) from None
    finally:
        if lock is not None:
            lock.release()


def set_aside_or_refuse(state: Path, job: Job, args: argparse.Namespace) -> None:
    """A new run of a job whose last run did not finish starts over only when asked (--restart): else one line says which
    run to resume. A run set aside is never resumed, so a later bare --resume cannot redo a stale run."""
    runs = LocalLedger.unfinished(state, job)
    if not runs:
        return
    if args.restart:
        for job_id, _ in runs:
            LocalLedger.set_aside(state, job_id)
        return
    job_id, status = runs[0]
    how = {"interrupted": "was interrupted", "stopped": "stopped", "canary": "ran its canary", "running": "ended without finishing"}
    extra = f" --state-dir {shlex.quote(args.state_dir)}" if args.state_dir else ""
    raise UsageError(
        f"{args.job}: its run {job_id} {how.get(status, 'did not finish')}; finish it with s3bulk run --resume {job_id}{extra}, "
        "or start over with --restart (that run is then set aside)"
    )
