"""The ObjectStore port served by a boto3 S3 client (AWS or any S3-compatible endpoint)."""

from __future__ import annotations

import copy
import dataclasses
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, HTTPClientError, ReadTimeoutError, ResponseStreamingError
from botocore.exceptions import ConnectionError as BotoConnectionError

from s3bulk.breakers.outage import OutageBreaker
from s3bulk.s3.keyorder import KeyOrder, check_marked
from s3bulk.s3.keytext import check_sent, key_reader
from s3bulk.s3.params import PARAMS, apply_carry, content_md5, encryption_of, grant_headers, request_headers, version_param
from s3bulk.s3.ratecontrol import RateControl
from s3bulk.s3.regions import BucketRegions
from s3bulk.s3.versionorder import KINDS, keep_version_order, merge_versions
from s3bulk.store import (
    Body,
    Carried,
    CopiedPart,
    Encryption,
    KeyFailure,
    ListedPart,
    ListPage,
    ObjectHead,
    ObjectInfo,
    RequestOptions,
    StoreError,
    crc32_header,
    quoted_etag,
    upload_markers,
    version_markers,
    version_token,
)

T = TypeVar("T")

# Headers a multipart copy must re-apply (CopyObject carries them itself).
_CHECKSUMS = ("CRC64NVME", "CRC32C", "CRC32", "SHA256", "SHA1")
READ_CHUNK = 1024 * 1024
_HEAD_HEADERS = ("CacheControl", "ContentDisposition", "ContentEncoding", "ContentLanguage", "Expires", "WebsiteRedirectLocation")
# What botocore raises when a request got no HTTP answer: EndpointConnectionError (refused, DNS), ConnectTimeoutError,
# SSLError, ProxyConnectionError (ConnectionError's), ConnectionClosedError and ReadTimeoutError (HTTPClientError's).
NO_ANSWER = (BotoConnectionError, HTTPClientError)


def _endpoint_of(client: Any) -> str:
    """The client's endpoint_url: the breaker's name for the endpoint on both request paths."""
    return str(getattr(client.meta, "endpoint_url", ""))


def watch_outages(client: Any, breaker: OutageBreaker) -> None:
    """Tell the breaker how every attempt of a botocore client went; once it has tripped, send nothing more.

    Raised from `needs-retry`, EndpointUnreachable also skips the backoff botocore would sleep
    (up to 20 s) before its next attempt.
    """
    endpoint = _endpoint_of(client)

    def sending(**kwargs: Any) -> None:
        breaker.check()

    def answered(response: Any = None, caught_exception: BaseException | None = None, **kwargs: Any) -> None:
        if response is not None:
            breaker.ok(endpoint)
        elif isinstance(caught_exception, NO_ANSWER):
            breaker.failed(endpoint, caught_exception)
            breaker.check()

    client.meta.events.register("before-send", sending, unique_id=f"s3bulk-outage-send-{id(breaker)}")
    client.meta.events.register("needs-retry", answered, unique_id=f"s3bulk-outage-answer-{id(breaker)}")


class _Count:
    """Shared by a store and its scoped views, so the report sees every retry."""

    def __init__(self) -> None:
        self.value = 0
        self._lock = threading.Lock()

    def add(self, n: int) -> None:
        with self._lock:
            self.value += n


# Elements every ListObjectsV2 / ListObjectVersions answer holds; an answer with none of them was cut short.
LISTING_ELEMENTS = ("IsTruncated", "Name", "KeyCount", "MaxKeys", "Prefix", "Contents", "Versions", "CommonPrefixes")
LISTING_ATTEMPTS = 4


class S3Store:
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

    def __init__(
        self,
        client: Any,
        *,
        max_keys: int = 1000,
        rate: RateControl | None = None,
        regions: BucketRegions | None = None,
        breaker: OutageBreaker | None = None,
    ) -> None:
        self.client = client
        self.max_keys = max_keys
        self.rate = rate or RateControl()
        self.rate.attach(client)
        self.breaker = breaker or OutageBreaker()
        watch_outages(client, self.breaker)
        keep_version_order(client)
        self.regions = regions
        if regions is not None:
            regions.prepare_clients(self.rate.attach)
            regions.prepare_clients(lambda other: watch_outages(other, self.breaker))
            regions.prepare_clients(keep_version_order)
        self.opts = RequestOptions()
        self.pinned: Mapping[str, str] = {}  # bucket -> the account the deployment pins it to (pin_owners)
        self._count_retries = _Count()
        self.key_order = KeyOrder()

    def _s3(self, bucket: str) -> Any:
        """The client for the bucket's Region: a dict read once the Region is known."""
        return self.client if self.regions is None else self.regions.client_for(bucket)

    @property
    def retries(self) -> int:
        return self._count_retries.value

    def pin_owners(self, owners: Mapping[str, str]) -> None:
        """Every request on these buckets, whatever job's view sends it, carries its owner (ExpectedBucketOwner, and
        ExpectedSourceBucketOwner as a copy's source): S3 refuses the request if another account owns the bucket."""
        self.pinned = dict(owners)
        self.opts = self._with_pins(self.opts)
        if self.regions is not None:
            self.regions.owners = self.pinned

    def _with_pins(self, options: RequestOptions) -> RequestOptions:
        return dataclasses.replace(options, owners={**options.owners, **self.pinned}) if self.pinned else options

    def scoped(self, options: RequestOptions) -> S3Store:
        options = self._with_pins(options)
        if options == self.opts:
            return self
        view = copy.copy(self)  # same client, pool, rate control and retry count
        view.opts = options
        return view

    def _params(self, bucket: str, *, source: str | None = None, write: bool = False) -> dict[str, str]:
        """The job's request options as botocore parameters."""
        return {PARAMS[k]: v for k, v in request_headers(self.opts, bucket, source=source, write=write).items()}

    def _call(self, fn: Callable[..., dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        """One API call (a bound method of a client), kept going through an outage shorter than the breaker's window."""
        client = getattr(fn, "__self__", None)
        endpoint = _endpoint_of(client) if client is not None else ""
        return self.breaker.guard(endpoint, lambda: self._call_once(fn, **kwargs))

    def _call_once(self, fn: Callable[..., dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        try:
            response = fn(**kwargs)
        except ClientError as exc:
            meta = exc.response.get("ResponseMetadata", {})
            self._count(meta.get("RetryAttempts", 0))
            err = exc.response.get("Error", {})
            code = str(err.get("Code") or meta.get("HTTPStatusCode") or "ClientError")
            raise StoreError(code, str(err.get("Message") or code), meta.get("HTTPStatusCode")) from exc
        except (ReadTimeoutError, ConnectTimeoutError) as exc:
            raise StoreError("ReadTimeout" if isinstance(exc, ReadTimeoutError) else "ConnectTimeout", str(exc)) from exc
        except NO_ANSWER as exc:  # refused, reset, DNS, TLS: retryable, and no answer for the breaker
            raise StoreError("ConnectionError", str(exc)) from exc
        except BotoCoreError as exc:
            raise StoreError(type(exc).__name__, str(exc)) from exc
        self._count(response.get("ResponseMetadata", {}).get("RetryAttempts", 0))
        return response

    def _count(self, retries: int) -> None:
        if retries:
            self._count_retries.add(retries)

    def list_page(
        self,
        bucket: str,
        prefix: str,
        token: str | None = None,
        start_after: str | None = None,
        delimiter: str | None = None,
        max_keys: int | None = None,
    ) -> ListPage:
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": max_keys or self.max_keys, **self._params(bucket)}
        if delimiter:
            kwargs["Delimiter"] = delimiter
        if token:
            kwargs["ContinuationToken"] = token
        elif start_after:
            kwargs["StartAfter"] = start_after
        # botocore asks for EncodingType=url and decodes keys, so control characters survive the XML (s3/keytext.py).
        r = self._listing(self._s3(bucket).list_objects_v2, kwargs)
        check_sent(
            r.get("EncodingType"), bucket, [o["Key"] for o in r.get("Contents", ())] + [p["Prefix"] for p in r.get("CommonPrefixes", ())]
        )
        objects = [
            ObjectInfo(o["Key"], int(o.get("Size", 0)), quoted_etag(o.get("ETag")), o.get("LastModified"), o.get("StorageClass"))
            for o in r.get("Contents", ())
        ]
        prefixes = [p["Prefix"] for p in r.get("CommonPrefixes", ())]
        if r.get("IsTruncated") and not r.get("NextContinuationToken"):  # read as the last page, it would drop every key after it
            raise StoreError("IncompleteListing", "a truncated ListObjectsV2 page carried no NextContinuationToken", 500)
        page = ListPage(objects, r["NextContinuationToken"] if r.get("IsTruncated") else None, prefixes)
        return self.key_order.checked(bucket, page, token=token, start_after=start_after)

    def _listing(self, call: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        """A listing answer, asked again when it came back empty of every element S3 always sends (IsTruncated, Name,
        KeyCount...): a 200 whose body was cut in transit parses to {} in botocore, which would read as the last page
        and silently drop every key after it."""
        for _ in range(LISTING_ATTEMPTS):
            r: dict[str, Any] = self._call(call, **kwargs)
            if any(k in r for k in LISTING_ELEMENTS):
                return r
            self._count(1)
        raise StoreError("IncompleteBody", f"a listing answer came back without its elements {LISTING_ATTEMPTS} times", 200)

    def list_versions_page(
        self,
        bucket: str,
        prefix: str,
        token: str | None = None,
        key_marker: str | None = None,
        delimiter: str | None = None,
        max_keys: int | None = None,
    ) -> ListPage:
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": max_keys or self.max_keys, **self._params(bucket)}
        if delimiter:
            kwargs["Delimiter"] = delimiter
        if token:
            kwargs.update(version_markers(token))
        elif key_marker:
            kwargs["KeyMarker"] = key_marker
        r = self._listing(self._s3(bucket).list_object_versions, kwargs)
        sent = [v["Key"] for v in (*r.get("Versions", ()), *r.get("DeleteMarkers", ()))] + [
            p["Prefix"] for p in r.get("CommonPrefixes", ())
        ]
        check_sent(r.get("EncodingType"), bucket, sent)
        versions = [
            ObjectInfo(
                v["Key"],
                int(v.get("Size", 0)),
                quoted_etag(v.get("ETag")),
                v.get("LastModified"),
                v.get("StorageClass"),
                str(v.get("VersionId") or "null"),
                bool(v.get("IsLatest")),
            )
            for v in r.get("Versions", ())
        ]
        markers = [
            ObjectInfo(
                m["Key"], 0, "", m.get("LastModified"), None, str(m.get("VersionId") or "null"), bool(m.get("IsLatest")), delete_marker=True
            )
            for m in r.get("DeleteMarkers", ())
        ]
        prefixes = [p["Prefix"] for p in r.get("CommonPrefixes", ())]
        truncated = _truncated(r, "ListObjectVersions")
        nxt = version_token(r["NextKeyMarker"], r.get("NextVersionIdMarker") or "") if truncated else None
        page = ListPage(merge_versions(versions, markers, r.get(KINDS, "")), nxt, prefixes)
        return check_marked(bucket, page, kwargs.get("KeyMarker"))

    def list_uploads_page(
        self,
        bucket: str,
        prefix: str,
        token: str | None = None,
        key_marker: str | None = None,
        delimiter: str | None = None,
        max_keys: int | None = None,
    ) -> ListPage:
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "MaxUploads": max_keys or self.max_keys, **self._params(bucket)}
        if delimiter:
            kwargs["Delimiter"] = delimiter
        if token:
            kwargs.update(upload_markers(token))
        elif key_marker:
            kwargs["KeyMarker"] = key_marker
        # botocore does not ask ListMultipartUploads for url-encoded keys as it does listings; asked here, and decoded
        # only when the answer says it encoded them (a server that ignores the parameter sends keys as they are).
        r = self._listing(self._s3(bucket).list_multipart_uploads, {**kwargs, "EncodingType": "url"})
        plain = key_reader(r.get("EncodingType"), bucket)
        uploads = [
            ObjectInfo(plain(u["Key"]), 0, "", u.get("Initiated"), u.get("StorageClass"), upload_id=str(u["UploadId"]))
            for u in r.get("Uploads", ())
        ]
        prefixes = [plain(p["Prefix"]) for p in r.get("CommonPrefixes", ())]
        truncated = _truncated(r, "ListMultipartUploads")
        nxt = version_token(plain(r["NextKeyMarker"]), r.get("NextUploadIdMarker") or "") if truncated else None
        return check_marked(bucket, ListPage(uploads, nxt, prefixes), kwargs.get("KeyMarker"))

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
        except (ReadTimeoutError, ResponseStreamingError) as exc:
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
        except (ReadTimeoutError, ResponseStreamingError) as exc:
            raise StoreError("ReadTimeout" if isinstance(exc, ReadTimeoutError) else "ConnectionError", str(exc)) from exc
        finally:
            body.close()
        if got != len(data):
            # A server that ignores Range, or a body cut short, must not pass for the bytes asked for.
            raise StoreError("IncompleteBody", f"asked for bytes {first}-{last} and got {got} bytes")
        return data  # a bytearray: bytes-like, and no second copy

    def _new_object(self, bucket: str, key: str, head: ObjectHead, tags: Mapping[str, str], storage_class: str | None) -> dict[str, Any]:
        """The arguments that create an object: where, with what headers, metadata, tags and class."""
        kwargs: dict[str, Any] = {
            "Bucket": bucket,
            "Key": key,
            "Metadata": head.metadata,
            **head.headers,
            **self._params(bucket, write=True),
        }
        if head.content_type:
            kwargs["ContentType"] = head.content_type
        if tags:
            kwargs["Tagging"] = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in tags.items())
        if storage_class:
            kwargs["StorageClass"] = storage_class
        return kwargs

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
        kwargs = self._new_object(bucket, key, head, tags, storage_class)
        apply_carry(kwargs, carry)
        if crc32:
            kwargs.update(ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT")
        elif checksum_algorithm:  # CRC64NVME exists only as a full-object checksum; the others combine per part
            kind = "FULL_OBJECT" if checksum_algorithm == "CRC64NVME" else "COMPOSITE"
            kwargs.update(ChecksumAlgorithm=checksum_algorithm, ChecksumType=kind)
        return str(self._call(self._s3(bucket).create_multipart_upload, **kwargs)["UploadId"])

    def upload_part(self, bucket: str, key: str, upload_id: str, part_number: int, body: Body, *, crc32: int | None = None) -> str:
        checksum = {} if crc32 is None else {"ChecksumCRC32": crc32_header(crc32)}
        r = self._call(
            self._s3(bucket).upload_part,
            Bucket=bucket,
            Key=key,
            UploadId=upload_id,
            PartNumber=part_number,
            Body=body,
            ContentMD5=content_md5(body),
            **checksum,
            **self._params(bucket),  # encryption was set when the upload was created
        )
        return quoted_etag(r.get("ETag"))

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
        r = self._call(
            self._s3(dst_bucket).upload_part_copy,
            Bucket=dst_bucket,
            Key=dst_key,
            UploadId=upload_id,
            PartNumber=part_number,
            CopySource={"Bucket": src_bucket, "Key": src_key, **version_param(src_version)},
            CopySourceRange=f"bytes={first_byte}-{last_byte}",
            CopySourceIfMatch=if_match,
            **self._params(dst_bucket, source=src_bucket),
        )
        result = r["CopyPartResult"]
        checksum = next((f"{alg}:{result[f'Checksum{alg}']}" for alg in _CHECKSUMS if result.get(f"Checksum{alg}")), "")
        return CopiedPart(quoted_etag(result["ETag"]), checksum)

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
        parts: list[dict[str, Any]] = [{"PartNumber": n, "ETag": etag} for n, etag in enumerate(part_etags, start=1)]
        for part, crc in zip(parts, part_crc32s, strict=False):
            part["ChecksumCRC32"] = crc32_header(crc)
        for part, part_checksum in zip(parts, part_checksums, strict=False):
            if part_checksum:  # "ALGORITHM:value", as upload_part_copy returned it
                alg, value = part_checksum.split(":", 1)
                part[f"Checksum{alg}"] = value
        checksum = {} if crc32 is None else {"ChecksumCRC32": crc32_header(crc32), "ChecksumType": "FULL_OBJECT"}
        if part_checksums and part_checksums[0].startswith("CRC64NVME:"):
            checksum = {"ChecksumType": "FULL_OBJECT"}  # S3 combines the parts' CRC64NVMEs into the object's
        r = self._call(
            self._s3(bucket).complete_multipart_upload,
            Bucket=bucket,
            Key=key,
            UploadId=upload_id,
            MultipartUpload={"Parts": parts},
            **checksum,
            **self._params(bucket),
        )
        return quoted_etag(r.get("ETag"))

    def abort_multipart_upload(self, bucket: str, key: str, upload_id: str) -> None:
        self._call(self._s3(bucket).abort_multipart_upload, Bucket=bucket, Key=key, UploadId=upload_id, **self._params(bucket))

    def list_parts(self, bucket: str, key: str, upload_id: str) -> list[ListedPart]:
        parts: list[ListedPart] = []
        marker: dict[str, Any] = {}
        while True:
            r = self._call(self._s3(bucket).list_parts, Bucket=bucket, Key=key, UploadId=upload_id, **marker, **self._params(bucket))
            for p in r.get("Parts", ()):
                checksum = next((f"{alg}:{p[f'Checksum{alg}']}" for alg in _CHECKSUMS if p.get(f"Checksum{alg}")), "")
                parts.append(ListedPart(int(p["PartNumber"]), quoted_etag(p.get("ETag")), int(p.get("Size", 0)), checksum))
            if not r.get("IsTruncated"):
                return parts
            marker = {"PartNumberMarker": int(r["NextPartNumberMarker"])}

    def delete_objects(self, bucket: str, keys: Sequence[str], version_ids: Sequence[str] = ()) -> list[KeyFailure]:
        objects = [{"Key": k, **version_param(v)} for k, v in zip(keys, version_ids or [""] * len(keys), strict=True)]
        r = self._call(self._s3(bucket).delete_objects, Bucket=bucket, Delete={"Objects": objects, "Quiet": True}, **self._params(bucket))
        return [
            KeyFailure(e.get("Key", ""), e.get("Code", "Unknown"), e.get("Message", ""), e.get("VersionId") or "")
            for e in r.get("Errors", ())
        ]

    def delete_object(self, bucket: str, key: str, *, version_id: str = "") -> None:
        self._call(self._s3(bucket).delete_object, Bucket=bucket, Key=key, **version_param(version_id), **self._params(bucket))


def _truncated(r: dict[str, Any], call: str) -> bool:
    """Whether a marker-paged listing goes on; truncated without NextKeyMarker would read as its last page and silently
    drop every key after it, so it is an error."""
    if not r.get("IsTruncated"):
        return False
    if not r.get("NextKeyMarker"):
        raise StoreError("IncompleteListing", f"a truncated {call} page carried no NextKeyMarker", 500)
    return True
