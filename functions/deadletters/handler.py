"""SQS-triggered on the dead-letter queue: a batch no worker finished is counted, so its job ends with a report."""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.batch import process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.batches import SqsBatchRecord, batch_processor
from s3bulk.aws import env
from s3bulk.aws.worker import WorkerService
from s3bulk.metrics import DEAD_LETTERED_BATCHES, NAMESPACE, OBJECTS_FAILED, SERVICE

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
tracer = Tracer(service=SERVICE)


processor = batch_processor()


@cache
def service() -> WorkerService:
    return env.worker_service(env.AwsConfig.from_env())


def record_handler(record: SqsBatchRecord, lambda_context: LambdaContext) -> None:
    msg = record.body
    logger.append_keys(job_id=msg.job_id, batch_id=msg.batch_id)
    # The receive count SQS moved over with the message: the main queue's deliveries, plus this queue's own.
    outcome = service().dead_lettered(msg, int(record.attributes.ApproximateReceiveCount))
    if outcome.counted:
        metrics.add_metric(name=DEAD_LETTERED_BATCHES, unit="Count", value=1)
        metrics.add_metric(name=OBJECTS_FAILED, unit="Count", value=outcome.counts.failed)
        logger.error("a dead-lettered batch was counted failed", extra={"objects": outcome.counts.failed})


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
