"""The ObjectStore port served by a boto3 S3 client (AWS or any S3-compatible endpoint)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import IncompleteReadError, ReadTimeoutError, ResponseStreamingError

from s3bulk.s3.listings import ListingCalls
from s3bulk.s3.params import apply_carry, content_md5, encryption_of, grant_headers, version_param
from s3bulk.s3.storebase import _CHECKSUMS, _HEAD_HEADERS, READ_CHUNK, _endpoint_of
from s3bulk.s3.uploads import UploadCalls
from s3bulk.store import (
    Body,
    Carried,
    Encryption,
    KeyFailure,
    ObjectHead,
    StoreError,
    crc32_header,
    quoted_etag,
)

# A body that stopped coming: timed out, reset, or closed before its Content-Length (botocore's IncompleteReadError,
# raised by the body's own length check). Each is the endpoint failing, not the object: a ConnectionError (or
# ReadTimeout) that the retries and the outage breaker take as no answer, never a failure of that object.
CUT_SHORT = (ReadTimeoutError, ResponseStreamingError, IncompleteReadError)


class S3Store(ListingCalls, UploadCalls):
    """Thin: each method is one API call, retried by botocore (standard mode, bounded; docs/retries.md).

    FastS3Store sends its three hot calls on fastpath.py instead, which retries them itself with the same bounds.

    With `regions` (docs/regions.md), each call goes through the client for its bucket's
    Region (a copy: the destination's). A stale cached Region is fixed by botocore's own
    S3RegionRedirectorv2, which resends once (also with a custom endpoint), and
    BucketRegions copies what it learned into the shared cache. Without `regions`,
    every call uses `client`, as before.

    `breaker` (s3bulk/breakers/outage.py) hears how every attempt went, on both request paths, and
    keeps a call going while its endpoint does not answer, until the endpoint answers or the
    breaker trips; scoped views share it.
    """

    def object_ownership(self, bucket: str) -> str:
        owner = {k: v for k, v in self._params(bucket).items() if k == "ExpectedBucketOwner"}
        try:
            r = self._call(self._s3(bucket).get_bucket_ownership_controls, Bucket=bucket, **owner)
        except StoreError as exc:
            if exc.code == "OwnershipControlsNotFoundError":
                return ""
            raise
        rules = r.get("OwnershipControls", {}).get("Rules", [])
        return str(rules[0].get("ObjectOwnership", "")) if rules else ""

    def bucket_versioning(self, bucket: str) -> str:
        owner = {k: v for k, v in self._params(bucket).items() if k == "ExpectedBucketOwner"}  # it takes no RequestPayer
        return str(self._call(self._s3(bucket).get_bucket_versioning, Bucket=bucket, **owner).get("Status", ""))

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
        source = {"Bucket": src_bucket, "Key": src_key, **({"VersionId": src_version} if src_version else {})}
        kwargs: dict[str, Any] = {
            "Bucket": dst_bucket,
            "Key": dst_key,
            # A dict, never "bucket/key": botocore quotes it exactly, so no key is normalised.
            "CopySource": source,
            **self._params(dst_bucket, source=src_bucket, write=True),
        }
        if storage_class:
            kwargs["StorageClass"] = storage_class
        if checksum_algorithm:
            kwargs["ChecksumAlgorithm"] = checksum_algorithm
        if if_match:
            kwargs["CopySourceIfMatch"] = if_match
        if metadata is not None:
            kwargs.update(MetadataDirective="REPLACE", Metadata=metadata.metadata, **metadata.headers)
            if metadata.content_type:
                kwargs["ContentType"] = metadata.content_type
        apply_carry(kwargs, carry)
        r = self._call(self._s3(dst_bucket).copy_object, **kwargs)
        return quoted_etag(r.get("CopyObjectResult", {}).get("ETag"))

    def head_object(self, bucket: str, key: str, *, version_id: str = "") -> ObjectHead:
        r = self._call(
            self._s3(bucket).head_object,
            Bucket=bucket,
            Key=key,
            ChecksumMode="ENABLED",
            **version_param(version_id),
            **self._params(bucket),
        )
        headers = {h: r[h] for h in _HEAD_HEADERS if r.get(h) is not None}
        checksum = next((f"{alg}:{r[f'Checksum{alg}']}" for alg in _CHECKSUMS if r.get(f"Checksum{alg}")), "")
        return ObjectHead(
            int(r.get("ContentLength", 0)),
            quoted_etag(r.get("ETag")),
            r.get("ContentType"),
            dict(r.get("Metadata", {})),
            headers,
            checksum,
            encryption_of(r),
            r.get("StorageClass"),
            r.get("LastModified"),
            (str(r["ObjectLockMode"]), r["ObjectLockRetainUntilDate"]) if r.get("ObjectLockMode") else None,
            r.get("ObjectLockLegalHoldStatus") == "ON",
        )

    def get_tags(self, bucket: str, key: str, *, version_id: str = "") -> dict[str, str]:
        r = self._call(self._s3(bucket).get_object_tagging, Bucket=bucket, Key=key, **version_param(version_id), **self._params(bucket))
        return {t["Key"]: t["Value"] for t in r.get("TagSet", ())}

    def put_tags(self, bucket: str, key: str, tags: Mapping[str, str], *, version_id: str = "") -> None:
        v = version_param(version_id)
        if not tags:  # no tags at all: DeleteObjectTagging, which every S3 implementation takes (an empty TagSet is not)
            self._call(self._s3(bucket).delete_object_tagging, Bucket=bucket, Key=key, **v, **self._params(bucket))
            return
        tag_set = [{"Key": k, "Value": val} for k, val in tags.items()]
        self._call(self._s3(bucket).put_object_tagging, Bucket=bucket, Key=key, Tagging={"TagSet": tag_set}, **v, **self._params(bucket))

    def put_retention(
        self, bucket: str, key: str, mode: str, until: datetime | None, *, bypass_governance: bool = False, version_id: str = ""
    ) -> None:
        extra = {"BypassGovernanceRetention": True} if bypass_governance else {}
        retention = {"Mode": mode, "RetainUntilDate": until} if until is not None else {}
        self._call(
            self._s3(bucket).put_object_retention,
            Bucket=bucket,
            Key=key,
            Retention=retention,
            **extra,
            **version_param(version_id),
            **self._params(bucket),
        )

    def put_legal_hold(self, bucket: str, key: str, status: str, *, version_id: str = "") -> None:
        self._call(
            self._s3(bucket).put_object_legal_hold,
            Bucket=bucket,
            Key=key,
            LegalHold={"Status": status},
            **version_param(version_id),
            **self._params(bucket),
        )

    def get_legal_hold(self, bucket: str, key: str, *, version_id: str = "") -> str:
        try:
            r = self._call(
                self._s3(bucket).get_object_legal_hold, Bucket=bucket, Key=key, **version_param(version_id), **self._params(bucket)
            )
        except StoreError as exc:
            if exc.code == "NoSuchObjectLockConfiguration":  # no hold was ever set on it
                return "OFF"
            raise
        return str(r.get("LegalHold", {}).get("Status", "OFF"))

    def default_encryption(self, bucket: str) -> Encryption | None:
        owner = {k: v for k, v in self._params(bucket).items() if k == "ExpectedBucketOwner"}
        try:
            r = self._call(self._s3(bucket).get_bucket_encryption, Bucket=bucket, **owner)
        except StoreError:  # none set, not allowed to ask, or a server without the call
            return None
        for rule in r.get("ServerSideEncryptionConfiguration", {}).get("Rules", []):
            default = rule.get("ApplyServerSideEncryptionByDefault") or {}
            if default.get("SSEAlgorithm"):
                return Encryption(
                    str(default["SSEAlgorithm"]), str(default.get("KMSMasterKeyID") or ""), bool(rule.get("BucketKeyEnabled"))
                )
        return None

    def updates_encryption(self, bucket: str) -> bool:
        host = urlsplit(_endpoint_of(self._s3(bucket))).hostname or ""
        return host.endswith((".amazonaws.com", ".amazonaws.com.cn"))

    def update_object_encryption(self, bucket: str, key: str, kms_key_arn: str, *, bucket_key: bool, version_id: str = "") -> None:
        self._call(
            self._s3(bucket).update_object_encryption,
            Bucket=bucket,
            Key=key,
            ObjectEncryption={"SSEKMS": {"KMSKeyArn": kms_key_arn, "BucketKeyEnabled": bucket_key}},
            **version_param(version_id),
            **self._params(bucket),
        )

    def put_acl(self, bucket: str, key: str, acl: str, *, version_id: str = "", policy: Mapping[str, Any] | None = None) -> None:
        what: dict[str, Any] = (grant_headers(policy) or {"AccessControlPolicy": dict(policy)}) if policy is not None else {"ACL": acl}
        self._call(self._s3(bucket).put_object_acl, Bucket=bucket, Key=key, **what, **version_param(version_id), **self._params(bucket))

    def get_acl(self, bucket: str, key: str, *, version_id: str = "") -> dict[str, Any]:
        r = self._call(self._s3(bucket).get_object_acl, Bucket=bucket, Key=key, **version_param(version_id), **self._params(bucket))
        return {"Owner": r.get("Owner", {}), "Grants": r.get("Grants", [])}

    def restore_object(self, bucket: str, key: str, days: int, tier: str, *, version_id: str = "") -> bool:
        request = {"Days": days, "GlacierJobParameters": {"Tier": tier}}
        try:
            r = self._call(
                self._s3(bucket).restore_object,
                Bucket=bucket,
                Key=key,
                RestoreRequest=request,
                **version_param(version_id),
                **self._params(bucket),
            )
        except StoreError as exc:
            if exc.code == "RestoreAlreadyInProgress":
                return False
            raise
        return int(r.get("ResponseMetadata", {}).get("HTTPStatusCode", 202)) == 202  # 200: already restored, days updated

    def read_object(self, bucket: str, key: str, start: int = 0, *, version_id: str = "") -> Iterator[bytes]:
        ranged = {"Range": f"bytes={start}-"} if start else {}
        if version_id:
            ranged["VersionId"] = version_id
        r = self._call(self._s3(bucket).get_object, Bucket=bucket, Key=key, **ranged, **self._params(bucket))
        body = r["Body"]
        try:
            yield from body.iter_chunks(READ_CHUNK)
        except CUT_SHORT as exc:
            raise StoreError("ReadTimeout" if isinstance(exc, ReadTimeoutError) else "ConnectionError", str(exc)) from exc
        finally:
            body.close()

    def read_range(self, bucket: str, key: str, first: int, last: int, if_match: str = "", *, version_id: str = "") -> Body:
        pinned = {"IfMatch": if_match} if if_match else {}
        if version_id:
            pinned["VersionId"] = version_id
        r = self._call(self._s3(bucket).get_object, Bucket=bucket, Key=key, Range=f"bytes={first}-{last}", **pinned, **self._params(bucket))
        body = r["Body"]
        # Filled in 1 MiB reads: one read() of the whole range would hold it twice while the socket's pieces are joined.
        data = bytearray(last - first + 1)
        got = 0
        try:
            for chunk in body.iter_chunks(READ_CHUNK):
                end = got + len(chunk)
                if end > len(data):
                    raise StoreError("IncompleteBody", f"asked for bytes {first}-{last} and got more")
                data[got:end] = chunk
                got = end
        except CUT_SHORT as exc:
            raise StoreError("ReadTimeout" if isinstance(exc, ReadTimeoutError) else "ConnectionError", str(exc)) from exc
        finally:
            body.close()
        if got != len(data):
            # A server that ignores Range, or a body cut short, must not pass for the bytes asked for.
            raise StoreError("IncompleteBody", f"asked for bytes {first}-{last} and got {got} bytes")
        return data  # a bytearray: bytes-like, and no second copy

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
        kwargs = self._new_object(bucket, key, head, tags, storage_class)
        if crc32 is not None:  # the algorithm too: servers that check the value without it may not store it
            kwargs.update(ChecksumAlgorithm="CRC32", ChecksumCRC32=crc32_header(crc32))
        r = self._call(self._s3(bucket).put_object, Body=body, ContentMD5=content_md5(body), **kwargs)
        return quoted_etag(r.get("ETag"))

    def delete_objects(self, bucket: str, keys: Sequence[str], version_ids: Sequence[str] = ()) -> list[KeyFailure]:
        objects = [{"Key": k, **version_param(v)} for k, v in zip(keys, version_ids or [""] * len(keys), strict=True)]
        r = self._call(self._s3(bucket).delete_objects, Bucket=bucket, Delete={"Objects": objects, "Quiet": True}, **self._params(bucket))
        return [
            KeyFailure(e.get("Key", ""), e.get("Code", "Unknown"), e.get("Message", ""), e.get("VersionId") or "")
            for e in r.get("Errors", ())
        ]

    def delete_object(self, bucket: str, key: str, *, version_id: str = "") -> None:
        self._call(self._s3(bucket).delete_object, Bucket=bucket, Key=key, **version_param(version_id), **self._params(bucket))
