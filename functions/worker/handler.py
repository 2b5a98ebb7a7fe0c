"""SQS-triggered worker: each record is one batch; partial failures come back, the last delivery is dead-lettered."""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.parser.models import SqsRecordModel
from aws_lambda_powertools.utilities.parser.types import Json
from aws_lambda_powertools.utilities.typing import LambdaContext

from s3bulk import awsenv
from s3bulk.messages import BatchMessage
from s3bulk.service import NotStarted, WorkerService

logger = Logger(service=awsenv.SERVICE)
metrics = Metrics(namespace=awsenv.METRICS_NAMESPACE, service=awsenv.SERVICE)
tracer = Tracer(service=awsenv.SERVICE)


class BatchRecord(SqsRecordModel):
    body: Json[BatchMessage]


# An all-failed batch (e.g. the deadline reached) is reported record by record,
# not raised: a returned batch is normal flow, not a Lambda error to alarm on.
processor = BatchProcessor(event_type=EventType.SQS, model=BatchRecord, raise_on_entire_batch_failure=False)


@cache
def service() -> tuple[WorkerService, int]:
    cfg = awsenv.AwsConfig.from_env()
    return awsenv.worker_service(cfg), cfg.max_receives


def record_handler(record: BatchRecord, lambda_context: LambdaContext) -> None:
    worker, max_receives = service()
    msg = record.body
    logger.append_keys(job_id=msg.job_id, batch_id=msg.batch_id)
    try:
        outcome = worker.work(msg, lambda: lambda_context.get_remaining_time_in_millis() / 1000)
    except NotStarted:
        metrics.add_metric(name="BatchesReturned", unit="Count", value=1)
        raise
    except Exception as exc:
        metrics.add_metric(name="BatchesReturned", unit="Count", value=1)
        attempts = int(record.attributes.ApproximateReceiveCount)
        if attempts >= max_receives:
            counts = worker.dead_letter(msg, exc, attempts)
            metrics.add_metric(name="ObjectsFailed", unit="Count", value=counts.failed)
            metrics.add_metric(name="DeadLetteredBatches", unit="Count", value=1)
            logger.error("batch dead-lettered", extra={"attempts": attempts})
        raise
    if not outcome.counted:
        metrics.add_metric(name="DuplicateBatches", unit="Count", value=1)
        return
    c = outcome.counts
    metrics.add_metric(name="ObjectsSucceeded", unit="Count", value=c.succeeded)
    metrics.add_metric(name="ObjectsFailed", unit="Count", value=c.failed)
    metrics.add_metric(name="ObjectsSkipped", unit="Count", value=c.skipped)
    metrics.add_metric(name="Bytes", unit="Bytes", value=c.bytes)
    metrics.add_metric(name="Retries", unit="Count", value=outcome.retries)


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
