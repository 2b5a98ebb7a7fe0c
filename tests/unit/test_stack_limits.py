"""The stack harness refuses what AWS refuses and moto lets through: each limit is reached here once."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from s3bulk.testing.stack.limits import Limits, inline_maps_over_concurrency

SM = "arn:aws:states:us-east-1:123456789012:stateMachine:S3Bulk-jobs"


def refused(limits: Limits, service: str, op: str, **params: object) -> str:
    with pytest.raises(ClientError) as caught:
        limits.check(service, op, dict(params))
    return str(caught.value.response["Error"]["Code"])


def test_sqs_batch_calls_over_ten_entries_or_one_mib_are_refused() -> None:
    limits = Limits()
    big = "键" * 120_000  # 360,000 bytes
    assert refused(limits, "sqs", "SendMessageBatch", QueueUrl="q", Entries=[{"Id": str(i), "MessageBody": big} for i in range(3)]) == (
        "AWS.SimpleQueueService.BatchRequestTooLong"
    )
    eleven = [{"Id": str(i), "MessageBody": "x"} for i in range(11)]
    assert refused(limits, "sqs", "SendMessageBatch", QueueUrl="q", Entries=eleven) == "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"
    limits.check(
        "sqs", "SendMessageBatch", {"QueueUrl": "q", "Entries": [{"Id": "0", "MessageBody": big}, {"Id": "1", "MessageBody": big}]}
    )
    small = Limits({"q": 256 * 1024})
    assert refused(small, "sqs", "SendMessage", QueueUrl="q", MessageBody=big) == "InvalidParameterValue"
    assert len(limits.refused) == 2 and len(small.refused) == 1


def test_an_execution_name_is_never_used_twice_closed_executions_included() -> None:
    limits = Limits()
    limits.check("states", "StartExecution", {"stateMachineArn": SM, "name": "copy-1", "input": "{}"})
    assert refused(limits, "states", "StartExecution", stateMachineArn=SM, name="copy-1", input="{}") == "ExecutionAlreadyExists"
    assert refused(limits, "states", "StartExecution", stateMachineArn=SM, name="copy-2", input="x" * 262_145) == "InvalidExecutionInput"


def test_dynamodb_transactions_hold_100_items_of_400_kb_at_most() -> None:
    limits = Limits()
    put = {"Put": {"TableName": "t", "Item": {"pk": {"S": "a"}}}}
    assert refused(limits, "dynamodb", "TransactWriteItems", TransactItems=[put] * 101) == "ValidationException"
    limits.check("dynamodb", "TransactWriteItems", {"TransactItems": [put] * 100})
    huge = {"pk": {"S": "a"}, "blob": {"S": "x" * 410_000}}
    assert refused(limits, "dynamodb", "PutItem", TableName="t", Item=huge) == "ValidationException"


def test_a_state_over_256_kib_and_an_unbounded_inline_map_are_caught() -> None:
    limits = Limits()
    assert limits.state_data("result", b"x" * 262_144) is None
    assert limits.state_data("result", b"x" * 262_145) is not None
    definition = {
        "States": {
            "ListShards": {"Type": "Map", "MaxConcurrency": 16, "ItemProcessor": {"States": {}}},
            "Wide": {"Type": "Map", "ItemProcessor": {"States": {}}},
            "Distributed": {"Type": "Map", "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED"}, "States": {}}},
            "Thousand": {
                "Type": "Map",
                "MaxConcurrency": 1000,
                "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED"}, "States": {}},
            },
            "TooWide": {
                "Type": "Map",
                "MaxConcurrency": 10001,
                "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED"}, "States": {}},
            },
        }
    }
    assert [m.split(":")[0] for m in inline_maps_over_concurrency(definition)] == ["Map state Wide", "Map state TooWide"]
