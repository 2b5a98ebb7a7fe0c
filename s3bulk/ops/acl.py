"""Operation 'set-acl': a canned ACL on each object."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from s3bulk.store import ObjectStore


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
