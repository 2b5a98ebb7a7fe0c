"""Behind a forwarding proxy (HTTP_PROXY, as on most corporate networks) every request goes through it, the fast path's too.

For an HTTPS endpoint (HTTPS_PROXY) the proxy only sees CONNECT tunnels, whose contents are encrypted: there the proof is
that the endpoint (a TLS terminator in front of SeaweedFS) accepted no connection that the proxy had not opened itself.
"""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import json
import selectors
import socket
import socketserver
import ssl
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.integration.conftest import cli_env, client_for, run_cli
from tests.integration.helpers import assert_exact_copy, list_keys, seed_small, write_job

pytestmark = pytest.mark.seaweed


Address = tuple[str, int]


def pipe(a: socket.socket, b: socket.socket, stop: threading.Event) -> None:
    """Bytes both ways between two connected sockets until either side closes (or `stop`); one thread, so a TLS socket is
    never read and written at once. A TLS socket's already-decrypted bytes (pending()) are taken before waiting again."""
    other = {a.fileno(): b, b.fileno(): a}
    sockets = {a.fileno(): a, b.fileno(): b}
    for sock in (a, b):
        sock.settimeout(10)
    with selectors.DefaultSelector() as selector:
        for sock in (a, b):
            selector.register(sock, selectors.EVENT_READ)
        while not stop.is_set():
            buffered = [fd for fd, sock in sockets.items() if isinstance(sock, ssl.SSLSocket) and sock.pending()]
            for fd in buffered or [key.fd for key, _ in selector.select(0.2)]:
                try:
                    data = sockets[fd].recv(1 << 16)
                    if not data:
                        return
                    other[fd].sendall(data)
                except OSError:  # reset, timeout or a TLS error: the tunnel ends as a closed connection would
                    return


class ForwardingProxy(ThreadingHTTPServer):
    """A forwarding proxy on 127.0.0.1: absolute-form HTTP requests, forwarded as they came and counted by method, and
    CONNECT tunnels (HTTPS), counted by target, whose upstream sockets' local addresses it keeps."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.seen: Counter[str] = Counter()
        self.tunnels: Counter[str] = Counter()  # CONNECT host:port -> how many
        self.upstreams: set[Address] = set()  # each tunnel's own end of its connection to the target
        self.lock = threading.Lock()
        self.stop = threading.Event()

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

    def do_CONNECT(self) -> None:
        """A tunnel, as corporate proxies open them for HTTPS: the client waits for the 200 before its TLS handshake, so
        nothing it sent is left in rfile's buffer."""
        self.close_connection = True
        with self.server.lock:
            self.server.tunnels[self.path] += 1
        host, _, port = self.path.rpartition(":")
        try:
            upstream = socket.create_connection((host, int(port)), timeout=10)
        except (OSError, ValueError):
            self.send_error(502, "cannot reach the tunnel's target")
            return
        with self.server.lock:
            self.server.upstreams.add(upstream.getsockname()[:2])
        with upstream:
            self.send_response(200, "Connection established")
            self.end_headers()
            pipe(self.connection, upstream, self.server.stop)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def proxy() -> Iterator[ForwardingProxy]:
    server = ForwardingProxy()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stop.set()
        server.shutdown()
        server.server_close()


class TlsTerminator(socketserver.ThreadingTCPServer):
    """HTTPS on 127.0.0.1 in front of a plain-HTTP S3 server, bytes forwarded as they came (the Host header the client
    signed included). It keeps the peer address of every connection it accepts, before the TLS handshake, so a client
    that came straight here is seen even if it then rejects the certificate."""

    daemon_threads = True

    def __init__(self, backend: str, cert: Path, key: Path) -> None:
        super().__init__(("127.0.0.1", 0), _Terminate)
        target = urlsplit(backend)
        self.backend: Address = (target.hostname or "", target.port or 80)
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.peers: list[Address] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()

    @property
    def netloc(self) -> str:
        return f"127.0.0.1:{self.server_address[1]}"

    @property
    def url(self) -> str:
        return f"https://{self.netloc}"


class _Terminate(socketserver.BaseRequestHandler):
    server: TlsTerminator
    request: socket.socket

    def handle(self) -> None:
        with self.server.lock:
            self.server.peers.append(self.client_address[:2])
        self.request.settimeout(10)
        try:
            tls = self.server.context.wrap_socket(self.request, server_side=True)
        except OSError:  # the handshake failed: the peer is already counted
            return
        with tls:
            try:
                upstream = socket.create_connection(self.server.backend, timeout=10)
            except OSError:
                return
            with upstream:
                pipe(tls, upstream, self.server.stop)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (PEM files): the CLI trusts it through AWS_CA_BUNDLE."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    folder = tmp_path_factory.mktemp("tls")
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return cert_path, key_path


@pytest.fixture
def https_endpoint(seaweed: str, certificate: tuple[Path, Path]) -> Iterator[TlsTerminator]:
    server = TlsTerminator(seaweed, *certificate)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stop.set()
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


PROXY_VARIABLES = {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}


@dataclass(frozen=True)
class Https:
    """An HTTPS endpoint in front of SeaweedFS, its certificate, the proxy, and a client straight to SeaweedFS."""

    client: Any
    endpoint: TlsTerminator
    cert: Path
    proxy: ForwardingProxy


@pytest.fixture
def https(seaweed: str, proxy: ForwardingProxy, https_endpoint: TlsTerminator, certificate: tuple[Path, Path]) -> Https:
    return Https(client_for(seaweed), https_endpoint, certificate[0], proxy)


def https_env(tmp_path: Path, cert: Path, proxy: ForwardingProxy | None) -> dict[str, str]:
    """The CLI's environment for the HTTPS endpoint: its certificate trusted, HTTPS_PROXY set only when `proxy` is given,
    and no proxy setting of the machine's (NO_PROXY empty, so 127.0.0.1 is not exempt)."""
    env = {k: v for k, v in cli_env(tmp_path).items() if k.lower() not in PROXY_VARIABLES}
    env |= {"AWS_CA_BUNDLE": str(cert), "NO_PROXY": "", "no_proxy": ""}
    if proxy is not None:
        env |= {"HTTPS_PROXY": proxy.url, "https_proxy": proxy.url}
    return env


def direct(endpoint: TlsTerminator, proxy: ForwardingProxy) -> list[Address]:
    """The connections the endpoint accepted that no proxy tunnel had opened."""
    with endpoint.lock, proxy.lock:
        return [peer for peer in endpoint.peers if peer not in proxy.upstreams]


def assert_all_tunnelled(endpoint: TlsTerminator, proxy: ForwardingProxy) -> None:
    assert proxy.tunnels[endpoint.netloc] >= 1, proxy.tunnels
    assert endpoint.peers and direct(endpoint, proxy) == [], (endpoint.peers, proxy.upstreams)
    assert not proxy.seen, proxy.seen  # nothing sent to the proxy in the clear either


def copy_job(client: Any, bucket_factory: Callable[[Any, str], str], tmp_path: Path) -> tuple[Path, str, dict[str, str]]:
    """A copy of 50 seeded objects: the job file, the destination bucket and the seeded key -> MD5."""
    src, dst = bucket_factory(client, "src"), bucket_factory(client, "dst")
    seeded = seed_small(client, src, "in/", 50)
    doc = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "in/"},
        "destination": {"bucket": dst, "prefix": "in/"},
        "options": {"outage_seconds": 10},  # a handshake that fails (a connection past the proxy) ends the run in seconds
    }
    return write_job(tmp_path / "c.json", doc), dst, seeded


def test_an_https_copy_goes_through_the_proxys_tunnels(https: Https, bucket_factory: Callable[[Any, str], str], tmp_path: Path) -> None:
    c = https.client
    copy, dst, seeded = copy_job(c, bucket_factory, tmp_path)
    env = https_env(tmp_path, https.cert, https.proxy)
    done = run_cli("run", str(copy), "--endpoint-url", https.endpoint.url, "--no-ledger", "-q", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_exact_copy(c, dst, "in/", seeded)
    assert_all_tunnelled(https.endpoint, https.proxy)  # the copies too: the fast path would have opened its own connections


def test_an_https_delete_goes_through_the_proxys_tunnels(https: Https, bucket_factory: Callable[[Any, str], str], tmp_path: Path) -> None:
    c = https.client
    bucket = bucket_factory(c, "del")
    seed_small(c, bucket, "in/", 50)
    seed_small(c, bucket, "keep/", 3)
    delete = write_job(
        tmp_path / "d.json", {"operation": "delete", "source": {"bucket": bucket, "prefix": "in/"}, "options": {"outage_seconds": 10}}
    )
    env = https_env(tmp_path, https.cert, https.proxy)
    gone = run_cli("run", str(delete), "--endpoint-url", https.endpoint.url, "--no-ledger", "-q", env=env)
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert list_keys(c, bucket, "in/") == [] and len(list_keys(c, bucket, "keep/")) == 3
    assert_all_tunnelled(https.endpoint, https.proxy)


def test_an_https_listing_goes_through_the_proxys_tunnels(https: Https, bucket_factory: Callable[[Any, str], str], tmp_path: Path) -> None:
    c = https.client
    copy, dst, _ = copy_job(c, bucket_factory, tmp_path)
    env = https_env(tmp_path, https.cert, https.proxy)
    listed = run_cli("plan", str(copy), "--endpoint-url", https.endpoint.url, "--json", env=env)  # ListObjectsV2, no change
    assert listed.returncode == 0, listed.stdout + listed.stderr
    plan = json.loads(listed.stdout)
    assert plan["scanned"] == plan["objects"] == 50 and plan["requests"]["ListObjectsV2"] >= 1, plan
    assert list_keys(c, dst, "") == []
    assert_all_tunnelled(https.endpoint, https.proxy)


def test_without_the_proxy_the_https_endpoint_sees_direct_connections(
    https: Https, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    """The control: the same copy with the proxy running but HTTPS_PROXY unset fails the check the tests above pass.

    It runs on the fast path (the default without a proxy), whose connections check the endpoint's certificate as
    botocore does: against AWS_CA_BUNDLE here, a private CA's certificate that certifi's bundle would refuse."""
    c = https.client
    copy, dst, seeded = copy_job(c, bucket_factory, tmp_path)
    env = https_env(tmp_path, https.cert, None)
    args = ("--endpoint-url", https.endpoint.url, "--no-ledger", "-q")
    done = run_cli("run", str(copy), *args, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_exact_copy(c, dst, "in/", seeded)
    assert not https.proxy.tunnels and not https.proxy.upstreams and not https.proxy.seen, (https.proxy.tunnels, https.proxy.seen)
    assert https.endpoint.peers and direct(https.endpoint, https.proxy) == https.endpoint.peers
