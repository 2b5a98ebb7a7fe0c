"""Step Functions task: wait for a job's completion (store the task token, then check), or check it (the safety net)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.parser import BaseModel, event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from s3bulk.aws import env
from s3bulk.aws.completion import Completion, await_step, confirm_step, progress_step
from s3bulk.aws.held import sweep_parked
from s3bulk.aws.history import History
from s3bulk.aws.ledger import DynamoLedger
from s3bulk.metrics import SERVICE

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)


class ProgressEvent(BaseModel):
    job_id: str
    token: str | None = None  # present when the state machine waits with .waitForTaskToken
    phase: str | None = None  # "confirm": the wait is for the owner's s3bulk confirm; "listed": is the listing done?
    execution: str | None = None  # the execution's ARN: past its history's bound, the job goes on in a new one


@cache
def deps() -> tuple[DynamoLedger, Completion, History, Callable[[str], int]]:
    cfg = env.AwsConfig.from_env()
    ledger, reports, returns = env.ledger(cfg), env.reports(cfg), env.returns(cfg)

    def sweep(job_id: str) -> int:
        return sweep_parked(job_id, ledger=ledger, reports=reports, send=returns.requeue)

    return ledger, env.completion(), env.history(cfg), sweep


@tracer.capture_lambda_handler
@logger.inject_lambda_context
@event_parser(model=ProgressEvent)
def handler(event: ProgressEvent, context: LambdaContext) -> dict[str, Any]:
    logger.append_keys(job_id=event.job_id)
    ledger, completion, history, sweep = deps()
    if event.token is not None and event.phase == "confirm":
        return confirm_step(event.job_id, event.token, ledger=ledger)
    if event.token is not None:
        return await_step(event.job_id, event.token, ledger=ledger, completion=completion)
    if event.phase == "listed":
        return {"job_id": event.job_id, "listing_done": ledger.progress(event.job_id).listing_done}
    return progress_step(event.job_id, ledger=ledger, renew=lambda: history.full(event.execution), sweep=lambda: sweep(event.job_id))
