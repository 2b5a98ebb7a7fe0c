"""Parallel listing must yield exactly what serial listing yields, in the same order, with bounded lookahead."""

from __future__ import annotations

import random

import pytest

from s3bulk.listing import iter_objects, iter_objects_parallel
from s3bulk.memstore import MemoryStore
from s3bulk.store import StoreError

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
