"""`s3bulk doctor --endpoint-url URL --bucket B`: parse, build the stores as a run does, probe (local/probe.py), print.

Exit 0 when the probe ran, whatever it found; 1 when the server could not be probed; 2 for usage errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace

from rich.console import Console
from rich.table import Table
from rich.text import Text

from s3bulk.cli.contract import EXIT_FAILED, EXIT_OK
from s3bulk.local import preflight
from s3bulk.local.preflight import UsageError
from s3bulk.local.probe import ProbeError, ProbeReport, probe_server
from s3bulk.s3.clients import ClientSettings, S3Clients, has_credentials
from s3bulk.s3.faststore import FastS3Store, open_store
from s3bulk.s3.stores import S3Store

# A probe is a few dozen small requests: a server that does not answer in seconds is not worth eight attempts.
ATTEMPTS = 2
CONNECT_TIMEOUT = 3.0
READ_TIMEOUT = 30.0
STYLE = {"trust": "green", "check": "yellow", "refuse": "red", "unchecked": "magenta", "unknown": "red"}


def doctor(args: argparse.Namespace, console: Console) -> int:
    if not args.bucket:
        raise UsageError(
            "doctor --endpoint-url: name a bucket the probe may write scratch keys to and delete them from (--bucket BUCKET); "
            "without --endpoint-url and --bucket, doctor checks the deployed stack"
        )
    settings = preflight.settings(args)
    if not has_credentials(settings):
        raise UsageError("no AWS credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or pass --profile")
    endpoint = settings.endpoint_url or "AWS S3"
    try:
        report = probe_server(*probe_stores(settings), args.bucket, endpoint)
    except ProbeError as exc:
        Console(stderr=True, highlight=False).print(f"error: {exc}", markup=False, soft_wrap=True)
        return EXIT_FAILED
    if args.json:
        print(json.dumps(report.as_json(), indent=2, ensure_ascii=False))
    else:
        _print(report, console)
    if report.left_behind:
        print(
            f"warning: {len(report.left_behind)} scratch key(s) could not be deleted from s3://{report.bucket}; delete them:\n"
            + "\n".join(f"  {k!a}" for k in report.left_behind),
            file=sys.stderr,
        )
    return EXIT_OK


def probe_stores(settings: ClientSettings) -> tuple[S3Store, S3Store | None]:
    """The stores a run would build on these settings (botocore's, and the fast path's where a run would take it), with
    few attempts and short timeouts: a probe is a few dozen small requests."""
    tuned = replace(settings, max_attempts=ATTEMPTS, connect_timeout=CONNECT_TIMEOUT, read_timeout=READ_TIMEOUT)
    clients = S3Clients(tuned, 4)
    fast = open_store(clients, fast=True)
    return open_store(clients, fast=False), fast if isinstance(fast, FastS3Store) else None


def _print(report: ProbeReport, console: Console) -> None:
    table = Table(title=f"{report.endpoint}, s3://{report.bucket} ({report.seconds:.1f} s)", title_justify="left")
    table.add_column("probe", no_wrap=True)
    table.add_column("the server")
    table.add_column("s3bulk", no_wrap=True)
    table.add_column("so")
    for f in report.findings:
        table.add_row(Text(f.probe), Text(f.seen), Text(f.verdict, style=STYLE.get(f.verdict, "")), Text(f.does))
    console.print(table)
    console.print(
        "trust: relied on as on S3; check: verified at a cost; refuse: stops, or fails those objects; "
        "unchecked: nothing tells, your keys decide; not used: no job needs it",
        markup=False,
        soft_wrap=True,
    )
