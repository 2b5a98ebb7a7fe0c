"""Copy one key's whole version history, oldest first, so the destination's versions match the source's in order.

The task lists the key's versions itself (on both sides) rather than trusting the
batch: a key's versions may span listing pages, batches and workers, and only one
task per key may write its history. The listing hands each key over once, at its
newest entry (selection.version_selected).

A rerun, or a redelivered batch, finds the versions it already copied at the start
of the destination's history and copies only the rest: copying all versions is not
idempotent by itself (each copy adds a version), this comparison makes it so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from s3bulk.ops.copies import CopySettings, copy_object
from s3bulk.ops.executor import BoundedExecutor
from s3bulk.ops.identity import BY_SIZE, confirm_copy
from s3bulk.store import ObjectInfo, ObjectStore, StoreError


@dataclass(frozen=True, slots=True)
class HistoryCopied:
    """What copy_history did: versions (delete markers included) the source has, how many it wrote, and their bytes."""

    versions: int
    copied: int
    bytes: int
    size_only: int = 0  # versions whose copy nothing but its size could confirm (ops/identity.py)


def key_versions(store: ObjectStore, bucket: str, key: str) -> list[ObjectInfo]:
    """Every version and delete marker of exactly `key`, oldest first (keys that merely start with it are not its)."""
    newest_first: list[ObjectInfo] = []
    token: str | None = None
    while True:
        page = store.list_versions_page(bucket, key, token)
        mine = [o for o in page.objects if o.key == key]
        newest_first += mine
        # Versions are listed key by key: once another key shows up, this key's are all listed.
        if page.next_token is None or len(mine) < len(page.objects):
            break
        token = page.next_token
    return newest_first[::-1]


def _same(src: ObjectInfo, dst: ObjectInfo, kms: Callable[[ObjectInfo], bool]) -> bool:
    """Whether a destination version is the copy of a source version.

    Delete markers match delete markers. A version matches by size and ETag; a multipart
    ETag depends on the part size of whoever wrote it, and an SSE-KMS object's ETag is no MD5
    (`kms` asks a HEAD, only when the ETags differ), so those are matched by size alone.
    """
    if src.delete_marker or dst.delete_marker:
        return src.delete_marker and dst.delete_marker
    if src.size != dst.size:
        return False
    return src.etag == dst.etag or "-" in src.etag or "-" in dst.etag or kms(dst)


def _pending(src: list[ObjectInfo], dst: list[ObjectInfo], where: str, kms: Callable[[ObjectInfo], bool]) -> Iterator[ObjectInfo]:
    """The source versions the destination still lacks: its history must be a start of the source's."""
    for i, existing in enumerate(dst):
        if i >= len(src) or not _same(src[i], existing, kms):
            raise StoreError(
                "VersionHistoryDiffers",
                f"version {i + 1} of {where} (of {len(dst)}) is not the copy of the source's version {i + 1} (of {len(src)}), "
                "so appending the source's versions would not reproduce its history; empty that key's versions, or copy elsewhere",
                409,
            )
    yield from src[len(dst) :]


def copy_history(
    store: ObjectStore,
    dst_store: ObjectStore,
    parts: BoundedExecutor,
    src_bucket: str,
    key: str,
    dst_bucket: str,
    dst_key: str,
    settings: CopySettings,
) -> HistoryCopied:
    """Copy the versions of `key` the destination lacks, oldest first; a delete marker is copied as a delete."""
    src = key_versions(store, src_bucket, key)
    dst = key_versions(dst_store, dst_bucket, dst_key)
    copied = size = size_only = 0

    def kms(version: ObjectInfo) -> bool:
        return dst_store.head_object(dst_bucket, dst_key, version_id=version.version_id).encrypted_kms

    for version in _pending(src, dst, f"s3://{dst_bucket}/{dst_key}", kms):
        if version.delete_marker:
            dst_store.delete_object(dst_bucket, dst_key)  # in a versioned bucket: a new delete marker
        else:
            done = copy_object(store, parts, src_bucket, version, dst_bucket, dst_key, settings)
            # The copy is the key's current version until the next one: a contradiction stops the history here.
            size_only += confirm_copy(store, dst_store, src_bucket, version, dst_bucket, dst_key, done) == BY_SIZE
            size += version.size
        copied += 1
    return HistoryCopied(len(src), copied, size, size_only)


def check_versioned(store: ObjectStore, bucket: str) -> None:
    """A copy of all versions into a bucket without versioning would keep only the last: refuse before copying."""
    status = store.bucket_versioning(bucket)
    if status != "Enabled":
        state = f"versioning {status.lower()}" if status else "no versioning"
        raise StoreError(
            "DestinationNotVersioned",
            f"s3://{bucket} has {state}, so each copied version would replace the one before; enable versioning on it first",
            400,
        )
