"""Drive the Lambda handlers the way AWS would: scripted contexts and an SQS event-source emulation."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from moto.core.botocore_stubber import BotocoreStubber

from s3bulk.aws.ledger import JOBS_INDEX
from s3bulk.testing.stack.aws import REGION, sqs_event

__all__ = ["REGION", "sqs_event"]


@dataclass
class Context:
    """A LambdaContext whose remaining time follows a script: one value per call, then the last one forever."""

    remaining_s: list[float] = field(default_factory=lambda: [600.0])
    function_name: str = "s3bulk-test"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:123456789012:function:s3bulk-test"
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"
    calls: int = 0

    def get_remaining_time_in_millis(self) -> int:
        value = self.remaining_s[min(self.calls, len(self.remaining_s) - 1)]
        self.calls += 1
        return int(value * 1000)


def receive(sqs: Any, queue_url: str, n: int = 10) -> list[dict[str, Any]]:
    r = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=n, AttributeNames=["All"], VisibilityTimeout=30)
    return list(r.get("Messages", []))


@dataclass
class Delivery:
    """One event-source poll: what the handler was given and which records it failed."""

    message_ids: list[str]
    failed_ids: list[str]


def pump(
    sqs: Any,
    queue_url: str,
    queue_arn: str,
    handler: Callable[[dict[str, Any], Any], dict[str, Any]],
    context: Callable[[], Any],
    *,
    batch: int = 4,
    max_polls: int = 500,
) -> Iterator[Delivery]:
    """Poll until the queue is empty: delete what succeeded, make failures visible again at once."""
    for _ in range(max_polls):
        messages = receive(sqs, queue_url, batch)
        if not messages:
            return
        response = handler(sqs_event(messages, queue_arn), context())
        failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
        for m in messages:
            if m["MessageId"] in failed:
                sqs.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0)
            else:
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])
        yield Delivery([m["MessageId"] for m in messages], sorted(failed))
    raise AssertionError("the queue never drained")


def create_table(ddb: Any, name: str) -> None:
    """The ledger as infra/stack.py makes it: its keys and its Jobs index."""
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "kind", "AttributeType": "S"},
            {"AttributeName": "created_at", "AttributeType": "N"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": JOBS_INDEX,
                "KeySchema": [{"AttributeName": "kind", "KeyType": "HASH"}, {"AttributeName": "created_at", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )


def create_queues(sqs: Any, max_receives: int) -> tuple[str, str, str]:
    """Work queue with a redrive policy to a DLQ; returns (queue_url, queue_arn, dlq_url)."""
    dlq_url = sqs.create_queue(QueueName="s3bulk-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(max_receives)})
    url = sqs.create_queue(QueueName="s3bulk-work", Attributes={"RedrivePolicy": redrive, "VisibilityTimeout": "30"})["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return url, arn, dlq_url


def one_call_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads calling in-process moto take turns: its backends are not thread-safe, and DynamoDB applies each request
    atomically, so one at a time is faithful (calls of different threads still interleave between requests)."""
    serial = threading.Lock()
    answer = BotocoreStubber.__call__

    def one_at_a_time(self: BotocoreStubber, *args: Any, **kwargs: Any) -> Any:
        with serial:
            return answer(self, *args, **kwargs)

    monkeypatch.setattr(BotocoreStubber, "__call__", one_at_a_time)
