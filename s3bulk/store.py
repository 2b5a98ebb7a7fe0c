"""The object-store port: the few calls the engine makes, whatever serves them.

Like s5cmd's storage.Storage, the core talks only to this protocol. The boto3
adapter (s3store.py) serves real S3 and S3-compatible servers; the in-memory
fake (memstore.py) serves unit tests with no sockets.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from s3bulk.breakers.outage import OutageBreaker

# Object bytes as the port passes them: a filled bytearray is handed on as it is, never copied to bytes.
Body = bytes | bytearray

# The size of an object whose manifest row gave none; the worker HEADs it before an operation that needs it.
UNKNOWN_SIZE = -1


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    """One listed object; its size comes from the listing so small copies need no HEAD."""

    key: str
    size: int
    etag: str = ""
    last_modified: datetime | None = None
    storage_class: str | None = None
    version_id: str = ""  # set when listed by ListObjectVersions or named by a manifest row; "" is the current version
    latest: bool = True  # ListObjectVersions' IsLatest
    delete_marker: bool = False  # a delete marker: a version with no content
    upload_id: str = ""  # an open multipart upload (ListMultipartUploads; abort-uploads): last_modified is its Initiated
    # rewind: the version current when the key was listed ("" when a delete marker was, or nothing); None otherwise.
    # The entry itself is the version to make current again, or (version_id "") no version: the key was absent then.
    replaces: str | None = None


@dataclass(frozen=True, slots=True)
class ListPage:
    objects: list[ObjectInfo]
    next_token: str | None
    prefixes: list[str] = field(default_factory=list)  # CommonPrefixes, when listed with a delimiter


def crc32_header(value: int) -> str:
    """A CRC32 as S3's checksum headers carry it: base64 of its 4 big-endian bytes."""
    return base64.b64encode(value.to_bytes(4, "big")).decode("ascii")


@dataclass(frozen=True, slots=True)
class Encryption:
    """An object's server-side encryption as HEAD reports it. A copy of an object onto itself names it again,
    because a CopyObject without it takes the bucket's default encryption instead (a KMS key would be lost)."""

    sse: str  # AES256, aws:kms or aws:kms:dsse
    kms_key_id: str = ""
    bucket_key: bool = False


@dataclass(frozen=True, slots=True)
class Carried:
    """What S3 does not copy with an object, which a copy of it onto itself must name again to keep: its encryption
    (else the bucket's default), its grants (else private) and its Object Lock retention and legal hold (else none)."""

    encryption: Encryption | None = None
    grants: Mapping[str, Any] | None = None  # an AccessControlPolicy, as get_acl returns it
    retention: tuple[str, datetime] | None = None
    legal_hold: bool = False

    @property
    def beyond_encryption(self) -> bool:
        """It names grants or Object Lock too, not only the encryption."""
        return self.grants is not None or self.retention is not None or self.legal_hold


@dataclass(frozen=True, slots=True)
class ObjectHead:
    """What a multipart copy must carry over by hand (CopyObject does it for small ones)."""

    size: int
    etag: str
    content_type: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)  # CacheControl, ContentEncoding, ...
    checksum: str = ""  # "ALGORITHM:value" of an S3 additional checksum; a composite one ends in "-N"
    encryption: Encryption | None = None  # None: the server reported none
    storage_class: str | None = None  # None: STANDARD (S3 sends no header for it)
    last_modified: datetime | None = None
    retention: tuple[str, datetime] | None = None  # Object Lock: (mode, retain until), read back by a canary
    legal_hold: bool = False  # Object Lock legal hold ON (HEAD shows both only to a caller allowed to read them)

    @property
    def encrypted_kms(self) -> bool:
        """SSE-KMS (or DSSE-KMS): the ETag is not the MD5 of the content."""
        return self.encryption is not None and self.encryption.sse.startswith("aws:kms")

    def info(self, key: str) -> ObjectInfo:
        """The listing's view of the object, for rows (manifests) that came without one."""
        return ObjectInfo(key, self.size, self.etag, self.last_modified, self.storage_class)


class CopiedPart(NamedTuple):
    """One UploadPartCopy's answer: its ETag, and its checksum ("" unless the upload asked for one)."""

    etag: str
    checksum: str = ""


class ListedPart(NamedTuple):
    """One part an open multipart upload already holds (ListParts): a copy that went on in another invocation skips it."""

    number: int
    etag: str
    size: int
    checksum: str = ""  # "ALGORITHM:value" when the upload was created with a checksum algorithm


@dataclass(frozen=True, slots=True)
class KeyFailure:
    """A per-key error inside a 200 response (DeleteObjects)."""

    key: str
    code: str
    message: str
    version_id: str = ""


# XML 1.0 has no way to write these characters, not even as &#N; references.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(key: str) -> bool:
    """Whether a key can travel in a DeleteObjects body; S3 keys may hold characters XML cannot."""
    return _NOT_XML.search(key) is None


def version_token(key_marker: str, version_marker: str) -> str:
    """ListObjectVersions pages with two markers, not one token; a ListPage's next_token carries both."""
    return json.dumps([key_marker, version_marker])


def version_markers(token: str) -> dict[str, str]:
    """A version_token as ListObjectVersions' KeyMarker and VersionIdMarker parameters."""
    key, version = json.loads(token)
    return {"KeyMarker": key, **({"VersionIdMarker": version} if version else {})}


def upload_markers(token: str) -> dict[str, str]:
    """A version_token made of ListMultipartUploads' next markers, as its KeyMarker and UploadIdMarker parameters."""
    key, upload = json.loads(token)
    return {"KeyMarker": key, **({"UploadIdMarker": upload} if upload else {})}


def quoted_etag(value: object) -> str:
    """The port's form of an ETag: S3's quoted form ("" when absent); servers differ on quoting."""
    text = str(value or "").strip('"')
    return f'"{text}"' if text else ""


@dataclass(frozen=True)
class RequestOptions:
    """What a job asks every request to carry: account checks, who pays, how new objects are encrypted.

    Part of the port because both adapters must send them on every call, not
    just the ones a caller remembers.
    """

    owners: Mapping[str, str] = field(default_factory=dict)  # bucket -> the account that must own it
    requester_pays: bool = False
    sse: str | None = None  # AES256, aws:kms or aws:kms:dsse, for objects the job writes
    kms_key_id: str | None = None
    acl: str | None = None  # the canned ACL of objects the job writes (x-amz-acl); None sends none

    def owner(self, bucket: str) -> str | None:
        return self.owners.get(bucket)


class StoreError(Exception):
    """A failed call, reduced to what classification needs."""

    def __init__(self, code: str, message: str = "", status: int | None = None) -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code
        self.message = message or code
        self.status = status


class UploadWatch(Protocol):
    """What a multipart write (a copy's UploadPartCopy, a relay's UploadPart) tells the batch run working it: the upload
    it opened (or went on with), each part that landed, and whether the run was frozen meanwhile (the stack's worker
    near its end, ops/batchrun.py). A frozen run has handed the object and its upload on to a child batch, which owns
    the upload from then on: the write neither completes nor aborts it."""

    def upload(self, upload_id: str) -> None: ...

    def landed(self) -> None: ...

    def abandoned(self) -> bool: ...


class ObjectStore(Protocol):
    """Each method is one API call; retries and timeouts are the adapter's job."""

    def list_page(
        self,
        bucket: str,
        prefix: str,
        token: str | None = None,
        start_after: str | None = None,
        delimiter: str | None = None,
        max_keys: int | None = None,
    ) -> ListPage:
        """One ListObjectsV2 page; max_keys=1 makes a cheap probe for the sharded lister."""
        ...

    def list_versions_page(
        self,
        bucket: str,
        prefix: str,
        token: str | None = None,
        key_marker: str | None = None,
        delimiter: str | None = None,
        max_keys: int | None = None,
    ) -> ListPage:
        """One ListObjectVersions page: every version and delete marker, in key order and newest first within a key.

        `key_marker` starts after that key's last version (as start_after does for list_page); `token`
        is the opaque next_token of the previous page.
        """
        ...

    def list_uploads_page(
        self,
        bucket: str,
        prefix: str,
        token: str | None = None,
        key_marker: str | None = None,
        delimiter: str | None = None,
        max_keys: int | None = None,
    ) -> ListPage:
        """One ListMultipartUploads page: each open upload an ObjectInfo (upload_id set, last_modified its Initiated,
        size 0), in key order and by Initiated within a key; `key_marker` and `token` page as list_versions_page's do."""
        ...

    def bucket_versioning(self, bucket: str) -> str:
        """GetBucketVersioning: "Enabled", "Suspended", or "" for a bucket that was never versioned."""
        ...

    def object_ownership(self, bucket: str) -> str:
        """GetBucketOwnershipControls' ObjectOwnership ("BucketOwnerEnforced": ACLs disabled), or "" when it has none."""
        ...

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
        """Server-side copy of metadata and tags too (of version `src_version`, when given); returns the new ETag.
        `if_match` pins the source's ETag (CopySourceIfMatch): a source changed since it was read fails with 412.

        `checksum_algorithm` has S3 compute and keep that checksum of the copy. `metadata` replaces the copy's
        metadata with the head's (MetadataDirective REPLACE), which lets an object be copied onto itself unchanged.
        `carry` names the object's encryption, grants and Object Lock again (an in-place copy keeps them so);
        without it the copy gets the store's or the bucket's defaults, as S3 copies none of them.
        """
        ...

    # Each call below acts on the version `version_id` names, or on the current one when it is "".
    def head_object(self, bucket: str, key: str, *, version_id: str = "") -> ObjectHead: ...

    def get_tags(self, bucket: str, key: str, *, version_id: str = "") -> dict[str, str]: ...

    def put_tags(self, bucket: str, key: str, tags: Mapping[str, str], *, version_id: str = "") -> None:
        """PutObjectTagging: the object's whole tag set becomes `tags`."""
        ...

    def put_retention(
        self, bucket: str, key: str, mode: str, until: datetime | None, *, bypass_governance: bool = False, version_id: str = ""
    ) -> None:
        """PutObjectRetention (Object Lock): `mode` until `until`; bypass_governance may shorten a GOVERNANCE one.

        `until` None takes the retention off (only a GOVERNANCE one, with bypass_governance; s3bulk undo does it)."""
        ...

    def put_legal_hold(self, bucket: str, key: str, status: str, *, version_id: str = "") -> None:
        """PutObjectLegalHold: ON or OFF."""
        ...

    def get_legal_hold(self, bucket: str, key: str, *, version_id: str = "") -> str:
        """GetObjectLegalHold: ON or OFF (OFF when none was ever set)."""
        ...

    def default_encryption(self, bucket: str) -> Encryption | None:
        """The bucket's default encryption for new objects (GetBucketEncryption); None when it has none, or the server
        or the caller's role will not say. Only `s3bulk plan` asks: whether the job's objects make KMS requests."""
        ...

    def updates_encryption(self, bucket: str) -> bool:
        """Whether UpdateObjectEncryption is S3's own at this bucket's endpoint (AWS). Elsewhere it is never sent: a
        server that does not know the `?encryption` subresource may take the request for a PutObject of its body."""
        ...

    def update_object_encryption(self, bucket: str, key: str, kms_key_arn: str, *, bucket_key: bool, version_id: str = "") -> None:
        """UpdateObjectEncryption to SSE-KMS under `kms_key_arn`: S3 re-wraps the object's data key, no data moves, and
        the ETag, dates and checksum stay. Only from SSE-S3 or SSE-KMS, only on AWS (NotImplemented elsewhere)."""
        ...

    def put_acl(self, bucket: str, key: str, acl: str, *, version_id: str = "", policy: Mapping[str, Any] | None = None) -> None:
        """PutObjectAcl with a canned ACL, or with `policy` (an AccessControlPolicy: Owner and Grants) when given."""
        ...

    def get_acl(self, bucket: str, key: str, *, version_id: str = "") -> dict[str, Any]:
        """GetObjectAcl: the object's AccessControlPolicy, {"Owner": {...}, "Grants": [...]}, as S3's API names them."""
        ...

    def restore_object(self, bucket: str, key: str, days: int, tier: str, *, version_id: str = "") -> bool:
        """RestoreObject; False when a restore is already running or done (nothing new started)."""
        ...

    def read_object(self, bucket: str, key: str, start: int = 0, *, version_id: str = "") -> Iterator[bytes]:
        """GetObject from byte `start` on, its body in chunks as they arrive (never the whole object in memory)."""
        ...

    def read_range(self, bucket: str, key: str, first: int, last: int, if_match: str = "", *, version_id: str = "") -> Body:
        """One ranged GetObject of bytes first..last (inclusive); `if_match` pins the ETag, so a changed object fails (412)."""
        ...

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
        """PutObject with the head's Content-Type, metadata and headers, and `tags`; the server checks its MD5 (and `crc32`,
        stored as the object's CRC32 checksum). Returns the ETag."""
        ...

    def create_multipart_upload(
        self,
        bucket: str,
        key: str,
        head: ObjectHead,
        tags: dict[str, str],
        *,
        storage_class: str | None = None,
        crc32: bool = False,
        checksum_algorithm: str = "",
        carry: Carried | None = None,
    ) -> str:
        """CreateMultipartUpload; with `crc32`, of an object whose full-object CRC32 the parts and the completion carry;
        with `checksum_algorithm`, of one whose part copies S3 checksums (upload_part_copy returns them);
        with `carry`, of one that keeps what it names (as copy_object's)."""
        ...

    def upload_part(self, bucket: str, key: str, upload_id: str, part_number: int, body: Body, *, crc32: int | None = None) -> str:
        """UploadPart; the server checks its MD5 (and `crc32`). Returns the part's ETag."""
        ...

    def upload_part_copy(
        self,
        src_bucket: str,
        src_key: str,
        dst_bucket: str,
        dst_key: str,
        upload_id: str,
        part_number: int,
        first_byte: int,
        last_byte: int,
        if_match: str,
        *,
        src_version: str = "",
    ) -> CopiedPart:
        """UploadPartCopy: the part's ETag, and the checksum S3 computed when the upload was created with an algorithm."""
        ...

    def complete_multipart_upload(
        self,
        bucket: str,
        key: str,
        upload_id: str,
        part_etags: Sequence[str],
        *,
        part_crc32s: Sequence[int] = (),
        crc32: int | None = None,
        part_checksums: Sequence[str] = (),
    ) -> str:
        """CompleteMultipartUpload; with `crc32`, the server checks the whole object's CRC32 against it (FULL_OBJECT)."""
        ...

    def abort_multipart_upload(self, bucket: str, key: str, upload_id: str) -> None: ...

    def list_parts(self, bucket: str, key: str, upload_id: str) -> list[ListedPart]:
        """ListParts, every page: the parts an open upload holds (NoSuchUpload once it was completed or aborted)."""
        ...

    def delete_objects(self, bucket: str, keys: Sequence[str], version_ids: Sequence[str] = ()) -> list[KeyFailure]:
        """Delete up to 1,000 keys (each at its version, when `version_ids` gives them, "" for none); per-key errors come
        back, not raised. Every key must be xml_safe."""
        ...

    def delete_object(self, bucket: str, key: str, *, version_id: str = "") -> None:
        """Delete one key; for keys a DeleteObjects XML body cannot carry."""
        ...

    def scoped(self, options: RequestOptions) -> ObjectStore:
        """A view sharing this store's connections whose every request carries `options`."""
        ...

    @property
    def retries(self) -> int:
        """Retries the adapter has made so far (for the report)."""
        ...

    @property
    def breaker(self) -> OutageBreaker:
        """The circuit breaker its requests report to (s3bulk/breakers/outage.py), shared with its scoped views."""
        ...
