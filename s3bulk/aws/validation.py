"""The first step: parse and authorize a job event, and build its ledger entry."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from s3bulk.aws.allowlist import AllowList
from s3bulk.aws.ledger import initial_item
from s3bulk.aws.steps import WORKER_TIME_S
from s3bulk.bodies.memory import DEFAULT_WORKER, WorkerSize, check_worker_memory
from s3bulk.job import JobError, Process, new_job_id, parse_job
from s3bulk.ops.process import ProcessCode

# How long the execution waits for the completion token before it asks the ledger itself (a safety net).
DEFAULT_POLL_SECONDS = 600

# The longest outage window a job may ask of the stack: a call kept going through an outage must give up with time
# to hand its batch back.
STACK_MAX_OUTAGE_WINDOW = 300.0


def validate(
    event: Any,
    allow: AllowList,
    poll_seconds: int = DEFAULT_POLL_SECONDS,
    execution: str | None = None,
    load_code: Callable[[Process], ProcessCode] | None = None,
    worker: WorkerSize = DEFAULT_WORKER,
) -> dict[str, Any]:
    """Parse and authorize a job event; raises JobError (one line naming the field) when it is bad.

    `execution` is the name of the execution running the job: a job without its own id
    takes one derived from it (see execution_ended). A process job's code is imported
    here too, so a function the deployment does not hold fails the job before any listing.
    A relay or process job that `worker` (the deployment's worker memory and threads) cannot
    stream in is refused here too, not ended by Lambda for its memory batch after batch.
    """
    job = parse_job(json.dumps(event))
    if job.options.outage_seconds > STACK_MAX_OUTAGE_WINDOW:
        raise JobError(
            f"job.options.outage_seconds: a worker must learn of an outage well within its {WORKER_TIME_S} s, so the stack "
            f"takes at most {STACK_MAX_OUTAGE_WINDOW:.0f}; lower it (the stack rides out longer outages by handing batches back, "
            "up to its S3BULK_OUTAGE_STOP_S)"
        )
    if job.options.canary is not None:
        raise JobError(
            "job.options.canary: the stack does not run a canary yet; run the canary with s3bulk run --canary N, "
            "then submit the job without canary"
        )
    if job.options.max_delete is not None and job.options.delete_extraneous:
        raise JobError(
            "job.options.max_delete: on the stack a sync finds its extraneous objects while it copies, so they cannot be "
            "counted first yet; run the sync with s3bulk run (or check the count with s3bulk plan), or drop max_delete"
        )
    for side, name in ((job.source, "source"), (job.destination, "destination")):
        if side is not None and side.profile:
            raise JobError(
                f"job.{name}.profile: functions have no AWS profiles; put that side's keys in a Secrets Manager secret "
                f"and name it in job.{name}.credentials_secret"
            )
        if side is not None and side.endpoint_url and not side.credentials_secret:
            raise JobError(
                f"job.{name}.endpoint_url: another endpoint needs its own keys; store them in a Secrets Manager secret "
                f"and name it in job.{name}.credentials_secret"
            )
    if job.source.manifest is not None and job.source.manifest.path is not None:
        raise JobError(
            "job.source.manifest.path: a deployed job reads its manifest from S3; upload the CSV and give its bucket and key "
            "(s3bulk retry JOB_ID does so for a deployed job's failed objects)"
        )
    allow.check(job)
    check_worker_memory(job, worker)
    if job.process is not None and load_code is not None:
        load_code(job.process)
    job_id = new_job_id(job, execution)
    return {"job_id": job_id, "item": initial_item(job_id, job, execution=execution), "poll_seconds": poll_seconds}
