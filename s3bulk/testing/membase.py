"""What the in-memory store's calls share: its buckets and versions, the lock, the request count, faults,
and the job's request options; the objects and uploads it keeps (memobjects)."""

from __future__ import annotations

import base64
import copy
import hashlib
import itertools
import json
import threading
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Self

from botocore.httpchecksum import BaseChecksum, Crc32Checksum, CrtCrc32cChecksum, CrtCrc64NvmeChecksum, Sha1Checksum, Sha256Checksum

from s3bulk.breakers.outage import OutageBreaker
from s3bulk.job import MAX_KEY_BYTES
from s3bulk.store import (
    Body,
    Carried,
    Encryption,
    ObjectHead,
    RequestOptions,
    StoreError,
)

Fault = Callable[[str, str, str], StoreError | None]
"""Called as fault(operation, bucket, key); a returned error is raised (or reported per key)."""


@dataclass(slots=True)
class _Obj:
    body: bytes | None  # None: a synthetic object that has only a size (bench)
    size: int
    etag: str
    last_modified: datetime
    content_type: str = "binary/octet-stream"
    metadata: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    storage_class: str = "STANDARD"
    restore: tuple[int, str] | None = None  # (days, tier) of a requested restore
    checksum: str = ""  # "ALGORITHM:value"; a copy keeps it, as S3 does for a full-object checksum of the same bytes
    retention: tuple[str, datetime] | None = None  # Object Lock (mode, retain until)
    legal_hold: str = "OFF"
    acl: str = "private"
    encryption: Encryption | None = None


ARCHIVED = frozenset({"GLACIER", "DEEP_ARCHIVE"})
MEM_OWNER = "0123456789abcdef" * 4  # the canonical user id every fake object belongs to


def _check_retention(carry: Carried) -> None:
    """S3 refuses a retain-until date in the past on a copy or an upload."""
    if carry.retention is not None and carry.retention[1] <= datetime.now(UTC):
        raise StoreError("InvalidArgument", "The retain until date must be in the future!", 400)


def _check_crc32(body: Body | None, crc32: int | None) -> None:
    """Refuse a body whose CRC32 is not the one sent, as S3 does (BadDigest)."""
    if body is not None and crc32 is not None and zlib.crc32(body) != crc32:
        raise StoreError("BadDigest", "The CRC32 you specified did not match the calculated checksum.", 400)


@dataclass(slots=True)
class _Upload:
    bucket: str
    key: str
    head: ObjectHead
    tags: dict[str, str]
    storage_class: str
    checksum_algorithm: str = ""
    encryption: Encryption | None = None
    acl: str = "private"
    carry: Carried | None = None
    parts: dict[int, tuple[bytes | None, int, str]] = field(default_factory=dict)
    initiated: datetime = field(default_factory=lambda: datetime.now(UTC))


_CHECKSUMS: dict[str, type[BaseChecksum]] = {
    "CRC32": Crc32Checksum,
    "CRC32C": CrtCrc32cChecksum,
    "CRC64NVME": CrtCrc64NvmeChecksum,
    "SHA1": Sha1Checksum,
    "SHA256": Sha256Checksum,
}


def _checksum(algorithm: str, body: bytes) -> str:
    """The "ALGORITHM:value" S3 keeps, computed as S3 does (botocore's checksums, awscrt's CRC32C and CRC64NVME)."""
    computing = _CHECKSUMS[algorithm]()
    computing.update(body)
    return f"{algorithm}:{computing.b64digest()}"


def _composite(algorithm: str, part_checksums: Sequence[str]) -> str:
    """A multipart object's checksum as S3 writes a composite one: a checksum of the parts' checksums, then "-N"."""
    joined = b"".join(base64.b64decode(c.split(":", 1)[1]) for c in part_checksums)
    return f"{_checksum(algorithm, joined)}-{len(part_checksums)}"


def _md5(body: Body) -> str:
    return '"' + hashlib.md5(body, usedforsecurity=False).hexdigest() + '"'


class MemoryBase:
    """The buckets, versions, uploads, lock, faults and request counts every MemoryStore call shares."""

    def __init__(self, page_size: int = 1000) -> None:
        self.page_size = page_size
        self.read_chunk = 1024 * 1024  # GetObject body chunk size (small in tests of chunk boundaries)
        self.faults: list[Fault] = []
        # Nothing here fails to answer; a fault may raise outage.EndpointUnreachable to act out a tripped breaker.
        self.breaker = OutageBreaker()
        self.owners: dict[str, str] = {}  # bucket -> owning account, checked against ExpectedBucketOwner
        self.requester_pays: set[str] = set()  # buckets that refuse requests without RequestPayer
        # bucket -> its default encryption, which a copy or an upload that names none gets (as S3 does)
        self.bucket_encryption: dict[str, Encryption] = {}  # bucket -> its default encryption
        self.aws = True  # False: a store like SeaweedFS's, where UpdateObjectEncryption is not S3's (never sent)
        self.now: Callable[[], datetime] = lambda: datetime.now(UTC)  # the time a copy, upload or delete marker gets
        self._marker_times: dict[tuple[str, str, str], datetime] = {}  # (bucket, key, version) -> a delete marker's
        # bucket -> its Object Ownership; every bucket has ACLs disabled unless set here, as new S3 buckets do
        self.ownership: dict[str, str] = {}
        self.opts = RequestOptions()
        self.calls: dict[str, int] = {}
        self._buckets: dict[str, dict[str, _Obj]] = {}
        self._sorted: dict[str, list[str] | None] = {}
        self._uploads: dict[str, _Upload] = {}
        self._ids = itertools.count(1)
        self._lock = threading.RLock()
        # Versioned buckets (enable_versioning): every version of each key, oldest first; None is a delete marker.
        self._history: dict[str, dict[str, list[tuple[str, _Obj | None]]]] = {}

    # -- internals --------------------------------------------------------------------------
    def _count(self, op: str) -> None:
        with self._lock:
            self.calls[op] = self.calls.get(op, 0) + 1

    def scoped(self, options: RequestOptions) -> Self:
        if options == self.opts:
            return self
        view = copy.copy(self)  # shares every bucket, lock and counter
        view.opts = options
        return view

    def _fault_for(self, op: str, bucket: str, key: str) -> StoreError | None:
        expected = self.opts.owner(bucket)
        if expected is not None and self.owners.get(bucket) != expected:
            return StoreError("AccessDenied", f"bucket {bucket} is not owned by account {expected}", 403)
        if bucket in self.requester_pays and not self.opts.requester_pays:
            return StoreError("AccessDenied", f"bucket {bucket} is requester-pays; set options.requester_pays", 403)
        for fault in self.faults:
            err = fault(op, bucket, key)
            if err is not None:
                return err
        return None

    def _fault(self, op: str, bucket: str, key: str) -> None:
        err = self._fault_for(op, bucket, key)
        if err is not None:
            raise err

    def _bucket(self, bucket: str) -> dict[str, _Obj]:
        try:
            return self._buckets[bucket]
        except KeyError:
            raise StoreError("NoSuchBucket", f"The specified bucket does not exist: {bucket}", 404) from None

    def _keys(self, bucket: str) -> list[str]:
        keys = self._sorted.get(bucket)
        if keys is None:
            keys = sorted(self._bucket(bucket))  # str order == UTF-8 byte order, as S3 lists
            self._sorted[bucket] = keys
        return keys

    def _get(self, bucket: str, key: str, version_id: str = "") -> _Obj:
        with self._lock:
            if version_id:
                found = [o for v, o in self._history.get(bucket, {}).get(key, []) if v == version_id]
                if not found:
                    raise StoreError("NoSuchVersion", "The specified version does not exist.", 404)
                if found[0] is None:
                    raise StoreError("MethodNotAllowed", "The specified method is not allowed against this resource.", 405)
                return found[0]
            obj = self._bucket(bucket).get(key)
        if obj is None:
            raise StoreError("NoSuchKey", "The specified key does not exist.", 404)
        return obj

    def _set(self, bucket: str, key: str, obj: _Obj) -> None:
        """A write: the key's current object, and in a versioned bucket its newest version."""
        self._bucket(bucket)[key] = obj
        self._sorted[bucket] = None
        if bucket in self._history:
            self._history[bucket].setdefault(key, []).append((f"v{next(self._ids):08d}", obj))

    def _remove(self, bucket: str, key: str, version_id: str) -> None:
        """A delete: of the current object (a delete marker in a versioned bucket), or of one version for good."""
        objects = self._bucket(bucket)
        self._sorted[bucket] = None
        history = self._history.get(bucket)
        if history is None:
            objects.pop(key, None)
            return
        if not version_id:
            objects.pop(key, None)
            marker = f"v{next(self._ids):08d}"
            history.setdefault(key, []).append((marker, None))
            self._marker_times[(bucket, key, marker)] = self.now()
            return
        versions = [(v, o) for v, o in history.get(key, []) if v != version_id]
        if versions:
            history[key] = versions
        else:
            history.pop(key, None)
        newest = versions[-1][1] if versions else None
        if newest is None:
            objects.pop(key, None)
        else:
            objects[key] = newest

    def _locked(self, bucket: str, key: str, version_id: str) -> StoreError | None:
        """Object Lock refuses to delete a version under retention or legal hold (a delete marker is always allowed)."""
        if not version_id:
            return None
        found = [o for v, o in self._history.get(bucket, {}).get(key, []) if v == version_id and o is not None]
        if found and (found[0].legal_hold == "ON" or (found[0].retention is not None and found[0].retention[1] > datetime.now(UTC))):
            return StoreError("AccessDenied", "Access Denied because object protected by object lock.", 403)
        return None

    @staticmethod
    def _check_key(key: str) -> None:
        if len(key.encode("utf-8")) > MAX_KEY_BYTES:
            raise StoreError("KeyTooLongError", "Your key is too long", 400)

    def _new_acl(self, policy: Mapping[str, Any] | None) -> str:
        """A written object's ACL: the grants the request names, else its canned ACL, else private."""
        return json.dumps(dict(policy), sort_keys=True) if policy is not None else self.opts.acl or "private"
