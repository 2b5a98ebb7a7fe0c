"""Listing streams page by page; batching and the skip merge-join keep memory flat."""

from __future__ import annotations

from s3bulk.source.listing import batched, iter_objects
from s3bulk.source.sync import join
from s3bulk.store import ObjectInfo
from s3bulk.testing.memstore import MemoryStore


def store_with(keys: list[str], page_size: int = 3) -> MemoryStore:
    s = MemoryStore(page_size=page_size)
    s.create_bucket("b-b")
    for k in keys:
        s.put_object("b-b", k, b"x")
    return s


def test_listing_pages_through_every_key_under_the_prefix_in_order() -> None:
    keys = [f"p/{i:03d}" for i in range(10)] + ["q/1", "o/1"]
    s = store_with(keys)
    assert [o.key for o in iter_objects(s, "b-b", "p/")] == sorted(k for k in keys if k.startswith("p/"))
    assert s.calls["ListObjectsV2"] == 4  # 10 keys in pages of 3


def test_listing_is_lazy_one_page_at_a_time() -> None:
    s = store_with([f"k{i:02d}" for i in range(30)], page_size=5)
    it = iter_objects(s, "b-b", "")
    next(it)
    assert s.calls["ListObjectsV2"] == 1


def test_batches_hold_at_most_batch_size_and_keep_the_remainder() -> None:
    sizes = [len(b) for b in batched(range(2501), 1000)]
    assert sizes == [1000, 1000, 501]


def test_merge_join_marks_exactly_the_keys_present_at_the_destination() -> None:
    src = [ObjectInfo(f"in/{c}", 1) for c in "abcdef"]
    existing = iter([ObjectInfo("out/b", 1), ObjectInfo("out/bb", 1), ObjectInfo("out/e", 1), ObjectInfo("out/z", 1)])
    marked = [(j.obj.key, j.existing is not None) for j in join(((o, True) for o in src), lambda k: "out/" + k[3:], existing)]
    assert marked == [("in/a", False), ("in/b", True), ("in/c", False), ("in/d", False), ("in/e", True), ("in/f", False)]


def test_merge_join_orders_unicode_like_s3_utf8_byte_order() -> None:
    # U+FFFD sorts before U+1F680 in both code point and UTF-8 byte order
    keys = sorted(["out/\ufffd", "out/\U0001f680", "out/z"])
    assert [k.encode() for k in keys] == sorted(k.encode() for k in keys)
    joined = join(((ObjectInfo(k, 1), True) for k in keys), lambda k: k, iter([ObjectInfo("out/\U0001f680", 1)]))
    marked = [j.existing is not None for j in joined]
    assert keys == ["out/z", "out/\ufffd", "out/\U0001f680"]
    assert marked == [False, False, True]
