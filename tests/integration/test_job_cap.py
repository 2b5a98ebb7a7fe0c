"""A job's cap on its batches at once (s3bulk tune JOB_ID --concurrency N), on DynamoDB's own rules (moto): spread over
the lease shards, counted by the holds of workers only, released exactly, and never shrunk for good by a worker Lambda
ended before it released its hold; the batches over it parked off the queue and sent on, each once, as room frees up."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from s3bulk.aws.held import send_parked, sweep_parked
from s3bulk.aws.ledger import DEFAULT_TTL_DAYS, AtCapacity, DynamoLedger, Room, job_key, list_shard_key
from s3bulk.aws.ledger.leases import UNCAPPED_SEND, cap_shares
from s3bulk.aws.ledger.parking import PARK_CLAIM_S
from s3bulk.aws.messages import BatchMessage
from s3bulk.aws.reportbucket import ReportBucket
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


@pytest.fixture
def reports(ledger: DynamoLedger) -> ReportBucket:
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket="reports")
    return ReportBucket(s3, "reports")


def park(ledger: DynamoLedger, reports: ReportBucket, batch_id: str) -> BatchMessage:
    """What a worker does with a batch its capped job has no room for."""
    msg = BatchMessage(job_id="j", batch_id=batch_id, items=[(f"p/{batch_id}", 1, "e")])
    reports.wait("j", batch_id, msg.encode())
    ledger.park("j", batch_id)
    return msg


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


def test_a_release_says_the_room_it_left_on_its_shard_and_an_uncapped_job_has_nothing_parked_to_look_for(
    ledger: DynamoLedger,
) -> None:
    free = ledger.release("j", ledger.hold("j", "batch-a~1", until=time.time() + 900))
    assert free == Room(free.shard)  # never capped: no parked batch to look for, no Query
    ledger.set_cap("j", 2)  # shards 0 and 1 take one each
    a = ledger.hold("j", "batch-a~2", until=time.time() + 900)
    b = ledger.hold("j", "batch-b~2", until=time.time() + 900)
    assert ledger.release("j", a) == Room(a.shard, 1, capped=True)
    ledger.set_cap("j", None)
    assert ledger.release("j", b) == Room(b.shard, UNCAPPED_SEND, capped=True)  # lifted: what was parked still goes


def test_parked_batches_go_oldest_first_each_to_one_sender_held_first_where_the_room_is(
    ledger: DynamoLedger, reports: ReportBucket
) -> None:
    parked = [park(ledger, reports, f"0000-{i:03d}") for i in range(5)]
    sent: list[str] = []
    assert send_parked("j", Room(7, 2, capped=True), ledger=ledger, reports=reports, send=sent.append) == 2
    got = [BatchMessage.model_validate_json(b) for b in sent]
    assert [m.batch_id for m in got] == ["0000-000", "0000-001"] and {m.lease for m in got} == {7}
    assert [m.model_copy(update={"lease": None}) for m in got] == parked[:2]  # the batch itself, unchanged
    assert ledger.parked("j", 10) == ["0000-002", "0000-003", "0000-004"]
    # Two senders at once: the one whose claim lands first sends it, the other passes it over.
    assert ledger.claim_parked("j", "0000-002", "one")
    assert not ledger.claim_parked("j", "0000-002", "two")
    assert send_parked("j", Room(3, 1, capped=True), ledger=ledger, reports=reports, send=sent.append) == 1
    assert BatchMessage.model_validate_json(sent[-1]).batch_id == "0000-003"
    assert send_parked("j", Room(3, 0, capped=True), ledger=ledger, reports=reports, send=sent.append) == 0
    assert send_parked("j", Room(3, 5), ledger=ledger, reports=reports, send=sent.append) == 0  # not capped: nothing to look for


def test_a_claim_whose_sender_ended_lapses_and_a_batch_parked_again_keeps_its_new_entry(
    ledger: DynamoLedger, reports: ReportBucket
) -> None:
    park(ledger, reports, "b-1")
    assert ledger.claim_parked("j", "b-1", "ended")  # its sender ended before sending it
    assert ledger.parked("j", 5) == []
    later = time.time() + PARK_CLAIM_S + 1
    assert ledger.parked("j", 5, now=later) == ["b-1"]  # the claim lapsed: it is sent again (its id dedupes it)
    assert ledger.claim_parked("j", "b-1", "next", now=later)
    park(ledger, reports, "b-1")  # sent, it found the cap full once more and was parked again before the delete
    ledger.unpark("j", "b-1", "next")
    assert ledger.parked("j", 5) == ["b-1"]  # the new parking stands
    ledger.unpark("j", "b-1", "other")  # a delete by a claim it no longer has changes nothing
    assert ledger.parked("j", 5) == ["b-1"]


def test_the_progress_sweep_sends_what_was_parked_where_the_cap_has_room_and_nothing_where_it_is_full(
    ledger: DynamoLedger, reports: ReportBucket
) -> None:
    ledger.set_cap("j", 1)
    held = ledger.hold("j", "batch-a~1", until=time.time() + 900)
    for i in range(3):
        park(ledger, reports, f"w-{i}")
    sent: list[str] = []
    assert sweep_parked("j", ledger=ledger, reports=reports, send=sent.append) == 0  # the one slot is held
    ledger.release("j", held)  # a release that ended before it could send on (the sweep is the net)
    assert sweep_parked("j", ledger=ledger, reports=reports, send=sent.append) == 1
    assert [BatchMessage.model_validate_json(b).batch_id for b in sent] == ["w-0"]
    assert ledger.parked("j", 5) == ["w-1", "w-2"]


def test_a_job_running_past_its_ttl_keeps_its_own_items_and_asks_once_a_day(ledger: DynamoLedger) -> None:
    """DynamoDB removes items past `expires_at`: a job created 30 days ago that still runs (capped low) would lose its
    job item and its listing shards' counts. Each progress check pushes them on, at most one write a day."""
    ledger.plan("j", [("", "m"), ("m", None)])
    day = 86400.0
    later = time.time() + 29.5 * day  # half a day before the creation's TTL
    assert ledger.keep("j", now=later)
    items = [ledger.client.get_item(TableName="ledger", Key=k)["Item"] for k in (job_key("j"), _shard("j", 0), _shard("j", 1))]
    assert {int(i["expires_at"]["N"]) // 3600 for i in items} == {int(later + DEFAULT_TTL_DAYS * day) // 3600}
    assert not ledger.keep("j", now=later + 3600)  # pushed on an hour ago: nothing written
    assert ledger.keep("j", now=later + 1.5 * day)


def _shard(job_id: str, i: int) -> dict[str, Any]:
    return {"pk": {"S": f"job#{job_id}"}, "sk": {"S": list_shard_key(i)}}
