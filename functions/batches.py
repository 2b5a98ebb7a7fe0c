"""What the two SQS-triggered functions share: a record whose body is a batch message, processed record by record."""

from __future__ import annotations

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.parser.models import SqsRecordModel
from aws_lambda_powertools.utilities.parser.types import Json

from s3bulk.aws.messages import BatchMessage


class SqsBatchRecord(SqsRecordModel):
    body: Json[BatchMessage]


def batch_processor() -> BatchProcessor:
    """Failures are reported record by record, never raised for the whole batch: a batch handed back is normal
    flow (the deadline reached, an endpoint down), not a Lambda error to alarm on."""
    return BatchProcessor(event_type=EventType.SQS, model=SqsBatchRecord, raise_on_entire_batch_failure=False)
