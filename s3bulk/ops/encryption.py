"""set-encryption: each object ends under the server-side encryption the job names, and nothing else about it changes.

Where S3 can do it in place (AWS; an SSE-S3 or SSE-KMS object, to SSE-KMS under a key named by its ARN, not under
Object Lock) UpdateObjectEncryption re-wraps the object's data key: no data moves, and the ETag, dates, checksum
and storage class stay. Anything else is copied onto itself (ops/copies.copy_in_place) under the new encryption,
keeping its body, metadata, tags, storage class, ACL grants and Object Lock, as S3 Batch Operations' copy would
(a new version where the bucket keeps versions). One HEAD decides first: an object already as asked is skipped, so a
redone batch changes nothing twice.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

from s3bulk.job import SetEncryption
from s3bulk.ops.copies import CopySettings, copy_in_place
from s3bulk.ops.executor import BoundedExecutor
from s3bulk.store import Encryption, ObjectHead, ObjectInfo, ObjectStore

# The encryptions UpdateObjectEncryption takes an object from (not unencrypted, DSSE-KMS or SSE-C).
UPDATABLE_FROM = frozenset({"AES256", "aws:kms"})


@dataclass(frozen=True, slots=True)
class EncryptionChange:
    changed: bool
    before: Encryption | None  # what HEAD reported (None: none), for the undo journal
    head: ObjectHead
    etag: str  # the object's ETag now: the same when S3 changed it in place
    in_place: bool  # UpdateObjectEncryption did it (no data moved)


def target_of(asked: SetEncryption) -> Encryption:
    return Encryption(asked.sse, asked.kms_key_id or "", asked.bucket_key)


def already(current: Encryption | None, target: Encryption) -> bool:
    """The object is as asked. A key named by id matches the ARN HEAD reports; with no key named, any KMS key does
    (which key is the account's aws/s3 one, HEAD does not say)."""
    if current is None or current.sse != target.sse:
        return False
    if target.sse == "AES256":
        return True
    named = target.kms_key_id
    if named and current.kms_key_id != named and not current.kms_key_id.endswith("/" + named):
        return False
    return target.sse != "aws:kms" or current.bucket_key == target.bucket_key


def set_encryption(
    store: ObjectStore,
    parts: BoundedExecutor,
    bucket: str,
    obj: ObjectInfo,
    target: Encryption,
    settings: CopySettings,
    *,
    keep_acl: bool = False,
) -> EncryptionChange:
    head = store.head_object(bucket, obj.key, version_id=obj.version_id)
    if already(head.encryption, target):
        return EncryptionChange(False, head.encryption, head, head.etag, False)
    # S3 refuses UpdateObjectEncryption under Object Lock: such an object gets a new version under the new encryption.
    locked = head.legal_hold or (head.retention is not None and head.retention[1] > datetime.now(UTC))
    arn = target.kms_key_id if target.kms_key_id.startswith("arn:") else ""
    before = head.encryption
    if (
        target.sse == "aws:kms"
        and arn
        and before is not None
        and before.sse in UPDATABLE_FROM
        and not locked
        and store.updates_encryption(bucket)
    ):
        store.update_object_encryption(bucket, obj.key, arn, bucket_key=target.bucket_key, version_id=obj.version_id)
        return EncryptionChange(True, before, head, head.etag, True)
    # The copy keeps the object's own class (the job names none), and a small one stays one CopyObject.
    at = replace(settings, storage_class=head.storage_class)
    copy = copy_in_place(store, parts, bucket, replace(obj, size=head.size), at, head, keep_acl=keep_acl, always=True, encryption=target)
    assert copy.done is not None
    return EncryptionChange(True, before, head, copy.done.etag, False)


def encryption_doc(encryption: Encryption | None) -> dict[str, object] | None:
    """An encryption as the per-key log's undo record keeps it (None: the object had none)."""
    if encryption is None:
        return None
    return {"sse": encryption.sse, "kms_key_id": encryption.kms_key_id, "bucket_key": encryption.bucket_key}


def encryption_from_doc(doc: object) -> Encryption | None:
    if not isinstance(doc, dict) or not doc.get("sse"):
        return None
    return Encryption(str(doc["sse"]), str(doc.get("kms_key_id") or ""), bool(doc.get("bucket_key")))
