"""Key ranges from a level of the tree: delimiter answers choose where the parallel listing cuts, never which keys it lists.

A server may leave sub-prefixes out of its CommonPrefixes (issue 50: one left out those holding no object directly, and
a copy touched 1 of 5 objects), invent some, or send them out of order. So each sub-prefix P an answer names becomes a
range (lo, P + TOP], the next one starting where it ends, and the last one runs to the prefix's end: the ranges are
contiguous, so every key is in exactly one of them whatever the answers said. Within a range, the keys before P (its
head: direct objects, or a folder the server left out) are listed from lo without a delimiter, and P's own by prefix P,
where the server stops at P's end. What the answers said decides only how the work is split and what each range costs.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from dataclasses import dataclass

from s3bulk.source.listing import Lister
from s3bulk.store import ListPage, ObjectInfo

# Past every key that starts with a given string: U+10FFFF is the largest code point, so its UTF-8 is S3's largest too.
TOP = "\U0010ffff"


@dataclass(frozen=True, slots=True)
class ShardPage:
    """One page of a range: its keys, the cursor to continue from, and whether the range is done."""

    objects: list[ObjectInfo]
    next_token: str | None
    done: bool


def page_range(store: Lister, bucket: str, prefix: str, after: str, upto: str | None, token: str | None) -> ShardPage:
    """The next page of the keys k under prefix with after < k <= upto: from the range's start, or from `token`.

    A page that runs past the range's end keeps only the range's keys and ends it, so ranges cut anywhere cover the
    keys exactly once.
    """
    page = store.list_page(bucket, prefix, token=token, start_after=None if token else after or None)
    objs, done = page.objects, page.next_token is None
    if upto is not None and objs and objs[-1].key > upto:
        objs, done = [o for o in objs if o.key <= upto], True
    return ShardPage(objs, None if done else page.next_token, done)


@dataclass(frozen=True)
class Range:
    """Keys k with after < k <= upto (no bound when upto is None), listed by prefix `core` where they start with it."""

    after: str
    upto: str | None
    core: str | None = None  # a sub-prefix a delimiter answer named; every key of the range below it is its head
    direct: bool = False  # an answer showed objects in the head: list it in pages at once rather than probe it first
    # Where a listing of the whole prefix left off at `after`: the range goes on from it rather than from start-after
    # `after`, which a server need not take back (moto fails on a key it cannot echo in XML, "bell\x07").
    token: str | None = None


def _usable(p: str, prefix: str, lo: str) -> bool:
    """Whether a named sub-prefix p can cut the range that starts at `lo`: it is inside the prefix, and p + TOP > lo.

    Any string from p to p + TOP starts with p, so a range (lo, p + TOP] holds the keys before p (none when lo is
    past p) and keys that start with p, nothing else; keys going on past p + TOP are left to the next range. As `lo`
    only grows, the ranges are contiguous whatever order, duplicates or inventions the answers hold.
    """
    return p.startswith(prefix) and len(p) > len(prefix) and p + TOP > lo


def tree_ranges(
    store: Lister, bucket: str, prefix: str, delimiter: str, after: str, page: ListPage, rest: Callable[[str], Iterator[Range]]
) -> Iterator[Range]:
    """Contiguous ranges from `after` to the prefix's end, one per usable sub-prefix the delimiter answers name, in order.

    `page` is the level's first delimiter answer (what it names up to `after` is passed over); later ones are asked for as
    the ranges are taken. A page that names nothing usable while more follow (or the first, naming nothing past `after`)
    says the rest looks flat: `rest(lo)` cuts it into ranges by other means (the probes), rather than walk the level's
    answers one page at a time.
    """
    lo, first, held = after, True, False  # held: objects past lo seen in an earlier answer
    while True:
        keys = sorted(o.key for o in page.objects)
        took = False
        for p in sorted(set(page.prefixes)):  # code point order is UTF-8 byte order (S3's) for any encodable key
            if _usable(p, prefix, lo):
                direct = held or bisect.bisect_left(keys, p) > bisect.bisect_right(keys, lo)
                yield Range(lo, p + TOP, p, direct)
                lo, held, took = p + TOP, False, True
        if not took and (first or page.next_token is not None):
            yield from rest(lo)
            return
        held = held or bisect.bisect_right(keys, lo) < len(keys)
        if page.next_token is None:
            yield Range(lo, None, None, held)
            return
        first = False
        page = store.list_page(bucket, prefix, token=page.next_token, delimiter=delimiter)


def _pages(store: Lister, bucket: str, prefix: str, after: str, upto: str | None, token: str | None = None) -> Iterator[list[ObjectInfo]]:
    while True:
        page = page_range(store, bucket, prefix, after, upto, token)
        yield page.objects
        if page.done:
            return
        token = page.next_token


def _head(store: Lister, bucket: str, prefix: str, after: str, core: str, token: str | None) -> Iterator[list[ObjectInfo]]:
    """The keys after `after` and before `core`, without a delimiter: stops at the first page that reaches core."""
    while True:
        page = store.list_page(bucket, prefix, token=token, start_after=None if token else after or None)
        kept = [o for o in page.objects if o.key < core]
        yield kept
        if len(kept) < len(page.objects) or page.next_token is None:
            return
        token = page.next_token


def range_pages(store: Lister, bucket: str, prefix: str, r: Range, probes: Executor) -> Iterator[list[ObjectInfo]]:
    """A range's keys in order, page by page: its head from `after` without a delimiter, then its core by prefix.

    A head no answer showed objects in is probed (the first key after `after`) while the core's first page is listed,
    so an empty head, the usual case, costs one small request and no wait; a head that holds keys is listed in full.
    """
    core = r.core
    if core is None:
        yield from _pages(store, bucket, prefix, r.after, r.upto, r.token)
        return
    if r.after >= core:  # the range starts inside core (a first page ended there): no head
        yield from _pages(store, bucket, core, r.after, r.upto)
        return
    if r.direct:
        yield from _head(store, bucket, prefix, r.after, core, r.token)
        yield from _pages(store, bucket, core, "", r.upto)
        return
    probe = probes.submit(store.list_page, bucket, prefix, r.token, None if r.token else r.after or None, None, 1)
    pages = _pages(store, bucket, core, "", r.upto)
    first = next(pages)
    if any(o.key < core for o in probe.result().objects):
        yield from _head(store, bucket, prefix, r.after, core, r.token)
    yield first
    yield from pages
