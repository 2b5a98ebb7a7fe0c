"""`s3bulk stop` of a job that goes on in a new execution now and then (aws/history.py): the stop follows the job to
the execution that adopted it, until the ledger says the stop took."""

from __future__ import annotations

from typing import Any

import pytest

from s3bulk.aws import remote
from s3bulk.aws.ledger import JobRecord
from s3bulk.aws.remote import Deployment
from s3bulk.job import parse_job
from s3bulk.s3.clients import ClientSettings

JOB = parse_job('{"operation": "delete", "source": {"bucket": "stop-bucket", "prefix": "p/"}}')
DEP = Deployment("arn:aws:states:us-east-1:123456789012:stateMachine:S3Bulk-jobs", "ledger", "reports")


class Sfn:
    class exceptions:
        class ExecutionDoesNotExist(Exception):
            pass

    def __init__(self, handed_on: set[str]) -> None:
        self.stopped: list[str] = []
        self.handed_on = handed_on  # executions that had ended SUCCEEDED, the job gone on in a new one

    def stop_execution(self, executionArn: str, **_: Any) -> None:
        self.stopped.append(executionArn.rsplit(":", 1)[1])

    def describe_execution(self, executionArn: str) -> dict[str, str]:
        return {"status": "SUCCEEDED" if executionArn.rsplit(":", 1)[1] in self.handed_on else "ABORTED"}


def records(monkeypatch: pytest.MonkeyPatch, answers: list[tuple[str, str]], handed_on: frozenset[str] = frozenset()) -> Sfn:
    """The ledger answers (status, execution) in this order, one per read; the last one from then on."""
    sfn = Sfn(set(handed_on))
    reads = iter(answers)
    last: list[tuple[str, str]] = []

    def status(deployment: Deployment, job_id: str, settings: ClientSettings) -> JobRecord:
        answer = next(reads, None) or last[-1]
        last.append(answer)
        return JobRecord(job_id, JOB, answer[0], False, {}, 0.0, execution=answer[1])

    monkeypatch.setattr(remote, "status", status)
    monkeypatch.setattr(remote, "make_client", lambda *a, **k: sfn)
    return sfn


def test_a_stop_that_reaches_an_execution_which_had_handed_its_job_on_stops_the_one_that_adopted_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # e1 had ended SUCCEEDED, the job gone on in e2, which adopts it a moment after the stop reached e1.
    sfn = records(monkeypatch, [("RUNNING", "e1"), ("RUNNING", "e1"), ("RUNNING", "e2")], handed_on=frozenset({"e1"}))
    last = remote.stop(DEP, "j", ClientSettings(region="us-east-1"), sleep=lambda s: None)
    assert sfn.stopped == ["e1", "e2"] and last.endswith(":e2")


def test_a_stop_of_the_running_execution_stops_it_alone_and_returns_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    sfn = records(monkeypatch, [("RUNNING", "e1")])
    assert remote.stop(DEP, "j", ClientSettings(region="us-east-1"), sleep=lambda s: None).endswith(":e1")
    assert sfn.stopped == ["e1"]


def test_a_handed_on_job_no_execution_adopts_in_time_ends_the_stop_after_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    sfn = records(monkeypatch, [("RUNNING", "e1")], handed_on=frozenset({"e1"}))
    remote.stop(DEP, "j", ClientSettings(region="us-east-1"), follow_s=0.0, sleep=lambda s: None)
    assert sfn.stopped == ["e1"]
