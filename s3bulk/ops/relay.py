"""Relay one object between stores that cannot copy server-side: ObjectReader -> ObjectWriter, bounded memory.

Another provider, another account with no shared permissions, another partition:
S3's CopyObject needs one endpoint and one set of credentials that can read the
source and write the destination. The relay reads with ranged GETs pinned to the
source's ETag (an overwrite mid-relay fails, never mixes versions) and writes one
PutObject or a multipart upload, every body with Content-MD5, aborted on failure.
Content-Type, user metadata, the standard headers and tags are carried, as
CopyObject carries them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from s3bulk.bodies.budget import MemoryBudget
from s3bulk.bodies.reader import open_object
from s3bulk.bodies.writer import THRESHOLD, ObjectWriter
from s3bulk.ops.copies import CopyDone
from s3bulk.store import ObjectInfo, ObjectStore, StoreError

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
) -> CopyDone:
    """One HEAD and one GetObjectTagging on the source, its bytes streamed across; returns the new object's ETag."""
    head = src.head_object(src_bucket, obj.key)
    if obj.etag and head.etag != obj.etag:
        raise StoreError("PreconditionFailed", "the source changed after it was listed", 412)
    tags = src.get_tags(src_bucket, obj.key)
    writer = ObjectWriter(
        dst, dst_bucket, dst_key, head=head, tags=tags, storage_class=storage_class, size_hint=head.size, submit=submit, budget=budget
    )
    with open_object(src, src_bucket, obj.key, head=head, submit=submit, budget=budget) as body, writer:
        while block := body.read(CHUNK):
            writer.write(block)
        if writer.written != head.size:  # raised inside the block: the writer aborts instead of committing
            raise StoreError("IncompleteBody", f"read {writer.written} bytes of {head.size}; nothing was written")
    return CopyDone(writer.etag, multipart=head.size > THRESHOLD)
