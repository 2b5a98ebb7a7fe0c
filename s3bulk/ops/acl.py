"""Operation 'set-acl': a canned ACL on each object."""

from __future__ import annotations

from s3bulk.store import ObjectStore, StoreError


def set_acl(store: ObjectStore, bucket: str, key: str, acl: str, *, version_id: str = "") -> bool:
    """PutObjectAcl; a bucket whose Object Ownership is BucketOwnerEnforced (ACLs disabled) fails each key, saying so."""
    try:
        store.put_acl(bucket, key, acl, version_id=version_id)
    except StoreError as exc:
        if exc.code == "AccessControlListNotSupported":
            raise StoreError(
                exc.code,
                "the bucket has ACLs disabled (Object Ownership: bucket owner enforced), so objects take no ACL; "
                "grant access with a bucket policy, or set Object Ownership to allow ACLs",
                exc.status,
            ) from exc
        raise
    return True
