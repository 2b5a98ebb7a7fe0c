"""Copy one object: CopyObject up to a threshold, parallel UploadPartCopy above it."""

from __future__ import annotations

import contextlib
import functools
import math
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Literal

from s3bulk.job import MAX_PART_SIZE, MiB
from s3bulk.ops.acl import grants_to_carry
from s3bulk.ops.executor import BoundedExecutor
from s3bulk.store import Carried, CopiedPart, Encryption, ObjectHead, ObjectInfo, ObjectStore, StoreError, UploadWatch

MAX_PARTS = 10_000


@dataclass(frozen=True, slots=True)
class CopySettings:
    multipart_threshold: int
    part_size: int
    storage_class: str | None = None
    checksum_algorithm: str = ""  # add-checksum: the checksum S3 computes of the copy


@dataclass(frozen=True, slots=True)
class CopyDone:
    etag: str
    multipart: bool
    source: ObjectHead | None = None  # the source's HEAD when the copy read one: confirming the copy needs no other


@dataclass(frozen=True, slots=True)
class InPlaceCopy:
    head: ObjectHead  # what the HEAD read: a manifest row's size and class come from it
    done: CopyDone | None  # None: the object already has the class asked for (a redo after the copy landed)


def part_ranges(size: int, part_size: int) -> list[tuple[int, int]]:
    """Inclusive byte ranges; the part size grows (in whole MiB) so no object needs over 10,000 parts."""
    if size <= 0:
        return [(0, -1)]
    part = max(part_size, math.ceil(size / MAX_PARTS / MiB) * MiB)
    if part > MAX_PART_SIZE:
        raise StoreError("EntityTooLarge", f"object of {size} bytes exceeds S3's 5 TiB limit", 400)
    return [(start, min(start + part, size) - 1) for start in range(0, size, part)]


class CopyPaused(Exception):
    """A multipart copy stopped submitting parts because its caller's time is short; the upload stays open, every
    part it started has landed, and `multipart_copy(..., upload_id=...)` goes on with it (in another invocation)."""

    def __init__(self, upload_id: str, parts_done: int, parts_total: int) -> None:
        super().__init__(f"paused after {parts_done} of {parts_total} parts (upload {upload_id[:16]}...)")
        self.upload_id = upload_id
        self.parts_done = parts_done
        self.parts_total = parts_total


def copy_object(
    store: ObjectStore,
    parts: BoundedExecutor,
    src_bucket: str,
    obj: ObjectInfo,
    dst_bucket: str,
    dst_key: str,
    settings: CopySettings,
    *,
    keep_going: Callable[[], bool] | None = None,
    upload_id: str = "",
    head: ObjectHead | None = None,
    watch: UploadWatch | None = None,
) -> CopyDone:
    """Use the listed size to choose the path, so a small object costs exactly one request. With `keep_going`, a
    multipart copy may pause (CopyPaused) and be continued from `upload_id`; `head`, the caller's HEAD of the source
    (a content_type filter's), spares the multipart copy its own; `watch` hears of its upload and parts."""
    if obj.size <= settings.multipart_threshold and not upload_id:
        etag = store.copy_object(src_bucket, obj.key, dst_bucket, dst_key, storage_class=settings.storage_class, src_version=obj.version_id)
        return CopyDone(etag, multipart=False)
    head = head or store.head_object(src_bucket, obj.key, version_id=obj.version_id)
    etag = multipart_copy(
        store, parts, src_bucket, obj, dst_bucket, dst_key, settings, head=head, keep_going=keep_going, upload_id=upload_id, watch=watch
    )
    return CopyDone(etag, multipart=True, source=head)


def copy_in_place(
    store: ObjectStore,
    parts: BoundedExecutor,
    bucket: str,
    obj: ObjectInfo,
    settings: CopySettings,
    head: ObjectHead | None = None,
    *,
    keep_acl: bool = False,
    always: bool = False,
    encryption: Encryption | Literal["own"] | None = "own",
) -> InPlaceCopy:
    """Copy an object onto itself (a new storage class, a new checksum), keeping its encryption, grants and lock.

    A CopyObject that names no encryption takes the bucket's default: an object under its own KMS key
    would silently come back under the bucket's. So one HEAD (or the caller's) reads the object's
    encryption, and its Object Lock retention and legal hold (which S3 does not copy either, so the
    new version would be unprotected), which the copy names again (`Carried`); the copy is pinned to
    the ETag the HEAD saw. S3 copies no ACL: with `keep_acl` (a bucket with ACLs enabled, ops/acl.py
    AclsEnabled) the object's ACL is read and, if it grants more than its owner's, named again. With a
    checksum to add, the copy also replaces the metadata with the object's own (REPLACE), which is what
    lets S3 copy an object onto itself with nothing else changed.

    The HEAD, not the listing, decides: a copy redone after it landed (a retry, a redelivered batch)
    finds the class already changed and copies nothing, whatever new ETag the first copy gave.

    `always` (set-encryption and rewind, whose callers have decided a copy is needed): copy even when the class and
    checksum are already as asked. `encryption`: what the copy is encrypted with, the object's own unless given
    (set-encryption's target; None: the bucket's default).
    """
    head = head or store.head_object(bucket, obj.key, version_id=obj.version_id)
    same_class = (head.storage_class or "STANDARD") == (settings.storage_class or "STANDARD")
    if not always and not settings.checksum_algorithm and same_class:
        return InPlaceCopy(head, None)
    grants = grants_to_carry(store, bucket, obj.key, obj.version_id) if keep_acl else None
    carry = Carried(
        head.encryption if encryption == "own" else encryption,
        grants,
        head.retention if _running(head.retention) else None,
        head.legal_hold,
    )
    if head.size > settings.multipart_threshold:
        at = replace(obj, size=head.size, etag=head.etag)
        if head.checksum and not settings.checksum_algorithm:
            # A single CopyObject keeps the object's checksum algorithm; an upload has one only if it asks.
            settings = replace(settings, checksum_algorithm=head.checksum.split(":", 1)[0])
        return InPlaceCopy(
            head, CopyDone(multipart_copy(store, parts, bucket, at, bucket, obj.key, settings, head=head, carry=carry), True)
        )
    etag = store.copy_object(
        bucket,
        obj.key,
        bucket,
        obj.key,
        storage_class=settings.storage_class,
        src_version=obj.version_id,
        checksum_algorithm=settings.checksum_algorithm,
        # A server copies an object onto itself only when the copy changes something. S3 counts a new class, an
        # encryption named or replaced metadata; SeaweedFS only the class or the metadata. So a copy that keeps the
        # class replaces the metadata with the object's own (set-encryption, its undo back to none, rewind).
        metadata=head if settings.checksum_algorithm or same_class else None,
        if_match=head.etag,  # an overwrite since the HEAD fails (412) instead of taking the old encryption or metadata
        carry=carry,
    )
    return InPlaceCopy(head, CopyDone(etag, multipart=False))


# A retention that ends sooner than this is not named again: S3 refuses a retain-until date in the past, and one
# that ends within the copy's own request time protects nothing.
RETENTION_MARGIN = timedelta(minutes=1)


def _running(retention: tuple[str, datetime] | None) -> bool:
    """A retention HEAD still reports after its date has passed is over; naming it again would fail the copy."""
    return retention is not None and retention[1] > datetime.now(UTC) + RETENTION_MARGIN


def multipart_copy(
    store: ObjectStore,
    parts: BoundedExecutor,
    src_bucket: str,
    obj: ObjectInfo,
    dst_bucket: str,
    dst_key: str,
    settings: CopySettings,
    *,
    head: ObjectHead | None = None,
    carry: Carried | None = None,
    keep_going: Callable[[], bool] | None = None,
    upload_id: str = "",
    watch: UploadWatch | None = None,
) -> str:
    """Parts are guarded by CopySourceIfMatch, so a source overwritten mid-copy fails instead of mixing versions.

    Content-Type, user metadata, standard headers and tags are read once (the HEAD, unless the caller
    read it) and re-applied, because UploadPartCopy carries none of them. `carry` names what the
    object keeps that S3 does not copy (copy_in_place's). Any failure aborts the upload so no orphaned parts keep costing storage.

    A copy longer than one Lambda invocation: with `keep_going`, no part is started once it says no; the parts
    in flight land, and CopyPaused carries the open upload. Called again with that `upload_id`, the copy asks
    S3 which parts the upload holds (ListParts) and copies only the others, up to S3's 5 TiB and 10,000 parts.
    """
    version = obj.version_id
    head = head or store.head_object(src_bucket, obj.key, version_id=version)
    if obj.etag and head.etag != obj.etag:
        if upload_id:
            with contextlib.suppress(StoreError):
                store.abort_multipart_upload(dst_bucket, dst_key, upload_id)
        raise StoreError("PreconditionFailed", "the source changed after it was listed", 412)
    ranges = part_ranges(head.size, settings.part_size)
    held = _held_parts(store, dst_bucket, dst_key, upload_id, ranges) if upload_id else None
    if held is None:
        tags = store.get_tags(src_bucket, obj.key, version_id=version)
        upload_id = store.create_multipart_upload(
            dst_bucket,
            dst_key,
            head,
            tags,
            storage_class=settings.storage_class,
            checksum_algorithm=settings.checksum_algorithm,
            carry=carry,
        )
        held = {}
    if watch is not None:
        watch.upload(upload_id)
    futures: dict[int, Future[CopiedPart]] = {}
    waiting: deque[Future[CopiedPart]] = deque()  # this object's parts not yet landed, oldest first
    try:
        for number, (first, last) in enumerate(ranges, start=1):
            if number in held:
                continue
            if keep_going is not None:
                while len(waiting) >= parts.max_workers:  # a pool's worth in flight, so the deadline is asked as parts land
                    waiting.popleft().result()
                if not keep_going():
                    for f in futures.values():
                        f.result()  # every part started lands (or fails the copy) before the pause is reported
                    raise CopyPaused(upload_id, len(held) + len(futures), len(ranges))
            futures[number] = parts.submit(
                functools.partial(store.upload_part_copy, src_version=version),
                src_bucket,
                obj.key,
                dst_bucket,
                dst_key,
                upload_id,
                number,
                first,
                last,
                head.etag,
            )
            waiting.append(futures[number])
            if watch is not None:
                futures[number].add_done_callback(functools.partial(_landed, watch=watch))
        copied = {**held, **{n: f.result() for n, f in futures.items()}}
        if watch is not None and watch.abandoned():  # the upload went on to a child batch, which completes it
            raise CopyPaused(upload_id, len(copied), len(ranges))
        ordered = [copied[n] for n in range(1, len(ranges) + 1)]
        checksums = [p.checksum for p in ordered] if settings.checksum_algorithm else []
        return store.complete_multipart_upload(dst_bucket, dst_key, upload_id, [p.etag for p in ordered], part_checksums=checksums)
    except CopyPaused:
        raise
    except BaseException:
        for f in futures.values():
            f.cancel()
        if watch is not None and watch.abandoned():
            raise  # the upload is a child batch's now: aborting it would lose the parts the child goes on from
        for f in futures.values():
            if not f.cancelled():
                f.exception()  # wait, so no part lands after the abort
        # The original error is what the report needs; a lifecycle rule reaps a failed abort.
        with contextlib.suppress(StoreError):
            store.abort_multipart_upload(dst_bucket, dst_key, upload_id)
        raise


def _landed(f: Future[CopiedPart], watch: UploadWatch) -> None:
    if not f.cancelled() and f.exception() is None:
        watch.landed()


def _held_parts(store: ObjectStore, bucket: str, key: str, upload_id: str, ranges: list[tuple[int, int]]) -> dict[int, CopiedPart] | None:
    """The parts an earlier invocation's upload already holds, by number; None when the upload is gone (completed,
    aborted, or reaped) or holds a part that does not fit these ranges (then it is aborted): start a new one."""
    try:
        listed = store.list_parts(bucket, key, upload_id)
    except StoreError as exc:
        if exc.code == "NoSuchUpload":
            return None
        raise
    held: dict[int, CopiedPart] = {}
    for p in listed:
        if not 1 <= p.number <= len(ranges) or p.size != ranges[p.number - 1][1] - ranges[p.number - 1][0] + 1:
            with contextlib.suppress(StoreError):
                store.abort_multipart_upload(bucket, key, upload_id)
            return None
        held[p.number] = CopiedPart(p.etag, p.checksum)
    return held
