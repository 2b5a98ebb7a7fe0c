"""ListMultipartUploads as S3 answers it, for moto, which answers every upload as initiated in 2010, in creation order,
in one page, with no delimiter.

S3 (ListMultipartUploads in the API reference): uploads in key order and, within a key, by initiation time; `prefix`
and `delimiter` (keys past the delimiter rolled into CommonPrefixes); `key-marker` alone lists keys after it, with
`upload-id-marker` also that key's uploads after the named one (a marker that is a CommonPrefix skips its keys); `max-uploads` (default 1,000) per page, and a truncated
page names NextKeyMarker and NextUploadIdMarker. Each upload's Initiated is the time it was created, here recorded
when moto creates it. Applied with `faithful_uploads()` around a test (a moto server in this process, or mock_aws).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any
from unittest import mock

from moto.core.responses import ActionResult
from moto.s3.models import FakeMultipart
from moto.s3.responses import S3Response


def _stamped(real: Callable[..., None]) -> Callable[..., None]:
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        real(self, *args, **kwargs)
        self.initiated = datetime.now(UTC)

    return init


def _query(response: Any, name: str, default: str = "") -> str:
    return str(response.querystring.get(name, [default])[0] or default)


def _listing(self: Any) -> Any:
    prefix, delimiter = _query(self, "prefix"), _query(self, "delimiter")
    key_marker, id_marker = _query(self, "key-marker"), _query(self, "upload-id-marker")
    limit = int(_query(self, "max-uploads", "1000"))
    uploads = sorted(
        (u for u in self.backend.list_multipart_uploads(self.bucket_name).values() if u.key_name.startswith(prefix)),
        key=lambda u: (u.key_name, getattr(u, "initiated", datetime.min.replace(tzinfo=UTC))),
    )
    entries: list[Any] = []  # uploads, and (str) the CommonPrefixes their keys roll up into
    passed = not id_marker
    for u in uploads:
        key = u.key_name
        if key < key_marker or (key == key_marker and not id_marker):
            continue
        if key == key_marker and not passed:
            passed = u.id == id_marker
            continue
        cut = key.find(delimiter, len(prefix)) if delimiter else -1
        if cut >= 0:
            common = key[: cut + len(delimiter)]
            if common <= key_marker:  # a marker that is a CommonPrefix (a page ended on it) skips the keys it holds
                continue
            if common not in entries:
                entries.append(common)
            continue
        entries.append(u)
        if len(entries) > limit:
            break
    page, truncated = entries[:limit], len(entries) > limit
    result: dict[str, Any] = {
        "Bucket": self.bucket_name,
        "KeyMarker": key_marker,
        "UploadIdMarker": id_marker,
        "Prefix": prefix,
        "MaxUploads": limit,
        "IsTruncated": truncated,
        "Uploads": [
            {
                "Key": u.key_name,
                "UploadId": u.id,
                "StorageClass": u.storage or "STANDARD",
                "Initiated": u.initiated.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            }
            for u in page
            if not isinstance(u, str)
        ],
        "CommonPrefixes": [{"Prefix": p} for p in page if isinstance(p, str)],
    }
    if delimiter:
        result["Delimiter"] = delimiter
    if truncated:
        last = page[-1]
        result["NextKeyMarker"] = last if isinstance(last, str) else last.key_name
        result["NextUploadIdMarker"] = "" if isinstance(last, str) else last.id
    self.data["Action"] = "ListMultipartUploads"
    return self.serialized(ActionResult(result))


@contextmanager
def faithful_uploads() -> Iterator[None]:
    """moto's ListMultipartUploads answered as S3's, with each upload's own Initiated time."""
    with (
        mock.patch.object(FakeMultipart, "__init__", _stamped(FakeMultipart.__init__)),
        mock.patch.object(S3Response, "list_multipart_uploads", _listing),
    ):
        yield
