"""A listing in S3's key order (UTF-8 bytes, ascending) or an error: never a silently wrong shard, resume point or sync.

s3bulk cuts a listing into shards by key ranges, resumes it after a key, and merge-joins a sync's two listings, all by
S3's documented order. A server that lists in another order makes each of those wrong without a sound: SeaweedFS lists
a folder's keys before its siblings' (`a/b` before `a b` and `a-b`), and a sync there deleted destination objects its
source held, as extraneous. So every page is checked, and across pages too: a ListObjectsV2 continuation token is
opaque, so the last key of the page that gave it is remembered (a bounded map: one entry per listing in flight).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from s3bulk.store import ListPage, StoreError

# Listings in flight whose last key is remembered; far more than the shards and probes of any job.
REMEMBERED = 4096


def out_of_order(bucket: str, key: str, before: bytes) -> StoreError:
    previous = before.decode("utf-8", "surrogatepass")
    n = next((i for i, (a, b) in enumerate(zip(key, previous, strict=False)) if a != b), min(len(key), len(previous)))
    if n < len(previous) and previous[n] == "/":  # it listed a/b before a-b: a filer's folder first
        how = "this server lists a folder's keys before its siblings' (as SeaweedFS does): keep such sibling names apart, or use another server"
    else:
        how = "this server does not list in S3's order (a directory bucket does not either): use a server that does"
    return StoreError(
        "ListingOutOfOrder",
        f"s3://{bucket} listed {key!r} after {previous!r}, out of S3's key order (UTF-8 bytes); s3bulk shards, resumes "
        f"and syncs by that order, so it stopped rather than skip keys or delete the wrong ones; {how}",
        400,
    )


class KeyOrder:
    """Checks a store's ListObjectsV2 pages: keys strictly ascending within a page and after the page before."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: OrderedDict[str, bytes] = OrderedDict()

    def checked(self, bucket: str, page: ListPage, *, token: str | None, start_after: str | None) -> ListPage:
        prev: bytes | None = None
        if token:
            with self._lock:
                prev = self._last.get(token)
        elif start_after:
            prev = start_after.encode("utf-8", "surrogatepass")
        for obj in page.objects:
            key = obj.key.encode("utf-8", "surrogatepass")
            if prev is not None and key <= prev:
                raise out_of_order(bucket, obj.key, prev)
            prev = key
        for p in page.prefixes:  # a common prefix stands for every key under it: the next key comes after all of them
            mark = p.encode("utf-8", "surrogatepass") + b"\xff"
            prev = mark if prev is None or mark > prev else prev
        if page.next_token and prev is not None:
            with self._lock:
                self._last[page.next_token] = prev
                self._last.move_to_end(page.next_token)
                while len(self._last) > REMEMBERED:
                    self._last.popitem(last=False)
        return page


def check_marked(bucket: str, page: ListPage, key_marker: str | None) -> ListPage:
    """A ListObjectVersions or ListMultipartUploads page (in key order, s3/versionorder.py) must not go back before the
    key marker it was asked from: a key may go on from the page before, so equal is in order."""
    if key_marker and page.objects:
        first, marker = page.objects[0].key, key_marker.encode("utf-8", "surrogatepass")
        if first.encode("utf-8", "surrogatepass") < marker:
            raise out_of_order(bucket, first, marker)
    return page
