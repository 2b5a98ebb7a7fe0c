"""Filters see keys relative to the prefix; key mapping never normalises a key."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from s3bulk.job import Destination, Source
from s3bulk.source.selection import KeyMapper, Selector
from s3bulk.store import ObjectInfo

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def obj(key: str, size: int = 10, when: datetime = T0) -> ObjectInfo:
    return ObjectInfo(key, size, '"e"', when)


def test_include_glob_matches_relative_to_prefix() -> None:
    sel = Selector(Source(bucket="b-b", prefix="logs/2024/", include=["*.parquet"]))
    assert sel.matches(obj("logs/2024/a/x.parquet"))
    assert not sel.matches(obj("logs/2024/a/x.json"))


def test_prefix_anchored_glob_does_not_see_the_prefix() -> None:
    sel = Selector(Source(bucket="b-b", prefix="logs/", include=["2024/*"]))
    assert sel.matches(obj("logs/2024/x"))
    assert not sel.matches(obj("logs/2023/x"))


def test_exclude_wins_over_include() -> None:
    sel = Selector(Source(bucket="b-b", prefix="p/", include=["*.parquet"], exclude=["*/_tmp/*"]))
    assert sel.matches(obj("p/day=1/x.parquet"))
    assert not sel.matches(obj("p/day=1/_tmp/x.parquet"))


def test_glob_is_case_sensitive_like_s3_keys() -> None:
    sel = Selector(Source(bucket="b-b", include=["*.csv"]))
    assert not sel.matches(obj("A.CSV"))


@pytest.mark.parametrize(("size", "selected"), [(4, False), (5, True), (10, True), (11, False)])
def test_size_bounds_are_inclusive(size: int, selected: bool) -> None:
    sel = Selector(Source(bucket="b-b", min_size=5, max_size=10))
    assert sel.matches(obj("k", size)) is selected


def test_modified_window_is_after_inclusive_before_exclusive() -> None:
    sel = Selector(Source(bucket="b-b", modified_after=T0, modified_before=datetime(2024, 2, 1, tzinfo=UTC)))
    assert sel.matches(obj("k", when=T0))
    assert not sel.matches(obj("k", when=datetime(2023, 12, 31, 23, 59, tzinfo=UTC)))
    assert not sel.matches(obj("k", when=datetime(2024, 2, 1, tzinfo=UTC)))


@pytest.mark.parametrize(
    "rel",
    ["a//b", "./x", "/lead", "a+b", "100%", "a%2Fb", "ünï/cödé", "emoji-🚀", "trail ", "../up", "dir/"],
)
def test_destination_key_is_prefix_plus_exact_relative_key(rel: str) -> None:
    mapper = KeyMapper(Source(bucket="s-s", prefix="in/"), Destination(bucket="d-d", prefix="out/"))
    assert mapper("in/" + rel) == "out/" + rel


def test_empty_prefixes_map_keys_unchanged() -> None:
    mapper = KeyMapper(Source(bucket="s-s"), Destination(bucket="d-d"))
    assert mapper("/x//y") == "/x//y"
