"""Client-side send rate that settles just under a throttling prefix's limit, instead of storming it.

S3 answers 503 SlowDown above a prefix's request rate. Retrying with backoff alone keeps
every thread hammering (half the requests come back SlowDown); botocore's adaptive mode
cuts its CUBIC rate on every throttled response, and with dozens of requests in flight one
overshoot cuts it dozens of times, so it settles far below the limit. This controller
works in windows of responses instead:

- Until the first throttle there is no pacing at all (threads are the only limit).
- A window that saw a throttle sets the rate to BETA x the rate S3 actually *accepted*
  in that window. Above a prefix's limit, S3 accepts about the limit, whatever was sent,
  so one cut lands just under it, not at a fraction of a lagging estimate.
- The window after a cut is ignored (its responses answer requests sent before it),
  so one overshoot costs one cut.
- A clean window raises the rate by GROWTH (multiplicative, capped at 1.5x what was
  really sent, so an idle allowance never piles up).
- The rate never drops below FLOOR_SHARE of the highest accepted rate seen: a steady
  share of SlowDowns that does not depend on the rate (a struggling partition) would
  otherwise drive it towards zero. Accepted, not sent: under a real limit the accepted
  rate is the limit, so the floor stays well under it however fast the client could send.

Pacing is GCRA (each request gets the next slot 1/rate after the previous one), shared
by every thread and both request paths of a store. Between processes (the stack's worker
Lambdas) the rate is carried by the job ledger: `configure()` seeds it at the start of a
batch, and the worker publishes `send_rate` at its end.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from botocore.retries import standard

# What the fast path counts as a throttle (botocore's detector covers its own calls).
THROTTLE_CODES = frozenset({"SlowDown", "Throttling", "ThrottlingException", "RequestThrottled", "TooManyRequestsException", "503"})
WINDOW_SECONDS = 0.5
MIN_WINDOW_RESPONSES = 8
BETA = 0.95
GROWTH = 0.03
FLOOR_SHARE = 0.2
MIN_RATE = 2.0


class _Detector:
    """botocore's own notion of a throttle, for calls that go through botocore."""

    def __init__(self) -> None:
        self._standard = standard.ThrottlingErrorDetector(retry_event_adapter=standard.RetryEventAdapter())

    def __call__(self, **kwargs: Any) -> bool:
        return bool(self._standard.is_throttling_error(**kwargs))


class RateControl:
    """A send rate shared by every thread of one store; disabled, it only counts throttles.

    Off by default (job option `adaptive_rate`): it trades a little throughput for far
    fewer SlowDowns, which matters when a prefix really runs into S3's request-rate limit.
    """

    def __init__(
        self,
        enabled: bool = False,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.enabled = enabled
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._detector = _Detector()
        self.throttles = 0
        self.cuts = 0
        self.peak = 0.0
        self._rate: float | None = None
        self._next_slot = clock()
        self._window_start = clock()
        self._ok = 0
        self._throttled = 0
        self._sent = 0
        self._holdoff = False

    def configure(self, enabled: bool, rate: float | None = None) -> None:
        """Switch pacing on or off for the next job or batch, optionally starting from a known rate."""
        with self._lock:
            self.enabled = enabled
            if rate is not None and enabled:
                self._rate = max(MIN_RATE, rate)
                self._next_slot = self._clock()
            self._window_start = self._clock()
            self._ok = self._throttled = self._sent = 0
            self._holdoff = False

    @property
    def send_rate(self) -> float | None:
        """The current cap in requests/s, or None while no throttle has been seen."""
        return self._rate

    def before_send(self) -> None:
        """Waits for this request's slot (only once a throttle has switched pacing on)."""
        if not self.enabled:
            return
        with self._lock:
            self._sent += 1
            if self._rate is None:
                return
            now = self._clock()
            slot = max(now, self._next_slot)
            self._next_slot = slot + 1.0 / self._rate
        if slot > now:
            self._sleep(slot - now)

    def after_response(self, throttled: bool) -> None:
        if not self.enabled:  # the hot path when off: a lock only to count a throttle
            if throttled:
                with self._lock:
                    self.throttles += 1
            return
        with self._lock:
            if throttled:
                self.throttles += 1
                self._throttled += 1
            else:
                self._ok += 1
            self._maybe_adjust()

    def _maybe_adjust(self) -> None:
        """Closes the window when it is long and full enough, and cuts or raises the rate."""
        now = self._clock()
        elapsed = now - self._window_start
        if elapsed < WINDOW_SECONDS or self._ok + self._throttled < MIN_WINDOW_RESPONSES:
            return
        accepted = self._ok / elapsed
        sent = self._sent / elapsed
        throttled = self._throttled > 0
        self._window_start, self._ok, self._throttled, self._sent = now, 0, 0, 0
        self.peak = max(self.peak, accepted)
        if self._holdoff:
            self._holdoff = False
            return
        if self._rate is None and not throttled:
            return
        floor = max(MIN_RATE, FLOOR_SHARE * self.peak)
        if throttled:
            self._rate = max(floor, BETA * accepted if self._rate is None else min(self._rate, BETA * accepted))
            self.cuts += 1
            self._holdoff = True
            return
        assert self._rate is not None
        self._rate = max(floor, min(self._rate * (1 + GROWTH), 1.5 * max(sent, floor)))

    def _botocore_sending(self, **kwargs: Any) -> None:
        self.before_send()

    def _botocore_response(self, **kwargs: Any) -> None:
        self.after_response(throttled=self._detector(**kwargs))

    def attach(self, client: Any) -> None:
        """Pace a botocore client's requests (including its own retries) while enabled."""
        client.meta.events.register("before-send", self._botocore_sending)
        client.meta.events.register("needs-retry", self._botocore_response)
