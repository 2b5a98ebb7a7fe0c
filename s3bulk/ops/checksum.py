"""Operation 'add-checksum': have S3 compute and keep an additional checksum of each object, by copying it onto itself.

The tool-side counterpart of S3 Batch Operations' "Compute checksum". Up to the multipart
threshold it is one CopyObject that replaces the object's metadata with its own
(MetadataDirective REPLACE: the same Content-Type, user metadata and standard headers, read by
one HEAD), which is what lets an object be copied onto itself; tags and the storage class are
kept. Above it, a multipart copy whose upload asks for the checksum: S3 checksums each
UploadPartCopy and the completion carries the parts' checksums (a composite checksum, or a
full-object one for CRC64NVME). An object that already carries a checksum of the algorithm is
left alone, so a rerun costs one HEAD per object.
"""

from __future__ import annotations

from dataclasses import replace

from s3bulk.ops.copies import CopySettings, multipart_copy
from s3bulk.ops.executor import BoundedExecutor
from s3bulk.store import ObjectInfo, ObjectStore, StoreError


def add_checksum(
    store: ObjectStore, parts: BoundedExecutor, bucket: str, obj: ObjectInfo, algorithm: str, settings: CopySettings
) -> str | None:
    """The new ETag, or None when the object already has a checksum of `algorithm`."""
    head = store.head_object(bucket, obj.key)
    if head.checksum.split(":", 1)[0] == algorithm:
        return None
    if obj.etag and head.etag != obj.etag:
        raise StoreError("PreconditionFailed", "the object changed after it was listed; rerun to pick up the new version", 412)
    if head.size > settings.multipart_threshold:
        at = replace(obj, size=head.size, etag=head.etag)
        return multipart_copy(
            store, parts, bucket, at, bucket, obj.key, replace(settings, storage_class=head.storage_class, checksum_algorithm=algorithm)
        )
    return store.copy_object(
        bucket, obj.key, bucket, obj.key, storage_class=head.storage_class, checksum_algorithm=algorithm, metadata=head, if_match=head.etag
    )  # pinned to what the HEAD read: an overwrite in between fails (412) instead of taking the old metadata
