"""ObjectReader on the in-memory store: any mix of seeks and reads returns the reference bytes, with bounded memory."""

from __future__ import annotations

import io
import threading
import time
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from s3bulk.bodies.reader import ObjectChanged, ObjectReader, open_object
from s3bulk.store import Body, StoreError
from s3bulk.testing.memstore import MemoryStore

REFERENCE = bytes(range(256)) * 40 + b"tail"  # 10,244 bytes: ranges of a few hundred bytes end mid-pattern


def _store(body: bytes = REFERENCE) -> MemoryStore:
    store = MemoryStore()
    store.create_bucket("b")
    store.put_object("b", "k", body)
    return store


Step = st.one_of(
    st.tuples(st.just("read"), st.integers(-1, 3000)),
    st.tuples(st.just("seek"), st.integers(0, len(REFERENCE) + 50), st.sampled_from([io.SEEK_SET])),
    st.tuples(st.just("seek"), st.integers(-500, 500), st.sampled_from([io.SEEK_CUR, io.SEEK_END])),
    st.tuples(
        st.just("readline"),
    ),
)


@settings(max_examples=100, deadline=None)
@given(steps=st.lists(Step, max_size=25), range_size=st.integers(1, 700), prefetch=st.integers(0, 3))
def test_random_seeks_and_reads_return_the_reference_bytes(steps: list[tuple[object, ...]], range_size: int, prefetch: int) -> None:
    store = _store()
    got = open_object(store, "b", "k", range_size=range_size, prefetch=prefetch)
    want = io.BytesIO(REFERENCE)
    with got:
        for step in steps:
            if step[0] == "read":
                n = int(step[1])  # type: ignore[call-overload]
                assert got.read(n) == want.read(n)
            elif step[0] == "readline":
                assert got.readline() == want.readline()
            else:
                offset, whence = int(step[1]), int(step[2])  # type: ignore[call-overload]
                if (want.tell() + offset < 0 and whence == io.SEEK_CUR) or (len(REFERENCE) + offset < 0 and whence == io.SEEK_END):
                    with pytest.raises((ValueError, OSError)):
                        got.seek(offset, whence)
                    continue
                assert got.seek(offset, whence) == want.seek(offset, whence)
            assert got.tell() == want.tell()
        assert got.read() == want.read()


def test_a_sequential_read_fetches_each_range_once_and_prefetches_ahead() -> None:
    store = _store()
    raw = ObjectReader(store, "b", "k", len(REFERENCE), store.head_object("b", "k").etag, range_size=1000, prefetch=3)
    assert io.BufferedReader(raw, 64).read() == REFERENCE
    assert raw.requests == 11  # ceil(10,244 / 1,000), never a range twice
    assert store.calls["GetObject"] == 11


class _SlowStore(MemoryStore):
    """Each ranged GET takes `delay` seconds; records how many run at once."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay
        self.active = 0
        self.peak = 0
        self._gate = threading.Lock()

    def read_range(self, bucket: str, key: str, first: int, last: int, if_match: str = "", *, version_id: str = "") -> Body:
        with self._gate:
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            time.sleep(self.delay)
            return super().read_range(bucket, key, first, last, if_match, version_id=version_id)
        finally:
            with self._gate:
                self.active -= 1


def test_prefetch_overlaps_slow_ranges_so_a_sequential_read_takes_far_less_than_one_round_trip_each() -> None:
    store = _SlowStore(delay=0.05)
    store.create_bucket("b")
    store.put_object("b", "k", REFERENCE)
    started = time.monotonic()
    with open_object(store, "b", "k", range_size=512, prefetch=4) as f:
        assert f.read() == REFERENCE
    elapsed = time.monotonic() - started
    ranges = -(-len(REFERENCE) // 512)  # 21
    assert store.peak == 4  # the prefetch depth, never more
    assert elapsed < ranges * store.delay / 2  # serial would take 21 x 50 ms


def test_reading_a_1_gib_object_holds_at_most_one_plus_prefetch_ranges() -> None:
    store = MemoryStore()
    store.create_bucket("b")
    size, range_size, prefetch = 1024 * 1024 * 1024, 8 * 1024 * 1024, 4
    store.put_object("b", "big", size=size)  # synthetic zeros: the store makes each range's bytes only when asked
    tracemalloc.start()
    try:
        held = total = 0
        with open_object(store, "b", "big", range_size=range_size, prefetch=prefetch) as f:
            raw = f.raw
            assert isinstance(raw, ObjectReader)
            while chunk := f.read(1024 * 1024):
                total += len(chunk)
                held = max(held, len(raw._window) + (raw._current is not None))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == size
    assert held <= 1 + prefetch
    assert peak < (1 + prefetch) * range_size + 8 * 1024 * 1024  # the ranges, plus the chunks in hand: not the object


def test_an_overwrite_during_a_read_raises_a_clear_error_naming_the_object() -> None:
    store = _store()
    with open_object(store, "b", "k", range_size=1000, prefetch=0) as f:
        f.read(500)
        store.put_object("b", "k", b"new contents" * 1000)
        with pytest.raises(ObjectChanged, match=r"s3://b/k changed while it was read") as info:
            f.read(2000)
    assert info.value.code == "PreconditionFailed"


def test_a_failed_range_surfaces_its_store_error_and_nothing_is_returned_for_it() -> None:
    store = _store()
    store.faults.append(lambda op, b, k: StoreError("SlowDown", "slow", 503) if op == "GetObject" else None)
    with open_object(store, "b", "k", range_size=1000, prefetch=2) as f, pytest.raises(StoreError, match="SlowDown"):
        f.read(10)


def test_an_empty_object_reads_as_empty_with_no_request() -> None:
    store = _store(b"")
    with open_object(store, "b", "k") as f:
        assert f.read() == b""
    assert store.calls.get("GetObject", 0) == 0
