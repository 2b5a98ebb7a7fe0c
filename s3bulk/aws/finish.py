"""The job's end: its report and status (Finalize, ReportFailure), and an execution that ended on its own terms."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from typing import Any

from s3bulk.aws.assembly import ASSEMBLY_MARGIN_S, assemble
from s3bulk.aws.events import JobEvents
from s3bulk.aws.ledger import CANCELLED, CANCELLING, DynamoLedger
from s3bulk.aws.reportbucket import ReportBucket
from s3bulk.aws.steps import TimeLeft
from s3bulk.breakers.failure import LINE_START, STOP_REASON
from s3bulk.breakers.outage import EndpointUnreachable
from s3bulk.job import JobError, new_job_id, parse_job
from s3bulk.report import Counts, job_status, over_tolerance, summarize

# How often a stopped job's report asks whether the work in flight has drained.
DRAIN_POLL_S = 2.0

# Step errors that are the job's own verdict (its spec, its delete guard), not a fault to resume past.
FAILS_THE_JOB = ("JobError",)
# A Distributed Map's own error when a child failed (infra/state_machine.py); the child wrote the report with its step's
# error first, and that report stands.
CHILD_FAILED = "States.ExceedToleratedFailureThreshold"


def finalize(
    job_id: str,
    *,
    ledger: DynamoLedger,
    reports: ReportBucket,
    error: str | None = None,
    now: Callable[[], float] = time.time,
    time_left: TimeLeft = lambda: float("inf"),
    writer: str = "finalize",
    events: JobEvents | None = None,
    drain_s: float = 0.0,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Write failures.jsonl and report.json; say whether failures exceed the job's tolerance.

    A stopped job's report waits until no invocation works the job any more (its leases, for at most
    `drain_s` after the stop: the longest a batch or a lister call already under way can take), so
    it agrees with the ledger: what workers and listers had in hand when the job stopped is in it.

    failures.jsonl is assembled over as many calls as it takes (aws/assembly.py): until it
    is complete the answer is `report_done: false`, and the caller calls again. With `error`
    (a step of the execution failed for good), the report is written all the same, with what
    was counted so far and the error: no execution that got as far as its ledger entry ends
    without a report. Once its listing was planned, such a job is stopped (resumable, its
    queued batches kept) unless the error is its own verdict (FAILS_THE_JOB); before, FAILED.
    """
    rec = ledger.load(job_id)
    if error is not None and error.startswith(CHILD_FAILED) and rec.report is not None and rec.status != "RUNNING":
        return {"job_id": job_id, "report_done": True, "status": rec.status.lower(), "report": rec.report, "reported_by": "child"}
    planned = rec.shards is not None and rec.status == "RUNNING"
    if error is not None and writer == "finalize" and planned and not error.startswith(FAILS_THE_JOB):
        # A step that failed for good once the listing was planned (a lister's call still refused after its retries,
        # a completion check that kept failing): the job stops, resumable, its queued batches held for the resume,
        # instead of failing and having its workers cancel them.
        ledger.stop(job_id, f"{error[:800]}; fix the cause, then s3bulk resume {job_id}")
    stopping = drain_s > 0 and ledger.status(job_id, consistent=True) in ("STOPPING", CANCELLING)
    if stopping and not drained(job_id, ledger, drain_s=drain_s, now=now, time_left=time_left, sleep=sleep):
        return {"job_id": job_id, "report_done": False, "draining": True}
    digest = assemble(reports, job_id, writer=writer, execution=rec.execution or "", counted=ledger.counted_attempts, time_left=time_left)
    if digest is None:
        return {"job_id": job_id, "report_done": False}
    rec = ledger.load(job_id)  # the counts as they are now that every failure has been read
    counts = Counts.of_counters(rec.counters)
    opts = rec.job.options
    cancelled = rec.status in (CANCELLING, CANCELLED)  # its owner's s3bulk cancel: final, whatever else happened
    # Stopped, not failed: workers found an endpoint gone past the bound, or the listing did (its step's error).
    stopped = rec.stop_reason is not None or (error is not None and error.startswith(f"{EndpointUnreachable.__name__}:"))
    reason = rec.stop_reason or error if stopped else error
    status = job_status(dry_run=opts.dry_run, failed=counts.failed, error=error, stopped=stopped, cancelled=cancelled)
    breaker = STOP_REASON if stopped and (rec.stop_reason or "").startswith(LINE_START) else None
    summary = summarize(
        job_id,
        rec.job.operation,
        status,
        counts,
        now() - rec.created_at,
        tolerated_failures=opts.tolerated_failures,
        error=reason,
        stop_reason=breaker,
        redone=rec.counters.get("redone", 0),
    )
    uri = reports.put_report(job_id, summary, digest)
    over = (
        not stopped
        and not cancelled
        and over_tolerance(status=status, failed=counts.failed, tolerated=opts.tolerated_failures, error=error)
    )
    final = CANCELLED if cancelled else "STOPPED" if stopped else "FAILED" if over else "SUCCEEDED"
    ledger.set_status(job_id, final, report=uri)
    event = events.ended(summary, uri, final) if events is not None else "no event bus"
    return {
        "event": event,
        "job_id": job_id,
        "report_done": True,
        "status": status,
        "failed": counts.failed,
        "tolerated_failures": opts.tolerated_failures,
        "over_threshold": over,
        "report": uri,
        **({"stop_reason": breaker} if breaker else {}),
    }


def drained(
    job_id: str, ledger: DynamoLedger, *, drain_s: float, now: Callable[[], float], time_left: TimeLeft, sleep: Callable[[float], None]
) -> bool:
    """Wait until no worker or lister holds the stopped job (True), or until `drain_s` after its stop (True: an
    invocation Lambda ended left its hold behind); False when this call's time runs short first (call again)."""
    stopped = ledger.stopped_at(job_id) or now()
    ledger.mark_stopped(job_id, stopped)  # whoever stopped it may have died before telling every lease shard
    while ledger.working(job_id) > 0:
        if now() >= stopped + drain_s:
            return True
        if time_left() < ASSEMBLY_MARGIN_S + DRAIN_POLL_S:
            return False
        sleep(DRAIN_POLL_S)
    return True


# -- an execution that ended on its own terms ----------------------------------------------------
# The execution statuses whose event reaches execution_ended (the stack's EventBridge rule).
ENDED = ("FAILED", "TIMED_OUT", "ABORTED")
# The errors s3bulk stop and s3bulk cancel stop an execution with (aws/remote.py): an end its owner asked for.
OWNER_STOPPED, OWNER_CANCELLED = "User.Stopped", "User.Cancelled"
# The input of an execution a job goes on in once its history grows long (infra/state_machine.py): {CONTINUE: {job_id, from}}.
CONTINUE = "s3bulk_continue"


def ended_unasked(detail: dict[str, Any]) -> bool:
    """An execution that timed out, or was aborted by anything but its owner's stop or cancel (the console, a script
    without s3bulk): what the ExecutionsEndedEarly alarm counts. A failure has an alarm of its own."""
    status = str(detail.get("status", ""))
    return status == "TIMED_OUT" or (status == "ABORTED" and detail.get("error") not in {OWNER_STOPPED, OWNER_CANCELLED})


def history_limit(detail: dict[str, Any]) -> bool:
    """The execution failed at Step Functions' 25,000-event history limit (States.Runtime, "...maximum number of history events")."""
    return (
        detail.get("status") == "FAILED"
        and detail.get("error") == "States.Runtime"
        and "maximum number of history events" in str(detail.get("cause") or "")
    )


def job_id_of(detail: dict[str, Any]) -> str | None:
    """The job id an execution ran, from its status-change event: as Validate derived it (input and name), or None if invalid."""
    raw = detail.get("input")
    if not isinstance(raw, str):
        return None
    with contextlib.suppress(ValueError, AttributeError, KeyError, TypeError):  # an execution a job went on in (continue as new)
        return str(json.loads(raw)[CONTINUE]["job_id"])
    try:
        job = parse_job(raw, stored=True)
    except JobError:
        return None  # Validate refused it: no ledger entry was made
    name = detail.get("name")
    if not job.job_id and not name:
        return None
    return new_job_id(job, str(name or ""))


def execution_ended(
    detail: dict[str, Any],
    *,
    ledger: DynamoLedger,
    reports: ReportBucket,
    now: Callable[[], float] = time.time,
    time_left: TimeLeft = lambda: float("inf"),
    events: JobEvents | None = None,
    drain_s: float = 0.0,
) -> dict[str, Any]:
    """An execution FAILED, TIMED_OUT or was ABORTED: make sure its job has a report and is no longer RUNNING.

    The state machine writes the report itself on every path it controls (Finalize, and
    ReportFailure for a step that failed for good). Some ends bypass every Catch: a user's
    StopExecution, the execution's own timeout, States.Runtime and States.DataLimitExceeded
    errors, and the 25,000-event history limit. For those, Step Functions' status-change event
    brings the execution here; the job's report is written with what was counted and the
    reason, and its queued batches are then cancelled by the workers (JobStopped), except after
    an owner's stop or the history limit, which stop the job (resumable). A job that
    already has its report is left alone, so this and ReportFailure may both run (each assembles
    its own failures.jsonl). `report_done: false` means call again with the same event.
    """
    status = str(detail.get("status", ""))
    job_id = job_id_of(detail)
    if status not in ENDED or job_id is None:
        return {"job_id": job_id, "finalized": False, "reason": f"nothing to report for a {status or 'malformed'} event"}
    try:
        rec = ledger.load(job_id)
    except KeyError:
        return {"job_id": job_id, "finalized": False, "reason": "the execution ended before it made a ledger entry"}
    if rec.execution and detail.get("name") and rec.execution != detail["name"]:
        # A submission refused because the job runs (or ran with another spec), or an older execution whose end
        # arrives after the job was resumed: neither is the job's current execution.
        return {"job_id": job_id, "finalized": False, "reason": f"not the job's current execution ({rec.execution})"}
    if rec.report is not None and rec.status != "RUNNING":
        return {"job_id": job_id, "finalized": False, "reason": f"already reported ({rec.status})"}
    why = step_error({"Error": str(detail.get("error") or status), "Cause": str(detail.get("cause") or "")})
    if status == "ABORTED":
        # Its owner stopped it: a stop, not a failure. Its queued batches are held (workers park them uncounted,
        # listers send no more), the report says stopped with what is done and not, and a resume finishes it exactly.
        ledger.stop(job_id, f"stopped by its owner (execution ABORTED: {why}); resume it with s3bulk resume {job_id}")
    elif history_limit(detail):
        # Nothing of the job failed: its execution ran out of history (a job goes on in a new execution well before,
        # infra/state_machine.py). A stop, so its queued batches are kept and a resume finishes it.
        ledger.stop(job_id, f"its execution reached Step Functions' history limit ({why}); resume it with s3bulk resume {job_id}")
    out = finalize(
        job_id,
        ledger=ledger,
        reports=reports,
        error=f"execution {status}: {why}",
        now=now,
        time_left=time_left,
        writer="ended",
        events=events,
        drain_s=drain_s,
    )
    return {**out, "finalized": bool(out["report_done"])}


def step_error(error: dict[str, str] | None) -> str | None:
    """One line from a Step Functions error object ({"Error", "Cause"}), the Cause cut to 500 characters."""
    if not error:
        return None
    cause = str(error.get("Cause") or "")
    with contextlib.suppress(ValueError, AttributeError):  # a Lambda's Cause is JSON: {"errorMessage", "errorType", ...}
        cause = str(json.loads(cause).get("errorMessage", cause))
    return f"{error.get('Error', 'Error')}: {cause[:500]}"
