"""rewind: a key made what it was at source.as_of, in place, with no version ever deleted.

The listing (listing.AsOfView) names, for each key, the version it had then (or none: it did not exist, or was a
delete marker) and the version current now. A key already as it was costs nothing. One that had another version then
gets that version copied onto itself: a new current version with its body, metadata and tags (S3 copies those),
and its storage class, encryption, grants and running Object Lock named again (S3 does not copy those; as
copy_in_place does for set-storage-class). One that did not exist then gets a delete marker. Every older version
stays, so `s3bulk undo` of the journal, or another rewind, brings the later state back.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from s3bulk.ops.copies import CopySettings, copy_in_place
from s3bulk.ops.executor import BoundedExecutor
from s3bulk.source.selection import as_it_was, hides
from s3bulk.store import ObjectInfo, ObjectStore, StoreError

# The undo journal's `what` for a rewound key: before is the version that was current ("" for none), after what
# HEAD shows once rewound ({"etag"} of the restored copy, or {"absent": true} under the new delete marker).
WHAT = "version"


@dataclass(frozen=True, slots=True)
class Rewound:
    changed: bool
    etag: str = ""  # the new current version's, when a version was restored
    after: dict[str, object] | None = None  # the journal's `after`


def check_history(store: ObjectStore, bucket: str) -> None:
    """A point in time needs the bucket's history: without versioning on, there is none to read, and a rewind's delete
    marker would delete an object for good."""
    status = store.bucket_versioning(bucket)
    if status != "Enabled":
        state = f"versioning {status.lower()}" if status else "no versioning"
        raise StoreError(
            "SourceNotVersioned",
            f"s3://{bucket} has {state}, so it keeps no history to go back to (and a delete marker there would delete for "
            "good); source.as_of needs a bucket with versioning enabled",
            400,
        )


def rewind_key(
    store: ObjectStore, parts: BoundedExecutor, bucket: str, obj: ObjectInfo, settings: CopySettings, *, keep_acl: bool
) -> Rewound:
    """Make `obj.key` the version `obj.version_id` names ("" : absent), unless `obj.replaces` says it already is."""
    if as_it_was(obj):
        return Rewound(False)
    if hides(obj):  # it did not exist then: a delete marker, which keeps every version
        store.delete_object(bucket, obj.key)
        return Rewound(True, after={"absent": True})
    head = store.head_object(bucket, obj.key, version_id=obj.version_id)
    at = replace(settings, storage_class=head.storage_class)
    # That version's own encryption named again (the copy would otherwise take the bucket's default).
    copy = copy_in_place(store, parts, bucket, replace(obj, size=head.size), at, head, keep_acl=keep_acl, always=True)
    assert copy.done is not None
    return Rewound(True, copy.done.etag, {"etag": copy.done.etag})


def current_state(store: ObjectStore, bucket: str, key: str) -> dict[str, object]:
    """What undo compares with a rewind's `after`: the current object's ETag, or absent (a delete marker, or no key)."""
    try:
        return {"etag": store.head_object(bucket, key).etag}
    except StoreError as exc:
        if exc.code in {"NoSuchKey", "404", "NotFound", "MethodNotAllowed"}:
            return {"absent": True}
        raise


def restore_state(
    store: ObjectStore, parts: BoundedExecutor, bucket: str, key: str, version_id: str, settings: CopySettings, *, keep_acl: bool
) -> None:
    """Undo of a rewound key (its state checked by the caller): the version current before the rewind made current
    again, or ("") the key absent again."""
    rewind_key(store, parts, bucket, ObjectInfo(key, 0, version_id=version_id), settings, keep_acl=keep_acl)
