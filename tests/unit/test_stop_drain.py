"""A stopped job's report waits for the work in flight: no worker or lister holds the job any more, or the bound."""

from __future__ import annotations

from typing import Any, cast

import pytest

from s3bulk.aws.finish import DRAIN_POLL_S, drained, ended_unasked
from s3bulk.aws.ledger import DynamoLedger


class Leases:
    def __init__(self, working: list[int], stopped_at: float | None = 100.0) -> None:
        self.answers = working
        self.at = stopped_at
        self.marked: list[float] = []

    def stopped_at(self, job_id: str) -> float | None:
        return self.at

    def mark_stopped(self, job_id: str, epoch: float) -> None:
        self.marked.append(epoch)

    def working(self, job_id: str) -> int:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def test_the_report_waits_until_the_last_holder_lets_go_and_every_lease_shard_knows_the_stop() -> None:
    clock, slept = [100.0], []
    leases = Leases([3, 2, 1, 0])

    def sleep(s: float) -> None:
        slept.append(s)
        clock[0] += s

    ok = drained("j", cast(DynamoLedger, leases), drain_s=630, now=lambda: clock[0], time_left=lambda: 800.0, sleep=sleep)
    assert ok and slept == [DRAIN_POLL_S] * 3 and leases.marked == [100.0]


def test_a_hold_lambda_ended_is_waited_for_only_until_the_bound() -> None:
    clock = [100.0]
    leases = Leases([1])  # an invocation ended at its timeout never released its hold

    def sleep(s: float) -> None:
        clock[0] += s

    assert drained("j", cast(DynamoLedger, leases), drain_s=30, now=lambda: clock[0], time_left=lambda: 800.0, sleep=sleep)
    assert 130.0 <= clock[0] < 130.0 + DRAIN_POLL_S + 0.001


def test_a_call_short_of_time_says_so_and_the_next_call_goes_on_waiting() -> None:
    leases = Leases([2])
    assert not drained("j", cast(DynamoLedger, leases), drain_s=630, now=lambda: 200.0, time_left=lambda: 61.0, sleep=lambda s: None)


@pytest.mark.parametrize(
    ("detail", "unasked"),
    [
        ({"status": "ABORTED", "error": "User.Stopped"}, False),  # s3bulk stop
        ({"status": "ABORTED", "error": "User.Cancelled"}, False),  # s3bulk cancel
        ({"status": "ABORTED"}, True),  # the console, or a script without s3bulk
        ({"status": "TIMED_OUT"}, True),
        ({"status": "FAILED", "error": "States.Runtime"}, False),  # FailedExecutions' alarm
    ],
)
def test_only_an_end_its_owner_did_not_ask_for_counts_for_the_early_end_alarm(detail: dict[str, Any], unasked: bool) -> None:
    assert ended_unasked(detail) is unasked
