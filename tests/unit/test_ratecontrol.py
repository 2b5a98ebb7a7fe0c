"""The rate controller against simulated prefixes: a virtual clock, no sockets, no sleeping."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from s3bulk.s3.ratecontrol import FLOOR_SHARE, RateControl


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Prefix:
    """A token bucket like S3's per-prefix limit: R requests/s with a burst of R/10."""

    rate: float
    clock: Clock
    tokens: float = 0.0
    stamp: float = 0.0
    accepted: list[float] = field(default_factory=list)

    def admit(self) -> bool:
        burst = self.rate / 10
        self.tokens = min(burst, self.tokens + (self.clock.now - self.stamp) * self.rate)
        self.stamp = self.clock.now
        if self.tokens >= 1:
            self.tokens -= 1
            self.accepted.append(self.clock.now)
            return True
        return False


def drive(control: RateControl, clock: Clock, answer: object, seconds: float, unpaced_rate: float = 2000.0) -> tuple[int, int]:
    """One request after another; unpaced, the client could send `unpaced_rate` requests/s."""
    requests = throttles = 0
    while clock.now < seconds:
        control.before_send()
        ok = answer()  # type: ignore[operator]
        requests += 1
        throttles += not ok
        control.after_response(throttled=not ok)
        clock.sleep(1 / unpaced_rate)
    return requests, throttles


def test_the_rate_settles_near_a_prefix_limit_with_few_throttles() -> None:
    clock = Clock()
    prefix = Prefix(300.0, clock)
    control = RateControl(enabled=True, clock=clock, sleep=clock.sleep)
    requests, throttles = drive(control, clock, prefix.admit, 30.0)
    steady = [t for t in prefix.accepted if t >= 5.0]
    achieved = len(steady) / 25.0
    assert achieved >= 0.85 * 300, achieved
    assert throttles / requests <= 0.10, (throttles, requests)
    assert control.send_rate is not None and 0.8 * 300 <= control.send_rate <= 1.2 * 300


def test_without_rate_control_the_same_prefix_throttles_most_requests() -> None:
    """The comparison that makes the first test mean something: unpaced, most requests are SlowDowns."""
    clock = Clock()
    prefix = Prefix(300.0, clock)
    control = RateControl(enabled=False, clock=clock, sleep=clock.sleep)
    requests, throttles = drive(control, clock, prefix.admit, 10.0)
    assert throttles / requests > 0.5
    assert control.throttles == throttles
    assert control.send_rate is None


def test_a_lower_limit_is_found_after_a_higher_one() -> None:
    """A prefix that tightens mid-job (another tenant arrives): the rate follows it down."""
    clock = Clock()
    prefix = Prefix(600.0, clock)
    control = RateControl(enabled=True, clock=clock, sleep=clock.sleep)
    drive(control, clock, prefix.admit, 10.0)
    prefix.rate = 200.0
    drive(control, clock, prefix.admit, 30.0)
    assert control.send_rate is not None and 0.8 * 200 <= control.send_rate <= 1.2 * 200


def test_throttles_that_do_not_depend_on_the_rate_never_stall_the_job() -> None:
    """Half the requests SlowDown whatever the rate: the floor keeps a share of the best accepted rate."""
    clock = Clock()
    rng = random.Random(7)
    accepted: list[float] = []

    def coin() -> bool:
        ok = rng.random() >= 0.5
        if ok:
            accepted.append(clock.now)
        return ok

    control = RateControl(enabled=True, clock=clock, sleep=clock.sleep)
    drive(control, clock, coin, 20.0)
    assert control.peak > 500  # half of the unpaced 2,000/s got through before any pacing
    assert control.send_rate is not None and control.send_rate >= FLOOR_SHARE * control.peak * 0.99
    assert len([t for t in accepted if t >= 10.0]) / 10.0 >= 0.5 * FLOOR_SHARE * control.peak * 0.9


def test_no_pacing_until_the_first_throttle() -> None:
    clock = Clock()
    control = RateControl(enabled=True, clock=clock, sleep=clock.sleep)
    drive(control, clock, lambda: True, 5.0)
    assert control.send_rate is None
    assert control.cuts == 0
