"""S3Store's listings: objects, versions (put in S3's order whatever the server sends) and multipart uploads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from s3bulk.s3.keyorder import check_marked
from s3bulk.s3.keytext import unencoded
from s3bulk.s3.storebase import LISTING_ATTEMPTS, LISTING_ELEMENTS, StoreBase
from s3bulk.s3.versionorder import KINDS, merge_versions
from s3bulk.store import (
    ListPage,
    ObjectInfo,
    StoreError,
    quoted_etag,
    upload_markers,
    version_markers,
    version_token,
)


class ListingCalls(StoreBase):
    """ListObjectsV2, ListObjectVersions and ListMultipartUploads as the port's pages."""

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
        # Asked for url-encoded keys, so control characters survive the XML; asked explicitly, so botocore leaves the keys
        # as sent, and they are decoded here only when the answer says it encoded them and the claim held (s3/keytext.py).
        kwargs["EncodingType"] = "url"
        call = self._s3(bucket).list_objects_v2
        r = self._listing(call, kwargs)
        read = self._reader("ListObjectsV2", bucket, call, kwargs, r, _object_keys)
        objects = [
            ObjectInfo(read(o["Key"]), int(o.get("Size", 0)), quoted_etag(o.get("ETag")), o.get("LastModified"), o.get("StorageClass"))
            for o in r.get("Contents", ())
        ]
        prefixes = [read(p["Prefix"]) for p in r.get("CommonPrefixes", ())]
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

    def _reader(
        self, name: str, bucket: str, call: Any, kwargs: dict[str, Any], r: dict[str, Any], keys_of: Callable[[dict[str, Any]], list[str]]
    ) -> Callable[[str], str]:
        """How to read the keys of answer `r` to `call` (asked with EncodingType url): the same page is asked again
        without encoding-type, once per bucket and call, when the answer's claim must be checked (keytext.EncodingClaims)."""

        def ask(encoded: bool) -> list[str]:
            if encoded:
                return keys_of(self._listing(call, kwargs))
            with unencoded():
                return keys_of(self._listing(call, {k: v for k, v in kwargs.items() if k != "EncodingType"}))

        return self.claims.reader(bucket, name, r.get("EncodingType"), keys_of(r), ask)

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
        kwargs["EncodingType"] = "url"  # as list_page asks, and for the same reasons
        call = self._s3(bucket).list_object_versions
        r = self._listing(call, kwargs)
        read = self._reader("ListObjectVersions", bucket, call, kwargs, r, _version_keys)
        versions = [
            ObjectInfo(
                read(v["Key"]),
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
                read(m["Key"]),
                0,
                "",
                m.get("LastModified"),
                None,
                str(m.get("VersionId") or "null"),
                bool(m.get("IsLatest")),
                delete_marker=True,
            )
            for m in r.get("DeleteMarkers", ())
        ]
        prefixes = [read(p["Prefix"]) for p in r.get("CommonPrefixes", ())]
        truncated = _truncated(r, "ListObjectVersions")
        nxt = version_token(read(r["NextKeyMarker"]), r.get("NextVersionIdMarker") or "") if truncated else None
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
        # only when the answer says it encoded them and the claim held (a server that ignores the parameter sends keys
        # as they are).
        kwargs["EncodingType"] = "url"
        call = self._s3(bucket).list_multipart_uploads
        r = self._listing(call, kwargs)
        plain = self._reader("ListMultipartUploads", bucket, call, kwargs, r, _upload_keys)
        uploads = [
            ObjectInfo(plain(u["Key"]), 0, "", u.get("Initiated"), u.get("StorageClass"), upload_id=str(u["UploadId"]))
            for u in r.get("Uploads", ())
        ]
        prefixes = [plain(p["Prefix"]) for p in r.get("CommonPrefixes", ())]
        truncated = _truncated(r, "ListMultipartUploads")
        nxt = version_token(plain(r["NextKeyMarker"]), r.get("NextUploadIdMarker") or "") if truncated else None
        return check_marked(bucket, ListPage(uploads, nxt, prefixes), kwargs.get("KeyMarker"))


def _object_keys(r: dict[str, Any]) -> list[str]:
    """A ListObjectsV2 answer's keys and prefixes as botocore parsed them: what an encoding claim is checked on."""
    return [o.get("Key", "") for o in r.get("Contents", ())] + [p.get("Prefix", "") for p in r.get("CommonPrefixes", ())]


def _version_keys(r: dict[str, Any]) -> list[str]:
    entries = (*r.get("Versions", ()), *r.get("DeleteMarkers", ()))
    return [v.get("Key", "") for v in entries] + [p.get("Prefix", "") for p in r.get("CommonPrefixes", ())]


def _upload_keys(r: dict[str, Any]) -> list[str]:
    return [u.get("Key", "") for u in r.get("Uploads", ())] + [p.get("Prefix", "") for p in r.get("CommonPrefixes", ())]


def _truncated(r: dict[str, Any], call: str) -> bool:
    """Whether a marker-paged listing goes on; truncated without NextKeyMarker would read as its last page and silently
    drop every key after it, so it is an error."""
    if not r.get("IsTruncated"):
        return False
    if not r.get("NextKeyMarker"):
        raise StoreError("IncompleteListing", f"a truncated {call} page carried no NextKeyMarker", 500)
    return True
