"""SQS-triggered worker: each record is one batch; partial failures come back, the last delivery is dead-lettered."""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.batch import process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.batches import SqsBatchRecord, batch_processor
from s3bulk.aws import env
from s3bulk.aws.worker import BatchReturned, EndpointDown, WorkerService
from s3bulk.metrics import (
    BATCHES_RETURNED,
    BYTES,
    DEAD_LETTERED_BATCHES,
    DUPLICATE_BATCHES,
    NAMESPACE,
    OBJECTS_FAILED,
    OBJECTS_SKIPPED,
    OBJECTS_SUCCEEDED,
    RETRIES,
    SERVICE,
)

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
    attempts = int(record.attributes.ApproximateReceiveCount)
    try:
        outcome = service().handle(msg, attempts, record.receiptHandle, lambda: lambda_context.get_remaining_time_in_millis() / 1000)
    except BatchReturned as returned:
        metrics.add_metric(name=BATCHES_RETURNED, unit="Count", value=1)
        if isinstance(returned.cause, EndpointDown):
            logger.warning("endpoint unreachable: batch returned uncounted", extra={"cause": str(returned.cause)})
        if returned.dead_lettered is not None:
            metrics.add_metric(name=OBJECTS_FAILED, unit="Count", value=returned.dead_lettered.failed)
            metrics.add_metric(name=DEAD_LETTERED_BATCHES, unit="Count", value=1)
            logger.error("batch dead-lettered", extra={"attempts": attempts})
        raise
    if outcome.requeued or outcome.parked:
        metrics.add_metric(name=BATCHES_RETURNED, unit="Count", value=1)
    elif not outcome.counted:
        metrics.add_metric(name=DUPLICATE_BATCHES, unit="Count", value=1)
    else:
        c = outcome.counts
        metrics.add_metric(name=OBJECTS_SUCCEEDED, unit="Count", value=c.succeeded)
        metrics.add_metric(name=OBJECTS_FAILED, unit="Count", value=c.failed)
        metrics.add_metric(name=OBJECTS_SKIPPED, unit="Count", value=c.skipped)
        metrics.add_metric(name=BYTES, unit="Bytes", value=c.bytes)
        metrics.add_metric(name=RETRIES, unit="Count", value=c.retries)


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
