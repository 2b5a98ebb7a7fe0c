"""Streams listings into batches so memory stays flat for any number of keys."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from datetime import datetime
from typing import Protocol, TypeVar

from s3bulk.job import Source
from s3bulk.store import ListPage, ObjectInfo, ObjectStore, version_markers, version_token

T = TypeVar("T")


class Lister(Protocol):
    """What the listing code needs of a store: pages of keys in order, resumable after a key."""

    def list_page(
        self,
        bucket: str,
        prefix: str,
        token: str | None = None,
        start_after: str | None = None,
        delimiter: str | None = None,
        max_keys: int | None = None,
    ) -> ListPage: ...


class VersionsView:
    """A store's ListObjectVersions as a Lister: every version and delete marker, a key's newest first.

    Every page ends at a key boundary (or ends the listing): the entries of a key a page cut
    short are dropped and listed again from the next page's start, and a key with more versions
    than a page holds is read whole into one page. So start_after (KeyMarker, which skips whole
    keys), the shards and probes, and the engine's resume points work on versions unchanged.
    """

    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def list_page(
        self,
        bucket: str,
        prefix: str,
        token: str | None = None,
        start_after: str | None = None,
        delimiter: str | None = None,
        max_keys: int | None = None,
    ) -> ListPage:
        page = self._page(bucket, prefix, token, start_after, delimiter, max_keys)
        objs = page.objects
        if page.next_token is None or not objs or max_keys is not None:
            return page  # max_keys: a probe (_Prober.first_after), which wants the next key, whole or not
        last = objs[-1].key
        if any(p > last for p in page.prefixes):
            return page  # the page went on past its last key: that key is whole
        whole = [o for o in objs if o.key != last]
        if whole:  # the last key may go on in the next page: list it (and what came after it here) again from there
            cut = whole[-1].key
            return ListPage(whole, version_token(cut, ""), [p for p in page.prefixes if p < cut])
        more = page  # one key filled the page: read the rest of it, in pages of the store's own size
        while more.next_token is not None:
            more = self._page(bucket, prefix, more.next_token, None, delimiter)
            rest = [o for o in more.objects if o.key == last]
            objs = objs + rest
            if len(rest) < len(more.objects) or more.prefixes:
                return ListPage(objs, version_token(last, ""), page.prefixes)
        return ListPage(objs, None, page.prefixes)

    def _page(
        self, bucket: str, prefix: str, token: str | None, key_marker: str | None, delimiter: str | None, max_keys: int | None = None
    ) -> ListPage:
        page = self._fetch(bucket, prefix, token, key_marker, delimiter, max_keys)
        after = key_marker if token is None else after_whole_key(token)
        if after is None:
            return page
        # A key marker alone asks for the keys after that key; a server that sends the marker key's entries again (moto
        # does) would have them listed twice.
        floor = after.encode("utf-8", "surrogatepass")
        kept = [o for o in page.objects if o.key.encode("utf-8", "surrogatepass") > floor]
        return page if len(kept) == len(page.objects) else ListPage(kept, page.next_token, page.prefixes)

    def _fetch(
        self, bucket: str, prefix: str, token: str | None, key_marker: str | None, delimiter: str | None, max_keys: int | None
    ) -> ListPage:
        return self.store.list_versions_page(bucket, prefix, token, key_marker, delimiter, max_keys)


def after_whole_key(token: str) -> str | None:
    """The key a version_token with no version marker starts after (every entry of it listed), else None."""
    markers = version_markers(token)
    return None if "VersionIdMarker" in markers else markers["KeyMarker"]


class UploadsView(VersionsView):
    """A store's ListMultipartUploads as a Lister: each open upload an entry (upload_id set, last_modified its Initiated).

    A key may have several uploads, and ListMultipartUploads pages with a key marker and an upload-id marker as
    ListObjectVersions does with its two, so its pages are cut at key boundaries the same way: shards, probes and
    resume points work on uploads unchanged.
    """

    def _fetch(
        self, bucket: str, prefix: str, token: str | None, key_marker: str | None, delimiter: str | None, max_keys: int | None
    ) -> ListPage:
        return self.store.list_uploads_page(bucket, prefix, token, key_marker, delimiter, max_keys)


class AsOfView(VersionsView):
    """Each key as it was at `as_of` (source.as_of), from ListObjectVersions' whole-key pages: its newest entry at or
    before that instant.

    For a copy, a key that was a delete marker then, or did not exist yet, is left out, and the version it had then is
    listed (its version id set, so the copy reads that version). For a rewind (`every_key`) every key is listed, with the
    version current now (`replaces`, "" for a delete marker): the version it had then, or an entry with no version id
    when it had none (a delete marker makes it so); a key already as it was (that version current, or one with its
    ETag and size: a copy an earlier rewind made) is listed too, and the worker skips it.
    """

    def __init__(self, store: ObjectStore, as_of: datetime, *, every_key: bool) -> None:
        super().__init__(store)
        self.as_of = as_of
        self.every_key = every_key

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
        if max_keys is not None:
            return page  # a probe wants keys, not versions
        out: list[ObjectInfo] = []
        keys: dict[str, list[ObjectInfo]] = {}  # a page holds whole keys, each key's entries newest first as S3 lists them
        for o in page.objects:
            keys.setdefault(o.key, []).append(o)
        for entries in keys.values():
            # The store gives each key's entries newest first by LastModified (s3/versionorder.py), whatever order the
            # server sent; its order only breaks ties within one timestamp.
            now = entries[0]
            then = next((e for e in entries if e.last_modified is not None and e.last_modified <= self.as_of), None)
            existed = then is not None and not then.delete_marker
            if not self.every_key:
                if then is not None and existed:
                    out.append(then)
                continue
            current = "" if now.delete_marker else now.version_id
            if then is not None and existed:
                # A key an earlier rewind restored holds a copy of that version: the same content (ETag and size) is as it was.
                same = not now.delete_marker and (now.etag, now.size) == (then.etag, then.size)
                out.append(replace(then, replaces=then.version_id if same else current))
            else:
                out.append(ObjectInfo(now.key, 0, "", then.last_modified if then else None, replaces=current))
        return ListPage(out, page.next_token, page.prefixes)


def lister(store: ObjectStore, source: Source, operation: str = "") -> Lister:
    """The listing a job asks for: its open uploads (abort-uploads), each key as it was (source.as_of), else what its
    source.versions names."""
    if operation == "abort-uploads":
        return UploadsView(store)
    if source.as_of is not None:
        return AsOfView(store, source.as_of, every_key=operation == "rewind")
    return store if source.versions == "current" else VersionsView(store)


def iter_objects(store: Lister, bucket: str, prefix: str, start_after: str | None = None) -> Iterator[ObjectInfo]:
    """Every object under prefix, in S3's (UTF-8 byte) order, one page in memory at a time."""
    token: str | None = None
    while True:
        page = store.list_page(bucket, prefix, token=token, start_after=start_after)
        yield from page.objects
        if page.next_token is None:
            return
        token = page.next_token


def batched(items: Iterable[T], size: int, group: Callable[[T], object] | None = None) -> Iterator[list[T]]:
    """Lists of `size` items; with `group`, a batch grows past `size` rather than split a group (a key's versions)."""
    batch: list[T] = []
    for item in items:
        if group is not None and len(batch) >= size and group(item) != group(batch[-1]):
            yield batch
            batch = []
        batch.append(item)
        if group is None and len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
