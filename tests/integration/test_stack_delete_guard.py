"""The delete guard (options.max_delete) through the synthesized stack on moto: every shard counted first, then the check, then the deletes."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.s3.models import s3_backends

from s3bulk import cli
from s3bulk.aws import remote
from s3bulk.aws.guard import counts_first, guarded
from s3bulk.aws.ledger import DynamoLedger
from s3bulk.aws.remote import Deployment
from s3bulk.job import parse_job
from s3bulk.s3.clients import ClientSettings
from s3bulk.testing.stack import StackOnMoto, cli_flags, synthesize
from tests.integration.aws_harness import REGION
from tests.integration.test_stack_on_moto import ENV, report

SRC = "src-bucket"
CONTEXT: dict[str, object] = {"read_buckets": SRC, "write_buckets": "", "delete_buckets": SRC}
N = 1000  # 17 listing pages of 60, cut into shards


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return synthesize(CONTEXT)


@pytest.fixture
def stack(template: dict[str, Any]) -> Iterator[StackOnMoto]:
    # Pages of 60 keys: the planner cuts the keys into several shards, each counted on its own.
    with StackOnMoto(template, buckets=(SRC,), env={**ENV, "S3BULK_LIST_PAGE_SIZE": "60"}) as s:
        backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
        for i in range(N):
            backend.put_object(SRC, f"old/{i % 13:02d}/obj-{i:05d}.{'keep' if i % 10 == 0 else 'log'}", b"x")
        yield s


def keys(stack: StackOnMoto) -> int:
    return sum(p.get("KeyCount", 0) for p in stack.s3.get_paginator("list_objects_v2").paginate(Bucket=SRC))


def job(limit: int) -> dict[str, Any]:
    return {"operation": "delete", "source": {"bucket": SRC, "prefix": "old/", "exclude": ["*.keep"]}, "options": {"max_delete": limit}}


SELECTED = N - N // 10  # the *.keep objects are not selected


def test_a_delete_over_max_delete_counts_every_shard_and_deletes_nothing(stack: StackOnMoto) -> None:
    ex = stack.run(job(SELECTED - 1), timeout=120)
    assert (ex.status, ex.description.get("error")) == ("FAILED", "JobFailed"), (ex.description.get("cause"), ex.entered()[-6:])
    entered = ex.entered()
    assert entered.count("CountShard") >= 2 and "CheckCount" in entered and "ListShards" not in entered
    cause = str(ex.description.get("cause"))
    assert f"the job would delete {SELECTED:,} objects, over max_delete {SELECTED - 1:,}; nothing was deleted" in cause
    assert keys(stack) == N
    assert sum(stack.queue_depths().values()) == 0  # no batch was sent


def test_a_delete_at_max_delete_counts_then_deletes_exactly_the_selection(stack: StackOnMoto) -> None:
    ex = stack.run(job(SELECTED), timeout=180)
    assert ex.status == "SUCCEEDED", (ex.description.get("error"), str(ex.description.get("cause"))[:1500], ex.entered()[-6:])
    entered = ex.entered()
    assert entered.index("CheckCount") < entered.index("ListShards")
    r = report(stack, ex.description.get("output"))
    assert (r["listed"], r["succeeded"], r["failed"]) == (SELECTED, SELECTED, 0)
    assert keys(stack) == N // 10


def test_only_a_delete_move_or_rewind_with_max_delete_waits_for_the_count() -> None:
    doc = job(5)
    assert guarded(parse_job(json.dumps(doc)))
    rewind = {"operation": "rewind", "source": {"bucket": SRC, "prefix": "old/", "as_of": "2026-11-01T00:00:00Z"}}
    assert guarded(parse_job(json.dumps({**rewind, "options": {"max_delete": 5}})))
    assert not guarded(parse_job(json.dumps(rewind)))
    copy = {"operation": "copy", "source": {"bucket": SRC, "prefix": "old/"}, "destination": {"bucket": SRC, "prefix": "new/"}}
    assert not guarded(parse_job(json.dumps(copy)))
    assert not guarded(parse_job(json.dumps({**doc, "options": {}})))
    assert not guarded(parse_job(json.dumps({**doc, "options": {"max_delete": 5, "dry_run": True}})))
    # A job held for confirmation is counted first too (what it would do is shown), but held to no limit.
    assert counts_first(parse_job(json.dumps({**copy, "options": {"confirm": True}}))) and not guarded(parse_job(json.dumps(copy)))


def test_a_delete_with_confirm_is_counted_then_held_until_s3bulk_confirm_then_deletes_exactly_the_selection(
    stack: StackOnMoto, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = {**job(SELECTED), "job_id": "confirm-me"}
    spec["options"] = {**spec["options"], "confirm": True}
    deployment = Deployment(stack.state_machine_arn, stack.bucket_of("Ledger"), stack.bucket_of("Reports"))
    flags = cli_flags(deployment)
    assert cli.main(["confirm", "confirm-me", *flags]) == 2  # no such job yet: said in one line, nothing sent
    capsys.readouterr()
    _, arn = remote.submit(deployment, parse_job(json.dumps(spec)), ClientSettings(region=REGION))
    ledger = DynamoLedger(stack.ddb, deployment.table)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(KeyError):
            if ledger.load("confirm-me").awaiting_confirmation:
                break
        time.sleep(0.2)
    rec = ledger.load("confirm-me")
    assert rec.awaiting_confirmation and rec.summary()["awaiting_confirmation"] == "s3bulk confirm confirm-me"
    time.sleep(1)
    assert keys(stack) == N and rec.counters.get("listed", 0) == 0  # counted, held: nothing listed, nothing deleted
    # What the owner confirms is shown: the count (each object is 1 byte) and the cost by the plan's model.
    assert rec.selection == (SELECTED, SELECTED)
    assert cli.main(["status", "confirm-me", *flags]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert f"would do │ {SELECTED:,} objects, 900 B, about $0.0" in shown or f"would do {SELECTED:,} objects, 900 B, about $0.0" in shown, (
        shown
    )
    assert cli.main(["jobs", "--json", *flags]) == 0
    [row] = [r for r in json.loads(capsys.readouterr().out) if r["job_id"] == "confirm-me"]
    assert row["status"].startswith(f"AWAITING CONFIRMATION: {SELECTED:,} objects, 900 B, about $")
    assert cli.main(["confirm", "confirm-me", *flags]) == 0
    assert f"confirmed confirm-me ({SELECTED:,} objects, 900 B, about $" in capsys.readouterr().out
    ex = stack.follow(arn, timeout=120)
    assert ex.status == "SUCCEEDED", (ex.description.get("error"), str(ex.description.get("cause"))[:1500])
    assert "AwaitConfirmation" in ex.entered() and ex.entered().index("CheckCount") < ex.entered().index("AwaitConfirmation")
    assert report(stack, ex.description.get("output"))["succeeded"] == SELECTED and keys(stack) == N - SELECTED
    assert cli.main(["confirm", "confirm-me", *flags]) == 2  # confirmed once: the token is gone
    assert "is not waiting for a confirmation (SUCCEEDED)" in capsys.readouterr().err


def test_a_delete_held_for_confirmation_and_cancelled_deletes_nothing_and_reports_cancelled(
    stack: StackOnMoto, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = {**job(SELECTED), "job_id": "cancel-me", "options": {"confirm": True}}  # held, no max_delete: counted all the same
    deployment = Deployment(stack.state_machine_arn, stack.bucket_of("Ledger"), stack.bucket_of("Reports"))
    flags = cli_flags(deployment)
    _, arn = remote.submit(deployment, parse_job(json.dumps(spec)), ClientSettings(region=REGION))
    ledger = DynamoLedger(stack.ddb, deployment.table)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(KeyError):
            if ledger.load("cancel-me").awaiting_confirmation:
                break
        time.sleep(0.2)
    assert ledger.load("cancel-me").selection == (SELECTED, SELECTED)  # the count a confirmation shows
    assert cli.main(["cancel", "cancel-me", *flags]) == 0
    ex = stack.follow(arn, timeout=60)
    assert ex.status == "ABORTED" and "ListShards" not in ex.entered()
    r = json.loads(stack.s3.get_object(Bucket=deployment.report_bucket, Key="jobs/cancel-me/report.json")["Body"].read())
    assert (r["status"], r["listed"], r["done"], r["not_done"]) == ("cancelled", 0, 0, 0)
    assert keys(stack) == N  # nothing deleted
    capsys.readouterr()
    assert cli.main(["confirm", "cancel-me", *flags]) == 2  # its token is of an execution that no longer runs
    assert "is not waiting for a confirmation (CANCELLED)" in capsys.readouterr().err
    assert cli.main(["report", "cancel-me", *flags]) == 5
