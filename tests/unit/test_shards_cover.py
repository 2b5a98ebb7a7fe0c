"""Parallel listing covers the whole prefix whatever a server's delimiter answers say (issue 50, case 5).

A server that leaves out CommonPrefixes holding no object directly made a copy and a delete of date-partitioned
keys touch 1 of 5 and exit 0. Shards are key ranges whose union is the prefix; delimiter answers only choose the
boundaries, so a prefix the server omits, invents or lists out of order is still listed, exactly once, in order.
"""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from s3bulk.source.listing import iter_objects
from s3bulk.source.shards import Shard, iter_objects_parallel, list_shard_page, plan_ranges, plan_shards
from s3bulk.store import ListPage
from s3bulk.testing.memstore import MemoryStore

BUCKET = "src-b"
DATED = ["dp/2024/01/01/x.log", "dp/2024/01/02/x.log", "dp/2024/02/01/x.log", "dp/2025/01/01/x.log", "dp/top.log"]


class OmittingStore(MemoryStore):
    """A server whose delimiter listings leave out every CommonPrefix that holds no object directly (as seen in issue 50).

    Non-delimiter listings are S3's; only the roll-up lies.
    """

    def list_page(
        self,
        bucket: str,
        prefix: str,
        token: str | None = None,
        start_after: str | None = None,
        delimiter: str | None = None,
        max_keys: int | None = None,
    ) -> ListPage:
        page = super().list_page(bucket, prefix, token, start_after, delimiter, max_keys)
        if not delimiter or not page.prefixes:
            return page
        keys = self.keys(bucket)
        direct = [p for p in page.prefixes if any(k.startswith(p) and delimiter not in k[len(p) :] for k in keys)]
        return ListPage(page.objects, page.next_token, direct)


class ChaosStore(MemoryStore):
    """Delimiter answers that omit, invent, duplicate and reorder CommonPrefixes, and drop direct objects, at random."""

    def __init__(self, page_size: int, seed: int) -> None:
        super().__init__(page_size=page_size)
        self.rng = random.Random(seed)
        self.rng_lock = threading.Lock()

    def list_page(
        self,
        bucket: str,
        prefix: str,
        token: str | None = None,
        start_after: str | None = None,
        delimiter: str | None = None,
        max_keys: int | None = None,
    ) -> ListPage:
        page = super().list_page(bucket, prefix, token, start_after, delimiter, max_keys)
        if not delimiter:
            return page
        with self.rng_lock:
            rng = self.rng
            prefixes = [p for p in page.prefixes if rng.random() < 0.5]
            invented = [prefix + rng.choice(["", "a", "b/", "zz/", "/", "é/", "🚀/"]) for _ in range(rng.randint(0, 3))]
            invented += [rng.choice(["", "zzz/", "a", "\U0010ffff/"]) for _ in range(rng.randint(0, 1))]  # outside the prefix
            prefixes += invented + prefixes[: rng.randint(0, 2)]
            rng.shuffle(prefixes)
            objects = [o for o in page.objects if rng.random() < 0.7]
        return ListPage(objects, page.next_token, prefixes)


def _store(keys: list[str] | set[str], page_size: int = 1000, make: Callable[[int], MemoryStore] = OmittingStore) -> MemoryStore:
    store = make(page_size)
    store.create_bucket(BUCKET)
    for key in keys:
        store.put_object(BUCKET, key, b"x")
    return store


def _shard_keys(store: MemoryStore, prefix: str, shard: Shard) -> list[str]:
    out: list[str] = []
    token: str | None = None
    while True:
        page = list_shard_page(store, BUCKET, prefix, shard, token)
        out += [o.key for o in page.objects]
        if page.done:
            return out
        token = page.next_token


@pytest.mark.parametrize("page_size", [1, 2, 1000])
@pytest.mark.parametrize("workers", [2, 16])
def test_date_partitions_a_server_leaves_out_of_its_delimiter_answer_are_listed_in_parallel(page_size: int, workers: int) -> None:
    store = _store(DATED, page_size)
    assert store.list_page(BUCKET, "dp/", delimiter="/").prefixes == []  # the quirk: dp/2024/ and dp/2025/ hold no object directly
    assert [o.key for o in iter_objects_parallel(store, BUCKET, "dp/", workers)] == sorted(DATED)


def test_a_level_of_omitted_and_reported_folders_among_direct_objects_is_listed_once_in_order() -> None:
    keys = [f"in/{d:02d}/{m:02d}/k{i}" for d in range(30) for m in range(3) for i in range(4)]
    keys += [f"in/{d:02d}/direct{i}" for d in range(0, 30, 3) for i in range(2)] + [f"in/{d:02d}.txt" for d in range(30)]
    store = _store(keys, 7)
    reported = store.list_page(BUCKET, "in/", delimiter="/").prefixes
    assert reported and len(reported) < 7  # some folders reported, the others left out
    assert [o.key for o in iter_objects_parallel(store, BUCKET, "in/", 8)] == sorted(keys)


def test_a_resumed_listing_covers_what_is_left_whatever_the_delimiter_answers() -> None:
    store = _store(DATED, 1)
    got = [o.key for o in iter_objects_parallel(store, BUCKET, "dp/", 4, start_after="dp/2024/01/01/x.log")]
    assert got == sorted(DATED)[1:]


class HidingView:
    """A view whose pages leave keys out (as source.as_of leaves out keys created later): pages may be empty, with a token."""

    def __init__(self, store: MemoryStore, hidden: str) -> None:
        self.store, self.hidden = store, hidden

    def list_page(
        self,
        bucket: str,
        prefix: str,
        token: str | None = None,
        start_after: str | None = None,
        delimiter: str | None = None,
        max_keys: int | None = None,
    ) -> ListPage:
        page = self.store.list_page(bucket, prefix, token, start_after, delimiter, max_keys)
        if max_keys is not None:
            return page  # a probe wants the next key, as the views' probes do
        return ListPage([o for o in page.objects if not o.key.startswith(self.hidden)], page.next_token, page.prefixes)


def test_a_view_whose_first_pages_hold_nothing_lists_the_rest() -> None:
    keys = [f"p/0/{i:03d}" for i in range(30)] + [f"p/{d}/k{i}" for d in range(1, 6) for i in range(4)]
    view = HidingView(_store(keys, 5), "p/0/")
    expected = [k for k in sorted(keys) if not k.startswith("p/0/")]
    assert [o.key for o in iter_objects_parallel(view, BUCKET, "p/", 4)] == expected


@pytest.mark.parametrize("target", [2, 4, 16])
def test_the_stacks_planned_ranges_cover_date_partitions_a_server_leaves_out(target: int) -> None:
    keys = [f"dp/2024/{m:02d}/{d:02d}/x{i}.log" for m in range(1, 13) for d in range(1, 29) for i in range(3)]
    store = _store(keys, 50)
    shards = plan_ranges(store, BUCKET, "dp/", target, threads=4)
    assert shards[0].after == "" and shards[-1].upto is None
    assert all(a.upto == b.after for a, b in itertools.pairwise(shards))
    assert [k for s in shards for k in _shard_keys(store, "dp/", s)] == sorted(keys)


def test_plan_shards_starts_at_its_start_and_ends_unbounded_with_contiguous_boundaries() -> None:
    keys = [f"dp/{y}/{m:02d}/x{i}" for y in (2023, 2024) for m in range(1, 13) for i in range(40)]
    store = _store(keys, 20)
    with ThreadPoolExecutor(4) as pool:
        shards = plan_shards(store, BUCKET, "dp/", "dp/2023/01/x19", pool, sample=sorted(keys)[:20], target=16)
    assert shards[0].after == "dp/2023/01/x19" and shards[-1].upto is None and len(shards) > 1
    assert all(a.upto == b.after for a, b in itertools.pairwise(shards))


# Few characters and the delimiter, so keys nest, folders hold no direct object, and cut points often equal keys; and
# paths of folders, so that levels hold many sub-prefixes, some with objects directly and some without.
CHARS = st.sampled_from([*"ab/0.~", "é", "🚀"])
PATHS = st.lists(st.sampled_from(["a", "b", "b0", "0", "a.b", "~", "é", "🚀", ""]), min_size=1, max_size=4).map("/".join).filter(bool)
KEYS = st.sets(st.text(CHARS, min_size=1, max_size=7) | PATHS, min_size=8, max_size=150)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    keys=KEYS,
    prefix=st.sampled_from(["", "", "a", "a/", "b/", "🚀"]),
    page_size=st.sampled_from([1, 2, 3, 5, 1000]),
    workers=st.sampled_from([2, 3, 8]),
    seed=st.integers(0, 2**16),
    resume=st.booleans(),
)
def test_parallel_listing_yields_the_serial_listing_whatever_the_delimiter_answers_say(
    keys: set[str], prefix: str, page_size: int, workers: int, seed: int, resume: bool
) -> None:
    store = _store(keys, page_size, lambda size: ChaosStore(size, seed))
    serial = [o.key for o in iter_objects(store, BUCKET, prefix)]
    start = serial[len(serial) // 3] if resume and serial else None
    expected = [k for k in serial if start is None or k > start]
    assert [o.key for o in iter_objects_parallel(store, BUCKET, prefix, workers, start_after=start)] == expected
