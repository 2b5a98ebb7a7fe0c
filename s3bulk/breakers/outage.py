"""The job's circuit breaker: when an endpoint stops answering at all, stop fast and resumably.

A request that gets any HTTP answer (200, 403, 404, 500, 503 SlowDown) reached its
endpoint; one that gets none (connection refused or reset, DNS or TLS failure, a
connect or read timeout) did not. The breaker keeps, per endpoint, the moment the
first request failed without an answer since that endpoint last answered. Once an
endpoint has given no answer for `window` seconds (`options.outage_seconds`), the
breaker trips, and from then on every request of the job fails at once with
`EndpointUnreachable`. Callers treat that as "not done": nothing is counted failed,
a batch holding such an object is not complete, and the job stops with status
`stopped` so it can be resumed once the endpoint is back (docs/outage.md).

Until it trips, `guard` keeps a call going through the outage instead of letting it
fail: a call that ended without an answer while its endpoint still has not answered
is tried again, so no object is written off because of an outage shorter than the
window. Any answer from the endpoint, to any thread, ends that.

Cost on the request path: `ok()` reads one dict's truth value (no lock) while every
endpoint answers, `check()` one attribute; the lock is taken only while something fails.

The transports report each attempt (`s3bulk.s3.stores` for botocore, `s3bulk.s3.fastpath`
for the fast path) and classify their own libraries' exceptions (their `NO_ANSWER`);
`unreachable` here knows the port's view of them (a StoreError with no HTTP status) and
the socket errors.
"""

from __future__ import annotations

import random
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

T = TypeVar("T")

# options.outage_seconds' default: see docs/outage.md for the measurements behind it.
DEFAULT_WINDOW = 60.0
# Between two tries of a call whose endpoint does not answer (each try already made the client's attempts).
GUARD_PAUSE = 1.0
# The stores' codes for a request that got no HTTP answer (a StoreError with status None).
NO_ANSWER_CODES = frozenset({"ConnectionError", "ConnectTimeout", "ReadTimeout"})
_SOCKET_ERRORS = (ConnectionError, TimeoutError, socket.gaierror, socket.herror, ssl.SSLError)


def unreachable(exc: BaseException) -> bool:
    """True when the request got no HTTP answer at all; any answer (403, 404, 503, 500) is False.

    The port's StoreError is read by its fields (code, and status None: no answer), not imported,
    so the port (s3bulk/store.py) can name the breaker without an import cycle.
    """
    if isinstance(exc, _SOCKET_ERRORS):
        return True
    return getattr(exc, "status", 0) is None and getattr(exc, "code", None) in NO_ANSWER_CODES


def describe(exc: BaseException | str, limit: int = 200) -> str:
    """A one-line description of what went wrong, for the stop message."""
    if isinstance(exc, str):
        text = exc
    elif isinstance(code := getattr(exc, "code", None), str) and isinstance(message := getattr(exc, "message", None), str):
        text = f"{code}: {message}"  # a StoreError
    else:
        text = f"{type(exc).__name__}: {exc}"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True, slots=True)
class Outage:
    """Why the breaker tripped: the endpoint, its last error, and since when (epoch seconds) nothing answered."""

    endpoint: str
    error: str
    since: float
    seconds: float  # how long it had not answered when the breaker tripped

    def __str__(self) -> str:
        when = datetime.fromtimestamp(self.since).astimezone().strftime("%H:%M:%S")
        return f"{self.endpoint} unreachable since {when} ({self.seconds:.0f} s without an answer): {self.error}"


class EndpointUnreachable(Exception):
    """The breaker has tripped: the request was not sent (or got no answer), and the object it was for stays not done.

    Not a StoreError: code that handles a per-object error must not handle this one.
    """

    def __init__(self, outage: Outage) -> None:
        super().__init__(str(outage))
        self.outage = outage

    @property
    def endpoint(self) -> str:
        return self.outage.endpoint

    @property
    def error(self) -> str:
        return self.outage.error

    @property
    def since(self) -> float:
        return self.outage.since


class OutageBreaker:
    """Per endpoint: failing since when. Trips once one endpoint has failed for `window` seconds with no answer in between.

    Thread-safe. One per store (its scoped views share it); the job's caller sets the
    window with `configure` before work starts.
    """

    def __init__(
        self,
        window: float = DEFAULT_WINDOW,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        guard_pause: float = GUARD_PAUSE,
    ) -> None:
        self.window = window
        self.guard_pause = guard_pause
        self._clock = clock
        self._wall = wall
        self._lock = threading.Lock()
        self._failing: dict[str, tuple[float, float]] = {}  # endpoint -> (monotonic, wall) of its first failure since an answer
        self._tripped: Outage | None = None
        self._trip = threading.Event()
        self.failures = 0  # attempts that got no answer
        self.recoveries = 0  # outages that ended with an answer before the window

    def configure(self, window: float) -> None:
        """The window for the next job or batch (options.outage_seconds)."""
        with self._lock:
            self.window = window

    # -- what the transports report, per attempt ------------------------------------------------
    def ok(self, endpoint: str) -> None:
        """The endpoint answered (with any HTTP status). The hot path: no lock while nothing fails."""
        if self._failing:
            with self._lock:
                if self._failing.pop(endpoint, None) is not None:
                    self.recoveries += 1

    def failed(self, endpoint: str, error: BaseException | str) -> None:
        """A request to the endpoint got no answer; trips the breaker once the endpoint has failed for the window."""
        now = self._clock()
        with self._lock:
            self.failures += 1
            first = self._failing.get(endpoint)
            if first is None:
                self._failing[endpoint] = first = (now, self._wall())
            if self._tripped is None and now - first[0] >= self.window:
                self._tripped = Outage(endpoint, describe(error), first[1], now - first[0])
                self._trip.set()

    # -- what callers ask ---------------------------------------------------------------------
    @property
    def tripped(self) -> Outage | None:
        return self._tripped

    def check(self) -> None:
        """Raise EndpointUnreachable once tripped; before every attempt."""
        if self._tripped is not None:
            raise EndpointUnreachable(self._tripped)

    def waiting(self) -> tuple[str, float] | None:
        """The endpoint that has gone longest without an answer, and for how many seconds; None while all answer."""
        if not self._failing:
            return None
        with self._lock:
            if not self._failing:
                return None
            endpoint, (since, _) = min(self._failing.items(), key=lambda item: item[1][0])
        return endpoint, self._clock() - since

    def failing(self, endpoint: str) -> bool:
        """The endpoint has not answered since its last failure."""
        return endpoint in self._failing

    def pause(self, seconds: float) -> None:
        """Sleep between attempts, cut short (with EndpointUnreachable) if the breaker trips meanwhile."""
        if self._trip.wait(seconds):
            self.check()

    def rearm(self) -> None:
        """Forget the trip but not the outage: the next failure of an endpoint still failing trips again at once.

        For a long-lived process that runs one batch after another (the Lambda worker): after
        handing a batch back, the next one starts stopping fast if the endpoint is still gone.
        """
        with self._lock:
            self._tripped = None
            self._trip.clear()

    def guard(self, endpoint: str, call: Callable[[], T]) -> T:
        """Run `call` (one request with the client's own retries); while its endpoint has not answered, try it again.

        Ends with the call's result, with its error (an answer, or no answer while the endpoint
        has answered other requests since), or with EndpointUnreachable once the breaker trips.
        """
        while True:
            self.check()
            try:
                return call()
            except Exception as exc:
                if not unreachable(exc):
                    raise
                if self._tripped is not None:
                    raise EndpointUnreachable(self._tripped) from exc
                if endpoint not in self._failing:
                    raise
            self.pause(self.guard_pause * random.uniform(0.5, 1.0))
