"""Step Functions task: write the job's report and failures to the report bucket; say if failures exceed the tolerance."""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.parser import BaseModel, event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from s3bulk.aws import env
from s3bulk.aws.events import JobEvents
from s3bulk.aws.finish import finalize, step_error
from s3bulk.aws.ledger import DynamoLedger
from s3bulk.aws.reportbucket import ReportBucket
from s3bulk.metrics import SERVICE

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)


class FinalizeEvent(BaseModel):
    job_id: str
    error: dict[str, str] | None = None  # set when the execution failed: the report is written with it


@cache
def deps() -> tuple[DynamoLedger, ReportBucket, JobEvents, float]:
    cfg = env.AwsConfig.from_env()
    return env.ledger(cfg), env.reports(cfg), env.job_events(), cfg.drain_s


@tracer.capture_lambda_handler
@logger.inject_lambda_context
@event_parser(model=FinalizeEvent)
def handler(event: FinalizeEvent, context: LambdaContext) -> dict[str, Any]:
    logger.append_keys(job_id=event.job_id)
    ledger, reports, events, drain_s = deps()
    time_left = lambda: context.get_remaining_time_in_millis() / 1000  # noqa: E731 - the step's own clock
    out = finalize(
        event.job_id, ledger=ledger, reports=reports, error=step_error(event.error), time_left=time_left, events=events, drain_s=drain_s
    )
    logger.info("finalize", extra=out)
    return out
