"""Issue 50, cases 4 and 6, through the CLI on moto server behind a small proxy that answers as a quirky server does:
CopyObject copying a same-size neighbour, and listings without ETags. Every result is checked with plain boto3
against moto itself, on both request paths."""

from __future__ import annotations

import http.client
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import pytest

from tests.integration.conftest import client_for, run_job_cli

pytestmark = pytest.mark.moto

HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"})
NEIGHBOURS = {"dc/a+b.bin": "dc/a%2Bb.bin"}  # the source key asked -> the key this server copies instead


class QuirkyServer:
    """A proxy on a free loopback port: CopyObject's x-amz-copy-source rewritten to a neighbour (`neighbours`), and
    ListObjectsV2 answers stripped of their ETags (`no_etags`). moto does not verify signatures, so the rewrite stands."""

    def __init__(self, upstream: str, neighbours: Mapping[str, str] | None = None, *, no_etags: bool = False) -> None:
        up = urlsplit(upstream)
        self.upstream = (up.hostname or "127.0.0.1", up.port or 80)
        self.neighbours = dict(neighbours or {})
        self.no_etags = no_etags
        self.copies_redirected = 0
        self.heads = 0  # HeadObject requests seen: what confirming the copies cost
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                return

            def _handle(self) -> None:
                proxy.serve(self)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint_url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def serve(self, h: BaseHTTPRequestHandler) -> None:
        self.heads += h.command == "HEAD" and "/" in h.path.split("?", 1)[0].strip("/")  # HeadObject, not HeadBucket
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        headers = [(k, self._rewrite(v) if k.lower() == "x-amz-copy-source" else v) for k, v in h.headers.items()]
        conn = http.client.HTTPConnection(*self.upstream, timeout=60)
        try:
            conn.putrequest(h.command, h.path, skip_host=True, skip_accept_encoding=True)
            for k, v in headers:
                if k.lower() not in HOP_BY_HOP:
                    conn.putheader(k, v)
            conn.endheaders(body or None)
            r = conn.getresponse()
            data = r.read()
            # a HEAD's Content-Length is the object's size, not the length of its (empty) body: it passes as it is
            dropped = HOP_BY_HOP if h.command == "HEAD" else HOP_BY_HOP | {"content-length"}
            reply = [(k, v) for k, v in r.getheaders() if k.lower() not in dropped]
        finally:
            conn.close()
        if self.no_etags and h.command == "GET" and "list-type=2" in h.path:
            data = re.sub(rb"<ETag>[^<]*</ETag>", b"", data)
        h.send_response_only(r.status)
        for k, v in reply:
            h.send_header(k, v)
        if h.command != "HEAD":
            h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(data)

    def _rewrite(self, source: str) -> str:
        """The copy source with its key replaced by the neighbour's, encoded as a client would encode it."""
        bucket, _, key = unquote(source.split("?", 1)[0]).lstrip("/").partition("/")
        if key not in self.neighbours:
            return source
        self.copies_redirected += 1
        return quote(f"{bucket}/{self.neighbours[key]}", safe="/")

    def __enter__(self) -> QuirkyServer:
        threading.Thread(target=self.server.serve_forever, name="quirky-server", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def buckets(moto_endpoint: str, bucket_factory: Callable[[Any, str], str]) -> Iterator[tuple[Any, str, str]]:
    direct = client_for(moto_endpoint)
    yield direct, bucket_factory(direct, "src"), bucket_factory(direct, "dst")


def body_of(client: Any, bucket: str, key: str) -> bytes:
    return bytes(client.get_object(Bucket=bucket, Key=key)["Body"].read())


def keys_of(client: Any, bucket: str) -> list[str]:
    return sorted(o["Key"] for o in client.list_objects_v2(Bucket=bucket).get("Contents", []))


@pytest.mark.parametrize("path", ["fast", "botocore"])
@pytest.mark.parametrize("operation", ["move", "copy"])
def test_a_copy_of_a_same_size_neighbour_fails_its_object_and_a_move_keeps_that_source(
    moto_endpoint: str, buckets: tuple[Any, str, str], tmp_path: Path, path: str, operation: str
) -> None:
    direct, src, dst = buckets
    seeded = {"dc/a+b.bin": b"the real source", "dc/a%2Bb.bin": b"its neighbour!!"}  # same size, other bytes
    seeded |= {f"dc/{i:02d}.bin": f"body {i:02d}".encode() for i in range(8)}
    for key, body in seeded.items():
        direct.put_object(Bucket=src, Key=key, Body=body)
    doc = {"operation": operation, "source": {"bucket": src, "prefix": "dc/"}, "destination": {"bucket": dst, "prefix": "out/"}}
    with QuirkyServer(moto_endpoint, NEIGHBOURS) as quirky:
        code, report, lines, err = run_job_cli(quirky.endpoint_url, tmp_path, operation, doc, "--request-path", path, "--yes")
    assert quirky.copies_redirected == 1  # the quirk happened, once
    assert quirky.heads == 2  # the contradicted copy and its source; every other copy's own ETag confirmed it
    assert code == 1, err
    assert [(f["key"], f["error"]) for f in report["failures"]] == [("dc/a+b.bin", "CopyContentMismatch")]
    assert (report["succeeded"], report["failed"]) == (len(seeded) - 1, 1)
    assert {line["key"]: line["outcome"] for line in lines}["dc/a+b.bin"] == "failed"
    # the truth, from moto itself
    assert body_of(direct, src, "dc/a+b.bin") == b"the real source"  # never deleted
    expected_left = ["dc/a+b.bin"] if operation == "move" else sorted(seeded)
    assert keys_of(direct, src) == expected_left
    for key, body in seeded.items():
        if key != "dc/a+b.bin":
            assert body_of(direct, dst, "out/" + key[3:]) == body


@pytest.mark.parametrize("path", ["fast", "botocore"])
def test_skip_unchanged_on_listings_without_etags_copies_a_changed_object_its_older_source_had_the_same_size_as(
    moto_endpoint: str, buckets: tuple[Any, str, str], tmp_path: Path, path: str
) -> None:
    direct, src, dst = buckets
    for name, body in {"same": b"aaaa", "changed": b"bbbb"}.items():
        direct.put_object(Bucket=src, Key=f"data/{name}", Body=body)
    # the destination written after the sources: by modification time alone, both would look unchanged
    direct.put_object(Bucket=dst, Key="mirror/same", Body=b"aaaa")
    direct.put_object(Bucket=dst, Key="mirror/changed", Body=b"BBBB")
    written = {b: direct.head_object(Bucket=b, Key=k)["LastModified"] for b, k in ((src, "data/changed"), (dst, "mirror/changed"))}
    assert written[dst] >= written[src]
    doc = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "data/"},
        "destination": {"bucket": dst, "prefix": "mirror/"},
        "options": {"if_exists": "skip-unchanged"},
    }
    with QuirkyServer(moto_endpoint, no_etags=True) as quirky:
        code, report, _, err = run_job_cli(quirky.endpoint_url, tmp_path, "sync", doc, "--request-path", path)
    assert code == 0, err
    assert (report["succeeded"], report["skipped"], report["failed"]) == (1, 1, 0)
    assert body_of(direct, dst, "mirror/changed") == b"bbbb" and body_of(direct, dst, "mirror/same") == b"aaaa"
    assert "unchanged_undecided_copied" not in report  # the HEADs' ETags decided both
