"""Parallel listing must yield exactly what serial listing yields, in the same order, with bounded lookahead."""

from __future__ import annotations

import itertools
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from s3bulk.source.listing import iter_objects
from s3bulk.source.shards import iter_objects_parallel, plan_shards
from s3bulk.store import ListPage, StoreError
from s3bulk.testing.memstore import MemoryStore

ALPHABET = ["a", "b", "a-", "a0", "z", "é", "🚀", "", "x.y"]


def random_tree(rng: random.Random, n: int) -> list[str]:
    keys = set()
    for _ in range(n):
        depth = rng.randint(0, 3)
        parts = [rng.choice(ALPHABET) + str(rng.randint(0, 3)) for _ in range(depth)]
        leaf = rng.choice(["", "f" + str(rng.randint(0, 50)), "g"])  # "" makes a "dir/" marker
        keys.add("/".join([*parts, leaf]) if parts else (leaf or "root"))
    return sorted(keys)


@pytest.mark.parametrize("seed", range(40))
def test_parallel_listing_equals_serial_listing_on_random_trees(seed: int) -> None:
    rng = random.Random(seed)
    store = MemoryStore(page_size=rng.choice([1, 2, 3, 7, 1000]))
    store.create_bucket("b-b")
    for key in random_tree(rng, rng.randint(0, 300)):
        store.put_object("b-b", key, b"x")
    for prefix in ["", "a", "a0/", "b1/", "z"]:
        serial = [o.key for o in iter_objects(store, "b-b", prefix)]
        parallel = [o.key for o in iter_objects_parallel(store, "b-b", prefix, workers=rng.choice([2, 4, 8]))]
        assert parallel == serial, (seed, prefix)


def test_a_listing_error_in_a_subtree_reaches_the_consumer() -> None:
    store = MemoryStore(page_size=2)
    store.create_bucket("b-b")
    for i in range(20):
        store.put_object("b-b", f"p{i % 4}/k{i:02d}", b"x")
    store.faults.append(lambda op, b, prefix: StoreError("AccessDenied", "no", 403) if op == "ListObjectsV2" and prefix == "p2/" else None)
    with pytest.raises(StoreError, match="AccessDenied"):
        list(iter_objects_parallel(store, "b-b", "", workers=4))


def test_closing_the_listing_early_stops_the_producers() -> None:
    store = MemoryStore(page_size=5)
    store.create_bucket("b-b")
    for i in range(2000):
        store.put_object("b-b", f"p{i % 50:02d}/k{i:05d}", b"x")
    it = iter_objects_parallel(store, "b-b", "", workers=8)
    first = [next(it) for _ in range(10)]
    it.close()
    calls = store.calls["ListObjectsV2"]
    assert calls < 2000 // 5 // 4  # nowhere near the whole bucket's 400 pages were listed
    assert [o.key for o in first] == [o.key for o in iter_objects(store, "b-b", "")][:10]


def test_a_flat_listing_streams_page_by_page_instead_of_reading_ahead() -> None:
    store = MemoryStore(page_size=10)
    store.create_bucket("b-b")
    for i in range(1000):
        store.put_object("b-b", f"flat/k{i:04d}", b"x")
    it = iter_objects_parallel(store, "b-b", "flat/", workers=8)
    assert [next(it).key for _ in range(5)] == [f"flat/k{i:04d}" for i in range(5)]
    assert store.calls["ListObjectsV2"] == 1  # one page fetched, not the whole listing
    it.close()


FLAT_KEYSETS = {
    "sequential": [f"flat/key-{i:06d}" for i in range(2_000)],
    "hex": [f"flat/{random.Random(1).getrandbits(64) ^ i:016x}" for i in range(2_000)],
    "unicode and high characters": [f"flat/{c}{i:04d}" for i in range(300) for c in ["a", "Z", " ", "~", "é", "🚀", "\x7f", "ÿ"]],
    "one long run under a shared stem": [f"flat/stem-{'x' * 40}-{i:05d}" for i in range(1_500)],
    "exact cut points are keys": ["flat/"]
    + [f"flat/{chr(c)}" for c in range(0x20, 0x7F)] * 1
    + [f"flat/{chr(c)}{i}" for c in range(0x20, 0x7F) for i in range(12)],
}


@pytest.mark.parametrize("name", sorted(FLAT_KEYSETS))
@pytest.mark.parametrize("page_size", [1, 7, 100, 1000])
def test_sharded_flat_listing_equals_serial_listing(name: str, page_size: int) -> None:
    store = MemoryStore(page_size=page_size)
    store.create_bucket("b-b")
    for key in FLAT_KEYSETS[name]:
        store.put_object("b-b", key, b"x")
    serial = [o.key for o in iter_objects(store, "b-b", "flat/")]
    assert len(serial) == len(set(FLAT_KEYSETS[name]))
    assert [o.key for o in iter_objects_parallel(store, "b-b", "flat/", workers=8)] == serial


def test_flat_sequential_keys_split_at_the_first_differing_digit_then_refine() -> None:
    store = MemoryStore(page_size=1000)
    store.create_bucket("b-b")
    keys = [f"flat/key-{i:06d}" for i in range(100_000)]
    for key in keys:
        store.put_object("b-b", key, b"")
    with ThreadPoolExecutor(8) as pool:
        one = plan_shards(store, "b-b", "flat/", "flat/key-000999", pool, sample=keys[:1000], target=64)
        probes_one = store.calls["ListObjectsV2"]
        # With 100-key pages (a sample of 100) ten pages are 1k keys, so a second level splits each range again.
        fine = plan_shards(store, "b-b", "flat/", "flat/key-000099", pool, sample=keys[:100], target=64)
    # Every key after the first page starts with "flat/key-0", so the first cuts fall on the next digit
    # (each boundary just below the first key past its cut, "flat/key-010000");
    # a finer level would make shards under ten 1,000-key pages, so there is none.
    assert [s.upto for s in one] == [f"flat/key-0{d}000/\U0010ffff" for d in range(1, 10)] + [None]
    assert probes_one < 60  # the sample's characters only (~14 cuts, not ~95), and no stems that could not be cut
    assert 64 <= len(fine) <= 120
    assert fine[0].after == "flat/key-000099" and fine[-1].upto is None
    assert all(a.upto == b.after for a, b in itertools.pairwise(fine))  # contiguous: no gap, no overlap
    sizes = [sum(1 for k in keys if k > s.after and (s.upto is None or k <= s.upto)) for s in fine[:20]]
    assert sum(sizes) > 0 and max(sizes) <= 1_000


def test_sharded_listing_runs_its_shards_concurrently() -> None:
    store = MemoryStore(page_size=100)
    store.create_bucket("b-b")
    for i in range(20_000):
        store.put_object("b-b", f"flat/{i:05d}", b"")
    active, peak, lock = 0, 0, threading.Lock()
    real = store.list_page

    def slow_list(*args: Any, **kwargs: Any) -> ListPage:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        try:
            time.sleep(0.002)
            return real(*args, **kwargs)
        finally:
            with lock:
                active -= 1

    store.list_page = slow_list  # type: ignore[method-assign]
    keys = [o.key for o in iter_objects_parallel(store, "b-b", "flat/", workers=8)]
    assert keys == [f"flat/{i:05d}" for i in range(20_000)]
    assert peak >= 4


def test_a_failing_shard_reaches_the_consumer() -> None:
    store = MemoryStore(page_size=10)
    store.create_bucket("b-b")
    for i in range(500):
        store.put_object("b-b", f"flat/{i:03d}", b"x")
    real = store.list_page

    def failing(*args: Any, **kwargs: Any) -> ListPage:
        # A shard's own listing (start_after, full pages) breaks; the probes (max_keys=1) work.
        if kwargs.get("start_after") and kwargs.get("max_keys") is None and kwargs["start_after"] > "flat/3":
            raise StoreError("InternalError", "boom", 500)
        return real(*args, **kwargs)

    store.list_page = failing  # type: ignore[method-assign]
    with pytest.raises(StoreError, match="InternalError"):
        list(iter_objects_parallel(store, "b-b", "flat/", workers=4))


def test_ranges_ahead_of_the_consumer_share_a_bounded_page_budget() -> None:
    store = MemoryStore(page_size=10)
    store.create_bucket("b-b")
    for i in range(5_000):
        store.put_object("b-b", f"flat/{i:05d}", b"")
    pages = 0
    real = store.list_page

    def counting(*args: Any, **kwargs: Any) -> ListPage:
        nonlocal pages
        if (kwargs.get("max_keys") or 1000) > 2:  # probes ask for two keys at most; count real pages
            pages += 1
        return real(*args, **kwargs)

    store.list_page = counting  # type: ignore[method-assign]
    it = iter_objects_parallel(store, "b-b", "flat/", workers=4, pages_ahead=2)
    for _ in range(15):
        next(it)
    time.sleep(0.3)  # a slow consumer: producers must stop at the budget, not list the bucket
    # first page + the shared budget + a page in each producer's hands (waiting for a permit) + the head's own page
    assert pages <= 1 + 4 * 2 + 4 + 4
    rest = list(it)
    assert len(rest) == 5_000 - 15
