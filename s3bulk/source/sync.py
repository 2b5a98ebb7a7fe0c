"""Incremental sync: merge-join the source and destination listings, so a rerun copies only what changed.

Both listings come sorted by key (UTF-8 byte order), and every destination key is
destination.prefix + an order-preserving suffix of its source key, so one pass over
each with O(1) memory replaces a HEAD per object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from s3bulk.report import BY_TIME_SKIPPED, UNDECIDED_COPIED
from s3bulk.store import ObjectHead, ObjectInfo, ObjectStore


def multipart_etag(etag: str) -> bool:
    """A multipart ETag ('<md5 of part md5s>-N') depends on the part size, so it is not a content hash."""
    return "-" in etag


def unchanged(src: ObjectInfo, dst: ObjectInfo) -> bool:
    """What the listings alone say: same size, and the same ETag; where an ETag is multipart, a destination at
    least as new as the source; where a listing carries no ETag, changed.

    Single-part ETags are MD5s of the bytes, and equal ETags of any kind mean equal bytes. A multipart copy (or a
    multipart source copied whole) has a different ETag for the same bytes, and ListObjectsV2 carries no checksum
    values. Such pairs, and pairs a listing gave no ETag for (some S3-compatible servers), are decided by the worker
    from both objects' HEADs (heads_match); this rule stands only where those cannot decide: the modification order
    for multipart ETags (the destination was written after the source last changed), a copy where there is no ETag.
    """
    if src.size != dst.size:
        return False
    if src.etag and src.etag == dst.etag:
        return True
    if not src.etag or not dst.etag:
        return False
    if not multipart_etag(src.etag) and not multipart_etag(dst.etag):
        return False
    if src.last_modified is None or dst.last_modified is None:
        return False
    return dst.last_modified >= src.last_modified


def needs_heads(src: ObjectInfo, dst: ObjectInfo) -> bool:
    """Same size, but the listings cannot compare the bytes (an ETag is multipart, or missing), so only the objects'
    HEADs (a HEAD each: their ETags and checksums) can say whether they match."""
    if src.size != dst.size or (src.etag and src.etag == dst.etag):
        return False
    return not src.etag or not dst.etag or multipart_etag(src.etag) or multipart_etag(dst.etag)


@dataclass(frozen=True, slots=True)
class Decision:
    """What if_exists makes of one source object and the destination object already there."""

    skip: bool
    recheck: bool | None = None  # the worker compares both HEADs first (heads_match); this is the answer if they cannot


def decide(if_exists: str, src: ObjectInfo, existing: ObjectInfo | None) -> Decision:
    """The one if_exists rule the CLI's join, the stack's lister and a manifest job's worker all apply."""
    if existing is None or if_exists == "overwrite":
        return Decision(False)
    if if_exists == "skip":
        return Decision(True)
    if needs_heads(src, existing):
        return Decision(False, unchanged(src, existing))
    return Decision(unchanged(src, existing))


def checksums_match(src: ObjectHead, dst: ObjectHead) -> bool | None:
    """Compare the S3 additional checksums of two objects: True or False when they decide, None when they cannot.

    Full-object checksums of one algorithm decide both ways. Composite ones ("-N")
    depend on the part layout: equal ones prove equal bytes, unequal ones prove nothing.
    """
    if src.size != dst.size:
        return False
    if not src.checksum or not dst.checksum or src.checksum.split(":")[0] != dst.checksum.split(":")[0]:
        return None
    if src.checksum == dst.checksum:
        return True
    return None if "-" in src.checksum or "-" in dst.checksum else False


def heads_match(src: ObjectHead, dst: ObjectHead) -> bool | None:
    """Whether two objects hold the same bytes, by their HEADs: True or False when they decide, None when they cannot.

    Another size, or equal ETags, decide; so do full-object checksums (checksums_match), and two single-part ETags
    that differ (as the listings' rule does: a copy, never a skip, where they might be SSE-KMS ETags of equal bytes).
    """
    if src.size != dst.size:
        return False
    if src.etag and src.etag == dst.etag:
        return True
    same = checksums_match(src, dst)
    if same is not None:
        return same
    if src.etag and dst.etag and not multipart_etag(src.etag) and not multipart_etag(dst.etag):
        return False
    return None


@dataclass(frozen=True, slots=True)
class Joined:
    """One source object with its destination key and the object already there (None: absent)."""

    obj: ObjectInfo
    selected: bool
    dst_key: str
    existing: ObjectInfo | None


def join(
    listed: Iterable[tuple[ObjectInfo, bool]],
    map_key: Callable[[str], str],
    destination: Iterator[ObjectInfo],
    on_extraneous: Callable[[ObjectInfo], None] | None = None,
    *,
    drain: bool = True,
) -> Iterator[Joined]:
    """Pair every listed source object (selected or not) with its destination object.

    Destination objects no source object maps to go to `on_extraneous`, including the
    ones after the last source key once the source ends, unless `drain` is False (the
    source is one page of a longer listing, and later pages may still map to them).
    """
    current = next(destination, None)
    for obj, selected in listed:
        key = map_key(obj.key)
        while current is not None and current.key < key:
            if on_extraneous is not None:
                on_extraneous(current)
            current = next(destination, None)
        match = None
        if current is not None and current.key == key:
            match, current = current, next(destination, None)
        yield Joined(obj, selected, key, match)
    if on_extraneous is not None and drain:
        while current is not None:
            on_extraneous(current)
            current = next(destination, None)


def settle(
    store: ObjectStore, bucket: str, obj: ObjectInfo, decision: Decision, existing: ObjectHead | None
) -> tuple[bool, tuple[str, ...], ObjectHead | None]:
    """Apply an if_exists decision; a recheck compares the source's HEAD (one more, returned for the copy to use)
    with the destination's before its fallback, which is then counted (a skip by the modification order, or a copy
    no content could decide)."""
    if decision.recheck is None or existing is None:
        return decision.skip, (), None
    source = store.head_object(bucket, obj.key, version_id=obj.version_id)
    same = heads_match(source, existing)
    if same is not None:
        return same, (), source
    return decision.recheck, (BY_TIME_SKIPPED if decision.recheck else UNDECIDED_COPIED,), source
