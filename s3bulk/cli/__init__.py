"""`s3bulk`: parse, build the client, call the engine, print, exit with the contract's code.

The exit codes are in `contract.py`.

Each command's module is imported only when that command runs (`local` for a run, a plan
or an undo; `remote` for the deployed stack's commands): a run does not load the
stack's client code, and its start-up is part of every job's wall time (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import difflib
import gc
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from botocore.exceptions import BotoCoreError
from rich.console import Console

from s3bulk import __version__
from s3bulk.aws import DEFAULT_STACK
from s3bulk.bodies.malloc import pin_mmap_threshold
from s3bulk.breakers.outage import EndpointUnreachable
from s3bulk.cli.contract import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, EXIT_STOPPED
from s3bulk.job import JobError, json_schema, load_job
from s3bulk.local.interrupt import Interrupt, handling_signals
from s3bulk.local.preflight import UsageError, setup_problem
from s3bulk.report import writes_stdout

REMOTE_COMMANDS = frozenset(
    {"submit", "resume", "retry", "stop", "cancel", "confirm", "tune", "jobs", "status", "watch", "report", "doctor"}
)


# Worker threads at once: the job file's options.concurrency takes 1-1,024, and so does every flag that overrides it.
MAX_THREADS = 1024
# SQS event sources take MaximumConcurrency from 2 to 1,000 (s3bulk/aws/remote.py checks the same, for its callers).
MAX_STACK_WORKERS = 1000
REQUEST_PATHS = ("fast", "botocore")
REQUEST_PATH: dict[str, Any] = {
    "choices": REQUEST_PATHS,
    "default": None,  # $S3BULK_REQUEST_PATH (as the stack's functions read it), else fast: cli/local.request_path
    "help": "fast: CopyObject/DeleteObjects signed and sent directly (3x less CPU); botocore: every call through botocore "
    "(default $S3BULK_REQUEST_PATH, else fast)",
}


# Flags other tools spell their own way (aws s3 --dryrun, rsync -n, apt -y), and what s3bulk calls them.
OTHER_SPELLINGS = {"--dryrun": "--dry-run", "-n": "--dry-run", "--noop": "--dry-run", "-y": "--yes", "--force": "--yes", "-f": "--yes"}


class _Parser(argparse.ArgumentParser):
    """argparse's refusals in one line (exit 2), like every other refusal: the flag, what is wrong, and where to look;
    a flag it does not know gets a "did you mean" from the command's own flags."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = self._command_parser(getattr(parsed, "command", None))
            hints = [(extra, hint) for extra in extras if (hint := suggestion(extra, command))]
            said = [hint if len(extras) == 1 else f"{hint} (for {extra})" for extra, hint in hints]
            tail = f"; did you mean {', '.join(said)}?" if said else ""
            command.error(f"unrecognized arguments: {' '.join(extras)}{tail}")
        return parsed

    def _command_parser(self, command: str | None) -> argparse.ArgumentParser:
        """The subcommand's parser (its flags are the ones to suggest), else this one."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and command in action.choices:
                return action.choices[command]  # type: ignore[no-any-return]
        return self


def suggestion(given: str, parser: argparse.ArgumentParser) -> str | None:
    """The flag of `parser` that `given` most likely meant ("--dryrun" -> "--dry-run"), or None."""
    if not given.startswith("-"):
        return None
    flag = given.split("=", 1)[0]
    known = [opt for opt in parser._option_string_actions if opt.startswith("--")]
    if (other := OTHER_SPELLINGS.get(flag)) in known:
        return other
    close = difflib.get_close_matches(flag, known, n=1, cutoff=0.75)
    return close[0] if close else None


def bounded(low: int, high: int, what: str) -> Callable[[str], int]:
    """An argparse type: a whole number from low to high, else the flag's one line naming the range and `what` counts."""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; give {what}, {low}-{high}") from None
        if not low <= n <= high:
            raise argparse.ArgumentTypeError(f"{n:,} is outside {low}-{high}; give {what} in that range")
        return n

    return parse


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="s3bulk", description="Copy, move and delete any number of S3 objects.")
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
    run.add_argument(
        "--restart",
        action="store_true",
        help="start the job over although its last run did not finish (that run is set aside: never resumed); "
        "without it, such a run is refused and names the --resume that finishes it",
    )
    run.add_argument(
        "--state-dir",
        metavar="DIR",
        help="where job ledgers live (default $S3BULK_STATE_DIR or ~/.local/state/s3bulk); a report that cannot be written "
        "where --report says once the job is done is written here instead",
    )
    run.add_argument("--no-ledger", action="store_true", help="keep no job ledger (the run cannot be resumed)")
    run.add_argument("--endpoint-url", help="an S3-compatible endpoint instead of AWS")
    run.add_argument("--region", help="AWS region (default: the standard chain; us-east-1 with --endpoint-url)")
    run.add_argument("--profile", help="AWS profile name")
    run.add_argument(
        "--report",
        metavar="PATH",
        help="write the JSON report (every failure with key and code) here; - prints it on standard output (the summary then "
        "goes to stderr). Past 1,000 failures the report lists the first ones and NAME.failures.jsonl beside it every one; "
        "for -, /dev/stdout or a FIFO that file goes to the state dir (--state-dir) as JOB_ID.failures.jsonl",
    )
    run.add_argument(
        "--key-log",
        metavar="PATH.jsonl",
        dest="key_log",
        help="append one JSON line per object (key, sizes, ETags/checksums, attempts, outcome, error) here; see docs/key-log.md",
    )
    # The old name of --key-log, kept for one release: "ledger" now means only the job ledger (--no-ledger, --resume).
    run.add_argument("--ledger", metavar="PATH.jsonl", dest="key_log_deprecated", help="deprecated alias of --key-log")
    run.add_argument(
        "--concurrency",
        type=bounded(1, MAX_THREADS, "worker threads"),
        metavar="N",
        help=f"worker threads, 1-{MAX_THREADS}, overriding options.concurrency",
    )
    run.add_argument("--dry-run", action="store_true", help="list and count only; change nothing")
    run.add_argument(
        "--canary",
        type=int,
        metavar="N",
        help="first run the job on N objects sampled across the selection, check them, and stop (options.canary); --resume does the rest",
    )
    run.add_argument(
        "--yes", action="store_true", help="start a delete, move or sync (a copy with delete_extraneous) without asking first on a terminal"
    )
    run.add_argument(
        "--retry-failed",
        metavar="REPORT.json|KEYS.jsonl",
        help="run the job again over exactly the objects a run of it failed, from its report or key log (nothing listed again)",
    )
    run.add_argument("--progress", choices=("auto", "on", "off"), default="auto", help="live progress (auto: on a terminal)")
    run.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="print nothing but errors, and one line on stderr when objects failed (how many, where listed)",
    )
    run.add_argument("--request-path", **REQUEST_PATH)

    plan = sub.add_parser("plan", help="list what a job would do, its S3 requests, cost and ETA; change nothing")
    plan.add_argument("job")
    plan.add_argument("--endpoint-url", help="an S3-compatible endpoint instead of AWS")
    plan.add_argument("--region", help="AWS region")
    plan.add_argument("--profile", help="AWS profile name")
    plan.add_argument("--prices", metavar="PATH", help="a prices JSON like s3bulk/data/prices.json (default: that file)")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.add_argument("--request-path", **REQUEST_PATH)

    val = sub.add_parser("validate", help="check a job file without running it")
    val.add_argument("job")

    sub.add_parser("schema", help="print the job file's JSON Schema")

    def deployed(name: str, help_text: str, endpoint_help: str = argparse.SUPPRESS) -> argparse.ArgumentParser:
        cmd = sub.add_parser(name, help=help_text)
        cmd.add_argument("--stack", default=DEFAULT_STACK, help=f"the deployed CloudFormation stack (default {DEFAULT_STACK})")
        cmd.add_argument("--region", help="AWS region of the stack")
        cmd.add_argument("--profile", help="AWS profile name")
        cmd.add_argument("--endpoint-url", help=endpoint_help)
        cmd.add_argument("--state-machine-arn", help="instead of reading the stack's outputs")
        cmd.add_argument("--table", help="ledger table name, instead of the stack's outputs")
        cmd.add_argument("--report-bucket", help="report bucket name, instead of the stack's outputs")
        return cmd

    submit_cmd = deployed("submit", "start a job on the deployed stack")
    submit_cmd.add_argument("job")
    submit_cmd.add_argument(
        "--yes", action="store_true", help="start a delete, move or sync at once, without the hold for s3bulk confirm it gets by default"
    )
    doctor = deployed(
        "doctor",
        "check what the deployed stack needs from its account (Lambda concurrency); with --bucket, probe an S3 server instead",
        "with --bucket: the S3 server to probe (default AWS S3, or $AWS_ENDPOINT_URL_S3)",
    )
    doctor.add_argument(
        "--bucket",
        help="probe the server (--endpoint-url) on scratch keys under .s3bulk-doctor/ in this bucket, all deleted after: "
        "key order, encoding, delimiter, slashes, copies, ETags, checksums, conditional writes, tagging, ACLs",
    )
    doctor.add_argument("--json", action="store_true", help="with --bucket: the probe's findings as one JSON document")
    deployed("resume", "go on with a stopped or failed deployed job from its checkpoints").add_argument("job_id")
    deployed("stop", "stop a running deployed job; its queued work is held for s3bulk resume").add_argument("job_id")
    retry_cmd = deployed("retry", "run a deployed job again over exactly the objects it failed (nothing listed again)")
    retry_cmd.add_argument("job_id")
    retry_cmd.add_argument("--job-id", dest="new_job_id", metavar="ID", help="the retry's job id (default JOB_ID-retry-N)")
    deployed("cancel", "end a deployed job for good: queued work dropped, report cancelled, never resumed").add_argument("job_id")
    deployed("confirm", "let a deployed job held by options.confirm go on").add_argument("job_id")
    tune_cmd = deployed("tune", "while jobs run: cap one job's batches at once (JOB_ID --concurrency N), or the stack's workers")
    tune_cmd.add_argument("job_id", nargs="?", help="the job to cap (with --concurrency)")
    tune_cmd.add_argument(
        "--concurrency",
        type=bounded(0, MAX_STACK_WORKERS, "the job's batches at once (0 lifts its cap)"),
        metavar="N",
        help=f"the job's batches at once, 1-{MAX_STACK_WORKERS}; 0 lifts its cap",
    )
    tune_cmd.add_argument(
        "--max-concurrency",
        type=bounded(2, MAX_STACK_WORKERS, "the stack's workers at once"),
        metavar="N",
        help=f"the stack's workers at once, for every job, 2-{MAX_STACK_WORKERS}",
    )
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
        help="put back what a tag, set-storage-class, set-legal-hold, set-acl, set-retention (GOVERNANCE), set-encryption or "
        "rewind job changed, from its --key-log",
    )
    undo.add_argument("log", metavar="LOG.jsonl", help="the job's per-key log (s3bulk run --key-log)")
    undo.add_argument("--dry-run", action="store_true", help="count what would be restored; change nothing")
    undo.add_argument("--endpoint-url", help="an S3-compatible endpoint instead of AWS")
    undo.add_argument("--region", help="AWS region")
    undo.add_argument("--profile", help="AWS profile name")
    undo.add_argument(
        "--concurrency",
        type=bounded(1, MAX_THREADS, "objects undone at once"),
        default=16,
        metavar="N",
        help=f"objects undone at once, 1-{MAX_THREADS} (default 16)",
    )

    demo = sub.add_parser("demo", help="run a copy job end to end on an embedded local S3 server")
    demo.add_argument("--objects", type=int, default=3000, metavar="N", help="objects to seed (default 3000)")
    demo.add_argument("--report", metavar="PATH", help="write the JSON report here")
    demo.add_argument("--progress", choices=("auto", "on", "off"), default="auto")
    demo.add_argument(
        "--stack",
        action="store_true",
        help="run the serverless pipeline instead: the CDK app's state machine, queues, ledger and Lambda handlers, emulated here",
    )

    serve = sub.add_parser("serve", help="run the embedded S3 server on 127.0.0.1 until Ctrl-C, and say how to use it")
    serve.add_argument("--port", type=bounded(1, 65535, "the S3 port"), default=0, metavar="PORT", help="S3 port (default: a free one)")
    serve.add_argument("--dir", type=Path, default=None, metavar="DIR", help="where its data lives, kept (default: a temporary directory)")
    serve.add_argument(
        "--seed",
        type=bounded(1, 1_000_000, "objects to seed"),
        default=0,
        metavar="N",
        help="create the buckets events/demo-copy.json names and put N demo objects in its source",
    )
    return p


def loaded() -> None:
    """The command's modules are loaded: freeze them out of later collections, and turn the collector back on if
    the entry point (__main__) turned it off for the loading (in-process callers never do)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


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
        except KeyboardInterrupt:  # while the arguments were read, before _main's own handling began
            print("interrupted before the job started; nothing was changed", file=sys.stderr, flush=True)
            return EXIT_INTERRUPTED


def _main(argv: Sequence[str] | None, interrupt: Interrupt) -> int:
    args = _parser().parse_args(argv)
    pin_mmap_threshold()  # relayed and processed bodies go back to the OS when freed (bodies/malloc.py)
    errors = Console(stderr=True, highlight=False)
    # A report on standard output (--report -, /dev/stdout) has it to itself: the summary and progress go to stderr.
    to_stdout = args.command in {"run", "demo"} and bool(args.report) and writes_stdout(args.report)
    console = errors if to_stdout else Console(stderr=False, highlight=False)
    try:
        if args.command == "validate":
            from s3bulk.job.parse import check_local_files

            job = load_job(args.job)
            check_local_files(job)  # a local manifest: there and readable, so a run does not find out after it started
            dst = f" -> s3://{job.destination.bucket}/{job.destination.prefix}" if job.destination else ""
            console.print(f"ok: {job.operation} s3://{job.source.bucket}/{job.source.prefix}{dst}", markup=False)
            return EXIT_OK
        if args.command == "schema":
            print(json.dumps(json_schema(), indent=2))
            return EXIT_OK
        if args.command == "serve":
            from s3bulk.local.serve import serve

            loaded()
            with interrupt.defer():  # Ctrl-C only sets the event: the server is stopped in order, then "stopped"
                return serve(port=args.port, data_dir=args.dir, console=console, interrupt=interrupt, objects=args.seed)
        if args.command == "demo" and args.stack:
            from s3bulk.testing.stack.demo import run_stack_demo

            loaded()
            return run_stack_demo(objects=args.objects, console=console, cli_main=main)
        if args.command == "demo":
            from s3bulk.local.demo import run_demo

            loaded()
            return run_demo(objects=args.objects, console=console, report_path=args.report, progress=args.progress)
        if args.command == "doctor" and (args.bucket or args.endpoint_url):  # the server probe, not the stack's check
            from s3bulk.cli.doctor import doctor

            loaded()
            return doctor(args, console)
        if args.command in REMOTE_COMMANDS:
            from s3bulk.cli.remote import remote

            loaded()
            return remote(args, console)
        from s3bulk.cli import local

        loaded()
        if args.command == "plan":
            return local.plan(args, console)
        if args.command == "undo":
            return local.undo(args, console)
        return local.run(args, console, interrupt)
    except (JobError, UsageError) as exc:
        errors.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        return EXIT_INVALID
    except BotoCoreError as exc:  # an AWS setup botocore cannot read, wherever a command first met it: before any work
        if (problem := setup_problem(exc)) is None:
            raise
        errors.print(f"error: {problem}", markup=False, highlight=False, soft_wrap=True)
        return EXIT_INVALID
    except EndpointUnreachable as exc:  # outside a run (plan, a destination check): nothing was changed
        errors.print(f"stopped: {exc}", markup=False, highlight=False, soft_wrap=True)
        return EXIT_STOPPED
    except KeyboardInterrupt:  # before a job started (a run's own Ctrl-C ends in its summary and report)
        errors.print("interrupted before the job started; nothing was changed")
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
