"""Operation 'add-checksum': have S3 compute and keep an additional checksum of each object, by copying it onto itself.

The tool-side counterpart of S3 Batch Operations' "Compute checksum". Up to the multipart
threshold it is one CopyObject that replaces the object's metadata with its own
(MetadataDirective REPLACE: the same Content-Type, user metadata and standard headers, read by
one HEAD), which is what lets an object be copied onto itself; tags and the storage class are
kept, and so is its encryption (ops/copies.py copy_in_place). Above it, a multipart copy
whose upload asks for the checksum: S3 checksums each UploadPartCopy and the completion carries the parts' checksums (a composite checksum, or a
full-object one for CRC64NVME). An object that already carries a checksum of the algorithm is
left alone, so a rerun costs one HEAD per object.
"""

from __future__ import annotations

from dataclasses import replace

from s3bulk.ops.copies import CopySettings, copy_in_place
from s3bulk.ops.executor import BoundedExecutor
from s3bulk.store import ObjectHead, ObjectInfo, ObjectStore


def add_checksum(
    store: ObjectStore,
    parts: BoundedExecutor,
    bucket: str,
    obj: ObjectInfo,
    algorithm: str,
    settings: CopySettings,
    *,
    keep_acl: bool = False,
    head: ObjectHead | None = None,
) -> str | None:
    """The new ETag, or None when the object already has a checksum of `algorithm`; `keep_acl` as copy_in_place's;
    `head`: the caller's HEAD of the object (a content_type filter's), instead of one more."""
    head = head or store.head_object(bucket, obj.key, version_id=obj.version_id)
    if head.checksum.split(":", 1)[0] == algorithm:
        return None
    at = replace(settings, storage_class=head.storage_class, checksum_algorithm=algorithm)
    done = copy_in_place(store, parts, bucket, obj, at, head, keep_acl=keep_acl).done
    assert done is not None  # a copy that adds a checksum is never "already done" by its class
    return done.etag
