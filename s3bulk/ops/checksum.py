"""Operation 'add-checksum': have S3 compute and keep an additional checksum of each object, by copying it onto itself.

The tool-side counterpart of S3 Batch Operations' "Compute checksum". The copy replaces the
object's metadata with its own (MetadataDirective REPLACE: the same Content-Type, user
metadata and standard headers, read by one HEAD), which is what lets an object be copied onto
itself; tags and the storage class are kept. An object that already carries a checksum of the
algorithm is left alone, so a rerun costs one HEAD per object.
"""

from __future__ import annotations

from s3bulk.job import MAX_COPY_OBJECT_SIZE
from s3bulk.store import ObjectInfo, ObjectStore, StoreError


def add_checksum(store: ObjectStore, bucket: str, obj: ObjectInfo, algorithm: str) -> str | None:
    """The new ETag, or None when the object already has a checksum of `algorithm`."""
    head = store.head_object(bucket, obj.key)
    if head.checksum.split(":", 1)[0] == algorithm:
        return None
    if obj.etag and head.etag != obj.etag:
        raise StoreError("PreconditionFailed", "the object changed after it was listed; rerun to pick up the new version", 412)
    if head.size > MAX_COPY_OBJECT_SIZE:
        raise StoreError(
            "EntityTooLarge",
            f"add-checksum copies an object in one CopyObject, which takes at most 5 GiB; this one is {head.size:,} bytes",
            400,
        )
    return store.copy_object(
        bucket, obj.key, bucket, obj.key, storage_class=head.storage_class, checksum_algorithm=algorithm, metadata=head, if_match=head.etag
    )  # pinned to what the HEAD read: an overwrite in between fails (412) instead of taking the old metadata
