"""The one status rule, summary builder and report writer that the CLI and the stack's finalize share."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from s3bulk.aws.finish import finalize
from s3bulk.aws.ledger import COUNTERS, JobRecord
from s3bulk.job import parse_job
from s3bulk.report import REPORT_FAILURES, Counts, FailureDigest, Report, Tally, failures_file, job_status, summarize, write_report


@pytest.mark.parametrize(
    ("dry_run", "failed", "error", "status"),
    [
        (False, 0, None, "succeeded"),
        (False, 3, None, "failed"),
        (True, 3, None, "dry-run"),
        (True, 0, "listing failed", "failed"),
        (False, 0, "listing failed", "failed"),
    ],
)
def test_job_status_is_one_rule(dry_run: bool, failed: int, error: str | None, status: str) -> None:
    assert job_status(dry_run=dry_run, failed=failed, error=error) == status


def test_a_cancelled_job_says_cancelled_whatever_failed_and_what_was_done_and_not() -> None:
    status = job_status(dry_run=False, failed=4, error="cancelled by its owner", stopped=True, cancelled=True)
    assert status == "cancelled"
    s = summarize("j", "copy", status, Counts(listed=100, succeeded=50, skipped=6, failed=4), 1.0, tolerated_failures=0, error="x")
    assert (s["done"], s["not_done"], "unfinished" in s) == (56, 40, False)


def test_a_dry_run_summary_reports_the_bytes_it_would_process_and_what_it_would_do() -> None:
    counts = Counts(scanned=10, listed=8, listed_bytes=800, skipped=3, bytes=500, extraneous=2)
    s = summarize("j", "copy", "dry-run", counts, 1.23456, tolerated_failures=0)
    assert (s["bytes"], s["would_process"], s["would_delete_extraneous"], s["seconds"]) == (500, 5, 2, 1.235)
    assert "deleted_extraneous" not in s and "error" not in s


def test_write_report_writes_the_summary_the_failures_by_code_and_every_failure_as_one_json_document() -> None:
    fh = io.StringIO()
    failures = [{"key": "a ü", "error": "AccessDenied", "message": "no"}, {"key": "b", "error": "NoSuchKey", "message": "gone"}]
    digest = FailureDigest()
    assert list(digest.through(iter(failures))) == failures
    write_report(fh, {"job_id": "j", "failed": 2}, digest)
    by_code = {"AccessDenied": 1, "NoSuchKey": 1}
    assert json.loads(fh.getvalue()) == {"job_id": "j", "failed": 2, "failures_by_code": by_code, "failures": failures}


def test_a_report_past_its_failure_cap_lists_the_first_ones_counts_every_code_and_names_the_jsonl_with_all() -> None:
    digest = FailureDigest(keep=3)
    for i in range(10):
        digest.add({"key": f"k{i}", "error": "AccessDenied" if i % 3 else "NoSuchKey", "message": "m"})
    fh = io.StringIO()
    write_report(fh, {"failed": 10}, digest, "failures.jsonl")
    r = json.loads(fh.getvalue())
    assert [f["key"] for f in r["failures"]] == ["k0", "k1", "k2"]
    assert list(r["failures_by_code"].items()) == [("AccessDenied", 6), ("NoSuchKey", 4)]  # the most frequent first
    assert (r["failures_not_listed"], r["failures_file"]) == (7, "failures.jsonl")


def test_the_cli_report_past_its_cap_writes_every_failure_beside_it_and_none_when_under(tmp_path: Path) -> None:
    for n, beside in ((REPORT_FAILURES + 5, True), (3, False)):
        tally = Tally()
        for i in range(n):
            tally.fail(f"k{i:05d}", "AccessDenied", "no")
        path = tmp_path / f"r{n}.json"
        Report("j", "copy", "failed", tally, 1.0).write(path)
        r = json.loads(path.read_text())
        assert (len(r["failures"]), r["failures_by_code"]) == (min(n, REPORT_FAILURES), {"AccessDenied": n})
        every = failures_file(path)
        assert every.exists() == beside and ("failures_file" in r) == beside
        if beside:
            assert r["failures_file"] == every.name and r["failures_not_listed"] == 5
            assert [json.loads(line)["key"] for line in every.read_text().splitlines()] == [f"k{i:05d}" for i in range(n)]
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temp file left behind
        tally.close()


class _Ledger:
    def __init__(self, rec: JobRecord) -> None:
        self.rec = rec
        self.status: tuple[str, dict[str, str]] | None = None

    def load(self, job_id: str) -> JobRecord:
        return self.rec

    def set_status(self, job_id: str, status: str, **extra: str) -> None:
        self.status = (status, extra)

    def counted_attempts(self, job_id: str, batch_ids: Any) -> dict[str, str]:
        return {}


class _Reports:
    """A report bucket with no failure parts: finalize's assembly writes an empty failures.jsonl, then the report."""

    summary: dict[str, Any] | None = None
    failures_file: bytes | None = None

    def assembly(self, job_id: str, writer: str) -> bytes | None:
        return None

    def put_assembly(self, job_id: str, writer: str, state: bytes) -> None:
        pass

    def iter_parts(self, job_id: str, counted: Any = None, after: str | None = None) -> Iterator[tuple[str, bytes]]:
        yield from ()

    def put_failures_file(self, job_id: str, body: bytes) -> None:
        self.failures_file = body

    def put_report(self, job_id: str, summary: dict[str, Any], digest: FailureDigest) -> str:
        self.summary = summary
        return f"s3://r/jobs/{job_id}/report.json"


@pytest.mark.parametrize("dry_run", [False, True])
def test_finalize_and_the_cli_build_the_same_summary_from_the_same_counts(dry_run: bool) -> None:
    job = parse_job(
        json.dumps(
            {
                "operation": "copy",
                "source": {"bucket": "src-b", "prefix": "in/"},
                "destination": {"bucket": "dst-b"},
                "options": {"tolerated_failures": 1, "dry_run": dry_run, "delete_extraneous": True},
            }
        )
    )
    tally = Tally()
    for i in range(7):
        tally.seen(10, selected=i != 6)
    for _ in range(4):
        tally.succeed(10)
    tally.skip()
    tally.fail("k", "AccessDenied", "no")
    tally.retry()
    tally.extraneous(2)
    local = Report("j", "copy", job_status(dry_run=dry_run, failed=1), tally, 5.0, retries=3, tolerated_failures=1).summary()

    # The ledger holds the same totals as counters.
    counters = dict.fromkeys(COUNTERS, 0) | {
        "scanned": 7,
        "listed": 6,
        "listed_bytes": 60,
        "succeeded": 4,
        "skipped": 1,
        "failed": 1,
        "bytes": 40,
        "retries": 3,
        "object_retries": 1,
        "extraneous": 2,
    }
    ledger, reports = _Ledger(JobRecord("j", job, "RUNNING", True, counters, created_at=100.0)), _Reports()
    out = finalize("j", ledger=ledger, reports=reports, now=lambda: 105.0)  # type: ignore[arg-type]
    assert reports.summary == local
    assert (out["over_threshold"], ledger.status) == (False, ("SUCCEEDED", {"report": "s3://r/jobs/j/report.json"}))
    tally.close()


@pytest.mark.parametrize(
    ("failed", "tolerated", "error", "exit_code"),
    [(1, 5, None, 0), (5, 5, None, 0), (6, 5, None, 1), (1, 0, None, 1), (0, 5, "listing failed", 1)],
)
def test_tolerated_failures_decide_the_exit_code_locally_as_on_the_stack(
    failed: int, tolerated: int, error: str | None, exit_code: int
) -> None:
    tally = Tally()
    for i in range(failed):
        tally.fail(f"k{i}", "AccessDenied", "denied")
    status = job_status(dry_run=False, failed=failed, error=error)
    report = Report("j", "copy", status, tally, 1.0, error=error, tolerated_failures=tolerated)
    assert report.exit_code == exit_code
    assert report.summary()["failed"] == failed  # tolerated failures are still reported, each one
    assert list(tally.failures()) == [{"key": f"k{i}", "error": "AccessDenied", "message": "denied"} for i in range(failed)]


def test_an_interrupted_run_reports_interrupted_with_what_is_left() -> None:
    tally = Tally()
    tally.listed, tally.succeeded = 10, 4
    report = Report(
        "j", "copy", job_status(dry_run=False, failed=0, error="interrupted", interrupted=True), tally, 1.0, error="x", interrupted=True
    )
    s = report.summary()
    assert (s["status"], s["done"], s["not_done"], report.exit_code) == ("interrupted", 4, 6, 130)


def test_a_resumed_runs_rate_counts_only_its_own_objects() -> None:
    from rich.console import Console

    from s3bulk.local.progress import failures_table, summary_table

    tally = Tally()
    tally.listed, tally.succeeded = 9000, 9000  # 8,000 of them done by earlier runs
    for i in range(25):
        tally.fail(f"k{i}", "AccessDenied", "denied")
    report = Report("j", "copy", "failed", tally, 10.0, run_done=1000, run_bytes=0)
    out = io.StringIO()
    console = Console(file=out, width=150)
    console.print(summary_table(report))
    console.print(failures_table(report, "/tmp/r.json"))
    text = out.getvalue()
    assert " 100 " in text and "903" not in text  # 1,000 objects in 10 s, not 9,025
    assert "and 5 more; the report at /tmp/r.json lists every one" in " ".join(text.split())
