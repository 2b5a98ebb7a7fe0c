"""An HTTP proxy in front of an S3-compatible server that injects the faults real S3 produces.

Kernel netem is not available everywhere and toxiproxy works at TCP only, so the
HTTP-level faults S3 is known for live here: 503 SlowDown and 500 InternalError on a
share of requests, CopyObject answered with HTTP 200 and an <Error> body, and a
per-prefix request-rate limit enforced with SlowDown (S3 scales request rates per
prefix). The tests and `bench/ratecontrol.py` use it; a user can put it in front of
a staging server to rehearse a job under throttling. It counts every request by
operation, so a test can prove what was (and was not) redone. It can also deny
chosen keys (403 AccessDenied) and go away altogether for a while: `go_down()`
refuses new connections and drops open ones until `go_up()` (or `down_for`).
"""

from __future__ import annotations

import contextlib
import http.client
import random
import re
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Literal, Self
from urllib.parse import unquote, urlsplit

HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"})


@dataclass
class FaultPlan:
    """Shares are probabilities per request; rate_limit is requests/s per (bucket, first key segment)."""

    slowdown: float = 0.0
    internal_error: float = 0.0
    copy_200_error: float = 0.0
    rate_limit: float | None = None
    list_delay: float = 0.0  # seconds added to each ListObjectsV2, to make a listing slow enough to interrupt
    ops: frozenset[str] = frozenset({"CopyObject", "DeleteObjects", "DeleteObject", "PutObject", "UploadPartCopy"})
    seed: int = 0
    bucket_regions: Mapping[str, str] = field(default_factory=dict)  # bucket -> Region, enforced as S3 does
    wrong_region: Literal["redirect", "malformed"] = "redirect"  # 301 PermanentRedirect, or 400 AuthorizationHeaderMalformed
    denied_keys: frozenset[str] = frozenset()  # object keys whose requests (of `ops`) are answered 403 AccessDenied
    deny_delay: float = 0.0  # seconds before a denial is answered (a slow authorizer)


@dataclass
class _Bucket:
    tokens: float
    stamp: float


@dataclass
class FaultStats:
    requests: Counter[str] = field(default_factory=Counter)  # by operation, as the server would see them
    injected: Counter[str] = field(default_factory=Counter)  # by fault
    forwarded: Counter[str] = field(default_factory=Counter)
    redirected: Counter[tuple[str, str]] = field(default_factory=Counter)  # wrong-Region answers by (bucket, operation)
    lock: threading.Lock = field(default_factory=threading.Lock)


def operation(method: str, target: str, headers: dict[str, str]) -> str:
    """The S3 API operation a request is, from its method, query and headers."""
    split = urlsplit(target)
    query = split.query
    segments = [s for s in split.path.split("/") if s]
    has_key = len(segments) > 1
    copy = "x-amz-copy-source" in headers
    if method == "GET":
        if not has_key:
            return "ListObjectsV2" if "list-type=2" in query else "ListObjects"
        return "GetObjectTagging" if "tagging" in query else "GetObject"
    if method == "HEAD":
        return "HeadObject" if has_key else "HeadBucket"
    if method == "POST":
        if "delete" in query:
            return "DeleteObjects"
        return "CompleteMultipartUpload" if "uploadId=" in query else "CreateMultipartUpload"
    if method == "PUT":
        if "partNumber=" in query:
            return "UploadPartCopy" if copy else "UploadPart"
        if "tagging" in query:
            return "PutObjectTagging"
        if not has_key:
            return "CreateBucket"
        return "CopyObject" if copy else "PutObject"
    if method == "DELETE":
        return "AbortMultipartUpload" if "uploadId=" in query else ("DeleteObject" if has_key else "DeleteBucket")
    return method


def error_body(code: str, message: str, extra: str = "") -> bytes:
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>{extra}</Error>'.encode()


_SCOPE = re.compile(r"Credential=[^/,\s]+/\d{8}/([^/,\s]+)/s3/aws4_request")


def signing_region(headers: Mapping[str, str]) -> str | None:
    """The Region a SigV4 request was signed for, from its Authorization header's credential scope."""
    found = _SCOPE.search(headers.get("authorization", ""))
    return found.group(1) if found else None


def object_key(target: str) -> str:
    """The object key a path-style request names ("" for a request on a bucket)."""
    parts = unquote(urlsplit(target).path).lstrip("/").split("/", 1)
    return parts[1] if len(parts) > 1 else ""


def addressed_bucket(target: str, host: str, known: Mapping[str, str]) -> str | None:
    """The bucket a request names: virtual-hosted (a known bucket as the host's first label) or path-style."""
    label = host.split(".", 1)[0]
    if "." in host and label in known:
        return label
    first = unquote(urlsplit(target).path).lstrip("/").split("/", 1)[0]
    return first or None


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # a connection cut by go_down() or by its client: nothing to report
        super().handle_error(request, client_address)  # type: ignore[arg-type]


class ProxyServer:
    """A threaded HTTP proxy on a free 127.0.0.1 port in front of one upstream server; subclasses answer in `_serve`.

    Shared by FaultProxy and QuirkProxy (quirkproxy.py): the listener, the open client connections, forwarding a
    request upstream on one keep-alive connection per thread, and writing an answer back."""

    thread_name = "s3bulk-proxy"

    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self._upstream = (upstream_host, upstream_port)
        self._local = threading.local()
        self._open: set[socket.socket] = set()  # client connections, dropped by go_down()
        self._state = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                return

            def setup(self) -> None:
                super().setup()
                with proxy._state:
                    proxy._open.add(self.connection)

            def finish(self) -> None:
                with proxy._state:
                    proxy._open.discard(self.connection)
                super().finish()

            def _handle(self) -> None:
                proxy._serve(self)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self._handler = Handler
        self._server: ThreadingHTTPServer | None = None
        self._port = 0
        self._listen()

    def _listen(self) -> None:
        """Serve on the proxy's port (a free one the first time)."""
        server = _Server(("127.0.0.1", self._port), self._handler)
        self._port = int(server.server_address[1])
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name=self.thread_name, daemon=True)

    @property
    def port(self) -> int:
        return self._port

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        raise NotImplementedError

    def _forward(self, method: str, target: str, headers: object, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        for attempt in range(2):
            conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
            if conn is None:
                conn = http.client.HTTPConnection(*self._upstream, timeout=300)
                self._local.conn = conn
            try:
                conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
                for k, v in headers:  # type: ignore[attr-defined]
                    if k.lower() not in HOP_BY_HOP:
                        conn.putheader(k, v)
                conn.endheaders(body or None)
                r = conn.getresponse()
                data = r.read()
                return r.status, [(k, v) for k, v in r.getheaders() if k.lower() not in HOP_BY_HOP], data
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    @staticmethod
    def _reply(
        h: BaseHTTPRequestHandler, status: int, data: bytes, headers: list[tuple[str, str]] | None = None, head: bool = False
    ) -> None:
        h.send_response_only(status)
        sent_length = False
        for k, v in headers or [("Content-Type", "application/xml")]:
            if k.lower() == "content-length":
                sent_length = True
            h.send_header(k, v)
        if not sent_length:
            h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if not head:
            h.wfile.write(data)


class FaultProxy(ProxyServer):
    """A threaded proxy on a free 127.0.0.1 port; `with FaultProxy(upstream_port, plan) as p: p.endpoint_url`."""

    thread_name = "s3bulk-faultproxy"

    def __init__(self, upstream_port: int, plan: FaultPlan | None = None, upstream_host: str = "127.0.0.1") -> None:
        self.plan = plan or FaultPlan()
        self.stats = FaultStats()
        self._rng = random.Random(self.plan.seed)
        self._buckets: dict[str, _Bucket] = {}
        super().__init__(upstream_port, upstream_host)

    # -- an endpoint that goes away -------------------------------------------------------------
    def go_down(self) -> None:
        """From now on connections are refused (the port has no listener), and every open one is cut."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        with self._state:
            cut, self._open = list(self._open), set()
        for conn in cut:
            with contextlib.suppress(OSError):  # already closed by its client
                conn.shutdown(socket.SHUT_RDWR)

    def go_up(self) -> None:
        """Listen again on the same port."""
        if self._server is None:
            self._listen()
            self._thread.start()

    def down_for(self, seconds: float) -> threading.Thread:
        """go_down() now and go_up() after `seconds`, without blocking; join the thread to wait for the recovery."""
        self.go_down()
        timer = threading.Timer(seconds, self.go_up)
        timer.daemon = True
        timer.start()
        return timer

    # -- decisions ----------------------------------------------------------------------------
    def _over_rate(self, target: str) -> bool:
        if self.plan.rate_limit is None:
            return False
        segments = unquote(urlsplit(target).path).lstrip("/").split("/")
        prefix = "/".join(segments[:2])
        now = time.monotonic()
        rate = self.plan.rate_limit
        burst = max(1.0, rate / 10)  # S3 absorbs only short bursts above a prefix's rate
        with self.stats.lock:
            b = self._buckets.setdefault(prefix, _Bucket(burst, now))
            b.tokens = min(burst, b.tokens + (now - b.stamp) * rate)
            b.stamp = now
            if b.tokens >= 1:
                b.tokens -= 1
                return False
            return True

    def _fault(self, op: str, target: str) -> str | None:
        if op not in self.plan.ops:
            return None
        if self.plan.denied_keys and object_key(target) in self.plan.denied_keys:
            return "AccessDenied"
        if self._over_rate(target):
            return "RateLimited"
        with self.stats.lock:
            roll = self._rng.random()
        if roll < self.plan.slowdown:
            return "SlowDown"
        roll -= self.plan.slowdown
        if roll < self.plan.internal_error:
            return "InternalError"
        roll -= self.plan.internal_error
        if op == "CopyObject" and roll < self.plan.copy_200_error:
            return "Copy200Error"
        return None

    # -- serving ------------------------------------------------------------------------------
    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        headers = {k.lower(): v for k, v in h.headers.items()}
        length = int(headers.get("content-length") or 0)
        body = h.rfile.read(length) if length else b""
        op = operation(h.command, h.path, headers)
        if self._wrong_region(h, headers, op):
            return
        fault = self._fault(op, h.path)
        with self.stats.lock:
            self.stats.requests[op] += 1
            if fault:
                self.stats.injected[fault] += 1
        if fault in {"SlowDown", "RateLimited"}:
            self._reply(h, 503, error_body("SlowDown", "Please reduce your request rate."))
            return
        if fault == "AccessDenied":
            time.sleep(self.plan.deny_delay)
            self._reply(h, 403, error_body("AccessDenied", "Access Denied"))
            return
        if fault == "InternalError":
            self._reply(h, 500, error_body("InternalError", "We encountered an internal error. Please try again."))
            return
        if op == "ListObjectsV2" and self.plan.list_delay:
            time.sleep(self.plan.list_delay)
        status, reply_headers, data = self._forward(h.command, h.path, h.headers.items(), body)
        if fault == "Copy200Error" and status == 200:
            # S3 may fail a copy after sending 200: the body then carries the error. The copy did
            # happen upstream here, which is harmless (a retry rewrites the same bytes).
            self._reply(h, 200, error_body("InternalError", "We encountered an internal error. Please try again."))
            return
        with self.stats.lock:
            self.stats.forwarded[op] += 1
        if op == "HeadBucket" and (region := self._region_of(h.path, headers)):
            reply_headers = [(k, v) for k, v in reply_headers if k.lower() != "x-amz-bucket-region"]
            reply_headers.append(("x-amz-bucket-region", region))
        self._reply(h, status, data, reply_headers, head=h.command == "HEAD")

    def _region_of(self, target: str, headers: dict[str, str]) -> str | None:
        bucket = addressed_bucket(target, headers.get("host", ""), self.plan.bucket_regions)
        return self.plan.bucket_regions.get(bucket) if bucket else None

    def _wrong_region(self, h: BaseHTTPRequestHandler, headers: dict[str, str], op: str) -> bool:
        """Answer as S3 does a request for a mapped bucket signed for another Region; True when answered."""
        if not self.plan.bucket_regions or op == "CreateBucket":
            return False
        bucket = addressed_bucket(h.path, headers.get("host", ""), self.plan.bucket_regions)
        region = self.plan.bucket_regions.get(bucket) if bucket else None
        signed = signing_region(headers)
        if region is None or signed is None or signed == region:
            return False
        with self.stats.lock:
            self.stats.requests[op] += 1
            self.stats.redirected[(bucket or "", op)] += 1
        reply = [("x-amz-bucket-region", region), ("Content-Type", "application/xml")]
        if op == "HeadBucket":
            self._reply(h, 301, b"", reply, head=True)
        elif self.plan.wrong_region == "malformed":
            message = f"The authorization header is malformed; the region '{signed}' is wrong; expecting '{region}'"
            self._reply(h, 400, error_body("AuthorizationHeaderMalformed", message, f"<Region>{region}</Region>"), reply)
        else:
            message = "The bucket you are attempting to access must be addressed using the specified endpoint."
            endpoint = f"<Endpoint>{bucket}.s3.{region}.amazonaws.com</Endpoint><Bucket>{bucket}</Bucket>"
            self._reply(h, 301, error_body("PermanentRedirect", message, endpoint), reply)
        return True
