"""S3Store's listings: objects, versions (put in S3's order whatever the server sends) and multipart uploads."""

from __future__ import annotations

from typing import Any

from s3bulk.s3.keyorder import check_marked
from s3bulk.s3.keytext import check_sent, key_reader
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


def _truncated(r: dict[str, Any], call: str) -> bool:
    """Whether a marker-paged listing goes on; truncated without NextKeyMarker would read as its last page and silently
    drop every key after it, so it is an error."""
    if not r.get("IsTruncated"):
        return False
    if not r.get("NextKeyMarker"):
        raise StoreError("IncompleteListing", f"a truncated {call} page carried no NextKeyMarker", 500)
    return True
