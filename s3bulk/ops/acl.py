"""Operation 'set-acl': a canned ACL on each object."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from s3bulk.errors import ErrorKind, classify
from s3bulk.store import ObjectStore, StoreError


def acl_doc(policy: Mapping[str, Any]) -> dict[str, Any]:
    """An AccessControlPolicy as the undo journal keeps it: owner id, and grants without display names, in one order,
    so two reads of the same ACL compare equal and the journal can put it back whole (PutObjectAcl takes it as it is)."""

    def grant(g: Mapping[str, Any]) -> dict[str, Any]:
        grantee = {k: v for k, v in dict(g.get("Grantee", {})).items() if k != "DisplayName"}
        return {"Grantee": grantee, "Permission": g.get("Permission", "")}

    grants = sorted((grant(g) for g in policy.get("Grants", [])), key=lambda g: json.dumps(g, sort_keys=True))
    return {"Owner": {"ID": dict(policy.get("Owner", {})).get("ID", "")}, "Grants": grants}


def set_acl(store: ObjectStore, bucket: str, key: str, acl: str, *, version_id: str = "") -> bool:
    """PutObjectAcl; a bucket whose Object Ownership is BucketOwnerEnforced (ACLs disabled) fails each key
    (AccessControlListNotSupported, whose hint in errors.py says what to do)."""
    store.put_acl(bucket, key, acl, version_id=version_id)
    return True


class AclsEnabled:
    """Per bucket, asked once: may its objects carry ACLs that an in-place copy must carry over?

    S3 copies no ACL, so a copy of an object onto itself (set-storage-class, add-checksum) would
    leave it private. A bucket whose Object Ownership is BucketOwnerEnforced has ACLs disabled:
    nothing to carry, no read. Any other answer, or none (no permission, a server without the
    call), means each such copy reads the object's ACL first: a wrong "yes" costs a GET per
    object, a wrong "no" would drop grants. A transient failure is not remembered. The CLI asks
    once per run; the stack's worker once per batch it works.
    """

    def __init__(self, store: ObjectStore) -> None:
        self._store = store
        self._known: dict[str, bool] = {}
        self._lock = threading.Lock()

    def __call__(self, bucket: str) -> bool:
        with self._lock:
            if bucket in self._known:
                return self._known[bucket]
            try:
                enabled = self._store.object_ownership(bucket) != "BucketOwnerEnforced"
            except StoreError as exc:
                if classify(exc) is ErrorKind.RETRYABLE:
                    return True  # this time only: the next copy asks again
                enabled = True  # denied, or a server without the call: no answer will come
            self._known[bucket] = enabled
            return enabled


def grants_to_carry(store: ObjectStore, bucket: str, key: str, version_id: str = "") -> dict[str, Any] | None:
    """The object's ACL when it grants anything beyond its owner's FULL_CONTROL (what a private copy has anyway)."""
    try:
        policy = store.get_acl(bucket, key, version_id=version_id)
    except StoreError as exc:
        if exc.code != "AccessDenied":
            raise
        raise StoreError(
            exc.code,
            "reading the object's ACL, which a copy onto itself must name again (S3 copies none), was denied: allow "
            "s3:GetObjectAcl, or s3:GetBucketOwnershipControls if the bucket has ACLs disabled (then nothing is read)",
            exc.status,
        ) from exc
    owner = dict(policy.get("Owner", {})).get("ID", "")
    for grant in policy.get("Grants", []):
        grantee = dict(grant.get("Grantee", {}))
        if not (grant.get("Permission") == "FULL_CONTROL" and grantee.get("ID") == owner and owner):
            return policy
    return None
