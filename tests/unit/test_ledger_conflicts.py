"""DynamoDB's TransactionConflict is retried with jitter, never mistaken for a duplicate, and counters spread over shards."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from botocore.exceptions import ClientError

from s3bulk.aws.ledger import CONFLICT_ATTEMPTS, COUNTER_SHARDS, counter_shard, is_conflict, retry_conflicts


def _error(code: str, reasons: list[str] | None = None) -> ClientError:
    response: dict[str, Any] = {"Error": {"Code": code, "Message": "x"}}
    if reasons is not None:
        response["CancellationReasons"] = [{"Code": r} for r in reasons]
    return ClientError(response, "TransactWriteItems")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("code", "reasons", "conflict"),
    [
        ("TransactionConflictException", None, True),
        ("TransactionCanceledException", ["None", "TransactionConflict"], True),
        ("TransactionCanceledException", ["TransactionConflict", "None"], True),
        # The marker already exists: a duplicate, which must be reported as such, not retried.
        ("TransactionCanceledException", ["ConditionalCheckFailed", "TransactionConflict"], False),
        ("TransactionCanceledException", ["ConditionalCheckFailed", "None"], False),
        # A partition past its writes a second: botocore never retries a cancelled transaction, so the ledger does.
        ("TransactionCanceledException", ["None", "ThrottlingError"], True),
        ("TransactionCanceledException", ["ProvisionedThroughputExceeded", "None"], True),
        ("TransactionCanceledException", ["ConditionalCheckFailed", "ThrottlingError"], False),
        ("ConditionalCheckFailedException", None, False),
        ("ValidationException", None, False),
    ],
)
def test_only_lost_races_and_throttled_transactions_are_tried_again(code: str, reasons: list[str] | None, conflict: bool) -> None:
    assert is_conflict(_error(code, reasons)) is conflict


def test_a_conflicting_write_is_retried_with_growing_jittered_pauses_until_it_lands() -> None:
    calls: list[int] = []
    pauses: list[float] = []

    def write() -> str:
        calls.append(1)
        if len(calls) < 5:
            raise _error("TransactionCanceledException", ["None", "TransactionConflict"])
        return "written"

    assert retry_conflicts(write, sleep=pauses.append) == "written"
    assert len(calls) == 5 and len(pauses) == 4
    assert all(0 <= p <= 0.02 * 2**i for i, p in enumerate(pauses))


def test_conflicts_give_up_after_a_bound_and_other_errors_are_not_retried() -> None:
    pauses: list[float] = []

    def always() -> None:
        raise _error("TransactionConflictException")

    with pytest.raises(ClientError):
        retry_conflicts(always, sleep=pauses.append)
    assert len(pauses) == CONFLICT_ATTEMPTS - 1

    def invalid() -> None:
        raise _error("ValidationException")

    pauses.clear()
    with pytest.raises(ClientError):
        retry_conflicts(invalid, sleep=pauses.append)
    assert pauses == []


def test_batches_spread_evenly_over_the_counter_shards() -> None:
    spread = Counter(counter_shard(f"{page:09d}-{n:03d}") for page in range(2000) for n in range(5))
    assert len(spread) == COUNTER_SHARDS
    assert max(spread.values()) < 1.3 * (10_000 / COUNTER_SHARDS)
    assert counter_shard("000000001-002") == counter_shard("000000001-002")  # a redelivery lands on the same item
