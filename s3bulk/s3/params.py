"""How the store port's arguments become S3's request parameters and headers, on both request paths: the expected
owners, Requester Pays, encryption, canned ACLs and grants, and what an in-place copy carries (store.Carried)."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any

from s3bulk.store import Body, Carried, Encryption, RequestOptions, StoreError


def content_md5(body: Body) -> str:
    """The Content-MD5 header: the server refuses a body that does not match it (BadDigest)."""
    return base64.b64encode(hashlib.md5(body, usedforsecurity=False).digest()).decode()


def request_headers(opts: RequestOptions, bucket: str, *, source: str | None = None, write: bool = False) -> dict[str, str]:
    """The HTTP headers for a request on `bucket` (reading `source`, writing new objects if `write`)."""
    h: dict[str, str] = {}
    if owner := opts.owner(bucket):
        h["x-amz-expected-bucket-owner"] = owner
    if source is not None and (src_owner := opts.owner(source)):
        h["x-amz-source-expected-bucket-owner"] = src_owner
    if opts.requester_pays:
        h["x-amz-request-payer"] = "requester"
    if write and opts.sse:
        h["x-amz-server-side-encryption"] = opts.sse
        if opts.kms_key_id:
            h["x-amz-server-side-encryption-aws-kms-key-id"] = opts.kms_key_id
    if write and opts.acl:
        h["x-amz-acl"] = opts.acl
    return h


def encryption_of(r: Mapping[str, Any]) -> Encryption | None:
    """A HEAD's encryption headers, as a copy onto itself must name them again."""
    if not r.get("ServerSideEncryption"):
        return None
    return Encryption(str(r["ServerSideEncryption"]), str(r.get("SSEKMSKeyId") or ""), bool(r.get("BucketKeyEnabled")))


def encryption_headers(encryption: Encryption | None) -> dict[str, str]:
    """The headers that encrypt a copy as `encryption` says (an in-place copy keeps the object's own); they replace
    the store's own encryption headers whole, on both request paths."""
    if encryption is None:
        return {}
    h = {"x-amz-server-side-encryption": encryption.sse}
    if encryption.kms_key_id:
        h["x-amz-server-side-encryption-aws-kms-key-id"] = encryption.kms_key_id
    if encryption.bucket_key:
        h["x-amz-server-side-encryption-bucket-key-enabled"] = "true"
    return h


def encryption_params(encryption: Encryption | None) -> dict[str, Any]:
    """encryption_headers as botocore parameters (BucketKeyEnabled is a boolean there)."""
    return {PARAMS[k]: v == "true" if k.endswith("-bucket-key-enabled") else v for k, v in encryption_headers(encryption).items()}


PARAMS = {
    "x-amz-expected-bucket-owner": "ExpectedBucketOwner",
    "x-amz-source-expected-bucket-owner": "ExpectedSourceBucketOwner",
    "x-amz-request-payer": "RequestPayer",
    "x-amz-server-side-encryption": "ServerSideEncryption",
    "x-amz-server-side-encryption-aws-kms-key-id": "SSEKMSKeyId",
    "x-amz-server-side-encryption-bucket-key-enabled": "BucketKeyEnabled",  # only from encryption_headers
    "x-amz-acl": "ACL",
}


_GRANT_PARAMS = {
    "FULL_CONTROL": "GrantFullControl",
    "READ": "GrantRead",
    "WRITE": "GrantWrite",
    "READ_ACP": "GrantReadACP",
    "WRITE_ACP": "GrantWriteACP",
}


_GRANTEE_FIELDS = (("ID", "id"), ("URI", "uri"), ("EmailAddress", "emailAddress"))


def grant_headers(policy: Mapping[str, Any]) -> dict[str, str]:
    """An ACL's grants as PutObjectAcl's x-amz-grant-* parameters, which replace the whole ACL as an AccessControlPolicy
    body does (and which every S3-compatible server reads; some ignore the body). {} when a grant has no form here."""
    out: dict[str, list[str]] = {}
    for grant in policy.get("Grants", []):
        param = _GRANT_PARAMS.get(str(grant.get("Permission", "")))
        grantee = dict(grant.get("Grantee", {}))
        named = next((f'{name}="{grantee[field]}"' for field, name in _GRANTEE_FIELDS if grantee.get(field)), None)
        if param is None or named is None:
            return {}
        out.setdefault(param, []).append(named)
    return {param: ", ".join(names) for param, names in out.items()}


def apply_carry(kwargs: dict[str, Any], carry: Carried | None) -> None:
    """Add CopyObject's (or CreateMultipartUpload's) parameters that name again what S3 does not copy; the carried
    encryption replaces the store's own whole (a KMS key id of the job's must not stay beside AES256)."""
    if carry is None:
        return
    if carry.encryption is not None:
        kwargs.pop("SSEKMSKeyId", None)
    kwargs.update(carry_params(carry))


def carry_params(carry: Carried) -> dict[str, Any]:
    params: dict[str, Any] = {**encryption_params(carry.encryption), **acl_params(carry.grants)}
    if carry.retention is not None:
        params.update(ObjectLockMode=carry.retention[0], ObjectLockRetainUntilDate=carry.retention[1])
    if carry.legal_hold:
        params["ObjectLockLegalHoldStatus"] = "ON"
    return params


def acl_params(policy: Mapping[str, Any] | None) -> dict[str, str]:
    """A copy's (or an upload's) grants as x-amz-grant-* parameters; a grant with no such form fails the object,
    never dropped. WRITE means nothing on an object, and CopyObject and CreateMultipartUpload take no GrantWrite."""
    if policy is None:
        return {}
    params = grant_headers({**policy, "Grants": [g for g in policy.get("Grants", []) if g.get("Permission") != "WRITE"]})
    if not params:
        unnamed = "; ".join(_grant_text(g) for g in policy.get("Grants", []) if not grant_headers({"Grants": [g]}))
        raise StoreError(
            "AclNotCarried",
            f"the object's ACL has a grant a copy cannot name again ({unnamed or 'none named'}), so the copy would lose it; "
            "give the object a canned ACL with a set-acl job, or remove that grant, then rerun",
            400,
        )
    return params


def _grant_text(grant: Mapping[str, Any]) -> str:
    grantee = dict(grant.get("Grantee", {}))
    who = next((f"{field} {grantee[field]}" for field in ("ID", "URI", "EmailAddress") if grantee.get(field)), grantee.get("Type", "?"))
    return f"{grant.get('Permission', '?')} to {who}"


def version_param(version_id: str) -> dict[str, str]:
    return {"VersionId": version_id} if version_id else {}
