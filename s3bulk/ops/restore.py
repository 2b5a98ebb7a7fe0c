"""Operation 'restore': ask S3 to bring an archived object back for a number of days."""

from __future__ import annotations

from s3bulk.job import ARCHIVED, Restore
from s3bulk.store import ObjectInfo, ObjectStore


def restore_object(store: ObjectStore, bucket: str, obj: ObjectInfo, spec: Restore) -> bool:
    """False, with no request, for an object that is not archived; False too when a restore already runs.

    The storage class comes from the listing, so objects in other classes cost nothing.
    A restore already in progress (409) or done (200) is not an error: a rerun is safe.
    """
    if (obj.storage_class or "STANDARD") not in ARCHIVED:
        return False
    return store.restore_object(bucket, obj.key, spec.days, spec.tier, version_id=obj.version_id)
