"""Relay one object between stores that cannot copy server-side: ObjectReader -> ObjectWriter, bounded memory.

Another provider, another account with no shared permissions, another partition:
S3's CopyObject needs one endpoint and one set of credentials that can read the
source and write the destination. The relay reads with ranged GETs pinned to the
source's ETag (an overwrite mid-relay fails, never mixes versions) and writes one
PutObject or a multipart upload, every body with Content-MD5, aborted on failure.
Content-Type, user metadata, the standard headers and tags are carried, as
CopyObject carries them.

On the stack a relay larger than a worker's time pauses, as a server-side copy does (ops/copies.py): once
`keep_going` says time is short it sends no more parts, waits for those on the wire, and raises CopyPaused
with the open upload; the next invocation asks ListParts what the upload holds, reads the source from the
first byte it lacks, and goes on, so an object of any size crosses in as many invocations as it takes, each
byte sent once, its CRC-32 checked whole at the end.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from s3bulk.bodies.budget import MemoryBudget
from s3bulk.bodies.reader import open_object
from s3bulk.bodies.writer import ABANDONED, THRESHOLD, ObjectWriter, part_crc32
from s3bulk.ops.copies import CopyDone, CopyPaused
from s3bulk.store import ObjectHead, ObjectInfo, ObjectStore, StoreError, UploadWatch

# Read in the writer's part size, so each read fills about one part.
CHUNK = 8 * 1024 * 1024


def relay_object(
    src: ObjectStore,
    dst: ObjectStore,
    src_bucket: str,
    obj: ObjectInfo,
    dst_bucket: str,
    dst_key: str,
    *,
    storage_class: str | None = None,
    submit: Callable[..., Any] | None = None,
    budget: MemoryBudget | None = None,
    keep_going: Callable[[], bool] | None = None,
    upload_id: str = "",
    head: ObjectHead | None = None,
    watch: UploadWatch | None = None,
) -> CopyDone:
    """One HEAD and one GetObjectTagging on the source, its bytes streamed across; returns the new object's ETag.

    `keep_going` (the stack's worker): asked after each part; when it says no, the relay pauses (CopyPaused).
    `upload_id`: the upload a paused relay left open, to go on with. `head`: the caller's HEAD of the source (a
    content_type filter's), instead of one more. `watch`: the batch run, told of the upload and each part (a frozen
    run hands them on with the object)."""
    version = obj.version_id  # a point-in-time copy's (source.as_of) or a manifest row's; "" reads the current object
    head = head or src.head_object(src_bucket, obj.key, version_id=version)
    if obj.etag and head.etag != obj.etag:
        if upload_id:  # the source changed since the relay paused: its parts are of another object
            _abort(dst, dst_bucket, dst_key, upload_id)
        raise StoreError("PreconditionFailed", "the source changed after it was listed", 412)
    tags = src.get_tags(src_bucket, obj.key, version_id=version)
    writer = ObjectWriter(
        dst,
        dst_bucket,
        dst_key,
        head=head,
        tags=tags,
        storage_class=storage_class,
        size_hint=head.size,
        submit=submit,
        budget=budget,
        watch=watch,
    )
    start = _resume(writer, dst, dst_bucket, dst_key, upload_id) if upload_id else 0
    total = -(-head.size // writer.part_size)
    try:
        with open_object(src, src_bucket, obj.key, head=head, submit=submit, budget=budget, version_id=version) as body, writer:
            if start:
                body.seek(start)
            while block := body.read(CHUNK):
                writer.write(block)
                if keep_going is not None and writer.parts and writer.written < head.size and not keep_going():
                    raise CopyPaused(writer.pause(), writer.parts, total)
            if writer.written != head.size:  # raised inside the block: the writer aborts instead of committing
                raise StoreError("IncompleteBody", f"read {writer.written} bytes of {head.size}; nothing was written")
    except StoreError as exc:
        if exc.code == ABANDONED:  # frozen: the upload went on with the object to a child batch
            raise CopyPaused(writer.upload_id, writer.parts, total) from exc
        raise
    return CopyDone(writer.etag, multipart=head.size > THRESHOLD, source=head)


def _resume(writer: ObjectWriter, dst: ObjectStore, bucket: str, key: str, upload_id: str) -> int:
    """Take up a paused (or frozen) relay's upload: the bytes its parts 1..n hold, n the longest run from part 1 of
    parts of the writer's part size with their CRC-32. Parts past a gap (a frozen relay's part that never landed, with
    later ones that did) are sent again under the same numbers, which replaces them; an upload that is gone starts
    over."""
    try:
        parts = sorted(dst.list_parts(bucket, key, upload_id), key=lambda p: p.number)
    except StoreError as exc:
        if exc.code == "NoSuchUpload":
            return 0
        raise
    held = []
    for i, p in enumerate(parts, 1):
        if p.number != i or p.size != writer.part_size or part_crc32(p) is None:
            break
        held.append(p)
    writer.resume(upload_id, held)
    return writer.written


def _abort(dst: ObjectStore, bucket: str, key: str, upload_id: str) -> None:
    with contextlib.suppress(StoreError):
        dst.abort_multipart_upload(bucket, key, upload_id)
