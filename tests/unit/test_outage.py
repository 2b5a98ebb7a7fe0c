"""The outage breaker: what counts as no answer, when it trips (a fake clock), and what the runner and engine do then."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from pathlib import Path
from typing import Any

import pytest
import urllib3
from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.exceptions import ClientError, ConnectionClosedError, ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError
from botocore.exceptions import SSLError as BotoSSLError

from s3bulk.breakers.outage import EndpointUnreachable, Outage, OutageBreaker, unreachable
from s3bulk.job import parse_job
from s3bulk.local.engine import Engine
from s3bulk.local.ledger import LocalLedger
from s3bulk.ops.batch import BatchRunner
from s3bulk.ops.executor import BoundedExecutor
from s3bulk.ops.items import Item
from s3bulk.ops.pools import part_pool
from s3bulk.report import Tally
from s3bulk.report.keylog import JsonlKeyLog
from s3bulk.s3 import fastpath, leanhttp, storebase
from s3bulk.s3.clients import ClientSettings, make_s3_client
from s3bulk.s3.faststore import FastS3Store
from s3bulk.s3.stores import S3Store
from s3bulk.store import ObjectInfo, StoreError
from s3bulk.testing.memstore import MemoryStore

EP = "http://s3.example.test:9000"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def breaker(window: float = 60.0) -> tuple[OutageBreaker, Clock]:
    clock = Clock()
    return OutageBreaker(window, clock=clock, wall=lambda: clock.now + 1_700_000_000, guard_pause=0.0), clock


# -- classification ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "exc",
    [
        StoreError("ConnectionError", "Connection refused"),
        StoreError("ConnectTimeout", "timed out"),
        StoreError("ReadTimeout", "read timed out"),
        ConnectionRefusedError(111, "Connection refused"),
        ConnectionResetError(104, "Connection reset by peer"),
        socket.gaierror(-2, "Name or service not known"),
        ssl.SSLError(1, "certificate verify failed"),
        TimeoutError("timed out"),
    ],
    ids=lambda e: f"{type(e).__name__}-{getattr(e, 'code', '')}",
)
def test_a_request_that_got_no_answer_is_unreachable(exc: BaseException) -> None:
    assert unreachable(exc)


@pytest.mark.parametrize(
    "exc",
    [
        StoreError("AccessDenied", "Access Denied", 403),
        StoreError("NoSuchKey", "gone", 404),
        StoreError("SlowDown", "Please reduce your request rate.", 503),
        StoreError("InternalError", "oops", 500),
        StoreError("ConnectionError", "a 500 whose body named this code", 500),  # an answer, whatever its code says
        StoreError("KeyTooLongError", "too long", 400),
        ValueError("not a network error"),
    ],
    ids=lambda e: f"{type(e).__name__}-{getattr(e, 'code', '')}",
)
def test_any_http_answer_is_not_unreachable(exc: BaseException) -> None:
    assert not unreachable(exc)


def test_botocore_and_urllib3_errors_without_an_answer_are_what_the_transports_report() -> None:
    url = "http://127.0.0.1:9"
    boto = [
        EndpointConnectionError(endpoint_url=url),
        ConnectionClosedError(endpoint_url=url),
        ConnectTimeoutError(endpoint_url=url),
        ReadTimeoutError(endpoint_url=url),
        BotoSSLError(endpoint_url=url, error=ssl.SSLError(1, "certificate verify failed")),
    ]
    assert all(isinstance(e, storebase.NO_ANSWER) for e in boto)
    assert not isinstance(ClientError({"Error": {"Code": "AccessDenied"}}, "CopyObject"), storebase.NO_ANSWER)
    conn = urllib3.connection.HTTPConnection("127.0.0.1", 9)
    refused = urllib3.exceptions.NewConnectionError(conn, "Failed to establish a new connection: [Errno 111] Connection refused")
    dns = urllib3.exceptions.NameResolutionError("nowhere.invalid", conn, socket.gaierror(-2, "unknown"))
    connect_timeout = urllib3.exceptions.ConnectTimeoutError(conn, "Connection to 127.0.0.1 timed out. (connect timeout=10)")
    read_timeout = urllib3.exceptions.ReadTimeoutError(None, "/", "Read timed out.")  # type: ignore[arg-type]
    reset = urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset"))
    tls = urllib3.exceptions.SSLError("certificate verify failed")
    codes = {type(e).__name__: leanhttp.no_answer_code(e) for e in (refused, dns, connect_timeout, read_timeout, reset, tls)}
    assert all(isinstance(e, leanhttp.NO_ANSWER) for e in (refused, dns, connect_timeout, read_timeout, reset, tls))
    # A refused connection is a connection error, not a timeout (urllib3 makes NewConnectionError a ConnectTimeoutError).
    assert codes == {
        "NewConnectionError": "ConnectionError",
        "NameResolutionError": "ConnectionError",
        "ConnectTimeoutError": "ConnectTimeout",
        "ReadTimeoutError": "ReadTimeout",
        "ProtocolError": "ConnectionError",
        "SSLError": "ConnectionError",
    }
    assert all(unreachable(StoreError(code, "x")) for code in codes.values())


# -- timing ------------------------------------------------------------------------------------
def test_the_breaker_trips_once_an_endpoint_has_failed_for_the_whole_window() -> None:
    b, clock = breaker(60)
    b.failed(EP, StoreError("ConnectionError", "Connection refused"))
    clock.now += 59.9
    b.failed(EP, StoreError("ConnectionError", "Connection refused"))
    assert b.tripped is None
    b.check()  # not tripped: nothing raised
    clock.now += 0.1
    b.failed(EP, StoreError("ConnectTimeout", "timed out"))
    assert b.tripped == Outage(EP, "ConnectTimeout: timed out", 1000.0 + 1_700_000_000, pytest.approx(60.0))  # type: ignore[arg-type]
    with pytest.raises(EndpointUnreachable) as raised:
        b.check()
    assert (raised.value.endpoint, raised.value.since) == (EP, 1000.0 + 1_700_000_000)
    assert EP in str(raised.value) and "60 s without an answer" in str(raised.value)


def test_an_answer_starts_the_window_again() -> None:
    b, clock = breaker(60)
    b.failed(EP, "refused")
    clock.now += 50
    b.failed(EP, "refused")
    b.ok(EP)  # a 403, a 503 or a 200: the endpoint is there
    clock.now += 50  # 100 s after the first failure, 50 after the answer
    b.failed(EP, "refused")
    clock.now += 59
    b.failed(EP, "refused")
    assert b.tripped is None and b.recoveries == 1
    clock.now += 1
    b.failed(EP, "refused")
    assert b.tripped is not None and b.tripped.since == 1100.0 + 1_700_000_000


def test_an_answer_from_one_endpoint_does_not_hide_another_ones_outage() -> None:
    b, clock = breaker(10)
    b.failed(EP, "refused")
    clock.now += 10
    b.ok("http://other.example.test")
    b.failed(EP, "refused")
    assert b.tripped is not None and b.tripped.endpoint == EP


def test_rearm_forgets_the_trip_but_not_the_outage() -> None:
    b, clock = breaker(10)
    b.failed(EP, "refused")
    clock.now += 10
    b.failed(EP, "refused")
    b.rearm()
    b.check()
    clock.now += 1
    b.failed(EP, "refused")  # still failing since the first failure: trips at once
    assert b.tripped is not None and b.tripped.seconds == pytest.approx(11)


class _NoLock:
    """A lock that must not be taken."""

    def __enter__(self) -> None:
        raise AssertionError("the success path took the breaker's lock")

    def __exit__(self, *exc: object) -> None:
        return None


def test_an_answer_while_nothing_fails_takes_no_lock() -> None:
    b, _ = breaker(5)
    b._lock = _NoLock()  # type: ignore[assignment]
    for _ in range(1000):
        b.ok(EP)
    b.check()
    assert not b.failing(EP)


def test_answers_and_failures_from_many_threads_keep_an_exact_count() -> None:
    b, _ = breaker(3600)

    def hammer() -> None:
        for i in range(5_000):
            b.ok(EP)
            if i % 10 == 0:
                b.failed(EP, "refused")

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert b.failures == 4 * 500 and b.tripped is None


# -- guard: a call kept going through an outage ------------------------------------------------
def test_a_call_is_kept_going_through_an_outage_shorter_than_the_window() -> None:
    b, clock = breaker(60)
    tries = []

    def call() -> str:
        tries.append(clock.now)
        if len(tries) < 4:
            clock.now += 10
            b.failed(EP, "refused")  # what the transport reports for each attempt
            raise StoreError("ConnectionError", "refused")
        b.ok(EP)
        return "copied"

    assert b.guard(EP, call) == "copied"
    assert len(tries) == 4 and b.tripped is None


def test_a_call_that_outlasts_the_window_ends_with_endpoint_unreachable() -> None:
    b, clock = breaker(30)

    def call() -> str:
        clock.now += 10
        b.failed(EP, "refused")
        raise StoreError("ConnectionError", "refused")

    with pytest.raises(EndpointUnreachable):
        b.guard(EP, call)
    assert b.failures == 4  # at 10, 20, 30 s: not yet; 40 s: 30 s after the first failure


def test_a_failure_while_the_endpoint_answers_other_requests_is_the_calls_own() -> None:
    b, _ = breaker(60)
    calls = []

    def call() -> str:
        calls.append(1)
        b.failed(EP, "reset")
        b.ok(EP)  # another thread got an answer meanwhile
        raise StoreError("ConnectionError", "reset")

    with pytest.raises(StoreError):
        b.guard(EP, call)
    assert len(calls) == 1


@pytest.mark.parametrize(
    "answer",
    [StoreError("AccessDenied", "no", 403), StoreError("NoSuchKey", "gone", 404), StoreError("SlowDown", "slow", 503)],
    ids=lambda e: e.code,
)
def test_an_http_error_is_never_retried_by_the_guard_nor_trips_it(answer: StoreError) -> None:
    b, clock = breaker(1)
    b.failed(EP, "refused")  # even while the endpoint was failing a moment ago
    clock.now += 5
    calls = []

    def call() -> str:
        calls.append(1)
        raise answer

    with pytest.raises(StoreError) as raised:
        b.guard(EP, call)
    assert raised.value is answer and len(calls) == 1 and b.tripped is None


# -- the transports report each attempt --------------------------------------------------------
def client(max_attempts: int = 1) -> Any:
    settings = ClientSettings(endpoint_url=EP, region="us-east-1", access_key="a", secret_key="b", max_attempts=max_attempts)
    return make_s3_client(settings, 4)


class FakeResponse:
    def __init__(self, status: int, data: bytes) -> None:
        self.status, self.data = status, data
        self.headers: dict[str, str] = {}


class FakePool:
    """Answers (a FakeResponse) or raises, one item per request."""

    def __init__(self, outcomes: list[Any], clock: Clock | None = None, step: float = 0.0) -> None:
        self.outcomes, self.clock, self.step = outcomes, clock, step

    def urlopen(self, *args: Any, **kwargs: Any) -> FakeResponse:
        if self.clock is not None:
            self.clock.now += self.step
        out = self.outcomes.pop(0)
        if isinstance(out, BaseException):
            raise out
        return out  # type: ignore[no-any-return]


def _error_body(code: str) -> bytes:
    return f"<Error><Code>{code}</Code><Message>m</Message></Error>".encode()


@pytest.mark.parametrize(("status", "code"), [(403, "AccessDenied"), (404, "NoSuchKey"), (503, "SlowDown"), (500, "InternalError")])
def test_the_fast_path_reports_an_http_error_as_an_answer(monkeypatch: pytest.MonkeyPatch, status: int, code: str) -> None:
    b, clock = breaker(1)
    fast = fastpath.FastS3(client(), 4, breaker=b)
    fast.max_attempts = 2
    b.failed(fast.home.endpoint, "refused")
    clock.now += 0.5
    pool = FakePool([FakeResponse(status, _error_body(code)) for _ in range(2)])
    monkeypatch.setattr(fast.pool, "connection_from_host", lambda *a, **k: pool)
    with pytest.raises(StoreError) as raised:
        fast.copy_object("src-b", "k", "dst-b", "k")
    assert raised.value.code == code
    assert not b.failing(fast.home.endpoint) and b.failures == 1  # the answer ended the outage


def test_the_fast_path_stops_a_call_that_gets_no_answer_for_the_window(monkeypatch: pytest.MonkeyPatch) -> None:
    b, clock = breaker(20)
    fast = fastpath.FastS3(client(), 4, breaker=b)
    fast.max_attempts = 2
    conn = urllib3.connection.HTTPConnection("127.0.0.1", 9)
    refused = [urllib3.exceptions.NewConnectionError(conn, "[Errno 111] Connection refused") for _ in range(10)]
    pool = FakePool(list(refused), clock, step=5.0)
    monkeypatch.setattr(fast.pool, "connection_from_host", lambda *a, **k: pool)
    with pytest.raises(EndpointUnreachable) as raised:
        fast.copy_object("src-b", "k", "dst-b", "k")
    # Two attempts per call, the guard trying the call again while nothing answers, until 20 s without an answer.
    assert b.failures == 5 and len(pool.outcomes) == 5
    assert raised.value.endpoint == EP and "Connection refused" in raised.value.error


class _Raw:
    def stream(self, *args: Any, **kwargs: Any) -> Any:
        return iter([b""])


def test_the_botocore_path_reports_answers_and_failures_and_sends_nothing_once_tripped() -> None:
    b, clock = breaker(20)
    store = S3Store(client(max_attempts=0), breaker=b)  # botocore: one attempt per call
    sent: list[str] = []

    def fake_send(request: Any, **kwargs: Any) -> AWSResponse:
        sent.append(request.method)
        clock.now += 5
        if len(sent) <= 2:
            return AWSResponse(request.url, 403, HTTPHeaders(), _Raw())
        raise EndpointConnectionError(endpoint_url=request.url)

    store.client.meta.events.register("before-send", fake_send)
    b.failed(EP, "refused a moment ago")
    for _ in range(2):
        with pytest.raises(StoreError) as denied:
            store.head_object("src-b", "k")
        assert denied.value.status == 403
    assert b.failures == 1 and not b.failing(EP)  # the 403s were answers: the outage is over
    with pytest.raises(EndpointUnreachable):
        store.head_object("src-b", "k")  # refused, tried again by the guard until 20 s without an answer
    tried = len(sent)
    assert b.failures - 1 == tried - 2 == 5
    with pytest.raises(EndpointUnreachable):
        store.head_object("src-b", "k")
    assert len(sent) == tried  # nothing more was sent


# -- the runner and the engine ------------------------------------------------------------------
def make_job(operation: str = "copy", **options: Any) -> Any:
    doc: dict[str, Any] = {"operation": operation, "source": {"bucket": "src-b", "prefix": "in/"}, "options": options}
    if operation != "delete":
        doc["destination"] = {"bucket": "dst-b", "prefix": "out/"}
    return parse_job(json.dumps(doc))


def seeded(n: int) -> MemoryStore:
    s = MemoryStore(page_size=100)
    s.create_bucket("src-b")
    s.create_bucket("dst-b")
    for i in range(n):
        s.put_object("src-b", f"in/{i:05d}", f"body-{i}".encode())
    return s


OUTAGE = Outage(EP, "ConnectionError: Connection refused", 1_700_000_000.0, 60.0)


class Trip:
    """A fault that lets `after` requests of `op` through, then acts out a tripped breaker for every later one."""

    def __init__(self, op: str, after: int) -> None:
        self.op, self.after, self.seen, self.on = op, after, 0, True
        self._lock = threading.Lock()

    def __call__(self, op: str, bucket: str, key: str) -> StoreError | None:
        if op != self.op or not self.on:
            return None
        with self._lock:
            self.seen += 1
            tripped = self.seen > self.after
        if tripped:
            raise EndpointUnreachable(OUTAGE)
        return None


def test_objects_cut_off_by_an_outage_stay_not_done_and_their_batch_never_completes(tmp_path: Path) -> None:
    store = seeded(10)

    def cut_off(op: str, bucket: str, key: str) -> StoreError | None:
        if op == "CopyObject" and key == "in/00009":  # the last one submitted: all the others were
            raise EndpointUnreachable(OUTAGE)
        return None

    store.faults.append(cut_off)
    tally, completed = Tally(), []
    with (tmp_path / "keys.jsonl").open("w") as fh, part_pool() as parts, BoundedExecutor(4) as pool:
        keylog = JsonlKeyLog(fh, "j", "copy")
        runner = BatchRunner(make_job(), store, pool, parts, keylog=keylog)
        items = [Item(ObjectInfo(f"in/{i:05d}", 6), f"out/{i:05d}") for i in range(10)]
        run = runner.start(items, tally, on_complete=lambda: completed.append(1))
        run.wait(10)
        keylog.flush()
    s = tally.snapshot()
    assert (s.succeeded, s.failed) == (9, 0)
    assert not run.complete and completed == []
    assert runner.outage is not None and runner.outage.outage == OUTAGE
    logged = [json.loads(line)["key"] for line in (tmp_path / "keys.jsonl").read_text().splitlines()]
    assert "in/00009" not in logged and len(logged) == 9
    # Nothing more is submitted once the runner knows of the outage.
    later = runner.start([Item(ObjectInfo("in/00009", 6), "out/again")], tally)
    assert not later.wait(5) or not later.complete
    assert "out/again" not in store.keys("dst-b")


@pytest.mark.parametrize("operation", ["copy", "move", "delete"])
def test_an_outage_stops_the_engine_and_a_resume_finishes_with_exact_counts(tmp_path: Path, operation: str) -> None:
    store = seeded(1000)
    # Copies get through for three batches' worth; deletes (per key, inside DeleteObjects) for three batches.
    trip = Trip("CopyObject" if operation == "copy" else "DeleteObject", after=150)
    store.faults.append(trip)
    job = make_job(operation, batch_size=50)
    ledger = LocalLedger.create(tmp_path, "job-1", job)
    report = Engine(job, store, concurrency=4, ledger=ledger).run()
    s = report.summary()
    assert (s["status"], report.exit_code, s["failed"]) == ("stopped", 3, 0)
    assert report.outage == OUTAGE and s["error"].startswith(f"stopped: {EP} unreachable")
    assert s["done"] == s["succeeded"] and s["done"] + s["not_done"] == s["listed"] and s["not_done"] > 0
    # Only whole batches the ledger committed count: three of them (a copy's 150 copies may straddle four batches).
    assert s["done"] == 150 if operation != "copy" else s["done"] in {0, 50, 100, 150}
    ledger.close()
    assert LocalLedger.find_unfinished(tmp_path, job) == "job-1"  # stopped stays resumable

    trip.on = False
    resumed = Engine(job, store, concurrency=4, ledger=LocalLedger.open(tmp_path, "job-1")).run()
    r = resumed.summary()
    assert (r["status"], resumed.exit_code, r["listed"], r["succeeded"], r["failed"]) == ("succeeded", 0, 1000, 1000, 0)
    if operation == "delete":
        assert store.keys("src-b") == []
    else:
        assert len(store.keys("dst-b")) == 1000
        assert store.keys("src-b") == ([] if operation == "move" else [f"in/{i:05d}" for i in range(1000)])


def test_a_listing_that_cannot_reach_its_endpoint_stops_the_job(tmp_path: Path) -> None:
    store = seeded(1000)
    store.faults.append(Trip("ListObjectsV2", after=3))
    report = Engine(make_job(batch_size=100, list_workers=1), store, concurrency=4).run()
    s = report.summary()
    assert (s["status"], report.exit_code, s["failed"]) == ("stopped", 3, 0)
    assert 0 < s["listed"] < 1000 and s["done"] + s["not_done"] == s["listed"]


def test_the_job_sets_every_stores_window(tmp_path: Path) -> None:
    src, dst = seeded(1), seeded(0)
    Engine(make_job(outage_seconds=7), src, concurrency=1, dst_store=dst)
    assert (src.breaker.window, dst.breaker.window) == (7, 7)


def test_the_fast_store_shares_one_breaker_across_both_request_paths_and_scoped_views() -> None:
    store = FastS3Store(client(), 4)
    assert store.fast.breaker is store.breaker
    assert store.scoped(type(store.opts)(requester_pays=True)).breaker is store.breaker
