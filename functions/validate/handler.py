"""Step Functions task: validate and authorize a job event; a bad one fails as JobError with a one-line cause."""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from s3bulk.aws import env
from s3bulk.aws.pipeline import validate
from s3bulk.metrics import SERVICE

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)


@cache
def config() -> env.AwsConfig:
    return env.AwsConfig.from_env()


@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    cfg = config()
    return validate(event, cfg.allow, cfg.poll_seconds)
