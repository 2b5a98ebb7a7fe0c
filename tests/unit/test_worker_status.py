"""A worker learns that its job stopped within STATUS_TTL_S, for one small read per container per period."""

from __future__ import annotations

from typing import cast

from s3bulk.aws.allowlist import AllowList
from s3bulk.aws.ledger import DynamoLedger
from s3bulk.aws.pipeline import STATUS_TTL_S, WorkerService
from s3bulk.aws.reportbucket import ReportBucket
from s3bulk.testing.memstore import MemoryStore


class StatusLedger:
    def __init__(self) -> None:
        self.value = "RUNNING"
        self.reads = 0

    def status(self, job_id: str) -> str:
        self.reads += 1
        return self.value


def service(ledger: StatusLedger, now: list[float]) -> WorkerService:
    return WorkerService(
        ledger=cast(DynamoLedger, ledger),
        store=MemoryStore(),
        reports=cast(ReportBucket, object()),
        allow=cast(AllowList, object()),
        concurrency=1,
        clock=lambda: now[0],
    )


def test_a_running_status_is_read_once_per_period_however_many_batches() -> None:
    ledger, now = StatusLedger(), [100.0]
    worker = service(ledger, now)
    for _ in range(50):
        assert worker.status("j") == "RUNNING"
    assert ledger.reads == 1
    ledger.value = "FAILED"
    now[0] += STATUS_TTL_S - 0.1
    assert worker.status("j") == "RUNNING"  # still trusted
    now[0] += 0.1
    assert worker.status("j") == "FAILED" and ledger.reads == 2


def test_a_stopped_status_is_read_afresh_so_a_reopened_job_is_worked_again_at_once() -> None:
    ledger, now = StatusLedger(), [0.0]
    worker = service(ledger, now)
    ledger.value = "FAILED"
    assert worker.status("j") == "FAILED"
    ledger.value = "RUNNING"  # ReopenJob: the job was submitted again
    assert worker.status("j") == "RUNNING"
    assert ledger.reads == 2
