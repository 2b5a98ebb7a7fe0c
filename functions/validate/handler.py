"""Step Functions task: validate and authorize a job event; a bad one fails as JobError with a one-line cause."""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.parser import BaseModel, event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from s3bulk.aws import env
from s3bulk.aws.validation import validate
from s3bulk.metrics import SERVICE

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)


class ValidateEvent(BaseModel):
    job: Any  # the execution's input, checked by parse_job (its errors name the job's fields)
    execution: str | None = None  # the execution's name: a job without job_id takes an id derived from it


@cache
def config() -> env.AwsConfig:
    return env.AwsConfig.from_env()


@tracer.capture_lambda_handler
@logger.inject_lambda_context
@event_parser(model=ValidateEvent)
def handler(event: ValidateEvent, context: LambdaContext) -> dict[str, Any]:
    cfg = config()
    return validate(
        event.job, cfg.allow, cfg.poll_seconds, execution=event.execution, load_code=env.code_loader(cfg), worker=env.worker_size(cfg)
    )
