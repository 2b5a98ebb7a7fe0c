"""Operations 'set-retention' and 'set-legal-hold': Object Lock settings on each object, one call each."""

from __future__ import annotations

from datetime import UTC, datetime

from s3bulk.job import Retention
from s3bulk.store import ObjectStore, StoreError


def _explained(exc: StoreError, what: str) -> StoreError:
    """S3's answers for a bucket without Object Lock say little; say what to do."""
    if exc.code == "InvalidRequest" and "ObjectLockConfiguration" in exc.message:
        return StoreError(exc.code, f"{what} needs a bucket with Object Lock enabled; this one has none", exc.status)
    return exc


def retention_doc(retention: tuple[str, datetime] | None) -> dict[str, str] | None:
    """A retention as the undo journal keeps it (docs/undo.md): mode, and the date to the second (as S3 keeps it), in UTC."""
    if retention is None:
        return None
    mode, until = retention
    return {"mode": mode, "until": until.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")}


def set_retention(store: ObjectStore, bucket: str, key: str, retention: Retention, *, version_id: str = "") -> bool:
    """PutObjectRetention; S3 refuses (AccessDenied) shortening COMPLIANCE, or GOVERNANCE without bypass_governance."""
    try:
        store.put_retention(
            bucket, key, retention.mode, retention.until, bypass_governance=retention.bypass_governance, version_id=version_id
        )
    except StoreError as exc:
        raise _explained(exc, "set-retention") from exc
    return True


def set_legal_hold(store: ObjectStore, bucket: str, key: str, status: str, *, version_id: str = "") -> bool:
    try:
        store.put_legal_hold(bucket, key, status, version_id=version_id)
    except StoreError as exc:
        raise _explained(exc, "set-legal-hold") from exc
    return True
