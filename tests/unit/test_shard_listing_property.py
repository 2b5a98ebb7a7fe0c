"""The stack's sharded listing covers the keys exactly once: for any key set, the shards' union is the serial listing.

The shards come from listing.plan_ranges (what PlanListing records), or from arbitrary cut points, including cut points that
are keys, empty ranges and unicode; each shard is paged through `list_shard_page` as a
lister does, resuming from its cursor page by page.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from s3bulk.listing import Shard, iter_objects, list_shard_page, plan_ranges
from s3bulk.testing.memstore import MemoryStore

BUCKET = "src-b"
# Few characters, so keys share prefixes and cut points often equal keys; plus multi-byte ones.
CHARS = st.sampled_from([*"ab/0-.~", "é", "🚀", "\u00ff", "\U0010fffd"])
KEYS = st.sets(st.text(CHARS, min_size=1, max_size=6), max_size=120)
PREFIXES = st.sampled_from(["", "a", "a/", "b0", "🚀"])


def _store(keys: set[str], page_size: int) -> MemoryStore:
    store = MemoryStore(page_size=page_size)
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
