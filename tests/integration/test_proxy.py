"""Behind a forwarding proxy (HTTP_PROXY, as on most corporate networks) every request goes through it, the fast path's too."""

from __future__ import annotations

import http.client
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.integration.conftest import cli_env, client_for, run_cli
from tests.integration.helpers import list_keys, seed_small, write_job

pytestmark = pytest.mark.seaweed


class ForwardingProxy(ThreadingHTTPServer):
    """A plain HTTP forwarding proxy on 127.0.0.1: absolute-form requests, forwarded as they came, counted by method."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Forward(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ForwardingProxy

    def _forward(self) -> None:
        target = urlsplit(self.path)
        if not target.scheme:  # not a proxy request: a client that went straight past the proxy would not come here at all
            self.send_error(400, "absolute-form request expected")
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        kind = "COPY" if self.headers.get("x-amz-copy-source") else self.command
        with self.server.lock:
            self.server.seen[kind] += 1
        upstream = http.client.HTTPConnection(target.hostname or "", target.port or 80, timeout=60)
        try:
            path = target.path + (f"?{target.query}" if target.query else "")
            headers = {k: v for k, v in self.headers.items() if k.lower() not in {"proxy-connection", "connection"}}
            upstream.request(self.command, path, body=body, headers=headers)
            answer = upstream.getresponse()
            data = answer.read()
            self.send_response(answer.status, answer.reason)
            for k, v in answer.getheaders():
                if k.lower() not in {"transfer-encoding", "connection", "content-length"}:
                    self.send_header(k, v)
            # A HEAD's answer carries the object's length, not its empty body's (what a client reads as the size).
            size = (answer.getheader("Content-Length") or "0") if self.command == "HEAD" else str(len(data))
            self.send_header("Content-Length", size)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
        finally:
            upstream.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def proxy() -> Iterator[ForwardingProxy]:
    server = ForwardingProxy()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_a_copy_a_listing_and_a_delete_all_go_through_the_proxy(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path, proxy: ForwardingProxy
) -> None:
    c = client_for(seaweed)
    src, dst = bucket_factory(c, "src"), bucket_factory(c, "dst")
    seed_small(c, src, "in/", 50)
    env = cli_env(tmp_path) | {"HTTP_PROXY": proxy.url, "http_proxy": proxy.url, "NO_PROXY": "", "no_proxy": ""}
    copy = write_job(
        tmp_path / "c.json",
        {"operation": "copy", "source": {"bucket": src, "prefix": "in/"}, "destination": {"bucket": dst, "prefix": "in/"}},
    )
    done = run_cli("run", str(copy), "--endpoint-url", seaweed, "--no-ledger", "-q", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert proxy.seen["COPY"] == 50, proxy.seen  # the fast path's copies too, not only botocore's calls
    listed = run_cli("plan", str(copy), "--endpoint-url", seaweed, "--json", env=env)
    assert listed.returncode == 0 and proxy.seen["GET"] >= 2, (listed.stderr, proxy.seen)  # ListObjectsV2 pages
    delete = write_job(tmp_path / "d.json", {"operation": "delete", "source": {"bucket": dst, "prefix": "in/"}})
    before = proxy.seen["POST"]
    gone = run_cli("run", str(delete), "--endpoint-url", seaweed, "--no-ledger", "-q", env=env)
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert proxy.seen["POST"] > before and list_keys(c, dst, "in/") == []  # DeleteObjects is a POST
