"""`s3bulk tune JOB_ID --concurrency N` on the whole stack: a job capped while it runs works at most N batches at once
(the cap spread over its lease shards, each worker's hold counted against it), the batches over it wait parked off the
queue until a release sends them on, and every object is still copied once; a job without a cap runs as many as the
workers take."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from typing import Any

import boto3
import pytest

from s3bulk import cli
from s3bulk.aws import remote
from s3bulk.aws.ledger import DynamoLedger
from s3bulk.aws.remote import Deployment
from s3bulk.aws.worker import WorkerService
from s3bulk.job import parse_job
from s3bulk.s3.clients import ClientSettings
from s3bulk.s3.faststore import FastS3Store
from s3bulk.testing.stack import StackOnMoto, cli_flags, synthesize
from tests.integration.aws_harness import REGION

pytestmark = pytest.mark.moto

SRC, DST = "tune-src", "tune-dst"
CONTEXT: dict[str, object] = {"read_buckets": f"{SRC},{DST}", "write_buckets": DST}
N, BATCH = 48, 4
# Batches of a job at its cap are parked (aws/held.py) and sent on as room frees up; Progress sweeps each second here.
ENV = {"S3BULK_POLL_SECONDS": "30", "S3BULK_CONCURRENCY": "2", "S3BULK_REQUEST_CONCURRENCY": "2"}


def copy_job(job_id: str) -> dict[str, Any]:
    return {
        "operation": "copy",
        "job_id": job_id,
        "source": {"bucket": SRC, "prefix": f"{job_id}/"},
        "destination": {"bucket": DST, "prefix": f"{job_id}/"},
        "options": {"batch_size": BATCH},
    }


def ledger(stack: StackOnMoto) -> DynamoLedger:
    [table] = [v for k, v in stack.names.items() if k.startswith("Ledger") and "." not in k]
    return DynamoLedger(stack.ddb, table)


def test_a_job_capped_while_it_runs_works_at_most_that_many_batches_at_once_and_copies_every_object_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    running: Counter[str] = Counter()
    peak: Counter[str] = Counter()
    lock = threading.Lock()
    real_held = WorkerService._run
    real_work = WorkerService.work
    receives: Counter[str] = Counter()

    def received(self: WorkerService, msg: Any, *args: Any, **kwargs: Any) -> Any:
        with lock:
            receives[msg.job_id] += 1
        return real_work(self, msg, *args, **kwargs)

    def counted(self: WorkerService, msg: Any, *args: Any, **kwargs: Any) -> Any:
        with lock:
            running[msg.job_id] += 1
            peak[msg.job_id] = max(peak[msg.job_id], running[msg.job_id])
        try:
            return real_held(self, msg, *args, **kwargs)
        finally:
            with lock:
                running[msg.job_id] -= 1

    copy = FastS3Store.copy_object

    def slow(self: FastS3Store, *args: Any, **kwargs: Any) -> str:
        time.sleep(0.1)  # batches last long enough to overlap
        return str(copy(self, *args, **kwargs))

    monkeypatch.setattr(WorkerService, "_run", counted)
    monkeypatch.setattr(WorkerService, "work", received)
    monkeypatch.setattr(FastS3Store, "copy_object", slow)
    with StackOnMoto(synthesize(CONTEXT), buckets=(SRC, DST), env=ENV, pollers=4) as stack:
        s3 = boto3.client("s3", region_name=REGION)
        for job_id in ("capped", "free"):
            for i in range(N):
                s3.put_object(Bucket=SRC, Key=f"{job_id}/obj-{i:03d}", Body=f"{job_id} {i}".encode())
        deployment = Deployment(stack.state_machine_arn, ledger(stack).table, stack.bucket_of("Reports"))
        flags = cli_flags(deployment)
        settings = ClientSettings(region=REGION)

        stack.worker_source.pause()  # its batches queue while it lists, then it is capped before the first one runs
        _, arn = remote.submit(deployment, parse_job(json.dumps(copy_job("capped"))), settings)

        def listed() -> int:
            try:
                return int(ledger(stack).counters("capped").get("listed", 0))
            except KeyError:  # Validate has not made its ledger entry yet
                return 0

        deadline = time.monotonic() + 30
        while listed() < N and time.monotonic() < deadline:
            time.sleep(0.1)
        assert cli.main(["tune", "capped", "--concurrency", "1", *flags]) == 0
        assert "capped: at most 1 of its batches at once (was no cap of its own)" in capsys.readouterr().out
        assert ledger(stack).load("capped").summary()["max_workers"] == 1
        stack.worker_source.resume()
        ex = stack.follow(arn, timeout=120)
        assert ex.status == "SUCCEEDED", stack.describe()
        assert peak["capped"] == 1, peak  # 4 pollers took its batches, one ran at a time
        reports = stack.bucket_of("Reports")
        waited = s3.list_objects_v2(Bucket=reports, Prefix="jobs/capped/waiting/").get("KeyCount", 0)
        batches = N // BATCH
        # Each batch over the cap was received, parked, and sent on once room freed up (a few twice, when a fresh batch
        # took the room first): about 2 receives a batch, where handed back to the queue each came back every second.
        with capsys.disabled():  # the number docs/operations.md quotes
            print(f"\ncapped at 1: {receives['capped']} receives for {batches} batches, {stack.worker_source.stats.returned} handed back")
        assert receives["capped"] <= 3 * batches, (receives, stack.worker_source.stats)
        assert stack.worker_source.stats.returned == 0, stack.worker_source.stats  # none handed back to wait in the queue
        assert waited > 0  # the batches over the cap waited in the report bucket, off the queue

        free = stack.run(copy_job("free"), timeout=120)
        assert free.status == "SUCCEEDED", stack.describe()
        assert peak["free"] >= 2, peak  # the same workers, uncapped, run its batches side by side

        for job_id in ("capped", "free"):
            body = stack.s3.get_object(Bucket=stack.bucket_of("Reports"), Key=f"jobs/{job_id}/report.json")["Body"].read()
            r = json.loads(body)
            assert (r["listed"], r["succeeded"], r["failed"]) == (N, N, 0), r
            got = s3.list_objects_v2(Bucket=DST, Prefix=f"{job_id}/").get("KeyCount", 0)
            assert got == N

        assert cli.main(["tune", "capped", "--concurrency", "2", *flags]) == 2  # it has ended: nothing to tune
        assert "has ended (SUCCEEDED)" in capsys.readouterr().err
        assert cli.main(["tune", "free", "--max-concurrency", "5", *flags]) == 2  # one or the other, said in one line
        assert "give JOB_ID --concurrency N" in capsys.readouterr().err
