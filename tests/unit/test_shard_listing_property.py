"""The stack's sharded listing covers the keys exactly once: for any key set, the shards' union is the serial listing.

The shards come from shards.plan_ranges (what PlanListing records), or from arbitrary cut points, including cut points that
are keys, empty ranges and unicode; each shard is paged through `list_shard_page` as a
lister does, resuming from its cursor page by page. The same holds on a store that reads
start-after the way SeaweedFS does, and the planned ranges are of about equal size.
"""

from __future__ import annotations

import bisect

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from s3bulk.source.listing import iter_objects
from s3bulk.source.shards import Shard, below, list_shard_page, plan_ranges
from s3bulk.store import ListPage
from s3bulk.testing.memstore import MemoryStore

BUCKET = "src-b"
# Few characters, so keys share prefixes and cut points often equal keys; plus multi-byte ones.
CHARS = st.sampled_from([*"ab/0-.~", "é", "🚀", "\u00ff", "\U0010fffd"])
KEYS = st.sets(st.text(CHARS, min_size=1, max_size=6), max_size=120)
PREFIXES = st.sampled_from(["", "a", "a/", "b0", "🚀"])
# Paths of folders, so that cut points often name one ("a/b" where keys go on with "a/b/").
PATHS = st.sets(st.lists(st.sampled_from(["a", "b", "b0", "0", "é", "🚀"]), min_size=1, max_size=4).map("/".join), max_size=120)


class FolderSkippingStore(MemoryStore):
    """SeaweedFS's start-after: a string that names a folder (keys go on with it and "/") skips the whole folder.

    S3 lists "logs/a/1" after start-after "logs/a"; SeaweedFS treats "logs/a" as the folder "logs/a/" and
    goes on after it. Listing from the start, or from a page's token, is S3's order.
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
        if token is None and start_after:
            inside = [k for k in self.keys(bucket) if k.startswith(start_after + "/")]
            start_after = max(inside, default=start_after)
        return super().list_page(bucket, prefix, token, start_after, delimiter, max_keys)


def _store(keys: set[str], page_size: int, kind: type[MemoryStore] = MemoryStore) -> MemoryStore:
    store = kind(page_size=page_size)
    store.create_bucket(BUCKET)
    for key in keys:
        store.put_object(BUCKET, key, b"")
    return store


def _list_shard(store: MemoryStore, prefix: str, shard: Shard) -> list[str]:
    """Page a shard as a lister does: from its start, then from each page's cursor, until it says done."""
    out: list[str] = []
    token: str | None = None
    for _ in range(10_000):
        page = list_shard_page(store, BUCKET, prefix, shard, token)
        out += [o.key for o in page.objects]
        if page.done:
            return out
        token = page.next_token
    raise AssertionError("a shard never ended")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keys=KEYS, prefix=PREFIXES, page_size=st.sampled_from([1, 2, 3, 5, 1000]), target=st.sampled_from([2, 4, 16, 64]))
def test_planned_shards_list_every_key_exactly_once_in_order(keys: set[str], prefix: str, page_size: int, target: int) -> None:
    store = _store(keys, page_size)
    serial = [o.key for o in iter_objects(store, BUCKET, prefix)]
    shards = plan_ranges(store, BUCKET, prefix, target, threads=4)
    assert 1 <= len(shards) <= target
    union = [key for shard in shards for key in _list_shard(store, prefix, shard)]
    assert union == serial


@settings(max_examples=150, deadline=None)
@given(keys=KEYS, cuts=st.lists(st.text(CHARS, max_size=5), max_size=8), prefix=PREFIXES, page_size=st.sampled_from([1, 2, 7]))
def test_any_cut_points_cover_the_keys_exactly_once(keys: set[str], cuts: list[str], prefix: str, page_size: int) -> None:
    store = _store(keys, page_size)
    serial = [o.key for o in iter_objects(store, BUCKET, prefix)]
    # Cut points anywhere, some equal to keys, some outside the prefix, some making empty shards.
    bounds = sorted({prefix + c for c in cuts} | {c for c in cuts if c in keys})
    edges = ["", *bounds]
    shards = [Shard(lo, hi) for lo, hi in zip(edges, [*bounds, None], strict=True)]
    union = [key for shard in shards for key in _list_shard(store, prefix, shard)]
    assert union == serial


def test_a_source_whose_keys_share_more_than_the_prefix_still_splits_into_several_shards() -> None:
    """Planning from "" gave one range for keys like logs/2026/...: the probes had nothing to cut at."""
    store = _store({f"logs/2026/11/{i:05d}.gz" for i in range(5000)}, 100)
    shards = plan_ranges(store, BUCKET, "logs/", 16)
    assert 4 <= len(shards) <= 16  # 50 pages, in ranges plan_shards keeps about ten pages long
    assert [k for s in shards for k in _list_shard(store, "logs/", s)] == [o.key for o in iter_objects(store, BUCKET, "logs/")]


def _seaweed_keys(keys: set[str]) -> set[str]:
    """Keys SeaweedFS can hold together: a file cannot also be a folder ("a" and "a/b")."""
    return {k for k in keys if not any(o.startswith(k + "/") for o in keys)}


def _folders(shards: list[Shard], keys: set[str]) -> list[str]:
    """Boundaries that name a folder: keys go on with the boundary and "/"."""
    return [b for s in shards for b in (s.after, s.upto) if b and any(k.startswith(b + "/") for k in keys)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keys=KEYS | PATHS, prefix=PREFIXES, page_size=st.sampled_from([1, 2, 3, 5]), target=st.sampled_from([2, 4, 16]))
def test_planned_shards_list_every_key_once_where_start_after_skips_a_folder_it_names(
    keys: set[str], prefix: str, page_size: int, target: int
) -> None:
    keys = _seaweed_keys(keys)
    store = _store(keys, page_size, FolderSkippingStore)
    serial = [o.key for o in iter_objects(store, BUCKET, prefix)]
    shards = plan_ranges(store, BUCKET, prefix, target, threads=4)
    assert _folders(shards, keys) == []
    assert [key for shard in shards for key in _list_shard(store, prefix, shard)] == serial


def test_nested_folders_are_cut_just_below_their_first_keys_not_at_their_names() -> None:
    """The probes cut at stems ("logs/3"); SeaweedFS would skip the folder logs/3/ listed from start-after "logs/3"."""
    keys = {f"logs/{d}/x{i:02d}" for d in range(10) for i in range(100)}
    store = _store(keys, 50, FolderSkippingStore)
    shards = plan_ranges(store, BUCKET, "logs/", 4)
    assert len(shards) == 4
    assert _folders(shards, keys) == []
    assert all(s.upto is None or s.upto == below(min(k for k in keys if k > s.upto)) for s in shards)
    listed = [_list_shard(store, "logs/", shard) for shard in shards]
    assert [key for part in listed for key in part] == sorted(keys)
    assert max(map(len, listed)) <= 300  # 1,000 keys in 4 ranges of 10 folders' worth: 2-3 folders each


@settings(max_examples=300, deadline=None)
@given(
    key=st.text(CHARS | st.sampled_from(["\x00", "\ue000", "\ud7ff", "0", "/"]), min_size=1, max_size=6), other=st.text(CHARS, max_size=8)
)
def test_below_a_key_is_encodable_and_only_strings_that_go_on_with_it_lie_between(key: str, other: str) -> None:
    b = below(key)
    b.encode("utf-8")  # no surrogate
    assert b < key and b.encode() < key.encode()  # S3's order is UTF-8 byte order
    if b < other < key:
        assert other.startswith(b)


def test_below_steps_over_the_surrogates_and_drops_a_trailing_nul() -> None:
    assert below("a\ue000") == "a\ud7ff\U0010ffff"
    assert below("ab\x00") == "ab"
    assert below("logs/a0") == "logs/a/\U0010ffff"


def _sizes(shards: list[Shard], keys: list[str]) -> list[int]:
    return [
        (bisect.bisect_right(keys, s.upto) if s.upto is not None else len(keys)) - (bisect.bisect_right(keys, s.after) if s.after else 0)
        for s in shards
    ]


@pytest.mark.parametrize(
    ("name", "count"),
    [("sequential", 30_000), ("two leading digits of unequal size", 12_345)],
)
@pytest.mark.parametrize("target", [2, 4, 8])
def test_planned_ranges_are_of_about_equal_size(name: str, count: int, target: int) -> None:
    """Merged by estimated size: merged by count, a sequential source came out as 2 ranges of 2/3 and 1/3."""
    keys = [f"in/{i:05d}" for i in range(count)]
    store = _store(set(keys), 10)  # the probes cut no finer than ten pages: 100 keys
    shards = plan_ranges(store, BUCKET, "in/", target)
    sizes = _sizes(shards, keys)
    assert sum(sizes) == count and len(shards) == target
    assert max(sizes) <= 1.15 * count / target, sizes


@pytest.mark.parametrize("target", [2, 4])
def test_a_flat_run_the_probes_cannot_cut_weighs_as_much_as_the_tree_beside_it(target: int) -> None:
    """10,000 flat keys stop at the ten-page floor after one cut; the 10,000 nested keys beside them are cut three
    levels deep. Counting every piece alike would make the flat run one piece of thirty; it holds half the keys."""
    keys = sorted([f"in/flat-{i:06d}" for i in range(10_000)] + [f"in/n/{i % 5}/{i % 13}/obj-{i:05d}" for i in range(10_000)])
    store = _store(set(keys), 250)
    shards = plan_ranges(store, BUCKET, "in/", target)
    sizes = _sizes(shards, keys)
    assert sum(sizes) == len(keys) and len(shards) == target
    assert max(sizes) <= 1.1 * max(10_000, len(keys) / target), sizes
