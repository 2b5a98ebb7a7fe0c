"""`s3bulk run` against a server that answers `<EncodingType>url</EncodingType>` but sends its keys raw, on both request
paths: moto behind a small proxy that un-encodes every url-encoded listing moto sends, and leaves the claim in place.

Decoded on trust, `fx/x%2Fy.bin` (2 MiB) reads as `fx/x/y.bin`, a real 1 KiB object beside it, which a `min_size` delete
would then delete. s3bulk asks the first such page once more without encoding-type, finds the raw names, and deletes
exactly the 2 MiB object; plain boto3 against moto itself (behind no proxy) is the ground truth.
"""

from __future__ import annotations

import http.client
import re
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit
from xml.sax.saxutils import escape, unescape

import pytest

from tests.integration.conftest import run_job_cli
from tests.integration.helpers import plain_client

BIG, SMALL = "fx/x%2Fy.bin", "fx/x/y.bin"
MIN_SIZE = 1048576
# The elements in which S3 (and moto) url-encode names when asked for encoding-type=url.
_NAMED = re.compile(rb"<(Key|Prefix|StartAfter|KeyMarker|NextKeyMarker)>([^<]*)</\1>")


def _raw_names(body: bytes) -> bytes:
    """The answer with every name as the object's own (moto encodes with quote(), so unquote is its inverse)."""

    def raw(match: re.Match[bytes]) -> bytes:
        name = escape(unquote(unescape(match.group(2).decode())))
        return b"<%s>%s</%s>" % (match.group(1), name.encode(), match.group(1))

    return _NAMED.sub(raw, body)


class _ClaimsUrlSendsRaw(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.upstream = upstream
        self.lied = 0  # encoded listings answered with raw names
        self.plain = 0  # listings asked without encoding-type


class _Forward(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _ClaimsUrlSendsRaw

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        sent = self.rfile.read(length) if length else b""
        conn = http.client.HTTPConnection(self.server.upstream, timeout=60)
        conn.request(self.command, self.path, sent, headers=dict(self.headers.items()))
        answer = conn.getresponse()
        data = answer.read()
        conn.close()
        query = parse_qs(urlsplit(self.path).query, keep_blank_values=True)
        listing = self.command == "GET" and ("list-type" in query or "versions" in query)
        if listing and query.get("encoding-type") == ["url"] and answer.status == 200 and b"<EncodingType>url</EncodingType>" in data:
            data = _raw_names(data)
            self.server.lied += 1
        elif listing and "encoding-type" not in query:
            self.server.plain += 1
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("content-length", "transfer-encoding", "connection", "server", "date"):
                self.send_header(name, value)
        self.send_header("Content-Length", answer.getheader("Content-Length", "0") if self.command == "HEAD" else str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward


@pytest.fixture
def lying(moto_endpoint: str) -> Iterator[_ClaimsUrlSendsRaw]:
    proxy = _ClaimsUrlSendsRaw(urlsplit(moto_endpoint).netloc)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    yield proxy
    proxy.shutdown()
    proxy.server_close()


@pytest.mark.parametrize("path", ["fast", "botocore"])
def test_a_min_size_delete_through_a_false_url_claim_deletes_exactly_the_big_object(
    moto_endpoint: str, lying: _ClaimsUrlSendsRaw, tmp_path: Path, path: str
) -> None:
    truth = plain_client(moto_endpoint)
    bucket = f"claim-{uuid.uuid4().hex[:10]}"
    truth.create_bucket(Bucket=bucket)
    truth.put_object(Bucket=bucket, Key=BIG, Body=b"b" * 2 * MIN_SIZE)
    truth.put_object(Bucket=bucket, Key=SMALL, Body=b"s" * 1024)
    # The proxy does lie: boto3's own listing through it, decoding on trust, names the small object twice.
    fooled = plain_client(f"http://127.0.0.1:{lying.server_address[1]}").list_objects_v2(Bucket=bucket, Prefix="fx/")
    assert [o["Key"] for o in fooled["Contents"]] == [SMALL, SMALL]
    job = {"operation": "delete", "source": {"bucket": bucket, "prefix": "fx/", "min_size": MIN_SIZE}}
    code, report, lines, err = run_job_cli(
        f"http://127.0.0.1:{lying.server_address[1]}", tmp_path, "del", job, "--request-path", path, "--yes"
    )
    left = {o["Key"]: o["Size"] for o in truth.list_objects_v2(Bucket=bucket).get("Contents", ())}
    assert left == {SMALL: 1024}, err  # the 1 KiB object stays; the 2 MiB one, under its real name, is gone
    assert (code, report["succeeded"], report["failed"]) == (0, 1, 0), err
    assert [(line["key"], line["outcome"]) for line in lines] == [(BIG, "succeeded")]
    assert lying.lied >= 2 and lying.plain == 1  # the claim was checked once, without encoding-type
