"""S3 rules moto does not keep, added to its S3 responses for every test that runs moto (conftest applies it once).

UpdateObjectEncryption (`PUT /bucket/key?encryption`): moto 5 does not know the subresource and takes the request
for a PutObject, replacing the object's body with the request's XML. AWS instead re-wraps the object's data key
under the named KMS key: the body, ETag, dates and checksum stay; an unencrypted, DSSE-KMS or SSE-C object is refused
(InvalidRequest), and so is one under Object Lock (AccessDenied). Those are the rules implemented here, as the
operation's documentation states them. `calls` counts the requests, so a test can tell the in-place path from a copy.

CopyObject with Object Lock headers: moto applies its PutObject rule (a Content-MD5 or SDK checksum is required) to a
copy too; S3 takes them on a copy without one (boto3's managed copy and Batch Operations' copy send none). A copy
that names a retention or legal hold is let through that check here.

ListObjectVersions: S3 lists a key's versions and delete markers interleaved, newest first, in one sequence (its
`Version` and `DeleteMarker` elements mixed); moto writes all versions, then all markers, so a key's marker and the
version it hid cannot be ordered when they share a second of LastModified. The response is put in S3's order here,
from the backend's own record of each key's versions in the order they were made.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any
from unittest import mock

from moto.s3.exceptions import MissingKey, S3ClientError
from moto.s3.responses import S3Response
from requests.structures import CaseInsensitiveDict

_ARN = re.compile(r"^arn:aws[-a-z0-9]*:kms:[-a-z0-9]*:[0-9]{12}:key/.+$")
calls: list[tuple[str, str, str]] = []  # (bucket, key, KMSKeyArn) of each UpdateObjectEncryption answered


def _tag(xml: str, name: str) -> str:
    found = re.search(rf"<{name}>([^<]*)</{name}>", xml)
    return found.group(1) if found else ""


def _locked(key: Any) -> bool:
    if key.lock_legal_status == "ON":
        return True
    if key.lock_until:
        until = datetime.fromisoformat(str(key.lock_until).replace("Z", "+00:00"))
        return until > datetime.now(UTC)
    return False


def _with_update_object_encryption(real: Callable[..., Any]) -> Callable[..., Any]:
    def put(self: S3Response, query: dict[str, Any], key_name: str) -> Any:
        locks = ("x-amz-object-lock-mode", "x-amz-object-lock-retain-until-date", "x-amz-object-lock-legal-hold")
        if "x-amz-copy-source" in self.headers and any(h in self.headers for h in locks) and "encryption" not in query:
            headers = CaseInsensitiveDict(self.headers.items())  # names stay case-insensitive, as moto reads them
            headers["Content-Md5"] = "1B2M2Y8AsgTpgAmY7PhCfg=="  # past moto's PutObject rule
            self.headers = headers
        if "encryption" not in query:
            return real(self, query, key_name)
        version = (query.get("versionId") or [None])[0]
        key = self.backend.get_object(self.bucket_name, key_name, version_id=version)
        if key is None:
            raise MissingKey(key=key_name)
        body = self.body.decode() if isinstance(self.body, bytes) else str(self.body)
        arn, bucket_key = _tag(body, "KMSKeyArn"), _tag(body, "BucketKeyEnabled") == "true"
        if "<SSE-KMS>" not in body:
            raise S3ClientError(
                "InvalidRequest", "Requests that modify an object encryption configuration require a valid new encryption type."
            )
        if not _ARN.match(arn):
            raise S3ClientError(
                "InvalidRequest", "Requests that modify an object's encryption type to SSE-KMS require a valid KMS key ARN."
            )
        if key.encryption not in {"AES256", "aws:kms"}:
            raise S3ClientError("InvalidRequest", "Only source objects encrypted with SSE-S3 or SSE-KMS are supported.")
        if _locked(key):
            raise S3ClientError(
                "AccessDenied",
                "The encryption type for the specified object can't be updated because that object is protected by S3 Object Lock.",
            )
        key.encryption, key.kms_key_id, key.bucket_key_enabled = "aws:kms", arn, bucket_key
        calls.append((self.bucket_name, key_name, arn))
        return 200, {}, ""

    return put


def _versions_in_s3s_order(real: Callable[..., Any]) -> Callable[..., Any]:
    def list_object_versions(self: S3Response) -> Any:
        status, headers, body = real(self)
        text = body.decode() if isinstance(body, bytes) else str(body)
        entries = list(re.finditer(r"<(Version|DeleteMarker)>.*?</\1>", text, flags=re.S))
        if len(entries) < 2:
            return status, headers, body
        bucket = self.backend.get_bucket(self.bucket_name)

        def made(m: re.Match[str]) -> tuple[str, int]:
            key, version = _tag(m.group(0), "Key"), _tag(m.group(0), "VersionId")
            order = [str(v.version_id) for v in bucket.keys.getlist(key, [])]
            return key, -(order.index(version) if version in order else -1)  # key order, then newest first

        ordered = "".join(m.group(0) for m in sorted(entries, key=made))
        start, end = entries[0].start(), entries[-1].end()
        text = text[:start] + ordered + text[end:]
        return status, headers, text.encode() if isinstance(body, bytes) else text

    return list_object_versions


@contextmanager
def s3_as_aws() -> Iterator[None]:
    with (
        mock.patch.object(S3Response, "_key_response_put", _with_update_object_encryption(S3Response._key_response_put)),
        mock.patch.object(S3Response, "list_object_versions", _versions_in_s3s_order(S3Response.list_object_versions)),
    ):
        yield
