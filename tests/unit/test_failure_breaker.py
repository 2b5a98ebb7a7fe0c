"""The failure breaker: a job whose objects fail systematically stops taking work, says why, and resumes after the fix."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from s3bulk.breakers.failure import EXIT_BREAKER, tripped
from s3bulk.job import FailureBreaker, JobError, parse_job
from s3bulk.local.interrupt import Interrupt
from s3bulk.local.ledger import LocalLedger
from s3bulk.local.run import execute
from s3bulk.report import Report
from s3bulk.store import StoreError
from s3bulk.testing.memstore import MemoryStore

N = 3000
RULE = FailureBreaker()


def test_the_rule_is_more_than_half_of_at_least_a_thousand_finished_objects() -> None:
    assert tripped(RULE, finished=999, failed=999, by_code={"AccessDenied": 999}) is None  # too few to judge
    assert tripped(RULE, finished=1000, failed=500, by_code={"AccessDenied": 500}) is None  # half is not more than half
    trip = tripped(RULE, finished=1000, failed=501, by_code={"AccessDenied": 400, "NoSuchKey": 101})
    assert trip is not None and trip.by_code == (("AccessDenied", 400), ("NoSuchKey", 101))
    assert tripped(False, finished=10**6, failed=10**6, by_code={"AccessDenied": 10**6}) is None  # turned off
    assert tripped(FailureBreaker(after=10, rate=0.1), finished=10, failed=2, by_code={"X": 2}) is not None


def test_throttling_that_outlasted_every_retry_never_trips_it() -> None:
    assert tripped(RULE, finished=2000, failed=1900, by_code={"SlowDown": 1500, "AccessDenied": 400}) is None
    assert tripped(RULE, finished=2000, failed=1900, by_code={"SlowDown": 800, "AccessDenied": 1100}) is not None


def test_the_option_is_an_object_or_false_and_bad_values_name_the_field() -> None:
    base = {"operation": "copy", "source": {"bucket": "src-b"}, "destination": {"bucket": "dst-b"}}
    assert parse_job(json.dumps({**base, "options": {"failure_breaker": False}})).options.failure_breaker is False
    assert parse_job(json.dumps(base)).options.failure_breaker == FailureBreaker(after=1000, rate=0.5)
    with pytest.raises(JobError, match=r"job.options.failure_breaker"):
        parse_job(json.dumps({**base, "options": {"failure_breaker": {"after": 0}}}))


def seeded() -> MemoryStore:
    s = MemoryStore(page_size=200)
    s.create_bucket("src-b")
    s.create_bucket("dst-b")
    for i in range(N):
        s.put_object("src-b", f"in/{i:05d}", f"body-{i}".encode())
    return s


def refuse_writes(op: str, bucket: str, key: str) -> StoreError | None:
    """A destination that refuses every write: a bucket policy, a missing KMS grant."""
    if op == "PutObject" and bucket == "dst-b":
        return StoreError("AccessDenied", "Access Denied", 403)
    return None


def run(store: MemoryStore, ledger: LocalLedger, report: Path, options: dict[str, Any] | None = None) -> Report:
    spec = {
        "operation": "copy",
        "source": {"bucket": "src-b", "prefix": "in/"},
        "destination": {"bucket": "dst-b", "prefix": "out/"},
        "options": {"batch_size": 100, **(options or {})},
    }
    try:
        return execute(
            parse_job(json.dumps(spec)),
            store,
            concurrency=4,
            console=Console(file=io.StringIO()),
            quiet=True,
            report_path=str(report),
            ledger=ledger,
            interrupt=Interrupt(),
        )
    finally:
        ledger.close()


def test_a_destination_that_refuses_every_write_trips_the_breaker_then_the_resume_finishes_the_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = seeded()
    store.faults.append(refuse_writes)
    job = parse_job(
        json.dumps(
            {
                "operation": "copy",
                "source": {"bucket": "src-b", "prefix": "in/"},
                "destination": {"bucket": "dst-b", "prefix": "out/"},
                "options": {"batch_size": 100},
            }
        )
    )
    first = run(store, LocalLedger.create(tmp_path, "breaker", job), tmp_path / "first.json")
    s = json.loads((tmp_path / "first.json").read_text())
    assert first.exit_code == EXIT_BREAKER == 4
    assert (s["status"], s["stop_reason"], s["succeeded"]) == ("stopped", "failure_breaker", 0)
    # Stopped long before all 3,000: the report counts every object tried, in batches committed or cut short (those are
    # redone by the resume).
    assert s["failures_by_code"] == {"AccessDenied": s["failed"]} and 0 < s["failed"] < N
    assert store.calls["CopyObject"] < N and s["not_done"] == s["listed"] - s["failed"]
    line = capsys.readouterr().err
    assert "failure breaker:" in line and "(AccessDenied " in line and "e.g. 'in/" in line and "s3bulk run --resume breaker" in line

    store.faults.clear()  # the bucket policy fixed
    copies = store.calls["CopyObject"]
    final = run(store, LocalLedger.open(tmp_path, "breaker"), tmp_path / "final.json")
    f = json.loads((tmp_path / "final.json").read_text())
    # The resume the line printed finishes the job: the objects that failed in committed batches are done again first
    # (the report says how many), then the rest; every object is counted once, and nothing is left failed.
    assert (f["status"], f["listed"], f["succeeded"], f["failed"], final.exit_code) == ("succeeded", N, N, 0, 0)
    assert 0 < f["redone_after_breaker"] <= s["failed"] and not f.get("failures")
    assert sorted(store.keys("dst-b")) == [f"out/{i:05d}" for i in range(N)]
    assert store.calls["CopyObject"] - copies == N  # each object copied once by the resume: none redone twice, none skipped


def test_a_resume_whose_cause_was_not_fixed_trips_again_and_the_next_resume_redoes_them_all(tmp_path: Path) -> None:
    """Failures redone and failed again are kept (under the redo), and a later resume after the fix takes them again:
    no run loses an object or counts one twice."""
    store = seeded()
    store.faults.append(refuse_writes)
    job = parse_job(
        json.dumps(
            {
                "operation": "copy",
                "source": {"bucket": "src-b", "prefix": "in/"},
                "destination": {"bucket": "dst-b", "prefix": "out/"},
                "options": {"batch_size": 100},
            }
        )
    )
    first = run(store, LocalLedger.create(tmp_path, "twice", job), tmp_path / "1.json")
    second = run(store, LocalLedger.open(tmp_path, "twice"), tmp_path / "2.json")  # not fixed yet
    s2 = json.loads((tmp_path / "2.json").read_text())
    assert first.exit_code == second.exit_code == EXIT_BREAKER and s2["redone_after_breaker"] > 0
    assert s2["succeeded"] == 0 and s2["failed"] + s2["not_done"] == s2["listed"] <= N
    store.faults.clear()
    third = run(store, LocalLedger.open(tmp_path, "twice"), tmp_path / "3.json")
    s3 = json.loads((tmp_path / "3.json").read_text())
    assert (s3["status"], s3["listed"], s3["succeeded"], s3["failed"], third.exit_code) == ("succeeded", N, N, 0, 0)
    assert sorted(store.keys("dst-b")) == [f"out/{i:05d}" for i in range(N)]


def test_a_job_with_the_breaker_off_tries_every_object(tmp_path: Path) -> None:
    store = seeded()
    store.faults.append(refuse_writes)
    job = parse_job(json.dumps({"operation": "copy", "source": {"bucket": "src-b", "prefix": "in/"}, "destination": {"bucket": "dst-b"}}))
    r = run(store, LocalLedger.create(tmp_path, "off", job), tmp_path / "r.json", {"failure_breaker": False})
    s = json.loads((tmp_path / "r.json").read_text())
    assert (s["status"], s["failed"], "stop_reason" in s, r.exit_code) == ("failed", N, False, 1)


def test_on_the_stack_a_container_weighs_a_failing_job_at_most_every_few_seconds_and_reads_the_listing_shards_rarely() -> None:
    """Every batch with a failure used to read every count, the listing shards' Query on the job's own partition key
    included (about 133 read units a batch at 1,000 shards). A container now weighs a job at most every WEIGH_EVERY_S,
    from the job item and its counter shards, and re-reads the listing shards' sums at most every LISTING_TTL_S."""
    from s3bulk.aws.failing import LISTING_TTL_S, WEIGH_EVERY_S, FailureWatch
    from s3bulk.aws.ledger import Progress

    class Ledger:
        def __init__(self) -> None:
            self.reads: list[bool] = []  # per weighing: whether the listing shards were read

        def weighed(self, job_id: str, listing: dict[str, int] | None = None) -> tuple[Progress, dict[str, int]]:
            self.reads.append(listing is None)
            sums = {"skipped": 7} if listing is None else listing
            return Progress(False, 0, "RUNNING", None, {"failed": 600, **sums}), sums

    now = [0.0]
    ledger = Ledger()
    watch = FailureWatch(ledger, lambda: now[0])  # type: ignore[arg-type]
    first = watch.counts("j")
    assert first is not None and first.counters == {"failed": 600, "skipped": 7}
    assert watch.counts("j") is None  # the same moment: not again
    now[0] += WEIGH_EVERY_S / 2
    assert watch.counts("j") is None
    now[0] += WEIGH_EVERY_S
    again = watch.counts("j")
    assert again is not None and again.counters["skipped"] == 7  # the listing sums kept, not read again
    assert watch.counts("other") is not None  # each job on its own
    now[0] += LISTING_TTL_S
    assert watch.counts("j") is not None
    assert ledger.reads == [True, False, True, True]  # j, j (kept), other, j past the TTL
