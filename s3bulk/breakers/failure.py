"""The failure breaker's rule, one for both runtimes: stop a job whose objects fail systematically.

A destination that refuses every write (a missing KMS grant, a bucket policy, a wrong account) or a source of
archived objects fails object after object, and S3 answers each time, so the outage breaker (outage.py) rightly
does not trip. S3 Batch Operations fails a job once more than 50% of at least 1,000 tasks have failed; this is
that rule, `options.failure_breaker`. Throttling that outlasted every retry is S3's pace, not the job's fault, and
is left out, as are objects an outage left not done (never counted failed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from s3bulk.job import FailureBreaker

# Error codes of throttling: a job that meets them is too fast for its prefix, not failing systematically.
THROTTLING = frozenset(
    {"SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequests", "TooManyRequestsException", "503"}
)
# The exit code of a local run the breaker stopped (3 is an outage, 130 an interrupt).
EXIT_BREAKER = 4
STOP_REASON = "failure_breaker"
# How a stop reason the breaker wrote begins (the stack keeps it on the job item, as an outage's).
LINE_START = "failure breaker:"


@dataclass(frozen=True, slots=True)
class Trip:
    """Why the breaker tripped: counts, the dominant error codes, and one example."""

    finished: int
    failed: int
    by_code: tuple[tuple[str, int], ...]
    example: tuple[str, str] | None  # (key, message) of a failure with the most frequent code

    def line(self, resume: str) -> str:
        """One line: how many failed, of which codes, an example, and the command that goes on after the fix."""
        codes = ", ".join(f"{code} {n:,}" for code, n in self.by_code[:3])
        example = f"; e.g. {self.example[0]!r}: {self.example[1][:200]}" if self.example else ""
        return (
            f"failure breaker: {self.failed:,} of {self.finished:,} finished objects failed ({codes}){example}; "
            f"the job stopped taking new work. Fix the cause, then: {resume}"
        )


def counted_failures(failed: int, by_code: Mapping[str, int]) -> int:
    """Failures the breaker weighs: all but throttling's."""
    return failed - sum(n for code, n in by_code.items() if code in THROTTLING)


def over(rule: FailureBreaker | bool, *, finished: int, weighed: int) -> bool:
    """The rule itself: at least `after` objects finished, and more than `rate` of them failed (`weighed`: failures
    other than throttling's)."""
    return isinstance(rule, FailureBreaker) and finished >= rule.after and weighed > rule.rate * finished


def ranked(by_code: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    """Error codes other than throttling's, the most frequent first."""
    return tuple(sorted(((c, n) for c, n in by_code.items() if c not in THROTTLING and n), key=lambda kv: (-kv[1], kv[0])))


def tripped(
    rule: FailureBreaker | bool,
    *,
    finished: int,
    failed: int,
    by_code: Mapping[str, int],
    example: tuple[str, str] | None = None,
) -> Trip | None:
    """The breaker's verdict on a job's counts so far: a Trip once at least `after` objects have finished (succeeded,
    skipped or failed) and more than `rate` of them failed for reasons other than throttling; else None."""
    weighed = counted_failures(failed, by_code)
    if not over(rule, finished=finished, weighed=weighed):
        return None
    return Trip(finished, weighed, ranked(by_code), example)
