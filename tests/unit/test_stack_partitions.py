"""The harness's DynamoDB partition budgets (s3bulk/testing/stack/partitions.py): per partition key, per second,
reads and writes apart; a plain call retried as botocore retries it, a transaction cancelled with ThrottlingError."""

from __future__ import annotations

import math
from typing import Any

import pytest
from botocore.exceptions import ClientError

from s3bulk.aws.ledger import is_conflict
from s3bulk.testing.stack.partitions import Partitions, charges, dynamo_item_bytes, kind_of


def update(pk: str) -> dict[str, Any]:
    return {"TableName": "t", "Key": {"pk": {"S": pk}, "sk": {"S": "x"}}, "UpdateExpression": "ADD n :one"}


def clocked(scale: float) -> tuple[Partitions, list[float], list[float]]:
    now, slept = [0.0], []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    return Partitions(scale, sleep=sleep, clock=lambda: now[0]), now, slept


def test_a_key_past_its_writes_a_second_is_throttled_while_other_keys_and_its_reads_are_not() -> None:
    parts, now, _ = clocked(100)  # 10 write units, 30 read units a second
    for _ in range(10):
        parts.admit("UpdateItem", update("job#j#count#01"), retries=0)
    with pytest.raises(ClientError) as err:
        parts.admit("UpdateItem", update("job#j#count#01"), retries=0)
    assert err.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    parts.admit("UpdateItem", update("job#j#count#02"), retries=0)  # another partition has its own budget
    get = {"TableName": "t", "Key": {"pk": {"S": "job#j#count#01"}, "sk": {"S": "x"}}, "ConsistentRead": True}
    parts.admit("GetItem", get, retries=0)  # reads are counted apart
    now[0] += 1.0
    parts.admit("UpdateItem", update("job#j#count#01"), retries=0)  # a second later the budget is back
    assert parts.throttled == {"count": 1} and parts.peak == {"count writes": 10, "count reads": 1}


def test_a_throttled_plain_call_waits_as_botocore_retries_it_and_lands_when_the_second_has_passed() -> None:
    parts, _, slept = clocked(100)
    for _ in range(10):
        parts.admit("UpdateItem", update("job#j"), retries=8)
    parts.admit("UpdateItem", update("job#j"), retries=8)  # retried with backoff until the window moved on
    assert sum(slept) >= 1.0 - 1e-9 and parts.throttled["job"] >= 1  # waited out the rest of the second


def test_a_transaction_over_a_partitions_budget_is_cancelled_with_throttling_as_its_reason_which_the_ledger_retries() -> None:
    parts, _, slept = clocked(1000)  # 1 write unit a second: a transactional write costs 2
    tx = {"TransactItems": [{"Update": update("job#j#count#03")}, {"Put": {"TableName": "t", "Item": {"pk": {"S": "job#j#batch#b"}}}}]}
    parts.admit("TransactWriteItems", tx, retries=8)  # an idle partition serves one call whatever its size
    tx["TransactItems"][1] = {"Put": {"TableName": "t", "Item": {"pk": {"S": "job#j#batch#c"}}}}
    with pytest.raises(ClientError) as err:
        parts.admit("TransactWriteItems", tx, retries=8)
    assert not slept  # botocore never retries a cancelled transaction
    response = err.value.response
    assert response["Error"]["Code"] == "TransactionCanceledException"
    assert [r["Code"] for r in response["CancellationReasons"]] == ["ThrottlingError", "None"]
    assert is_conflict(err.value)


def test_units_are_counted_as_dynamodb_counts_them() -> None:
    big = {"pk": {"S": "job#j"}, "blob": {"S": "x" * 3000}}
    assert charges("PutItem", {"Item": big}) == [("job#j", 3.0, True)]
    assert charges("GetItem", {"Key": {"pk": {"S": "job#j"}}}) == [("job#j", 0.5, False)]  # eventually consistent
    q = {"KeyConditionExpression": "pk = :pk", "ExpressionAttributeValues": {":pk": {"S": "job#j#parked"}}, "ConsistentRead": True}
    assert charges("Query", q) == [("job#j#parked", 1.0, False)]
    assert charges("Scan", {}) == []
    assert [kind_of(pk) for pk in ("job#j", "job#j#count#03", "job#j#lease#00", "job#j#batch#b")] == ["job", "count", "lease", "batch"]


def test_a_query_is_charged_by_the_bytes_it_read_and_a_batch_get_by_each_items_size() -> None:
    parts, _, _ = clocked(1)
    q = {"KeyConditionExpression": "pk = :pk", "ExpressionAttributeValues": {":pk": {"S": "job#j"}}, "ConsistentRead": True}
    shards = [{"pk": {"S": "job#j"}, "sk": {"S": f"shard#{i:04d}"}, "cursor": {"S": "k" * 400}} for i in range(100)]
    parts.admit("Query", q, retries=0)
    parts.charge_read("Query", q, {"Items": shards})  # about 45 KB: a unit per 4 KB in all, the first taken before the call
    assert parts.total[("job#j", False)] == math.ceil(sum(dynamo_item_bytes(i) for i in shards) / 4096) > 10
    ask = {"RequestItems": {"t": {"Keys": [{"pk": {"S": f"job#j#count#{i:02d}"}} for i in range(2)], "ConsistentRead": True}}}
    parts.admit("BatchGetItem", ask, retries=0)
    big = {"pk": {"S": "job#j#count#00"}, "blob": {"S": "x" * 5000}}  # 2 units; the other item is small: 1
    parts.charge_read("BatchGetItem", ask, {"Responses": {"t": [big, {"pk": {"S": "job#j#count#01"}}]}})
    assert (parts.total[("job#j#count#00", False)], parts.total[("job#j#count#01", False)]) == (2.0, 1.0)


def test_a_new_on_demand_tables_own_budget_bounds_every_key_together() -> None:
    parts, now, _ = clocked(100)  # 40 write units a second for the table, 10 for each key
    for i in range(40):
        parts.admit("UpdateItem", update(f"job#j#count#{i % 8:02d}"), retries=0)  # 8 keys, 5 units each: half their own
    with pytest.raises(ClientError, match="ProvisionedThroughputExceededException"):
        parts.admit("UpdateItem", update("job#j#count#00"), retries=0)  # its key has room, the table has none
    assert parts.table_throttled == 1
    now[0] += 1.0
    parts.admit("UpdateItem", update("job#j#count#40"), retries=0)
