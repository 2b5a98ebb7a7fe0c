"""The stack harness throttles Step Functions' API calls per account as AWS does (a token bucket per API), so a
burst of calls the emulator would serve is refused here as on AWS."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from s3bulk.testing.stack.limits import Limits, TokenBuckets


def test_getexecutionhistory_serves_400_at_once_then_20_a_second_and_answers_the_rest_throttlingexception() -> None:
    now = [0.0]
    buckets = TokenBuckets(region="eu-central-1", sleep=lambda s: None, clock=lambda: now[0])
    limits = Limits(sfn_api=buckets)
    served = 0
    for _ in range(450):
        try:
            limits.check("states", "GetExecutionHistory", {}, retries=0, principal="Lister")
            served += 1
        except ClientError as exc:
            assert exc.response["Error"]["Code"] == "ThrottlingException"
    assert served == 400 and buckets.throttled["GetExecutionHistory"] == 50
    now[0] += 1.0
    for _ in range(20):
        limits.check("states", "GetExecutionHistory", {}, retries=0, principal="Lister")
    with pytest.raises(ClientError, match="ThrottlingException"):
        limits.check("states", "GetExecutionHistory", {}, retries=0, principal="Lister")
    limits.check("states", "GetExecutionHistory", {}, retries=0)  # the harness's own inspection: not the account's quota


def test_a_throttled_call_is_tried_again_as_its_client_retries_and_served_once_a_token_refills() -> None:
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += 1.0  # each backoff lets a second pass: StopExecution refills 25 a second outside the large Regions

    buckets = TokenBuckets(region="ap-south-1", sleep=sleep, clock=lambda: now[0])
    for _ in range(500):
        buckets.admit("StopExecution", retries=0)
    buckets.admit("StopExecution", retries=2)  # refused once, then served after the backoff
    assert buckets.throttled["StopExecution"] == 1
    buckets.admit("DescribeStateMachine", retries=0)  # an API with no emulated quota passes
