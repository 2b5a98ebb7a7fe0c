"""The fast path's own keep-alive HTTP/1.1 client: one request per connection at a time, nothing more.

Why not urllib3 + http.client: per small request they cost ~150 µs of Python (a pool key, a Timeout clone, a liveness
poll, email.parser for the headers) out of ~300 µs per object; this costs ~30. It speaks only what the fast path needs:
Content-Length or chunked bodies, keep-alive. Failures raise urllib3's exception classes (NO_ANSWER), so the retries
and the outage breaker read them as they read botocore's.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections import deque
from collections.abc import Mapping
from typing import Any

import urllib3
from botocore.httpsession import get_cert_path

# What urllib3 raises when a request got no HTTP answer: refused, reset, DNS, TLS, proxy, connect or read timeout.
NO_ANSWER = (
    urllib3.exceptions.TimeoutError,
    urllib3.exceptions.ProtocolError,
    urllib3.exceptions.NewConnectionError,
    urllib3.exceptions.SSLError,
    urllib3.exceptions.ProxyError,
)


def no_answer_message(exc: Exception) -> str:
    """urllib3 names the connection object first ("None: Failed to establish ..." for this client's own sockets): drop it."""
    text = str(exc)
    return text.removeprefix("None: ")


def no_answer_code(exc: Exception) -> str:
    """The StoreError code for a request that got no answer (a refused connection is not a timeout, whatever urllib3's classes say)."""
    if isinstance(exc, urllib3.exceptions.NewConnectionError):
        return "ConnectionError"  # a subclass of ConnectTimeoutError in urllib3, but refused or unresolvable, not slow
    if isinstance(exc, urllib3.exceptions.ConnectTimeoutError):
        return "ConnectTimeout"
    return "ReadTimeout" if isinstance(exc, urllib3.exceptions.TimeoutError) else "ConnectionError"


MAX_HEAD = 64 * 1024  # a response's status line and headers
MAX_BODY = 64 * 1024 * 1024  # a ListObjectsV2 page of 1,000 long keys is a few MB at most
_NO_BODY = frozenset({204, 304})


class _Answer:
    """A response: status, headers (names lower-cased) and the whole body."""

    __slots__ = ("data", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], data: bytes) -> None:
        self.status = status
        self.headers = headers
        self.data = data


class _Stale(Exception):
    """A kept-alive connection was found closed before any byte of the answer: resend on a new one."""


class _Conn:
    """One socket, and what was read past the last answer."""

    __slots__ = ("buf", "sock", "used")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""
        self.used = False

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def _more(self) -> bytes:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError("closed before the answer ended"))
        return chunk

    def exchange(self, request: bytes, head_only: bool) -> tuple[_Answer, bool]:
        """Send one request and read its answer; True when the connection may be kept.

        Raises _Stale when a kept-alive connection turns out closed before any byte of the answer.
        """
        reused = self.used
        self.used = True
        try:
            self.sock.sendall(request)
            while (end := self.buf.find(b"\r\n\r\n")) < 0:
                if len(self.buf) > MAX_HEAD:
                    raise urllib3.exceptions.ProtocolError("response headers too long")
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionResetError("the server closed the connection")
                self.buf += chunk
        except (ConnectionResetError, BrokenPipeError) as exc:
            if reused and not self.buf:
                raise _Stale() from exc
            raise urllib3.exceptions.ProtocolError("Connection aborted.", exc) from exc
        while True:
            answer, keep, end = self._answer(end, head_only)
            if answer is not None:
                return answer, keep
            while (end := self.buf.find(b"\r\n\r\n")) < 0:  # an interim answer (100 Continue): the real one follows
                if len(self.buf) > MAX_HEAD:
                    raise urllib3.exceptions.ProtocolError("response headers too long")
                self.buf += self._more()

    def _answer(self, end: int, head_only: bool) -> tuple[_Answer | None, bool, int]:
        """Parse the head that ends at `end` and read its body; None for an interim (1xx) answer."""
        buf = self.buf
        lines = buf[:end].decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
            raise urllib3.exceptions.ProtocolError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
        status = int(code)
        rest_b = buf[end + 4 :]
        if status < 200:
            self.buf = rest_b
            return None, False, -1
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise urllib3.exceptions.ProtocolError(f"bad header line: {line[:80]!r}")
            headers[name.strip().lower()] = value.strip()
        keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        if head_only or status in _NO_BODY:
            data, self.buf = b"", rest_b
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            data = self._chunked(rest_b)
        elif (length := headers.get("content-length")) is not None:
            if not length.isdigit() or int(length) > MAX_BODY:
                raise urllib3.exceptions.ProtocolError(f"bad Content-Length: {length[:40]!r}")
            n = int(length)
            parts, have = [rest_b], len(rest_b)
            while have < n:
                chunk = self._more()
                parts.append(chunk)
                have += len(chunk)
            whole = b"".join(parts) if len(parts) > 1 else rest_b
            data, self.buf = whole[:n], whole[n:]
        else:  # no length: the body ends when the server closes the connection
            parts, have = [rest_b], len(rest_b)
            while chunk := self.sock.recv(65536):
                parts.append(chunk)
                have += len(chunk)
                if have > MAX_BODY:
                    raise urllib3.exceptions.ProtocolError("response body too long")
            data, keep, self.buf = b"".join(parts), False, b""
        return _Answer(status, headers, data), keep, end

    def _chunked(self, buf: bytes) -> bytes:
        """A chunked body (trailers read and dropped); what follows it stays in buf."""
        parts: list[bytes] = []
        total = 0
        while True:
            while (eol := buf.find(b"\r\n")) < 0:
                if len(buf) > MAX_HEAD:
                    raise urllib3.exceptions.ProtocolError("chunk size line too long")
                buf += self._more()
            size_text = buf[:eol].split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise urllib3.exceptions.ProtocolError(f"bad chunk size {size_text[:20]!r}") from None
            buf = buf[eol + 2 :]
            if size == 0:
                while (end := buf.find(b"\r\n")) != 0:  # trailers, then the empty line
                    if end > 0:
                        buf = buf[end + 2 :]
                        continue
                    if len(buf) > MAX_HEAD:
                        raise urllib3.exceptions.ProtocolError("trailers too long")
                    buf += self._more()
                self.buf = buf[2:]
                return b"".join(parts)
            total += size
            if total > MAX_BODY:
                raise urllib3.exceptions.ProtocolError("response body too long")
            while len(buf) < size + 2:
                buf += self._more()
            if buf[size : size + 2] != b"\r\n":
                raise urllib3.exceptions.ProtocolError("chunk not followed by CRLF")
            parts.append(buf[:size])
            buf = buf[size + 2 :]


def _tls_context(verify: bool | str) -> ssl.SSLContext:
    """Certificates checked as botocore checks them: its `verify` (a CA bundle path from AWS_CA_BUNDLE, the
    profile's ca_bundle or the client's verify=), certifi's bundle by default, or no check when verify is False."""
    if verify is False:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    return ssl.create_default_context(cafile=verify if isinstance(verify, str) else get_cert_path(True))


class LeanPool:
    """Keep-alive connections to one host: an idle one is reused, else a new one is opened (never blocks).

    At most `maxsize` idle connections are kept; deque append/pop are atomic, so no lock.
    """

    def __init__(
        self,
        scheme: str,
        host: str,
        port: int | None,
        *,
        connect_timeout: float,
        read_timeout: float,
        maxsize: int,
        verify: bool | str = True,
    ) -> None:
        self.scheme = scheme
        self.host = host
        self.port = port or (443 if scheme == "https" else 80)
        default = self.port == (443 if scheme == "https" else 80)
        shown = f"[{host}]" if ":" in host else host
        self.host_header = shown if default else f"{shown}:{self.port}"
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.maxsize = maxsize
        self._idle: deque[_Conn] = deque()
        self._tls = _tls_context(verify) if scheme == "https" else None

    def _connect(self) -> _Conn:
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.connect_timeout)
        except TimeoutError as exc:
            raise urllib3.exceptions.ConnectTimeoutError(
                None, f"Connection to {self.host} timed out. (connect timeout={self.connect_timeout})"
            ) from exc
        except OSError as exc:
            raise urllib3.exceptions.NewConnectionError(None, f"Failed to establish a new connection: {exc}") from exc  # type: ignore[arg-type]
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._tls is not None:
                sock = self._tls.wrap_socket(sock, server_hostname=self.host)
        except ssl.SSLError as exc:
            sock.close()
            raise urllib3.exceptions.SSLError(str(exc)) from exc
        except TimeoutError as exc:
            sock.close()
            raise urllib3.exceptions.ConnectTimeoutError(None, f"TLS handshake with {self.host} timed out") from exc
        except OSError as exc:
            sock.close()
            raise urllib3.exceptions.ProtocolError("Connection aborted.", exc) from exc
        sock.settimeout(self.read_timeout)
        return _Conn(sock)

    def urlopen(self, method: str, target: str, *, body: bytes, headers: Mapping[str, str], **_: Any) -> _Answer:
        """One request; the keyword arguments urllib3 takes besides these are accepted and ignored."""
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host_header}", "User-Agent: s3bulk", "Accept-Encoding: identity"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        if body or method in {"PUT", "POST"}:
            lines.append(f"Content-Length: {len(body)}")
        text = "\n".join(lines)
        # One scan for what could split a line or a request: a key or header value is never sent with a line break in it.
        if "\r" in text or "\0" in text or text.count("\n") != len(lines) - 1 or lines[0].count(" ") != 2:
            raise ValueError(f"invalid character in the request target or a header: {lines[0][:80]!r}")
        head = [text.replace("\n", "\r\n"), "\r\n\r\n"]
        request = "".join(head).encode("latin-1") + body
        head_only = method == "HEAD"
        for _try in range(2):
            try:
                conn = self._idle.pop()
            except IndexError:
                conn = self._connect()
            try:
                answer, keep = conn.exchange(request, head_only)
            except _Stale:
                conn.close()
                continue  # closed while idle: resent once on a new connection (the fast path's requests are idempotent)
            except TimeoutError as exc:
                conn.close()
                raise urllib3.exceptions.ReadTimeoutError(None, target, f"Read timed out. (read timeout={self.read_timeout})") from exc  # type: ignore[arg-type]
            except ssl.SSLError as exc:
                conn.close()
                raise urllib3.exceptions.SSLError(str(exc)) from exc
            except OSError as exc:
                conn.close()
                raise urllib3.exceptions.ProtocolError("Connection aborted.", exc) from exc
            except BaseException:
                conn.close()
                raise
            if keep and len(self._idle) < self.maxsize:
                self._idle.append(conn)
            else:
                conn.close()
            return answer
        raise urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError("closed by the server before the answer"))

    def clear(self) -> None:
        while self._idle:
            with contextlib.suppress(IndexError):
                self._idle.pop().close()


class LeanPools:
    """One LeanPool per (scheme, host, port), made on first use."""

    def __init__(self, *, connect_timeout: float, read_timeout: float, maxsize: int, verify: bool | str = True) -> None:
        self._settings = {"connect_timeout": connect_timeout, "read_timeout": read_timeout, "maxsize": maxsize, "verify": verify}
        self._pools: dict[tuple[str, str, int | None], LeanPool] = {}
        self._lock = threading.Lock()

    def connection_from_host(self, host: str, port: int | None = None, scheme: str = "http") -> LeanPool:
        key = (scheme, host, port)
        pool = self._pools.get(key)
        if pool is None:
            with self._lock:
                pool = self._pools.get(key)
                if pool is None:
                    pool = self._pools[key] = LeanPool(scheme, host, port, **self._settings)  # type: ignore[arg-type]
        return pool

    def clear(self) -> None:
        for pool in list(self._pools.values()):
            pool.clear()
