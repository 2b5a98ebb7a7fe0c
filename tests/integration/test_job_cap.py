"""A job's cap on its batches at once (s3bulk tune JOB_ID --concurrency N), on DynamoDB's own rules (moto): spread over
the lease shards, counted by the holds of workers only, released exactly, and never shrunk for good by a worker Lambda
ended before it released its hold."""

from __future__ import annotations

import time
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from s3bulk.aws.ledger import AtCapacity, DynamoLedger
from s3bulk.aws.ledger.leases import cap_shares
from s3bulk.job import parse_job
from tests.integration.aws_harness import REGION, create_table

pytestmark = pytest.mark.moto

JOB = parse_job('{"operation": "delete", "source": {"bucket": "cap-bucket", "prefix": "p/"}}')


@pytest.fixture
def ledger() -> Iterator[DynamoLedger]:
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name=REGION)
        create_table(ddb, "ledger")
        led = DynamoLedger(ddb, "ledger")
        led.create("j", JOB)
        yield led


def test_a_cap_is_spread_over_the_shards_without_losing_or_adding_a_batch() -> None:
    for n in (1, 5, 31, 32, 33, 100, 1000):
        shares = cap_shares(n, 32)
        assert sum(shares) == n and max(shares) - min(shares) <= 1 and sorted(shares, reverse=True) == shares


def test_holds_past_the_cap_wait_a_release_makes_room_and_listers_are_never_capped(ledger: DynamoLedger) -> None:
    ledger.set_cap("j", 2)
    until = time.time() + 900
    a = ledger.hold("j", "batch-a~1", until=until)
    b = ledger.hold("j", "batch-b~1", until=until)
    assert {a.shard, b.shard} <= {0, 1} and a.entry and b.entry  # a cap of 2 lives on the first two shards
    with pytest.raises(AtCapacity):
        ledger.hold("j", "batch-c~1", until=until)
    assert ledger.working("j") == 2  # the refused hold left nothing behind
    lister = ledger.hold("j", "list#0")  # a lister's call counts for the stop's drain, never against the cap
    assert lister.entry == "" and ledger.working("j") == 3
    ledger.release("j", lister)
    ledger.release("j", a)
    c = ledger.hold("j", "batch-c~1", until=until)
    assert c.entry and ledger.working("j") == 2
    assert ledger.load("j").max_workers == 2


def test_a_hold_a_dead_worker_never_released_is_pruned_once_its_time_is_past(ledger: DynamoLedger) -> None:
    ledger.set_cap("j", 1)
    ledger.hold("j", "batch-dead~1", until=time.time() - 1)  # its invocation ended without releasing it
    fresh = ledger.hold("j", "batch-next~1", until=time.time() + 900)  # the dead one's place, not a shrunken cap
    assert fresh.entry == "batch-next~1"
    with pytest.raises(AtCapacity):
        ledger.hold("j", "batch-third~1", until=time.time() + 900)  # a live holder is never pruned


def test_lifting_the_cap_lets_every_hold_in_and_a_capped_hold_still_releases(ledger: DynamoLedger) -> None:
    ledger.set_cap("j", 1)
    capped = ledger.hold("j", "batch-a~1", until=time.time() + 900)
    ledger.set_cap("j", None)
    more = [ledger.hold("j", f"batch-{i}~1", until=time.time() + 900) for i in range(5)]
    assert all(not m.entry for m in more) and ledger.working("j") == 6
    ledger.release("j", capped)  # its entry's map is still there: the release does not fail
    for m in more:
        ledger.release("j", m)
    assert ledger.working("j") == 0 and ledger.load("j").max_workers is None
