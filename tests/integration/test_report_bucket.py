"""The stack's report for a job with very many failures, on moto's S3: a bounded report.json, and every failure in
failures.jsonl, a multipart upload assembled over as many calls as it takes, nothing written to local disk."""

from __future__ import annotations

import inspect
import json
import os
import tempfile
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from s3bulk.aws.assembly import assemble
from s3bulk.aws.reportbucket import ReportBucket
from s3bulk.report import REPORT_FAILURES, FailureDigest

BUCKET, REGION = "reports", "us-east-1"
CODES = ("AccessDenied", "InvalidObjectState", "NoSuchKey", "KMS.AccessDeniedException")


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(k, v)
    with mock_aws():
        client = boto3.client("s3", region_name=REGION)
        client.create_bucket(Bucket=BUCKET)
        yield client


def seed(reports: ReportBucket, job_id: str, parts: int, per_part: int, message: str = "") -> dict[str, int]:
    """Failure parts as listers and workers write them; the count of each code."""
    expected: dict[str, int] = {}
    for p in range(parts):
        failures = []
        for i in range(per_part):
            code = CODES[(p * per_part + i) % 7 % len(CODES)]
            failures.append({"key": f"in/{p:05d}/obj-{i:03d}", "error": code, "message": message or f"{code} on this object"})
            expected[code] = expected.get(code, 0) + 1
        reports.put_failures(job_id, f"0000-{p:09d}-rows", failures)
    return expected


def report_of(reports: ReportBucket, job_id: str, digest: FailureDigest) -> dict[str, Any]:
    reports.put_report(job_id, {"job_id": job_id, "failed": digest.total}, digest)
    return reports.read_report(job_id)


def jsonl_keys(s3: Any, job_id: str) -> list[str]:
    lines = s3.get_object(Bucket=BUCKET, Key=f"jobs/{job_id}/failures.jsonl")["Body"].read().decode().splitlines()
    return [json.loads(line)["key"] for line in lines]


def test_a_job_with_200000_failures_writes_every_one_to_jsonl_and_a_bounded_report_with_counts_by_code(
    s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    reports = ReportBucket(s3, BUCKET, readers=8)
    parts, per_part = 2000, 100
    expected = seed(reports, "big", parts, per_part)
    reports.discard("big", "0001-000000000", "deadbeef")  # a try that lost its count: an empty part, not read

    def no_disk(real: Any) -> Any:
        def spool(*args: Any, **kwargs: Any) -> Any:
            if not any(f"{os.sep}moto{os.sep}" in frame.filename for frame in inspect.stack(0)):  # moto's own storage is S3's
                raise AssertionError("the report was spooled to local disk (/tmp is 512 MB on Lambda)")
            return real(*args, **kwargs)

        return spool

    for name in ("TemporaryFile", "SpooledTemporaryFile", "NamedTemporaryFile"):
        monkeypatch.setattr(tempfile, name, no_disk(getattr(tempfile, name)))
    digest = assemble(reports, "big", writer="finalize", execution="e1", counted=None, time_left=lambda: 600.0)
    assert digest is not None
    report = report_of(reports, "big", digest)
    total = parts * per_part
    assert report["failures_by_code"] == dict(sorted(expected.items(), key=lambda kv: (-kv[1], kv[0])))
    assert sum(report["failures_by_code"].values()) == total
    assert len(report["failures"]) == REPORT_FAILURES and report["failures_not_listed"] == total - REPORT_FAILURES
    assert report["failures_file"] == "failures.jsonl"
    head = s3.head_object(Bucket=BUCKET, Key="jobs/big/failures.jsonl")
    assert "-" in head["ETag"]  # written as a multipart upload, part by part
    keys = jsonl_keys(s3, "big")
    assert len(keys) == total and len(set(keys)) == total  # every failure once, none lost between parts
    assert keys[:REPORT_FAILURES] == [f["key"] for f in report["failures"]]  # the report lists the first ones, in order
    assert s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads", []) == []


def test_an_assembly_that_runs_out_of_time_goes_on_from_its_last_part_in_the_next_call_to_an_exact_file(s3: Any) -> None:
    reports = ReportBucket(s3, BUCKET, readers=4)
    expected = seed(reports, "j", 300, 100, message="x" * 600)  # about 20 MiB: three parts
    calls, answers = 0, []
    while True:
        calls += 1
        digest = assemble(reports, "j", writer="finalize", execution="e1", counted=None, time_left=lambda: 1.0)  # short every time
        answers.append(digest is not None)
        if digest is not None:
            break
        assert calls < 10
    assert answers == [False, False, True]  # one part per call, then the rest and the completion
    assert (digest.total, dict(digest.by_code)) == (30000, expected)
    keys = jsonl_keys(s3, "j")
    assert keys == [f"in/{p:05d}/obj-{i:03d}" for p in range(300) for i in range(100)]  # each once, in order
    assert [f["key"] for f in digest.sample] == keys[:REPORT_FAILURES]
    # Called again for the same execution (Finalize retried after it answered): a new assembly, the same file.
    again = assemble(reports, "j", writer="finalize", execution="e1", counted=None, time_left=lambda: 600.0)
    assert again is not None and again.total == 30000 and jsonl_keys(s3, "j") == keys


def test_a_resumed_job_starts_its_assembly_afresh_and_aborts_the_old_unfinished_upload(s3: Any) -> None:
    reports = ReportBucket(s3, BUCKET, readers=4)
    seed(reports, "j", 300, 100, message="x" * 600)
    assert assemble(reports, "j", writer="ended", execution="e1", counted=None, time_left=lambda: 1.0) is None
    assert len(s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads", [])) == 1
    reports.put_failures("j", "0000-000000000-late", [{"key": "in/00000/a-late-one", "error": "AccessDenied", "message": "m"}])
    digest = assemble(reports, "j", writer="ended", execution="e2", counted=None, time_left=lambda: 600.0)
    assert digest is not None and digest.total == 30001  # the part that sorts before the old cursor is read too
    assert s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads", []) == []
    assert len(jsonl_keys(s3, "j")) == 30001


def test_a_report_whose_failures_cannot_be_read_fails_and_the_next_call_goes_on_without_a_lost_line(
    s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    reports = ReportBucket(s3, BUCKET, readers=4)
    seed(reports, "j", 300, 100, message="x" * 600)
    real = ReportBucket._read
    calls = {"n": 0}

    def fails_late(self: ReportBucket, key: str) -> bytes:
        calls["n"] += 1
        if calls["n"] == 200:  # after the first 8 MiB part went up
            raise RuntimeError("S3 went away")
        return real(self, key)

    monkeypatch.setattr(ReportBucket, "_read", fails_late)
    with pytest.raises(RuntimeError, match="S3 went away"):
        assemble(reports, "j", writer="finalize", execution="e1", counted=None, time_left=lambda: 600.0)
    assert "jobs/j/report.json" not in {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="jobs/j/").get("Contents", [])}
    digest = assemble(reports, "j", writer="finalize", execution="e1", counted=None, time_left=lambda: 600.0)
    assert digest is not None and digest.total == 30000
    keys = jsonl_keys(s3, "j")
    assert len(keys) == len(set(keys)) == 30000
    assert s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads", []) == []
