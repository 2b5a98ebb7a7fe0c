"""The fast path's SigV4 signer must agree with botocore's S3SigV4Auth byte for byte."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from unittest import mock
from urllib.parse import quote

import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotoCredentials

from s3bulk.s3.sigv4 import SAFE, Credentials, SigV4Signer

NOW = datetime(2026, 11, 21, 9, 30, 5, tzinfo=UTC)
KEYS = [
    "plain",
    "space in key",
    "plus+sign",
    "percent%2Fslash",
    "ünï/文件",
    "emoji-🚀",
    "double//slash",
    "/lead",
    "trail ",
    "a?b#c",
    "k" * 1024,
]


def botocore_authorization(method: str, url: str, headers: dict[str, str], body: bytes, token: str | None) -> str:
    req = AWSRequest(method=method, url=url, headers=dict(headers), data=body)
    req.context = {}
    auth = S3SigV4Auth(BotoCredentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token), "s3", "eu-west-1")
    with mock.patch("botocore.auth.get_current_datetime", return_value=NOW.replace(tzinfo=None)):
        auth.add_auth(req)
    return str(req.headers["Authorization"])


def ours(method: str, host: str, path: str, query: str, headers: dict[str, str], body: bytes, token: str | None) -> str:
    signer = SigV4Signer(lambda: Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token), "eu-west-1")
    return signer.sign(method, host, path, query, headers, hashlib.sha256(body).hexdigest(), NOW)["Authorization"]


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("token", [None, "FwoGZXIvYXdzEXAMPLETOKEN//+="])
def test_copy_object_signature_matches_botocore(key: str, token: str | None) -> None:
    host = "127.0.0.1:8333"
    path = "/dst-bucket/" + quote(key.encode(), safe=SAFE)
    headers = {"x-amz-copy-source": quote(f"src-bucket/{key}".encode(), safe=SAFE), "x-amz-storage-class": "STANDARD_IA"}
    expected = botocore_authorization("PUT", f"http://{host}{path}", headers, b"", token)
    assert ours("PUT", host, path, "", headers, b"", token) == expected


@pytest.mark.parametrize("token", [None, "SESSIONTOKEN"])
def test_delete_objects_signature_matches_botocore(token: str | None) -> None:
    host = "src-bucket.s3.eu-west-1.amazonaws.com"
    body = b'<?xml version="1.0" encoding="UTF-8"?><Delete><Quiet>true</Quiet><Object><Key>a &amp; b</Key></Object></Delete>'
    headers = {"Content-MD5": "1B2M2Y8AsgTpgAmY7PhCfg==", "Content-Type": "application/xml"}
    expected = botocore_authorization("POST", f"http://{host}/?delete=", headers, body, token)
    assert ours("POST", host, "/", "delete=", headers, body, token) == expected


def test_the_signing_key_is_reused_within_a_day_and_renewed_after() -> None:
    signer = SigV4Signer(lambda: Credentials("AK", "SECRET"), "us-east-1")
    signer.sign("PUT", "h", "/b/k", "", {}, "x", NOW)
    first = signer._key
    signer.sign("PUT", "h", "/b/k2", "", {}, "x", NOW.replace(hour=23))
    assert signer._key is first
    signer.sign("PUT", "h", "/b/k", "", {}, "x", NOW.replace(day=22))
    assert signer._key is not first and signer._key is not None and signer._key[0] == "20261122"
