"""A move deletes a source only after its copy is confirmed (ops/identity.py confirm_copy, the rule every copy applies)."""

from __future__ import annotations

from s3bulk.store import UNKNOWN_SIZE, ObjectInfo, ObjectStore, StoreError


def etag_comparable(etag: str) -> bool:
    """Single-part ETags are content MD5s; multipart ones ('...-N') depend on part sizes."""
    return bool(etag) and "-" not in etag


def destination_already_moved(store: ObjectStore, obj: ObjectInfo, dst_bucket: str, dst_key: str) -> bool:
    """For a redelivered move whose source is gone: true only if the destination holds the listed object.

    A manifest row without a size can only be matched by the destination's existence.
    """
    try:
        head = store.head_object(dst_bucket, dst_key)
    except StoreError:
        return False
    if obj.size == UNKNOWN_SIZE:
        return True
    if head.size != obj.size:
        return False
    return not (etag_comparable(obj.etag) and etag_comparable(head.etag)) or head.etag == obj.etag
