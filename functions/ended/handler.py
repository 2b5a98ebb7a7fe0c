"""EventBridge target: an execution FAILED, TIMED_OUT or was ABORTED; its job gets a report and stops, whatever ended it."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.parser import BaseModel, event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from s3bulk.aws import env
from s3bulk.aws.events import JobEvents
from s3bulk.aws.finish import execution_ended
from s3bulk.aws.ledger import DynamoLedger
from s3bulk.aws.reportbucket import ReportBucket
from s3bulk.metrics import SERVICE

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)


class StatusChange(BaseModel):
    """Step Functions Execution Status Change: only `detail` matters (name, status, input, error, cause)."""

    detail: dict[str, Any]


@cache
def deps() -> tuple[DynamoLedger, ReportBucket, Any, JobEvents, float]:
    cfg = env.AwsConfig.from_env()
    return env.ledger(cfg), env.reports(cfg), env.lambda_client(), env.job_events(), cfg.drain_s


@tracer.capture_lambda_handler
@logger.inject_lambda_context
@event_parser(model=StatusChange)
def handler(event: StatusChange, context: LambdaContext) -> dict[str, Any]:
    ledger, reports, lambdas, events, drain_s = deps()
    time_left = lambda: context.get_remaining_time_in_millis() / 1000  # noqa: E731 - the invocation's own clock
    out = execution_ended(event.detail, ledger=ledger, reports=reports, time_left=time_left, events=events, drain_s=drain_s)
    if out.get("report_done") is False:  # failures.jsonl not complete yet: go on in a fresh invocation of this function
        again = json.dumps({"detail": event.detail}).encode()
        lambdas.invoke(FunctionName=context.invoked_function_arn, InvocationType="Event", Payload=again)
    logger.info("execution ended", extra={"execution": event.detail.get("executionArn"), **out})
    return out
