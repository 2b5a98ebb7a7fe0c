"""Operation 'verify': is each destination object the same bytes as its source?

The cheapest proof that holds is used, per object:
1. sizes (two HEADs), then
2. the S3 additional checksum both carry (same algorithm; a composite one only
   compares when both have the same part layout), else
3. plain MD5 ETags (single-part, not SSE-KMS), else
4. SHA-256 of both bodies, streamed in chunks (GetObject twice; never held whole).
A mismatch is a per-object failure naming what differed.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from s3bulk.store import ObjectHead, ObjectInfo, ObjectStore, StoreError

_MD5_ETAG = re.compile(r'^"[0-9a-f]{32}"$')


@dataclass(frozen=True, slots=True)
class Verified:
    how: str  # checksum | etag | sha256
    src_checksum: str
    dst_checksum: str


def _mismatch(code: str, message: str) -> StoreError:
    return StoreError(code, message, 409)


def _sha256(store: ObjectStore, bucket: str, key: str, version_id: str = "") -> str:
    h = hashlib.sha256()
    for chunk in store.read_object(bucket, key, version_id=version_id):
        h.update(chunk)
    return "SHA256:" + h.hexdigest()


def _plain_md5(head: ObjectHead) -> bool:
    return bool(_MD5_ETAG.match(head.etag)) and not head.encrypted_kms


def verify_object(
    store: ObjectStore, src_bucket: str, obj: ObjectInfo, dst_bucket: str, dst_key: str, dst_store: ObjectStore | None = None
) -> Verified:
    """`dst_store` is the destination's when it is another endpoint or account (a relayed copy). A listed version
    (`obj.version_id`: source.as_of's, or a manifest row's) is the source compared; the destination's current object is
    compared with it."""
    there = dst_store or store
    src = store.head_object(src_bucket, obj.key, version_id=obj.version_id)
    try:
        dst = there.head_object(dst_bucket, dst_key)
    except StoreError as exc:
        if exc.code in {"NoSuchKey", "404", "NotFound"}:
            raise _mismatch("MissingDestination", f"no destination object s3://{dst_bucket}/{dst_key}") from exc
        raise
    if src.size != dst.size:
        raise _mismatch("SizeMismatch", f"source is {src.size} bytes, destination {dst.size}")
    if src.checksum and dst.checksum and src.checksum.split(":")[0] == dst.checksum.split(":")[0]:
        if src.checksum == dst.checksum:
            return Verified("checksum", src.checksum, dst.checksum)
        if "-" not in src.checksum and "-" not in dst.checksum:
            raise _mismatch("ChecksumMismatch", f"source {src.checksum}, destination {dst.checksum}")
    if _plain_md5(src) and _plain_md5(dst):
        if src.etag != dst.etag:
            raise _mismatch("ContentMismatch", f"source MD5 {src.etag}, destination MD5 {dst.etag}")
        return Verified("etag", "MD5:" + src.etag.strip('"'), "MD5:" + dst.etag.strip('"'))
    a, b = _sha256(store, src_bucket, obj.key, obj.version_id), _sha256(there, dst_bucket, dst_key)
    if a != b:
        raise _mismatch("ContentMismatch", f"source {a}, destination {b}")
    return Verified("sha256", a, b)
