"""The fast path's own HTTP/1.1 client (fastpath.LeanPool) against a scripted socket server: framing, keep-alive, failures."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import pytest
import urllib3

from s3bulk.s3.leanhttp import NO_ANSWER, LeanPool, no_answer_code

Script = Callable[[socket.socket, int], None]  # (accepted connection, its number from 0)


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            while len(body) < int(line.split(b":")[1]):
                body += conn.recv(65536)
    return data


@pytest.fixture
def server() -> Iterator[Callable[[Script], tuple[int, list[bytes]]]]:
    """Start a server that runs `script` on each accepted connection; returns its port and the requests it read."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    requests: list[bytes] = []
    threads: list[threading.Thread] = []

    def start(script: Script) -> tuple[int, list[bytes]]:
        def accept() -> None:
            n = 0
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return

                def handle(c: socket.socket = conn, i: int = n) -> None:
                    with c:
                        script(c, i)

                t = threading.Thread(target=handle, daemon=True)
                t.start()
                n += 1

        t = threading.Thread(target=accept, daemon=True)
        t.start()
        threads.append(t)
        return listener.getsockname()[1], requests

    yield start
    listener.close()


def pool(port: int, read_timeout: float = 5.0) -> LeanPool:
    return LeanPool("http", "127.0.0.1", port, connect_timeout=2.0, read_timeout=read_timeout, maxsize=4)


def answering(answers: list[bytes], requests: list[tuple[int, bytes]] | None = None) -> Script:
    """Each request on a connection gets the next answer; the connection stays open until the answers run out.

    `requests` gets (connection number, request) for each request read.
    """

    def script(conn: socket.socket, n: int) -> None:
        for answer in answers:
            req = _read_request(conn)
            if not req:
                return
            if requests is not None:
                requests.append((n, req))
            conn.sendall(answer)

    return script


def test_a_content_length_answer_is_read_exactly_and_the_connection_is_kept(server: Callable[[Script], tuple[int, list[bytes]]]) -> None:
    seen: list[tuple[int, bytes]] = []
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Amz-Bucket-Region: eu-west-1\r\n\r\nhello"
    port, _ = server(answering([ok, ok], seen))
    p = pool(port)
    first = p.urlopen("PUT", "/b/k", body=b"", headers={"x-amz-date": "d"})
    second = p.urlopen("GET", "/b?list-type=2", body=b"", headers={})
    assert (first.status, first.data, first.headers["x-amz-bucket-region"]) == (200, b"hello", "eu-west-1")
    assert second.data == b"hello"
    assert [n for n, _ in seen] == [0, 0]  # both on the first connection
    put = seen[0][1]
    assert put.startswith(b"PUT /b/k HTTP/1.1\r\nHost: 127.0.0.1:") and b"\r\nContent-Length: 0\r\n" in put
    assert b"\r\nx-amz-date: d\r\n" in put


def test_a_chunked_answer_with_trailers_is_joined_and_what_follows_is_the_next_answer(
    server: Callable[[Script], tuple[int, list[bytes]]],
) -> None:
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\n<a/>\r\n3\r\nxyz\r\n0\r\nTrailer: t\r\n\r\n"
    port, _ = server(answering([chunked, b"HTTP/1.1 204 No Content\r\n\r\n"]))
    p = pool(port)
    assert p.urlopen("POST", "/b?delete=", body=b"<Delete/>", headers={}).data == b"<a/>xyz"
    second = p.urlopen("DELETE", "/b/k", body=b"", headers={})
    assert (second.status, second.data) == (204, b"")


def test_an_interim_100_answer_is_skipped(server: Callable[[Script], tuple[int, list[bytes]]]) -> None:
    port, _ = server(answering([b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"]))
    assert pool(port).urlopen("PUT", "/b/k", body=b"", headers={}).data == b"ok"


def test_connection_close_and_a_body_ended_by_close_are_not_kept(server: Callable[[Script], tuple[int, list[bytes]]]) -> None:
    def script(conn: socket.socket, _: int) -> None:
        _read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\n\r\nuntil close")
        conn.shutdown(socket.SHUT_WR)

    port, _ = server(script)
    p = pool(port)
    assert p.urlopen("GET", "/", body=b"", headers={}).data == b"until close"
    assert p.urlopen("GET", "/", body=b"", headers={}).data == b"until close"  # on a new connection


def test_a_kept_connection_closed_while_idle_is_resent_once_on_a_new_one(server: Callable[[Script], tuple[int, list[bytes]]]) -> None:
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    seen: list[tuple[int, bytes]] = []

    def script(conn: socket.socket, n: int) -> None:
        if n == 0:
            answering([ok], seen)(conn, n)
            return  # the first connection closes after one answer, without saying so
        answering([ok], seen)(conn, n)

    port, _ = server(script)
    p = pool(port)
    assert p.urlopen("GET", "/", body=b"", headers={}).data == b"ok"
    assert p.urlopen("GET", "/", body=b"", headers={}).data == b"ok"
    assert [n for n, _ in seen] == [0, 1]


def test_a_fresh_connection_closed_before_the_answer_is_no_answer(server: Callable[[Script], tuple[int, list[bytes]]]) -> None:
    def script(conn: socket.socket, _: int) -> None:
        _read_request(conn)

    port, _ = server(script)
    with pytest.raises(NO_ANSWER) as raised:
        pool(port).urlopen("GET", "/", body=b"", headers={})
    assert no_answer_code(raised.value) == "ConnectionError"


def test_a_silent_server_is_a_read_timeout_and_a_closed_port_a_connection_error(
    server: Callable[[Script], tuple[int, list[bytes]]],
) -> None:
    stop = threading.Event()

    def script(conn: socket.socket, _: int) -> None:
        stop.wait(5)

    port, _ = server(script)
    with pytest.raises(NO_ANSWER) as raised:
        pool(port, read_timeout=0.2).urlopen("GET", "/", body=b"", headers={})
    stop.set()
    assert no_answer_code(raised.value) == "ReadTimeout"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    with pytest.raises(NO_ANSWER) as refused:
        pool(closed).urlopen("GET", "/", body=b"", headers={})
    assert isinstance(refused.value, urllib3.exceptions.NewConnectionError)
    assert no_answer_code(refused.value) == "ConnectionError"


@pytest.mark.parametrize(
    "answer", [b"SPDY/9 200 OK\r\n\r\n", b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"]
)
def test_a_malformed_answer_is_a_protocol_error(server: Callable[[Script], tuple[int, list[bytes]]], answer: bytes) -> None:
    port, _ = server(answering([answer]))
    with pytest.raises(urllib3.exceptions.ProtocolError):
        pool(port).urlopen("GET", "/", body=b"", headers={})


@pytest.mark.parametrize(("target", "headers"), [("/b/k HTTP/1.0\r\nX: y", {}), ("/b/k", {"x-amz-meta": "a\r\nInjected: 1"})])
def test_a_line_break_in_the_target_or_a_header_is_refused_before_sending(target: str, headers: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        pool(9).urlopen("PUT", target, body=b"", headers=headers)
