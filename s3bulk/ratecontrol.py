"""Client-side send rate that backs off on throttling and climbs back, instead of storming a slow prefix.

S3 answers 503 SlowDown above a prefix's request rate. Retrying with backoff alone
keeps every thread hammering; a shared send rate does not. The limiter is botocore's
own adaptive one (a CUBIC rate adjustor driving a token bucket: multiplicative
decrease on a throttle, cubic growth back), reused rather than rewritten. One
instance serves both request paths of a store: botocore calls reach it through
client events, the fast path calls it directly. It stays out of the way (no token
bucket at all) until the first throttle.

One change to botocore's behaviour: the rate never drops below FLOOR_SHARE of the peak
rate measured before throttling began. botocore's CUBIC cuts the rate on every throttle,
so a steady share of SlowDowns that does not depend on the rate (a struggling partition,
the fault tests' 10% and 50%) would drive it to 0.5 requests/s and stall the job.
"""

from __future__ import annotations

import threading
from typing import Any

from botocore.retries import adaptive, bucket, standard, throttling

# What the fast path counts as a throttle (botocore's detector covers its own calls).
THROTTLE_CODES = frozenset({"SlowDown", "Throttling", "ThrottlingException", "RequestThrottled", "TooManyRequestsException", "503"})
FLOOR_SHARE = 0.2
MIN_RATE = 2.0


class _Detector:
    """Fast-path responses say `throttled=`; botocore's needs-retry events go to its standard detector."""

    def __init__(self) -> None:
        self._standard = standard.ThrottlingErrorDetector(retry_event_adapter=standard.RetryEventAdapter())

    def is_throttling_error(self, **kwargs: Any) -> bool:
        if "throttled" in kwargs:
            return bool(kwargs["throttled"])
        return bool(self._standard.is_throttling_error(**kwargs))


class RateControl:
    """A send rate shared by every thread of one store; disabled, it only counts throttles.

    Off by default (job option `adaptive_rate`): with a steady share of SlowDowns that does
    not depend on the rate, any controller that backs off on each throttle slows the job
    for nothing, so it is for prefixes that really run into S3's request-rate limits.
    """

    def __init__(self, enabled: bool = False) -> None:
        self.enabled = enabled
        clock = bucket.Clock()
        self.token_bucket = bucket.TokenBucket(max_rate=1, clock=clock)
        self._limiter = adaptive.ClientRateLimiter(
            rate_adjustor=throttling.CubicCalculator(starting_max_rate=0, start_time=clock.current_time()),
            rate_clocker=adaptive.RateClocker(clock),  # the limiter's own; self._clocker tracks the peak
            token_bucket=self.token_bucket,
            throttling_detector=_Detector(),
            clock=clock,
        )
        self._clocker = adaptive.RateClocker(clock)
        self._lock = threading.Lock()
        self.throttles = 0
        self.peak = 0.0

    def before_send(self) -> None:
        """Blocks while the bucket is empty (only after a throttle has switched the bucket on)."""
        if self.enabled:
            self._limiter.on_sending_request(None)

    def after_response(self, throttled: bool) -> None:
        self._observe(throttled=throttled)

    def _observe(self, **kwargs: Any) -> None:
        throttled = "throttled" in kwargs and kwargs["throttled"]
        if not self.enabled:
            if throttled:
                with self._lock:
                    self.throttles += 1
            return
        measured = float(self._clocker.record())
        with self._lock:
            if throttled:
                self.throttles += 1
            if self.send_rate is None:
                self.peak = max(self.peak, measured)
        self._limiter.on_receiving_response(**kwargs)
        floor = max(MIN_RATE, FLOOR_SHARE * self.peak)
        if self.send_rate is not None and self.token_bucket.max_rate < floor:
            self.token_bucket.max_rate = floor

    def _botocore_response(self, **kwargs: Any) -> None:
        self._observe(**kwargs)

    def attach(self, client: Any) -> None:
        """Pace a botocore client's requests (including its own retries) with this rate."""
        if not self.enabled:
            return
        client.meta.events.register("before-send", self._limiter.on_sending_request)
        client.meta.events.register("needs-retry", self._botocore_response)

    @property
    def send_rate(self) -> float | None:
        """The current cap in requests/s, or None while no throttle has been seen."""
        return float(self.token_bucket.max_rate) if getattr(self._limiter, "_enabled", False) else None
