"""An in-memory ObjectStore: fast unit tests with no sockets, and the bench's 1M-key store.

It mimics the S3 behaviour the engine relies on (sorted V2 listing, ETags,
CopySourceIfMatch, per-key DeleteObjects errors) and lets tests inject faults.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from s3bulk.store import (
    Body,
    Carried,
    Encryption,
    KeyFailure,
    ListPage,
    ObjectHead,
    ObjectInfo,
    StoreError,
    crc32_header,
    upload_markers,
    version_markers,
    version_token,
    xml_safe,
)
from s3bulk.testing.membase import ARCHIVED, MEM_OWNER, _check_crc32, _check_retention, _checksum, _md5, _Obj
from s3bulk.testing.memuploads import MemoryUploads


class MemoryStore(MemoryUploads):
    """Thread-safe; `calls` counts requests by operation so tests can prove e.g. 'no HEAD per small object'."""

    # -- seeding and inspection (test side) --------------------------------------------------
    def create_bucket(self, bucket: str) -> None:
        with self._lock:
            self._buckets.setdefault(bucket, {})
            self._sorted[bucket] = None

    def put_object(
        self,
        bucket: str,
        key: str,
        body: bytes = b"",
        *,
        size: int | None = None,
        content_type: str = "binary/octet-stream",
        metadata: dict[str, str] | None = None,
        tags: dict[str, str] | None = None,
        last_modified: datetime | None = None,
        storage_class: str = "STANDARD",
        etag: str | None = None,
        checksum: str = "",
        encryption: Encryption | None = None,
    ) -> None:
        """Store an object; `size` without a body makes a synthetic object of that size; `etag` overrides (e.g. a multipart one)."""
        stored = None if size is not None else body
        etag = etag or (_md5(key.encode()) if stored is None else _md5(body))
        obj = _Obj(
            stored,
            len(body) if size is None else size,
            etag,
            last_modified or self.now(),
            content_type,
            dict(metadata or {}),
            dict(tags or {}),
            storage_class,
            checksum=checksum,
            encryption=encryption or self.bucket_encryption.get(bucket),
        )
        with self._lock:
            self._set(bucket, key, obj)

    def enable_versioning(self, bucket: str) -> None:
        """From now on, writes add versions and a delete without a version id adds a delete marker."""
        with self._lock:
            history = self._history.setdefault(bucket, {})
            for key, obj in self._bucket(bucket).items():
                history.setdefault(key, [("null", obj)])

    def versions(self, bucket: str, key: str) -> list[tuple[str, bytes | None]]:
        """A key's versions, oldest first, as (version id, body); a delete marker's body is None."""
        with self._lock:
            return [(v, o.body if o is not None else None) for v, o in self._history.get(bucket, {}).get(key, [])]

    def get_body(self, bucket: str, key: str) -> bytes:
        obj = self._get(bucket, key)
        assert obj.body is not None
        return obj.body

    def get(self, bucket: str, key: str) -> _Obj:
        return replace(self._get(bucket, key))

    def keys(self, bucket: str) -> list[str]:
        with self._lock:
            return list(self._keys(bucket))

    # -- the ObjectStore protocol ------------------------------------------------------------
    @property
    def retries(self) -> int:
        return 0

    def list_page(
        self,
        bucket: str,
        prefix: str,
        token: str | None = None,
        start_after: str | None = None,
        delimiter: str | None = None,
        max_keys: int | None = None,
    ) -> ListPage:
        """S3's V2 semantics: with a delimiter, keys below the next delimiter roll up into one CommonPrefix."""
        self._count("ListObjectsV2")
        self._fault("ListObjectsV2", bucket, prefix)
        with self._lock:
            keys = self._keys(bucket)
            # Tokens are opaque: "K<key>" resumes after a key, "P<prefix>" after a whole rolled-up prefix.
            rolled = token is not None and token.startswith("P")
            if token is not None:
                token = token[1:]
            after = token if token is not None else (start_after if start_after and start_after >= prefix else None)
            i = bisect.bisect_right(keys, after) if after is not None else bisect.bisect_left(keys, prefix)
            if rolled and after is not None:
                while i < len(keys) and keys[i].startswith(after):
                    i += 1
            out: list[ObjectInfo] = []
            prefixes: list[str] = []
            last = ""
            objects = self._buckets[bucket]
            while i < len(keys) and len(out) + len(prefixes) < (max_keys or self.page_size) and keys[i].startswith(prefix):
                rest = keys[i][len(prefix) :]
                cut = rest.find(delimiter) if delimiter else -1
                if cut >= 0:
                    common = prefix + rest[: cut + len(delimiter or "")]
                    prefixes.append(common)
                    last = "P" + common
                    while i < len(keys) and keys[i].startswith(common):
                        i += 1
                    continue
                o = objects[keys[i]]
                out.append(ObjectInfo(keys[i], o.size, o.etag, o.last_modified, o.storage_class))
                last = "K" + keys[i]
                i += 1
            more = i < len(keys) and keys[i].startswith(prefix)
            return ListPage(out, last if more and last else None, prefixes)

    def object_ownership(self, bucket: str) -> str:
        self._count("GetBucketOwnershipControls")
        self._fault("GetBucketOwnershipControls", bucket, "")
        with self._lock:
            self._bucket(bucket)
            return self.ownership.get(bucket, "BucketOwnerEnforced")

    def bucket_versioning(self, bucket: str) -> str:
        self._count("GetBucketVersioning")
        with self._lock:
            self._bucket(bucket)
            return "Enabled" if bucket in self._history else ""

    def list_versions_page(
        self,
        bucket: str,
        prefix: str,
        token: str | None = None,
        key_marker: str | None = None,
        delimiter: str | None = None,
        max_keys: int | None = None,
    ) -> ListPage:
        """Every version and delete marker, keys in order and newest first within a key, as S3 lists them."""
        self._count("ListObjectVersions")
        self._fault("ListObjectVersions", bucket, prefix)
        with self._lock:
            self._bucket(bucket)
            history = self._history.get(bucket)
            if history is None:  # never versioned: each object is its "null" version
                history = {k: [("null", o)] for k, o in self._buckets[bucket].items()}
            markers = version_markers(token) if token else {"KeyMarker": key_marker or ""}
            after_key, after_version = markers.get("KeyMarker", ""), markers.get("VersionIdMarker", "")
            limit = max_keys or self.page_size
            entries: list[ObjectInfo | str] = []  # versions, and (str) the CommonPrefixes keys roll up into
            for key in sorted(k for k in history if k.startswith(prefix) and k >= after_key):
                if len(entries) > limit:
                    break
                if key == after_key and not after_version:
                    continue
                rest = key[len(prefix) :]
                cut = rest.find(delimiter) if delimiter else -1
                if cut >= 0:
                    common = prefix + rest[: cut + len(delimiter or "")]
                    if common not in entries:
                        entries.append(common)
                    continue
                newest_first = list(reversed(history[key]))
                if key == after_key:
                    ids = [v for v, _ in newest_first]
                    newest_first = newest_first[ids.index(after_version) + 1 :] if after_version in ids else []
                newest = history[key][-1][0]
                for version, o in newest_first:
                    if o is None:
                        made = self._marker_times.get((bucket, key, version))
                        entries.append(ObjectInfo(key, 0, "", made, None, version, version == newest, True))
                    else:
                        entries.append(ObjectInfo(key, o.size, o.etag, o.last_modified, o.storage_class, version, version == newest))
            page, nxt = entries[:limit], None
            if len(entries) > limit:
                last = page[-1]
                # The next page starts after the last version listed, or past every key a listed CommonPrefix holds.
                nxt = version_token(last.key, last.version_id) if isinstance(last, ObjectInfo) else version_token(last + "\U0010ffff", "")
            return ListPage([e for e in page if isinstance(e, ObjectInfo)], nxt, [e for e in page if isinstance(e, str)])

    def start_upload(self, bucket: str, key: str, *, initiated: datetime | None = None, part_sizes: Sequence[int] = ()) -> str:
        """Seed an incomplete multipart upload begun at `initiated`, holding synthetic parts of these sizes; its id."""
        upload_id = self.create_multipart_upload(bucket, key, ObjectHead(0, ""), {})
        with self._lock:
            upload = self._uploads[upload_id]
            upload.initiated = initiated or upload.initiated
            for n, size in enumerate(part_sizes, 1):
                upload.parts[n] = (None, size, _md5(f"{upload_id}:{n}".encode()))
        return upload_id

    def list_uploads_page(
        self,
        bucket: str,
        prefix: str,
        token: str | None = None,
        key_marker: str | None = None,
        delimiter: str | None = None,
        max_keys: int | None = None,
    ) -> ListPage:
        """Open uploads as S3 lists them: keys in order, oldest first within a key, paged by key and upload-id markers."""
        self._count("ListMultipartUploads")
        self._fault("ListMultipartUploads", bucket, prefix)
        with self._lock:
            self._bucket(bucket)
            markers = upload_markers(token) if token else {"KeyMarker": key_marker or ""}
            after_key, after_id = markers.get("KeyMarker", ""), markers.get("UploadIdMarker", "")
            ordered = sorted(
                ((u.key, u.initiated, i) for i, u in self._uploads.items() if u.bucket == bucket and u.key.startswith(prefix)),
                key=lambda t: (t[0], t[1]),
            )
            limit = max_keys or self.page_size
            entries: list[ObjectInfo | str] = []
            passed = not after_id  # with an upload-id marker, the marker key's uploads after that one come first
            for key, initiated, upload_id in ordered:
                if len(entries) > limit:
                    break
                if key < after_key or (key == after_key and not after_id):
                    continue
                if key == after_key and not passed:
                    passed = upload_id == after_id
                    continue
                rest = key[len(prefix) :]
                cut = rest.find(delimiter) if delimiter else -1
                if cut >= 0:
                    common = prefix + rest[: cut + len(delimiter or "")]
                    if common not in entries:
                        entries.append(common)
                    continue
                entries.append(ObjectInfo(key, 0, "", initiated, self._uploads[upload_id].storage_class, upload_id=upload_id))
            page, nxt = entries[:limit], None
            if len(entries) > limit:
                last = page[-1]
                nxt = version_token(last.key, last.upload_id) if isinstance(last, ObjectInfo) else version_token(last + "\U0010ffff", "")
            return ListPage([e for e in page if isinstance(e, ObjectInfo)], nxt, [e for e in page if isinstance(e, str)])

    def copy_object(
        self,
        src_bucket: str,
        src_key: str,
        dst_bucket: str,
        dst_key: str,
        *,
        storage_class: str | None = None,
        src_version: str = "",
        checksum_algorithm: str = "",
        metadata: ObjectHead | None = None,
        if_match: str = "",
        carry: Carried | None = None,
    ) -> str:
        self._count("CopyObject")
        self._fault("CopyObject", src_bucket, src_key)
        self._fault("PutObject", dst_bucket, dst_key)
        self._check_key(dst_key)
        with self._lock:
            src = self._get(src_bucket, src_key, src_version)
            if if_match and src.etag != if_match:
                raise StoreError("PreconditionFailed", "At least one of the pre-conditions you specified did not hold", 412)
            same_class = (storage_class or "STANDARD") == src.storage_class
            # S3's rule for a copy onto itself: it must change the metadata (REPLACE), the class or name an encryption;
            # grants and Object Lock headers do not count, nor does a copy of an older version (a restore of it).
            current = self._bucket(src_bucket).get(src_key)
            itself = (src_bucket, src_key) == (dst_bucket, dst_key) and (not src_version or src is current)
            if itself and metadata is None and (carry is None or carry.encryption is None) and same_class:
                raise StoreError(
                    "InvalidRequest",
                    "This copy request is illegal because it is trying to copy an object to itself without changing the object's "
                    "metadata, storage class, website redirect location or encryption attributes.",
                    400,
                )
            if src.storage_class in ARCHIVED and src.restore is None:
                raise StoreError("InvalidObjectState", "The operation is not valid for the object's storage class", 403)
            etag = _md5(src.body) if src.body is not None else src.etag
            copy = replace(src, etag=etag, metadata=dict(src.metadata), tags=dict(src.tags), restore=None)
            copy.storage_class = storage_class or "STANDARD"
            # S3 copies none of these: the request names them, or the defaults apply.
            carry = carry or Carried()
            _check_retention(carry)
            copy.encryption = carry.encryption or self.bucket_encryption.get(dst_bucket)
            copy.acl = self._new_acl(carry.grants)
            copy.retention, copy.legal_hold = carry.retention, "ON" if carry.legal_hold else "OFF"
            if metadata is not None:
                copy.metadata, copy.content_type = dict(metadata.metadata), metadata.content_type or copy.content_type
            if checksum_algorithm:
                copy.checksum = _checksum(checksum_algorithm, src.body if src.body is not None else etag.encode())
            copy.last_modified = self.now()
            self._set(dst_bucket, dst_key, copy)
            return etag

    def head_object(self, bucket: str, key: str, *, version_id: str = "") -> ObjectHead:
        self._count("HeadObject")
        self._fault("HeadObject", bucket, key)
        o = self._get(bucket, key, version_id)
        storage_class = None if o.storage_class == "STANDARD" else o.storage_class  # as S3 sends it: no header for STANDARD
        return ObjectHead(
            o.size,
            o.etag,
            o.content_type,
            dict(o.metadata),
            checksum=o.checksum,
            encryption=o.encryption,
            storage_class=storage_class,
            legal_hold=o.legal_hold == "ON",
            last_modified=o.last_modified,
            retention=o.retention,
        )

    def get_tags(self, bucket: str, key: str, *, version_id: str = "") -> dict[str, str]:
        self._count("GetObjectTagging")
        self._fault("GetObjectTagging", bucket, key)
        return dict(self._get(bucket, key, version_id).tags)

    def put_tags(self, bucket: str, key: str, tags: Mapping[str, str], *, version_id: str = "") -> None:
        self._count("PutObjectTagging")
        self._fault("PutObjectTagging", bucket, key)
        with self._lock:
            self._get(bucket, key, version_id).tags = dict(tags)

    def put_retention(
        self, bucket: str, key: str, mode: str, until: datetime | None, *, bypass_governance: bool = False, version_id: str = ""
    ) -> None:
        self._count("PutObjectRetention")
        self._fault("PutObjectRetention", bucket, key)
        with self._lock:
            obj = self._get(bucket, key, version_id)
            if obj.retention is not None and (until is None or until < obj.retention[1] or mode != obj.retention[0]):
                held, _ = obj.retention  # shortening, removing or changing the mode, as S3 rules it
                if held == "COMPLIANCE" or not bypass_governance:
                    raise StoreError("AccessDenied", "Access Denied because object protected by object lock.", 403)
            obj.retention = None if until is None else (mode, until)

    def put_legal_hold(self, bucket: str, key: str, status: str, *, version_id: str = "") -> None:
        self._count("PutObjectLegalHold")
        self._fault("PutObjectLegalHold", bucket, key)
        with self._lock:
            self._get(bucket, key, version_id).legal_hold = status

    def updates_encryption(self, bucket: str) -> bool:
        return self.aws

    def default_encryption(self, bucket: str) -> Encryption | None:
        self._count("GetBucketEncryption")
        return self.bucket_encryption.get(bucket)

    def update_object_encryption(self, bucket: str, key: str, kms_key_arn: str, *, bucket_key: bool, version_id: str = "") -> None:
        """As S3 rules it: SSE-S3 or SSE-KMS objects only, none under Object Lock; the ETag and dates stay."""
        self._count("UpdateObjectEncryption")
        self._fault("UpdateObjectEncryption", bucket, key)
        assert self.aws, "UpdateObjectEncryption sent to a store that is not AWS"
        with self._lock:
            obj = self._get(bucket, key, version_id)
            if obj.encryption is None or obj.encryption.sse not in {"AES256", "aws:kms"}:
                raise StoreError("InvalidRequest", "Only source objects encrypted with SSE-S3 or SSE-KMS are supported.", 400)
            if obj.legal_hold == "ON" or (obj.retention is not None and obj.retention[1] > datetime.now(UTC)):
                raise StoreError(
                    "AccessDenied",
                    "The encryption type for the specified object can't be updated because that object is protected by S3 Object Lock.",
                    403,
                )
            obj.encryption = Encryption("aws:kms", kms_key_arn, bucket_key)

    def get_legal_hold(self, bucket: str, key: str, *, version_id: str = "") -> str:
        self._count("GetObjectLegalHold")
        self._fault("GetObjectLegalHold", bucket, key)
        return self._get(bucket, key, version_id).legal_hold

    def put_acl(self, bucket: str, key: str, acl: str, *, version_id: str = "", policy: Mapping[str, Any] | None = None) -> None:
        self._count("PutObjectAcl")
        self._fault("PutObjectAcl", bucket, key)
        with self._lock:
            self._get(bucket, key, version_id).acl = json.dumps(dict(policy), sort_keys=True) if policy is not None else acl

    def get_acl(self, bucket: str, key: str, *, version_id: str = "") -> dict[str, Any]:
        """A canned ACL as S3 would expand it (owner FULL_CONTROL, plus its group grant), or the policy put whole."""
        self._count("GetObjectAcl")
        self._fault("GetObjectAcl", bucket, key)
        acl = self._get(bucket, key, version_id).acl
        if acl.startswith("{"):
            return dict(json.loads(acl))
        owner = {"ID": MEM_OWNER}
        grants: list[dict[str, Any]] = [{"Grantee": {"ID": MEM_OWNER, "Type": "CanonicalUser"}, "Permission": "FULL_CONTROL"}]
        groups = {"public-read": ["READ"], "public-read-write": ["READ", "WRITE"], "authenticated-read": ["READ"]}
        uri = "AuthenticatedUsers" if acl == "authenticated-read" else "AllUsers"
        for permission in groups.get(acl, []):
            grants.append({"Grantee": {"Type": "Group", "URI": f"http://acs.amazonaws.com/groups/global/{uri}"}, "Permission": permission})
        return {"Owner": owner, "Grants": grants}

    def restore_object(self, bucket: str, key: str, days: int, tier: str, *, version_id: str = "") -> bool:
        self._count("RestoreObject")
        self._fault("RestoreObject", bucket, key)
        with self._lock:
            obj = self._get(bucket, key, version_id)
            if obj.storage_class not in ARCHIVED:
                raise StoreError("InvalidObjectState", "Restore is not allowed for the object's current storage class", 403)
            started = obj.restore is None
            obj.restore = (days, tier)
            return started

    def read_object(self, bucket: str, key: str, start: int = 0, *, version_id: str = "") -> Iterator[bytes]:
        self._count("GetObject")
        self._fault("GetObject", bucket, key)
        obj = self._get(bucket, key, version_id)
        body = (obj.body if obj.body is not None else bytes(obj.size))[start:]
        for at in range(0, len(body), self.read_chunk):
            yield body[at : at + self.read_chunk]

    def read_range(self, bucket: str, key: str, first: int, last: int, if_match: str = "", *, version_id: str = "") -> Body:
        self._count("GetObject")
        self._fault("GetObject", bucket, key)
        obj = self._get(bucket, key, version_id)
        if if_match and obj.etag != if_match:
            raise StoreError("PreconditionFailed", "At least one of the pre-conditions you specified did not hold", 412)
        if first >= obj.size:
            raise StoreError("InvalidRange", "The requested range is not satisfiable", 416)
        if obj.body is None:  # synthetic: zeros, made only as large as the range asked for
            return bytes(min(last, obj.size - 1) - first + 1)
        return obj.body[first : last + 1]

    def write_object(
        self,
        bucket: str,
        key: str,
        body: Body,
        head: ObjectHead,
        tags: Mapping[str, str],
        *,
        storage_class: str | None = None,
        crc32: int | None = None,
    ) -> str:
        self._count("PutObject")
        self._fault("PutObject", bucket, key)
        self._check_key(key)
        _check_crc32(body, crc32)
        with self._lock:
            self._set(
                bucket,
                key,
                _Obj(
                    bytes(body),
                    len(body),
                    _md5(body),
                    self.now(),
                    head.content_type or "binary/octet-stream",
                    dict(head.metadata),
                    dict(tags),
                    storage_class or "STANDARD",
                    checksum="" if crc32 is None else f"CRC32:{crc32_header(crc32)}",
                    encryption=self.bucket_encryption.get(bucket),
                    acl=self._new_acl(None),
                ),
            )
            return _md5(body)

    def delete_objects(self, bucket: str, keys: Sequence[str], version_ids: Sequence[str] = ()) -> list[KeyFailure]:
        self._count("DeleteObjects")
        if len(keys) > 1000:
            raise StoreError("MalformedXML", "DeleteObjects takes at most 1000 keys", 400)
        if not all(xml_safe(k) for k in keys):
            raise StoreError("MalformedXML", "a key holds a character XML cannot carry", 400)
        failures: list[KeyFailure] = []
        with self._lock:
            for key, version in zip(keys, version_ids or [""] * len(keys), strict=True):
                err = self._fault_for("DeleteObject", bucket, key) or self._locked(bucket, key, version)
                if err is not None:
                    failures.append(KeyFailure(key, err.code, err.message, version))
                else:
                    self._remove(bucket, key, version)  # S3 reports deleting a missing key as success
        return failures

    def delete_object(self, bucket: str, key: str, *, version_id: str = "") -> None:
        self._count("DeleteObject")
        with self._lock:
            self._fault("DeleteObject", bucket, key)
            err = self._locked(bucket, key, version_id)
            if err is not None:
                raise err
            self._remove(bucket, key, version_id)
