"""A listing step asks for its execution's history only when it could be near the renewal bound: GetExecutionHistory
is throttled per account (400 at once, then 20 a second), and 1,000 listing children start together."""

from __future__ import annotations

from typing import Any

from s3bulk.aws.history import RENEW_AT, History, started_at

ARN = "arn:aws:states:us-east-1:123456789012:execution:S3Bulk-jobs/ListShards:child-1"


class Sfn:
    def __init__(self, events: int) -> None:
        self.events, self.asked = events, 0

    def get_execution_history(self, **_: Any) -> dict[str, Any]:
        self.asked += 1
        return {"events": [{"id": self.events}]}


def test_a_young_execution_is_not_asked_about_and_one_that_could_be_near_the_bound_is() -> None:
    now = [1_000_000.0]
    sfn = Sfn(events=500)
    history = History(sfn, clock=lambda: now[0])
    started = "1970-01-12T13:46:40Z"  # 1,000,000 s: it started this instant
    assert started_at(started) == 1_000_000.0
    assert history.full(ARN, started) is False and sfn.asked == 0
    now[0] += 60  # 300 events a second for 60 s: 18,000 at most, short of RENEW_AT
    assert history.full(ARN, started) is False and sfn.asked == 0
    now[0] += 10  # 21,000 could be there: ask
    assert history.full(ARN, started) is False and sfn.asked == 1
    now[0] += 30  # it had 500 when asked: 9,500 more at most since
    assert history.full(ARN, started) is False and sfn.asked == 1
    sfn.events = RENEW_AT
    now[0] += 70
    assert history.full(ARN, started) is True and sfn.asked == 2


def test_without_its_start_time_a_step_asks_at_its_first_call_and_a_call_naming_no_execution_never_does() -> None:
    sfn = Sfn(events=RENEW_AT + 1)
    history = History(sfn, clock=lambda: 5.0)
    assert history.full(ARN) is True and sfn.asked == 1
    assert history.full(None, "1970-01-01T00:00:05Z") is False and sfn.asked == 1
    assert started_at("not a time") is None
