"""The fast path's own requests in the whole-stack harness: signed and sent as on AWS, checked against the
caller's role, then answered by in-process moto.

On AWS the functions send CopyObject, DeleteObjects, DeleteObject and the listings on the fast path
(s3bulk/s3/fastpath.py), on sockets of their own, not through botocore. In-process moto sees only
botocore, so here the raw request (method, target, signed headers, body) is handed to moto's own
request dispatcher instead of a socket. Before that, it is read back into the S3 operation and
parameters AWS would authorize (the same IamGate as botocore's calls), so a role missing an action
the fast path needs fails the test as AWS would refuse the request: with a 403 AccessDenied answer.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from unittest import mock
from urllib.parse import parse_qs, unquote, urlsplit
from xml.etree import ElementTree

from botocore.awsrequest import AWSPreparedRequest, HTTPHeaders
from botocore.exceptions import ClientError
from moto.core.models import botocore_stubber

from s3bulk.s3 import leanhttp
from s3bulk.testing.stack.iam import MISSING_NEEDS_LIST, IamGate, Killed, invocation_of_thread, principal_of_thread


class UnknownRequest(Exception):
    """A fast-path request this module cannot name: add it here rather than let it pass unchecked."""


def _bucket_and_key(host: str, path: str) -> tuple[str, str | None]:
    """Virtual-hosted (bucket.s3.REGION.amazonaws.com) or path-style (s3...amazonaws.com/bucket/key) addressing."""
    path = unquote(path)
    if ".s3." in host:
        return host.split(".s3.", 1)[0], path[1:] or None
    bucket, _, key = path.lstrip("/").partition("/")
    return bucket, key or None


def s3_operation(method: str, host: str, target: str, headers: Mapping[str, str], body: bytes) -> tuple[str, dict[str, Any]]:
    """The operation and the parameters (in botocore's shape) of one fast-path request, with the owners it expects."""
    op, params = _operation(method, host, target, headers, body)
    lower = {k.lower(): v for k, v in headers.items()}
    for header, name in (
        ("x-amz-expected-bucket-owner", "ExpectedBucketOwner"),
        ("x-amz-source-expected-bucket-owner", "ExpectedSourceBucketOwner"),
    ):
        if header in lower:
            params[name] = lower[header]
    return op, params


def _operation(method: str, host: str, target: str, headers: Mapping[str, str], body: bytes) -> tuple[str, dict[str, Any]]:
    split = urlsplit(target)
    query = parse_qs(split.query, keep_blank_values=True)
    bucket, key = _bucket_and_key(host, split.path)
    lower = {k.lower(): v for k, v in headers.items()}
    if method == "GET" and key is None and query.get("list-type") == ["2"]:
        return "ListObjectsV2", {"Bucket": bucket, "Prefix": query.get("prefix", [""])[0]}
    if method == "GET" and key is None and "versions" in query:
        return "ListObjectVersions", {"Bucket": bucket, "Prefix": query.get("prefix", [""])[0]}
    if method == "POST" and key is None and "delete" in query:
        ns = {"s3": "http://s3.amazonaws.com/doc/2006-03-01/"}
        root = ElementTree.fromstring(body)
        objects = []
        for o in root.findall("s3:Object", ns) + root.findall("Object"):
            item = {"Key": o.findtext("s3:Key", namespaces=ns) or o.findtext("Key") or ""}
            version = o.findtext("s3:VersionId", namespaces=ns) or o.findtext("VersionId")
            if version:
                item["VersionId"] = version
            objects.append(item)
        params: dict[str, Any] = {"Bucket": bucket, "Delete": {"Objects": objects}}
        if lower.get("x-amz-bypass-governance-retention") == "true":
            params["BypassGovernanceRetention"] = True
        return "DeleteObjects", params
    if method == "PUT" and key is not None and "x-amz-copy-source" in lower:
        op = "UploadPartCopy" if "partNumber" in query else "CopyObject"
        params = {"Bucket": bucket, "Key": key, "CopySource": unquote(lower["x-amz-copy-source"])}
        if op == "UploadPartCopy":
            params["UploadId"] = query.get("uploadId", [""])[0]
        for header, name in (
            ("x-amz-server-side-encryption", "ServerSideEncryption"),
            ("x-amz-server-side-encryption-aws-kms-key-id", "SSEKMSKeyId"),
            ("x-amz-object-lock-mode", "ObjectLockMode"),
            ("x-amz-object-lock-legal-hold", "ObjectLockLegalHoldStatus"),
            ("x-amz-acl", "ACL"),
            ("x-amz-tagging", "Tagging"),
        ):
            if header in lower:
                params[name] = lower[header]
        if any(h.startswith("x-amz-grant-") for h in lower):
            params["GrantRead"] = "granted"
        return op, params
    if method == "DELETE" and key is not None:
        params = {"Bucket": bucket, "Key": key}
        if "versionId" in query:
            params["VersionId"] = query["versionId"][0]
        return "DeleteObject", params
    raise UnknownRequest(f"{method} {target} on {host}")


def _denied(message: str) -> leanhttp._Answer:
    body = f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>AccessDenied</Code><Message>{message}</Message></Error>"
    return leanhttp._Answer(403, {"content-type": "application/xml"}, body.encode())


@contextmanager
def through_moto(gate: IamGate, limits: Any = None) -> Iterator[list[str]]:
    """While inside, every fast-path request is checked against its caller's role and answered by moto. Yields
    the operations seen (`ListObjectsV2 bucket`, ...), so a test can show the fast path was taken at all."""
    seen: list[str] = []
    real = leanhttp.LeanPool.urlopen

    def urlopen(
        pool: leanhttp.LeanPool, method: str, target: str, *, body: bytes, headers: Mapping[str, str], **kw: Any
    ) -> leanhttp._Answer:
        if not pool.host.endswith(".amazonaws.com"):  # another provider's endpoint (a relay's far side, a test's server)
            return real(pool, method, target, body=body, headers=headers, **kw)
        invocation = invocation_of_thread()
        if invocation is not None and invocation.killed:
            gate.after_kill.append(f"{invocation.function}: {method} {target} after the invocation was {invocation.killed}")
            raise Killed(f"{invocation.function}'s invocation was {invocation.killed}")
        op, params = s3_operation(method, pool.host, target, headers, body)
        seen.append(f"{op} {params['Bucket']}")
        principal = principal_of_thread()
        if principal is not None:
            try:
                gate.check(principal, "s3", op, params)
            except Exception as exc:  # noqa: BLE001 - the gate's ClientError: AWS answers the request with 403
                return _denied(str(exc))
        port = "" if pool.port == (443 if pool.scheme == "https" else 80) else f":{pool.port}"
        sent = HTTPHeaders()
        for name, value in {"Host": pool.host_header, **headers}.items():
            sent[name] = value
        request = AWSPreparedRequest(
            method=method, url=f"{pool.scheme}://{pool.host}{port}{target}", headers=sent, body=body, stream_output=False
        )
        answer = botocore_stubber.process_request(request)
        if answer is None:
            raise UnknownRequest(f"moto has no handler for {method} {target} on {pool.host}")
        status, answered, data = answer
        if principal is not None and int(status) == 404 and op in MISSING_NEEDS_LIST:
            missing: Any = {"Error": {"Code": "NoSuchKey"}, "ResponseMetadata": {"HTTPStatusCode": 404}}
            try:
                gate.missing_object(principal, op, params, ClientError(missing, op))
            except ClientError as exc:
                return _denied(str(exc))
        raw = data if isinstance(data, bytes) else str(data or "").encode()
        return leanhttp._Answer(int(status), {k.lower(): str(v) for k, v in answered.items()}, raw)

    with mock.patch.object(leanhttp.LeanPool, "urlopen", urlopen):
        yield seen
