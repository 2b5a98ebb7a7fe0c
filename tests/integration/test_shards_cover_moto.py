"""`s3bulk run` with list_workers > 1 behind a server that leaves sub-prefixes out of its CommonPrefixes (issue 50, case 5).

A small proxy in front of moto server drops every CommonPrefix that holds no object directly, as the server in the issue
did, and cuts undelimited pages to two keys so that the listing is truncated and the parallel listing cuts ranges (the
delimiter answers keep moto's size). A copy and a delete of date-partitioned keys touched 1 of 5 and exited 0; each
must touch every key under the prefix and nothing outside it, judged with plain boto3 against moto, not the proxy.
"""

from __future__ import annotations

import http.client
import re
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from s3bulk.local.demo import body_md5s, list_keys
from tests.integration.conftest import run_job_cli
from tests.integration.helpers import plain_client, put_all

pytestmark = pytest.mark.moto

# The five, plus a folder that holds an object directly (so the answer still names a sub-prefix and ranges
# are cut at it) and one more that does not; and a key outside the prefix that no job may touch.
DATED = [f"dp/{day}/x.log" for day in ("2024/01/01", "2024/01/02", "2024/02/01", "2025/01/01")] + ["dp/top.log"]
KEYS = [*DATED, "dp/2026/a.log", "dp/2027/01/x.log"]
OUTSIDE = "dq/2024/01/01/x.log"
_HOP = {"connection", "keep-alive", "transfer-encoding", "expect", "content-length"}


class OmittingProxy:
    """Forwards to moto; ListObjectsV2 with a delimiter loses every CommonPrefix that holds no object directly."""

    def __init__(self, upstream: str) -> None:
        self.upstream = urlsplit(upstream)
        self.direct = plain_client(upstream)
        self.omitted: list[str] = []
        self.named: list[str] = []
        self.lock = threading.Lock()
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
        body = h.rfile.read(int(h.headers.get("content-length") or 0))
        query = parse_qs(urlsplit(h.path).query, keep_blank_values=True)
        listing = h.command == "GET" and query.get("list-type") == ["2"]
        target = h.path
        if listing and "delimiter" not in query:
            target = re.sub(r"([?&])max-keys=\d+", r"\g<1>max-keys=2", target) if "max-keys" in query else target + "&max-keys=2"
        conn = http.client.HTTPConnection(self.upstream.hostname or "127.0.0.1", self.upstream.port, timeout=60)
        try:
            conn.request(h.command, target, body=body or None, headers={k: v for k, v in h.headers.items() if k.lower() not in _HOP})
            resp = conn.getresponse()
            data, status, headers = resp.read(), resp.status, resp.getheaders()
        finally:
            conn.close()
        if listing and "delimiter" in query and status == 200:
            bucket = urlsplit(h.path).path.strip("/").split("/")[0]
            data = self._omit(data.decode(), bucket, query["delimiter"][0], query.get("encoding-type") == ["url"]).encode()
        h.send_response(status)
        for k, v in headers:
            if k.lower() not in _HOP:
                h.send_header(k, v)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(data)

    def _omit(self, xml: str, bucket: str, delimiter: str, encoded: bool) -> str:
        dropped = 0

        def keep(m: re.Match[str]) -> str:
            nonlocal dropped
            prefix = unquote(m.group(1)) if encoded else m.group(1)
            answer = self.direct.list_objects_v2(Bucket=bucket, Prefix=prefix, Delimiter=delimiter)
            with self.lock:
                (self.named if answer.get("Contents") else self.omitted).append(prefix)
            if answer.get("Contents"):
                return m.group(0)
            dropped += 1
            return ""

        xml = re.sub(r"<CommonPrefixes>\s*<Prefix>([^<]*)</Prefix>\s*</CommonPrefixes>", keep, xml)
        return re.sub(r"<KeyCount>(\d+)</KeyCount>", lambda m: f"<KeyCount>{int(m.group(1)) - dropped}</KeyCount>", xml)

    def __enter__(self) -> OmittingProxy:
        threading.Thread(target=self.server.serve_forever, name="omitting-proxy", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def omitting(moto_endpoint: str) -> Iterator[OmittingProxy]:
    with OmittingProxy(moto_endpoint) as proxy:
        yield proxy


def _bucket(client: Any, role: str) -> str:
    name = f"{role}-{uuid.uuid4().hex[:10]}"
    client.create_bucket(Bucket=name)
    return name


def test_the_proxy_leaves_out_the_folders_that_hold_no_object_directly(moto_endpoint: str) -> None:
    direct = plain_client(moto_endpoint)
    bucket = _bucket(direct, "quirk")
    put_all(direct, bucket, {k: b"x" for k in [*KEYS, OUTSIDE]})
    with omitting(moto_endpoint) as proxy:
        answer = plain_client(proxy.endpoint_url).list_objects_v2(Bucket=bucket, Prefix="dp/", Delimiter="/")
    assert [p["Prefix"] for p in answer.get("CommonPrefixes", ())] == ["dp/2026/"]
    assert [o["Key"] for o in answer.get("Contents", ())] == ["dp/top.log"]
    assert sorted(proxy.omitted) == ["dp/2024/", "dp/2025/", "dp/2027/"]


@pytest.mark.parametrize("path", ["fast", "botocore"])
def test_a_parallel_copy_copies_every_key_a_server_leaves_out_of_its_common_prefixes(moto_endpoint: str, tmp_path: Path, path: str) -> None:
    direct = plain_client(moto_endpoint)
    src, dst = _bucket(direct, "src"), _bucket(direct, "dst")
    sums = put_all(direct, src, {k: k.encode() for k in [*KEYS, OUTSIDE]})
    doc = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "dp/"},
        "destination": {"bucket": dst, "prefix": "out/"},
        "options": {"list_workers": 4},
    }
    with omitting(moto_endpoint) as proxy:
        code, report, _, err = run_job_cli(proxy.endpoint_url, tmp_path, "copy", doc, "--request-path", path, "--yes")
    assert code == 0, (report, err)
    assert proxy.omitted and proxy.named  # the quirk came into play, and ranges were cut at a named folder too
    copied = body_md5s(direct, dst, list_keys(direct, dst, ""))
    assert copied == {"out/" + k[len("dp/") :]: sums[k] for k in KEYS}
    assert sorted(list_keys(direct, src, "")) == sorted([*KEYS, OUTSIDE])


@pytest.mark.parametrize("path", ["fast", "botocore"])
def test_a_parallel_delete_deletes_every_key_a_server_leaves_out_of_its_common_prefixes(
    moto_endpoint: str, tmp_path: Path, path: str
) -> None:
    direct = plain_client(moto_endpoint)
    bucket = _bucket(direct, "del")
    put_all(direct, bucket, {k: b"x" for k in [*KEYS, OUTSIDE]})
    doc = {"operation": "delete", "source": {"bucket": bucket, "prefix": "dp/"}, "options": {"list_workers": 4}}
    with omitting(moto_endpoint) as proxy:
        code, report, _, err = run_job_cli(proxy.endpoint_url, tmp_path, "delete", doc, "--request-path", path, "--yes")
    assert code == 0, (report, err)
    assert proxy.omitted and proxy.named
    assert list_keys(direct, bucket, "") == [OUTSIDE]
