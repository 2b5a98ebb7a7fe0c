"""A batch worked as a unit: lanes share its queue, count into their own tallies, write key lines as blocks."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from s3bulk.job import parse_job
from s3bulk.ops.batch import BatchRunner
from s3bulk.ops.executor import BoundedExecutor
from s3bulk.ops.items import Item
from s3bulk.report import BatchTally, Counted, Tally
from s3bulk.report.keylog import JsonlKeyLog, KeyRecord
from s3bulk.store import StoreError
from s3bulk.testing.memstore import MemoryStore

N = 50


def job(operation: str = "copy") -> Any:
    doc = {"operation": operation, "source": {"bucket": "src-b", "prefix": "in/"}, "destination": {"bucket": "dst-b", "prefix": "out/"}}
    return parse_job(json.dumps(doc))


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore()
    s.create_bucket("src-b")
    s.create_bucket("dst-b")
    for i in range(N):
        s.put_object("src-b", f"in/{i:02d}", f"v{i}".encode())
    return s


@pytest.fixture
def pools() -> Iterator[tuple[BoundedExecutor, BoundedExecutor]]:
    with BoundedExecutor(2) as parts, BoundedExecutor(4) as pool:
        yield pool, parts


def items(store: MemoryStore) -> list[Item]:
    return [Item(o, "out/" + o.key[3:]) for o in store.list_page("src-b", "in/").objects]


def test_every_object_of_a_batch_gets_one_outcome_and_one_key_line(store: MemoryStore, pools: Any) -> None:
    out = io.StringIO()
    keylog = JsonlKeyLog(out, "j1", "copy")
    batch = items(store)
    batch[3] = Item(batch[3].obj, batch[3].dst_key, exists=True)  # skipped before any lane runs
    tally = Tally()
    pool, parts = pools
    run = BatchRunner(job(), store, pool, parts, keylog=keylog).start(batch, tally)
    assert run.wait(5) and run.complete
    assert (tally.succeeded, tally.skipped, tally.failed) == (N - 1, 1, 0)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert sorted(line["key"] for line in lines) == sorted(i.obj.key for i in batch)
    assert keylog.lines == N
    assert {line["outcome"] for line in lines} == {"succeeded", "skipped"}
    assert store.calls["CopyObject"] == N - 1


def test_a_batch_tally_keeps_the_batch_and_forwards_it_to_the_job(store: MemoryStore, pools: Any) -> None:
    def failing_copy(*args: Any, **kwargs: Any) -> str:
        raise StoreError("AccessDenied", "no", 403)

    job_tally = Tally()
    outcomes = BatchTally(job_tally)
    batch = items(store)
    store.copy_object = failing_copy  # type: ignore[method-assign]
    run = BatchRunner(job(), store, *pools).start(batch[:5], outcomes)
    assert run.wait(5) and run.complete
    assert (outcomes.failed, len(outcomes.failures), job_tally.failed) == (5, 5, 5)
    assert sorted(key for key, _, _ in outcomes.failures) == [i.obj.key for i in batch[:5]]
    assert {f["error"] for f in job_tally.failures()} == {"AccessDenied"}


def test_halt_stops_the_lanes_after_their_current_object_and_the_batch_is_not_complete(store: MemoryStore, pools: Any) -> None:
    started, release = threading.Event(), threading.Event()
    real_copy = store.copy_object

    def slow_copy(*args: Any, **kwargs: Any) -> str:
        started.set()
        release.wait(5)
        return real_copy(*args, **kwargs)

    store.copy_object = slow_copy  # type: ignore[method-assign]
    tally = Tally()
    runner = BatchRunner(job(), store, *pools)
    run = runner.start(items(store), tally)
    assert started.wait(5)
    runner.halt()
    release.set()
    assert run.wait(5) and not run.complete
    assert 1 <= tally.succeeded <= 4  # at most one object per lane (the pool has 4 workers) finished after the halt
    assert len(store.keys("dst-b")) == tally.succeeded


def test_counted_merges_into_a_tally_under_one_lock_with_its_failures_spooled() -> None:
    c = Counted()
    assert not c
    c.succeed(10)
    c.succeed(5)
    c.skip()
    c.retry()
    c.fail("k", "E", "m")
    t = Tally()
    t.merge(c)
    assert (t.succeeded, t.bytes, t.skipped, t.retried, t.failed) == (2, 15, 1, 1, 1)
    assert list(t.failures()) == [{"key": "k", "error": "E", "message": "m"}]


def test_a_key_block_writes_nothing_until_closed_and_keeps_each_line_as_rendered() -> None:
    out = io.StringIO()
    log = JsonlKeyLog(out, "j1", "copy")
    block = log.block()
    block.write(KeyRecord("a", "succeeded", 1))
    block.write(KeyRecord("b", "failed", 2, error="E"))
    assert out.getvalue() == "" and log.lines == 0
    block.close()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(line["key"], line["outcome"], line["job_id"]) for line in lines] == [("a", "succeeded", "j1"), ("b", "failed", "j1")]
    assert log.lines == 2
    block.close()  # nothing more to write
    assert len(out.getvalue().splitlines()) == 2


def test_a_run_frozen_while_one_object_hangs_keeps_what_finished_and_hands_on_exactly_the_rest(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    real = MemoryStore.copy_object

    def hangs(self: MemoryStore, src_bucket: str, src_key: str, *args: Any, **kwargs: Any) -> str:
        if src_key == "in/07":
            release.wait(10)  # the stack's worker stops waiting for it near its end
        return str(real(self, src_bucket, src_key, *args, **kwargs))

    monkeypatch.setattr(MemoryStore, "copy_object", hangs)
    monkeypatch.setattr("s3bulk.ops.batch.FLUSH_EVERY_S", 0.0)  # every lane flushes after each object
    out = io.StringIO()
    keylog = JsonlKeyLog(out, "j1", "copy")
    batch = items(store)
    taking = threading.Event()
    stop_after = {"n": 0}

    def keep_going() -> bool:  # the deadline: lanes take 30 objects, then no more
        stop_after["n"] += 1
        return stop_after["n"] <= 31 and not taking.is_set()

    tally = Tally()
    with BoundedExecutor(2) as parts, BoundedExecutor(4) as pool:
        run = BatchRunner(job(), store, pool, parts, keylog=keylog).start(batch, tally, keep_going=keep_going)
        assert not run.wait(1.0)  # one lane is stuck on in/07
        taking.set()
        frozen = run.freeze(strike_after=0.5)
        assert frozen is not None
        assert [i.obj.key for i in frozen.inflight] == ["in/07"] and not frozen.paused
        assert [i.obj.key for i in frozen.long] == ["in/07"]  # worked for a second: it earns its strike
        done = {json.loads(line)["key"] for line in out.getvalue().splitlines()}
        assert frozen.counted == len(done) == tally.succeeded and tally.failed == 0
        assert sorted(i.obj.key for i in frozen.rest) == sorted(set(i.obj.key for i in batch) - done)
        release.set()  # the hung copy ends after the freeze: nothing of it reaches the tally or the key log
        assert run.wait(5)
        assert tally.succeeded == frozen.counted and len(out.getvalue().splitlines()) == frozen.counted
        assert run.freeze() is None  # a run that ended has nothing to freeze


def test_a_freeze_strikes_only_the_object_a_lane_is_working_not_the_ones_it_finished_and_has_not_flushed(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One lane finishes in/00..in/06 in a moment and hangs on in/07; its outcomes wait for its next flush (a second
    later). A freeze then hands all eight on, but only in/07 was being worked: the others get no strike, so on a loaded
    machine an ordinary object beside a hung one never fails WorkerTimedOut."""
    release = _hangs_on_07(monkeypatch)
    monkeypatch.setattr("s3bulk.ops.batch.FLUSH_EVERY_S", 60.0)
    batch = items(store)
    tally = Tally()
    with BoundedExecutor(1) as parts, BoundedExecutor(1) as pool:
        run = BatchRunner(job(), store, pool, parts).start(batch, tally)
        assert not run.wait(1.0)  # the one lane is stuck on in/07, having finished the seven before it
        frozen = run.freeze(strike_after=0.5)
        assert frozen is not None
        assert [i.obj.key for i in frozen.inflight] == [f"in/{i:02d}" for i in range(8)]  # no outcome in the tally yet
        assert [i.obj.key for i in frozen.long] == ["in/07"]
        assert frozen.counted == tally.succeeded == 0
        release.set()
        assert run.wait(5)


def _hangs_on_07(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    release = threading.Event()
    real = MemoryStore.copy_object

    def hangs(self: MemoryStore, src_bucket: str, src_key: str, *args: Any, **kwargs: Any) -> str:
        if src_key == "in/07":
            release.wait(10)
        return str(real(self, src_bucket, src_key, *args, **kwargs))

    monkeypatch.setattr(MemoryStore, "copy_object", hangs)
    return release


def test_a_local_move_cannot_be_frozen_its_batch_deletes_its_sources_whole(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    release = _hangs_on_07(monkeypatch)
    with BoundedExecutor(2) as parts, BoundedExecutor(4) as pool:
        run = BatchRunner(job("move"), store, pool, parts).start(items(store), Tally())
        assert not run.wait(0.5)
        assert run.freeze() is None  # waited for, whole: the local ledger journals a batch's deletes
        release.set()
        assert run.wait(5) and run.complete


def test_a_move_frozen_on_the_stack_moves_what_it_confirmed_and_hands_on_the_rest_with_their_sources(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Near the worker's end, the copies confirmed so far have their sources deleted and are counted; the object
    in flight and the untaken ones keep their sources and go on in the child batch. A copy that ends after the
    freeze deletes nothing (its object is redone by the child)."""
    release = _hangs_on_07(monkeypatch)
    monkeypatch.setattr("s3bulk.ops.batch.FLUSH_EVERY_S", 0.0)
    taking = threading.Event()
    taken = {"n": 0}

    def keep_going() -> bool:  # the deadline: lanes take 30 objects, then no more
        taken["n"] += 1
        return taken["n"] <= 31 and not taking.is_set()

    tally = Tally()
    batch = items(store)
    with BoundedExecutor(2) as parts, BoundedExecutor(4) as pool:
        run = BatchRunner(job("move"), store, pool, parts, hands_on=True).start(batch, tally, keep_going=keep_going)
        assert not run.wait(1.0)  # one lane is stuck on in/07
        taking.set()
        frozen = run.freeze(strike_after=60.0)
        assert frozen is not None and [i.obj.key for i in frozen.inflight] == ["in/07"]
        assert frozen.long == []  # in flight for a second only, under a minute's bar: handed on without a strike
        left = {o.key for o in store.list_page("src-b", "in/").objects}
        moved = {i.obj.key for i in batch} - left
        assert len(moved) == frozen.counted == tally.succeeded > 0 and tally.failed == 0
        assert {i.obj.key for i in frozen.rest} == left  # exactly the objects whose sources are still there
        assert {o.key for o in store.list_page("dst-b", "out/").objects} >= {"out/" + k[3:] for k in moved}
        release.set()  # the hung copy lands after the freeze: its source stays, nothing more is counted
        assert run.wait(5)
        assert tally.succeeded == frozen.counted and "in/07" in {o.key for o in store.list_page("src-b", "in/").objects}


def test_a_move_cut_on_the_stack_deletes_the_sources_it_confirmed_and_leaves_the_untaken_to_its_child(
    store: MemoryStore, pools: Any
) -> None:
    pool, parts = pools
    taken = {"n": 0}

    def keep_going() -> bool:  # time runs short after 20 objects
        taken["n"] += 1
        return taken["n"] <= 20

    tally = Tally()
    run = BatchRunner(job("move"), store, pool, parts, hands_on=True).start(items(store), tally, keep_going=keep_going)
    assert run.wait(5) and not run.complete
    untaken = run.untaken()
    assert untaken is not None and 0 < len(untaken) < N
    left = {o.key for o in store.list_page("src-b", "in/").objects}
    assert left == {i.obj.key for i in untaken} and tally.succeeded == N - len(left)


def test_a_frozen_multipart_copy_that_was_landing_parts_is_handed_on_with_its_upload_and_no_strike_and_the_child_finishes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Progress, not presence, earns a strike: a 20 MiB copy in four 5 MiB parts lands one every half second and then
    hangs on its last. Frozen two seconds in, it was worked long enough for a strike but a part landed half a second
    before: it is handed on with no strike and with its open upload. The frozen copy neither completes nor aborts that
    upload when its part lands at last; the child goes on from it (ListParts) and copies no part again."""
    mib = 1024 * 1024
    store = MemoryStore()
    store.create_bucket("src-b")
    store.create_bucket("dst-b")
    body = bytes(range(256)) * (20 * mib // 256)
    store.put_object("src-b", "in/big", body)
    doc = {
        "operation": "copy",
        "source": {"bucket": "src-b", "prefix": "in/"},
        "destination": {"bucket": "dst-b", "prefix": "out/"},
        "options": {"multipart_threshold": 5 * mib, "part_size": 5 * mib},
    }
    copy_job = parse_job(json.dumps(doc))
    real = MemoryStore.upload_part_copy
    release, copied = threading.Event(), []

    def slow(self: MemoryStore, *args: Any, **kwargs: Any) -> Any:
        number = args[5]
        copied.append(number)
        if number < 4:
            release.wait(0.5)  # a part every half second
        elif not release.is_set():
            release.wait(10)  # the last hangs until the test lets it land
        return real(self, *args, **kwargs)

    monkeypatch.setattr(MemoryStore, "upload_part_copy", slow)
    [item] = items(store)
    with BoundedExecutor(1) as parts, BoundedExecutor(1) as pool:
        run = BatchRunner(copy_job, store, pool, parts, hands_on=True).start([item], Tally())
        assert not run.wait(2.0)
        frozen = run.freeze(strike_after=1.5)  # worked 2 s (presence would strike), a part landed 0.5 s ago
        assert frozen is not None
        [handed] = frozen.inflight
        assert handed.upload_id and frozen.long == []
        release.set()  # the hung part lands: the frozen copy must leave the upload to the child
        assert run.wait(5)
        assert store.list_parts("dst-b", "out/big", handed.upload_id)  # still open, its parts kept
        with pytest.raises(StoreError):
            store.head_object("dst-b", "out/big")  # not completed by the frozen copy
        before = len(copied)
        tally = Tally()
        child = BatchRunner(copy_job, store, pool, parts, hands_on=True).start([handed], tally)
        assert child.wait(10) and child.complete
    assert (tally.succeeded, tally.failed) == (1, 0)
    assert copied[before:] == []  # every part was in the upload already: none copied twice
    assert store.get_body("dst-b", "out/big") == body and store.open_uploads == 0
