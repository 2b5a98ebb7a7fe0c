"""A job's listing plan past one transaction's 100 items, on moto's DynamoDB: staged, committed once, shard items made once.

Up to 1,000 shards (a Distributed Map lists them) are recorded in three moves (DynamoLedger.plan); these tests lose or
repeat each move, and race two planners, and check that the shards always hold one plan's ranges, whole.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from s3bulk.aws.ledger import MAX_LIST_SHARDS, DynamoLedger, job_key, list_shard_key
from tests.integration.aws_harness import one_call_at_a_time
from tests.integration.test_handlers import TABLE, Aws, aws, start

__all__ = ["aws"]  # the fixture, imported for pytest

Ranges = list[tuple[str, str | None]]


def ranges_of(n: int, tag: str = "k") -> Ranges:
    """n ranges covering every key once: (after, upto] cut at tag0001, tag0002, ..."""
    cuts = [f"{tag}{i:04d}" for i in range(1, n)]
    return list(zip(["", *cuts], [*cuts, None], strict=True))


def shard_ranges(ledger: DynamoLedger, job_id: str, n: int) -> Ranges:
    return [(s.after, s.upto) for s in (ledger.list_shard(job_id, i) for i in range(n))]


def partition(aws: Aws, job_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    kw: dict[str, Any] = {}
    while True:
        r = aws.ddb.query(
            TableName=TABLE, KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": {"S": f"job#{job_id}"}}, **kw
        )
        items += r["Items"]
        if "LastEvaluatedKey" not in r:
            return items
        kw = {"ExclusiveStartKey": r["LastEvaluatedKey"]}


def test_a_plan_of_1000_shards_is_recorded_whole_with_every_range_in_order(aws: Aws) -> None:
    job_id = start(aws)
    ledger = DynamoLedger(aws.ddb, TABLE)
    ranges = ranges_of(MAX_LIST_SHARDS)
    assert ledger.plan(job_id, ranges) == 1000
    assert int(aws.ddb.get_item(TableName=TABLE, Key=job_key(job_id))["Item"]["shards"]["N"]) == 1000
    listed = sorted((i for i in partition(aws, job_id) if i["sk"]["S"].startswith("count#list#")), key=lambda i: i["sk"]["S"])
    assert [(i.get("after", {}).get("S", ""), i.get("upto", {}).get("S")) for i in listed] == ranges
    assert shard_ranges(ledger, job_id, 1) == ranges[:1]
    with pytest.raises(ValueError, match="1-1000 shards"):
        ledger.plan(start(aws), ranges_of(1001))


def test_a_second_plan_keeps_the_first_and_never_resets_a_shard_a_lister_moved(aws: Aws) -> None:
    job_id = start(aws)
    ledger = DynamoLedger(aws.ddb, TABLE)
    first = ranges_of(150, "a")
    assert ledger.plan(job_id, first) == 150
    assert ledger.checkpoint(job_id, 120, 0, "cursor", False, scanned=5, listed=5, listed_bytes=0, skipped=0, batches=0)
    # A retried PlanListing (the listing changed meanwhile: other cuts, another count) answers the first plan.
    assert ledger.plan(job_id, ranges_of(300, "b")) == 150
    assert shard_ranges(ledger, job_id, 150) == first
    moved = ledger.list_shard(job_id, 120)
    assert (moved.page, moved.cursor) == (1, "cursor")
    with pytest.raises(KeyError):
        ledger.list_shard(job_id, 150)


def test_a_planner_dead_after_its_commit_is_finished_by_the_retry_from_the_staged_ranges(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first call commits, then dies before its shard items are all written; the retry (other ranges of its own)
    writes the committed plan's missing items, not its own."""
    job_id = start(aws)
    ledger = DynamoLedger(aws.ddb, TABLE)
    first = ranges_of(250, "a")
    real = ledger.client.transact_write_items
    calls = {"n": 0}

    def dies_on_the_second_part(**kw: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise ConnectionError("the planner's Lambda ended here")
        return real(**kw)

    monkeypatch.setattr(ledger.client, "transact_write_items", dies_on_the_second_part)
    with pytest.raises(ConnectionError):
        ledger.plan(job_id, first)
    monkeypatch.setattr(ledger.client, "transact_write_items", real)
    assert ledger.list_shard(job_id, 99).upto == first[99][1]
    with pytest.raises(KeyError):
        ledger.list_shard(job_id, 100)  # the second part never landed
    assert ledger.plan(job_id, ranges_of(40, "b")) == 250
    assert shard_ranges(ledger, job_id, 250) == first


def test_a_planner_dead_before_its_commit_leaves_no_shard_and_the_retry_plans_afresh(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    job_id = start(aws)
    ledger = DynamoLedger(aws.ddb, TABLE)
    real = ledger.client.update_item

    def dies(**kw: Any) -> Any:
        raise ConnectionError("the planner's Lambda ended before its commit")

    monkeypatch.setattr(ledger.client, "update_item", dies)
    with pytest.raises(ConnectionError):
        ledger.plan(job_id, ranges_of(120, "a"))
    monkeypatch.setattr(ledger.client, "update_item", real)
    assert not [i for i in partition(aws, job_id) if i["sk"]["S"].startswith("count#list#")]
    second = ranges_of(130, "b")
    assert ledger.plan(job_id, second) == 130
    assert shard_ranges(ledger, job_id, 130) == second


def test_two_planners_at_once_agree_on_one_plan_whole(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two PlanListing calls racing (a retry while the first still runs): both answer the same count, and the shards hold
    exactly one of the plans, never a mix."""
    one_call_at_a_time(monkeypatch)
    for attempt in range(3):
        job_id = start(aws)
        plans = [ranges_of(110, "a"), ranges_of(130, "b")]
        with ThreadPoolExecutor(2) as pool:
            counts = list(pool.map(lambda r, j=job_id: DynamoLedger(aws.ddb, TABLE).plan(j, r), plans))
        assert counts[0] == counts[1] in (110, 130), (attempt, counts)
        ledger = DynamoLedger(aws.ddb, TABLE)
        won = plans[0] if counts[0] == 110 else plans[1]
        assert shard_ranges(ledger, job_id, counts[0]) == won
        with pytest.raises(KeyError):
            ledger.list_shard(job_id, counts[0])


def test_a_job_planned_in_one_transaction_before_plans_were_staged_keeps_its_shards(aws: Aws) -> None:
    """A job planned by the previous release (its shard items written with `shards`, no plan token) is not re-planned."""
    job_id = start(aws)
    aws.ddb.update_item(
        TableName=TABLE, Key=job_key(job_id), UpdateExpression="SET shards = :k", ExpressionAttributeValues={":k": {"N": "1"}}
    )
    aws.ddb.put_item(
        TableName=TABLE, Item={"pk": {"S": f"job#{job_id}"}, "sk": {"S": list_shard_key(0)}, "page": {"N": "3"}, "done": {"BOOL": False}}
    )
    ledger = DynamoLedger(aws.ddb, TABLE)
    assert ledger.plan(job_id, ranges_of(10)) == 1
    assert ledger.list_shard(job_id, 0).page == 3
