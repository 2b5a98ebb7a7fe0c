"""One batch, as the Lambda worker runs it: complete or not, and safe to redo."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from s3bulk.job import parse_job
from s3bulk.ops.batch import BatchRunner
from s3bulk.ops.executor import BoundedExecutor
from s3bulk.ops.items import Item
from s3bulk.report import Tally
from s3bulk.testing.memstore import MemoryStore


def job(operation: str) -> Any:
    doc: dict[str, Any] = {"operation": operation, "source": {"bucket": "src-b", "prefix": "in/"}}
    if operation != "delete":
        doc["destination"] = {"bucket": "dst-b", "prefix": "out/"}
    return parse_job(json.dumps(doc))


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore()
    s.create_bucket("src-b")
    s.create_bucket("dst-b")
    for i in range(20):
        s.put_object("src-b", f"in/{i:02d}", f"v{i}".encode())
    return s


@pytest.fixture
def pools() -> Iterator[tuple[BoundedExecutor, BoundedExecutor]]:
    with BoundedExecutor(2) as parts, BoundedExecutor(4) as pool:
        yield pool, parts


def items(store: MemoryStore) -> list[Item]:
    return [Item(o, "out/" + o.key[3:]) for o in store.list_page("src-b", "in/").objects]


def test_a_whole_batch_completes_with_every_outcome_counted(store: MemoryStore, pools: Any) -> None:
    tally = Tally()
    run = BatchRunner(job("move"), store, *pools).start(items(store), tally)
    assert run.wait(5) and run.complete
    assert (tally.succeeded, tally.failed) == (20, 0)
    assert store.keys("src-b") == []


def test_a_deadline_leaves_the_batch_incomplete_and_deletes_no_source(store: MemoryStore, pools: Any) -> None:
    budget = iter([True] * 7 + [False] * 100)
    tally = Tally()
    run = BatchRunner(job("move"), store, *pools).start(items(store), tally, keep_going=lambda: next(budget))
    assert run.wait(5)
    assert not run.complete
    assert len(store.keys("dst-b")) == 7
    assert len(store.keys("src-b")) == 20  # sources stay until a complete run confirms and deletes them


def test_a_redelivered_move_whose_source_is_gone_counts_as_success(store: MemoryStore, pools: Any) -> None:
    batch = items(store)
    runner = BatchRunner(job("move"), store, *pools)
    first = runner.start(batch, Tally())
    assert first.wait(5) and first.complete
    again = Tally()
    second = runner.start(batch, again)
    assert second.wait(5) and second.complete
    assert (again.succeeded, again.failed) == (20, 0)


def test_a_redelivered_move_with_a_wrong_destination_is_a_failure(store: MemoryStore, pools: Any) -> None:
    batch = items(store)
    runner = BatchRunner(job("move"), store, *pools)
    assert runner.start(batch, Tally()).wait(5)
    store.put_object("dst-b", "out/03", b"someone else's bytes")
    again = Tally()
    assert runner.start(batch, again).wait(5)
    assert (again.succeeded, again.failed) == (19, 1)
    assert [f["key"] for f in again.failures()] == ["in/03"]


def test_delete_batch_under_a_spent_deadline_does_nothing(store: MemoryStore, pools: Any) -> None:
    run = BatchRunner(job("delete"), store, *pools).start(
        [Item(o) for o in store.list_page("src-b", "in/").objects], Tally(), keep_going=lambda: False
    )
    assert run.wait(5) and not run.complete
    assert len(store.keys("src-b")) == 20


def test_a_checksum_recheck_whose_destination_vanished_copies_instead_of_failing(store: MemoryStore, pools: Any) -> None:
    # The lister saw an equal-size destination with a multipart ETag; it was deleted before the worker ran.
    batch = [Item(o, "out/" + o.key[3:], recheck=True) for o in store.list_page("src-b", "in/").objects[:3]]
    tally = Tally()
    run = BatchRunner(job("copy"), store, *pools).start(batch, tally)
    assert run.wait(5) and run.complete
    assert (tally.succeeded, tally.skipped, tally.failed) == (3, 0, 0)
    assert store.keys("dst-b") == ["out/00", "out/01", "out/02"]
    assert store.calls["HeadObject"] == 3  # the destination's; no source HEAD once it is known to be absent
