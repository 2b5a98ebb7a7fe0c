"""`s3bulk stop` of a job that goes on in a new execution now and then (aws/history.py): the execution is stopped, then
the ledger marked STOPPING, so no execution adopts the job afterwards (AdoptJob needs RUNNING); one that adopted it in
between is stopped too, and a job handed on to an execution that now cannot adopt it gets its report from the command."""

from __future__ import annotations

from typing import Any

import pytest

from s3bulk.aws import remote
from s3bulk.aws.ledger import JobRecord
from s3bulk.aws.remote import Deployment
from s3bulk.job import JobError, parse_job
from s3bulk.s3.clients import ClientSettings

JOB = parse_job('{"operation": "delete", "source": {"bucket": "stop-bucket", "prefix": "p/"}}')
DEP = Deployment("arn:aws:states:us-east-1:123456789012:stateMachine:S3Bulk-jobs", "ledger", "reports")
SETTINGS = ClientSettings(region="us-east-1")


class Sfn:
    class exceptions:
        class ExecutionDoesNotExist(Exception):
            pass

    def __init__(self, statuses: dict[str, str]) -> None:
        self.statuses = statuses  # execution name -> its status
        self.stopped: list[str] = []

    def stop_execution(self, executionArn: str, **_: Any) -> None:
        name = executionArn.rsplit(":", 1)[1]
        self.stopped.append(name)
        self.statuses[name] = "ABORTED"

    def describe_execution(self, executionArn: str) -> dict[str, str]:
        return {"status": self.statuses[executionArn.rsplit(":", 1)[1]]}


class Ledger:
    """The job item: its status and the execution that holds it. `adopt_at_stop`: an execution that adopts the job
    between the stop of its execution and the ledger's mark (AdoptJob's condition: RUNNING)."""

    def __init__(self, execution: str, adopt_at_stop: str | None = None) -> None:
        self.status, self.execution, self.adopt_at_stop = "RUNNING", execution, adopt_at_stop
        self.reasons: list[str] = []

    def adopt(self, execution: str) -> bool:
        if self.status != "RUNNING":
            return False
        self.execution = execution
        return True

    def stop(self, job_id: str, reason: str, *, tripped: bool = False) -> bool:
        if self.adopt_at_stop:
            self.adopt(self.adopt_at_stop)
        if self.status != "RUNNING":
            return False
        self.status = "STOPPING"
        self.reasons.append(reason)
        return True

    def load(self, job_id: str) -> JobRecord:
        return JobRecord(job_id, JOB, self.status, False, {}, 0.0, execution=self.execution)


def deployed(monkeypatch: pytest.MonkeyPatch, ledger: Ledger, statuses: dict[str, str]) -> tuple[Sfn, list[str]]:
    sfn = Sfn(statuses)
    finalized: list[str] = []
    monkeypatch.setattr(remote, "status", lambda deployment, job_id, settings: ledger.load(job_id))
    monkeypatch.setattr(remote, "make_client", lambda service, *a, **k: sfn if service == "stepfunctions" else None)
    monkeypatch.setattr(remote, "DynamoLedger", lambda client, table: ledger)
    monkeypatch.setattr(remote, "make_s3_client", lambda *a, **k: None)

    def finalize(job_id: str, **kw: Any) -> dict[str, Any]:
        finalized.append(str(kw["writer"]))
        return {"report_done": True}

    monkeypatch.setattr(remote, "finalize", finalize)
    return sfn, finalized


def test_a_stop_of_the_running_execution_stops_it_marks_the_job_and_leaves_the_report_to_its_end(monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = Ledger("e1")
    sfn, finalized = deployed(monkeypatch, ledger, {"e1": "RUNNING"})
    assert remote.stop(DEP, "j", SETTINGS).endswith(":e1")
    assert sfn.stopped == ["e1"] and ledger.status == "STOPPING" and finalized == []  # ExecutionEnded writes it
    assert "stopped with s3bulk stop" in ledger.reasons[0]
    assert not ledger.adopt("e2")  # a successor it had started finds the job not RUNNING: NotAdopted


def test_a_stop_that_reaches_an_execution_which_had_handed_its_job_on_writes_the_report_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    # e1 had ended SUCCEEDED, its successor e2 not yet adopted: after the mark it never will, and nobody else reports.
    ledger = Ledger("e1")
    sfn, finalized = deployed(monkeypatch, ledger, {"e1": "SUCCEEDED", "e2": "RUNNING"})
    assert remote.stop(DEP, "j", SETTINGS).endswith(":e1")
    assert sfn.stopped == [] and finalized == ["stop"] and not ledger.adopt("e2")


def test_an_execution_that_adopts_the_job_between_the_stop_and_the_mark_is_stopped_too(monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = Ledger("e1", adopt_at_stop="e2")
    sfn, finalized = deployed(monkeypatch, ledger, {"e1": "RUNNING", "e2": "RUNNING"})
    assert remote.stop(DEP, "j", SETTINGS).endswith(":e2")
    assert sfn.stopped == ["e1", "e2"] and finalized == [] and ledger.status == "STOPPING"


def test_a_job_that_is_not_running_is_not_stopped_and_says_so_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = Ledger("e1")
    ledger.status = "STOPPED"
    sfn, _ = deployed(monkeypatch, ledger, {"e1": "ABORTED"})
    with pytest.raises(JobError, match=r"'j' is not running \(STOPPED\); nothing to stop"):
        remote.stop(DEP, "j", SETTINGS)
    assert sfn.stopped == []
