"""A worker learns that its job stopped within STATUS_TTL_S, for one small read per container per period."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest

from s3bulk.aws.admission import STATUS_TTL_S, STOPPED_KEEP_S
from s3bulk.aws.allowlist import AllowList
from s3bulk.aws.ledger import BatchCounts, DynamoLedger, Lease, Progress, Room
from s3bulk.aws.messages import BatchMessage
from s3bulk.aws.reportbucket import ReportBucket
from s3bulk.aws.worker import EndpointDown, WorkerService
from s3bulk.job import parse_job
from s3bulk.testing.memstore import MemoryStore


class StatusLedger:
    def __init__(self) -> None:
        self.value = "RUNNING"
        self.reads = 0
        self.consistent = 0
        self.epoch = 0.0
        self.held = 0

    def status(self, job_id: str, *, consistent: bool = False) -> str:
        self.reads += 1
        self.consistent += consistent
        return self.value

    def hold(self, job_id: str, holder: str, *, until: float | None = None, first: int | None = None) -> Lease:
        self.held += 1
        return Lease(0, self.epoch)

    def release(self, job_id: str, lease: Lease) -> Room:
        self.held -= 1
        return Room(lease.shard)


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
        assert worker.admission.status("j") == "RUNNING"
    assert ledger.reads == 1
    ledger.value = "FAILED"
    now[0] += STATUS_TTL_S - 0.1
    assert worker.admission.status("j") == "RUNNING"  # still trusted
    now[0] += 0.1
    assert worker.admission.status("j") == "FAILED" and ledger.reads == 2


def test_a_stop_newer_than_the_cached_status_is_seen_at_the_next_batch_not_after_the_cache_expires() -> None:
    ledger, now = StatusLedger(), [100.0]
    worker = service(ledger, now)
    assert worker.admission.status("j", 0.0) == "RUNNING" and ledger.reads == 1
    ledger.value = "STOPPING"
    assert worker.admission.status("j", 0.0) == "RUNNING"  # no stop seen on the lease: the cache is trusted
    assert worker.admission.status("j", 250.5) == "STOPPING"  # the batch's lease says the job stopped at 250.5: read afresh
    assert (ledger.reads, ledger.consistent) == (2, 1)
    ledger.value = "RUNNING"  # resumed
    assert worker.admission.status("j", 250.5) == "RUNNING" and ledger.reads == 3  # not RUNNING before: read again, once
    assert worker.admission.status("j", 250.5) == "RUNNING" and ledger.reads == 3  # the same stop is not news twice


def test_a_stopped_status_is_read_afresh_so_a_reopened_job_is_worked_again_at_once() -> None:
    ledger, now = StatusLedger(), [0.0]
    worker = service(ledger, now)
    ledger.value = "FAILED"
    assert worker.admission.status("j") == "FAILED"
    ledger.value = "RUNNING"  # ReopenJob: the job was submitted again
    assert worker.admission.status("j") == "RUNNING"
    assert ledger.reads == 2


class StoppedLedger(StatusLedger):
    """A job an outage stopped at `at`; records what the worker reports and counts."""

    def __init__(self, at: float) -> None:
        super().__init__()
        self.value = "STOPPED"
        self.at = at
        self.finished: list[tuple[str, int]] = []

    def spec(self, job_id: str) -> Any:
        return parse_job(json.dumps({"operation": "delete", "source": {"bucket": "b-b", "prefix": "p/"}}))

    def counted_batch(self, job_id: str, batch_id: str) -> dict[str, Any] | None:
        return None

    def stopped_at(self, job_id: str) -> float:
        return self.at

    def finish_batch(self, job_id: str, batch_id: str, counts: BatchCounts, *, attempt: str = "") -> bool:
        self.finished.append((batch_id, counts.failed))
        return True

    def progress(self, job_id: str) -> Progress:
        return Progress(True, 1, "STOPPED", None)


class Failures:
    def __init__(self) -> None:
        self.put: list[dict[str, str]] = []

    def put_failures(self, job_id: str, part: str, failures: Any, attempt: str = "") -> None:
        self.put.extend(failures)


def test_a_stopped_jobs_batch_waits_uncounted_and_is_cancelled_only_once_the_job_was_left_stopped_for_a_week() -> None:
    msg = BatchMessage(job_id="j", batch_id="0000-000000001-000", items=[("p/a", 1, '"e"'), ("p/b", 2, '"f"')])
    ledger, reports, now = StoppedLedger(at=1_000.0), Failures(), [1_000.0 + STOPPED_KEEP_S - 60]
    worker = WorkerService(
        ledger=cast(DynamoLedger, ledger),
        store=MemoryStore(),
        reports=cast(ReportBucket, reports),
        allow=AllowList(frozenset({"b-b"}), frozenset(), frozenset({"b-b"})),
        concurrency=1,
        wall=lambda: now[0],
    )
    with pytest.raises(EndpointDown) as info:
        worker.work(msg, lambda: 900.0)
    assert info.value.stopped and ledger.finished == [] and reports.put == []  # handed back, nothing counted
    assert ledger.held == 0  # the batch's hold was released
    now[0] += 120
    outcome = worker.work(msg, lambda: 900.0)
    assert outcome.cancelled and ledger.finished == [("0000-000000001-000", 2)]
    assert {f["error"] for f in reports.put} == {"JobStopped"}


def test_a_status_read_that_fails_under_the_hold_gives_the_lease_back() -> None:
    """Admissions.admit holds the batch's lease before it reads the job's status: a throttled or failed read must not
    leave the lease held (a capped job would lose a slot, a stopped job's report would wait for it)."""

    class Refusing(StoppedLedger):
        def status(self, job_id: str, *, consistent: bool = False) -> str:
            raise RuntimeError("ProvisionedThroughputExceededException")

    msg = BatchMessage(job_id="j", batch_id="0000-000000001-000", items=[("p/a", 1, '"e"')])
    ledger = Refusing(at=0.0)
    worker = WorkerService(
        ledger=cast(DynamoLedger, ledger),
        store=MemoryStore(),
        reports=cast(ReportBucket, Failures()),
        allow=AllowList(frozenset({"b-b"}), frozenset(), frozenset({"b-b"})),
        concurrency=1,
    )
    with pytest.raises(RuntimeError, match="ProvisionedThroughput"):
        worker.work(msg, lambda: 900.0)
    assert ledger.held == 0
