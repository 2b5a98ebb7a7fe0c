"""Resume a job's execution when its last batch is done, with the task token the execution is waiting on.

The state machine waits for completion with `.waitForTaskToken` instead of polling in a loop,
so an execution's history does not grow with the job's length. Whoever sees the job complete
(the worker that counts the last batch, or the Await step if listing finished last) sends the
token; a second send for the same token is answered "already done" and ignored.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from s3bulk.aws.ledger import DynamoLedger, Progress

# The token's wait already ended (sent by someone else, or timed out and replaced by a new one).
_SPENT = {"TaskTimedOut", "TaskDoesNotExist", "InvalidToken"}


class Completion:
    def __init__(self, client: Any) -> None:
        self.client = client

    def send(self, token: str, job_id: str) -> bool:
        """True if this call resumed the execution."""
        try:
            self.client.send_task_success(taskToken=token, output=json.dumps({"job_id": job_id, "complete": True}))
            return True
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _SPENT:
                return False
            raise


def notify_if_complete(job_id: str, ledger: DynamoLedger, completion: Completion | None, progress: Progress | None = None) -> bool:
    """Resume the execution if the job is complete and it is waiting; True if this call resumed it.

    The worker counting a batch and the Await step storing the token each write, then
    read the other's write (strongly consistent), so at least one of them sees both.
    `progress`: that read, when the caller made it already (after its own write).
    """
    if completion is None:
        return False
    progress = progress or ledger.progress(job_id)
    if not progress.complete or progress.token is None:
        return False
    return completion.send(progress.token, job_id)


def await_step(job_id: str, token: str, *, ledger: DynamoLedger, completion: Completion) -> dict[str, Any]:
    """The state machine waits on `token` until the job is complete or stopping; store it, then check, in that order.

    A job stopped (the failure breaker, an outage) before the token was stored had no token for its stopper to send:
    this check sends it, so the execution reports the stop now rather than at its safety net (poll_seconds, 600 s)."""
    ledger.await_completion(job_id, token)
    progress = ledger.progress(job_id)
    resumed = progress.ends_wait and progress.token is not None and completion.send(progress.token, job_id)
    return {"job_id": job_id, "resumed": resumed}


def progress_step(
    job_id: str, *, ledger: DynamoLedger, renew: Callable[[], bool] = lambda: False, sweep: Callable[[], int] = lambda: 0
) -> dict[str, Any]:
    """The safety net when no one sent the token in time: is the job complete? And, if not, should it go on in a new
    execution (`renew`: its execution's history is long, aws/history.py)? `sweep` sends on a capped job's parked
    batches that have room and no one to send them (aws/held.py)."""
    p = ledger.progress(job_id, counters=True)
    complete = p.ends_wait
    if not complete and p.status == "RUNNING":
        if p.capped:  # only a job its owner ever capped can have batches parked for room (32 lease reads a poll)
            sweep()
        ledger.keep(job_id)  # a job running for weeks keeps its own items past their TTL
    out = {"job_id": job_id, "complete": complete, "pending": p.pending, "listing_done": p.listing_done}
    return {**out, "renew": not complete and renew()}


def confirm_step(job_id: str, token: str, *, ledger: DynamoLedger) -> dict[str, Any]:
    """options.confirm: the execution waits on `token` until its owner runs s3bulk confirm (which sends it)."""
    ledger.await_confirmation(job_id, token)
    return {"job_id": job_id, "awaiting": "confirmation"}
