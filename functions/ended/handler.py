"""EventBridge target: an execution FAILED, TIMED_OUT or was ABORTED; its job gets a report and stops, whatever ended it."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.parser import BaseModel, event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from s3bulk.aws import env
from s3bulk.aws.events import JobEvents
from s3bulk.aws.finish import ended_unasked, execution_ended
from s3bulk.aws.ledger import DynamoLedger
from s3bulk.aws.reportbucket import ReportBucket
from s3bulk.metrics import NAMESPACE, SERVICE, UNASKED_ENDS

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
tracer = Tracer(service=SERVICE)


class StatusChange(BaseModel):
    """Step Functions Execution Status Change: only `detail` matters (name, status, input, error, cause)."""

    detail: dict[str, Any]
    again: bool = False  # this function's own re-invocation, to go on with the report: the end was counted already


@cache
def deps() -> tuple[DynamoLedger, ReportBucket, Any, JobEvents, float]:
    cfg = env.AwsConfig.from_env()
    return env.ledger(cfg), env.reports(cfg), env.lambda_client(), env.job_events(), cfg.drain_s


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
@event_parser(model=StatusChange)
def handler(event: StatusChange, context: LambdaContext) -> dict[str, Any]:
    ledger, reports, lambdas, events, drain_s = deps()
    unasked = ended_unasked(event.detail) and not event.again
    if unasked:
        metrics.add_metric(name=UNASKED_ENDS, unit="Count", value=1)
    time_left = lambda: context.get_remaining_time_in_millis() / 1000  # noqa: E731 - the invocation's own clock
    out = execution_ended(event.detail, ledger=ledger, reports=reports, time_left=time_left, events=events, drain_s=drain_s)
    out["unasked"] = unasked  # counted for the early-end alarm
    if out.get("report_done") is False:  # failures.jsonl not complete yet: go on in a fresh invocation of this function
        again = json.dumps({"detail": event.detail, "again": True}).encode()
        lambdas.invoke(FunctionName=context.invoked_function_arn, InvocationType="Event", Payload=again)
    logger.info("execution ended", extra={"execution": event.detail.get("executionArn"), **out})
    return out
