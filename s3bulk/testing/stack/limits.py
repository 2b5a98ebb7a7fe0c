"""AWS's service limits on the in-process stack, where moto is lenient: a call AWS would refuse is refused here too,
and Step Functions' API calls are throttled per account as AWS throttles them (TokenBuckets).

Each refusal is answered as AWS answers it (a ClientError with AWS's code) and recorded; the harness fails the
test naming each, unless the test means to reach the limit and asserts on `refused` itself.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from s3bulk.testing.stack.partitions import Partitions, dynamo_item_bytes

KiB, MiB = 1024, 1024 * 1024
SQS_BATCH_ENTRIES = 10
SQS_BATCH_BYTES = 1 * MiB  # SendMessageBatch: the sum of the bodies
SQS_MESSAGE_BYTES = 1 * MiB  # a queue's MaximumMessageSize unless the template sets a smaller one
STATE_DATA_BYTES = 256 * KiB  # a Step Functions state's input or output, an execution's input
DYNAMO_ITEM_BYTES = 400 * KiB
DYNAMO_TRANSACTION_ITEMS = 100
LAMBDA_SYNC_BYTES = 6 * MiB
LAMBDA_ASYNC_BYTES = 256 * KiB


def _refuse(op: str, code: str, message: str) -> ClientError:
    answer: Any = {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": 400}}
    return ClientError(answer, op)


# PutEvents: at most 10 entries and 256 KB in all (each entry's Detail, DetailType, Source and resources).
EVENTS_BYTES = 256 * 1024


def _utf8(text: Any) -> int:
    return len(str(text).encode("utf-8"))


# Step Functions' API quotas per account and Region, (bucket, refill a second): the Regions AWS gives more, then the
# rest (Step Functions developer guide, "Quotas related to API action throttling" and "Other quotas").
SFN_LARGE_REGIONS = frozenset({"us-east-1", "us-west-2", "eu-west-1"})
SFN_API_QUOTAS = {
    "StartExecution": ((1300, 300), (800, 150)),
    "GetExecutionHistory": ((400, 20), (400, 20)),
    "DescribeExecution": ((300, 15), (250, 10)),
    "SendTaskSuccess": ((3000, 500), (1500, 300)),
    "SendTaskFailure": ((3000, 500), (1500, 300)),
    "StopExecution": ((1000, 200), (500, 25)),
    "ListExecutions": ((200, 5), (100, 2)),
}


@dataclass
class TokenBuckets:
    """Step Functions' API throttling: a token bucket per API per account; a call with no token left is answered
    ThrottlingException, after as many tries as the caller's client makes (botocore retries it, backing off)."""

    region: str = "us-east-1"
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    throttled: Counter[str] = field(default_factory=Counter)  # refusals (each try) by API
    calls: Counter[str] = field(default_factory=Counter)  # tries, by API
    _tokens: dict[str, tuple[float, float]] = field(default_factory=dict)  # API -> (tokens, when counted)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _take(self, op: str) -> bool:
        large, other = SFN_API_QUOTAS[op]
        bucket, refill = large if self.region in SFN_LARGE_REGIONS else other
        now = self.clock()
        with self._lock:
            self.calls[op] += 1
            tokens, then = self._tokens.get(op, (float(bucket), now))
            tokens = min(float(bucket), tokens + (now - then) * refill)
            if tokens < 1:
                self._tokens[op] = (tokens, now)
                self.throttled[op] += 1
                return False
            self._tokens[op] = (tokens - 1, now)
            return True

    def admit(self, op: str, retries: int) -> None:
        if op not in SFN_API_QUOTAS:
            return
        for attempt in range(retries + 1):
            if self._take(op):
                return
            if attempt < retries:
                self.sleep(random.random() * min(20.0, 2**attempt))
        raise _refuse(op, "ThrottlingException", "Rate exceeded")


@dataclass
class Limits:
    """The limits AWS enforces and moto does not; `message_bytes` per queue URL from the template."""

    message_bytes: dict[str, int] = field(default_factory=dict)
    partitions: Partitions = field(default_factory=Partitions)  # DynamoDB's units a second per partition
    sfn_api: TokenBuckets = field(default_factory=TokenBuckets)  # Step Functions' API quotas per account
    refused: list[str] = field(default_factory=list)
    _names: set[tuple[str, str]] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _no(self, op: str, code: str, message: str) -> ClientError:
        with self._lock:
            self.refused.append(f"{op}: {code}: {message}")
        return _refuse(op, code, message)

    def check(self, service: str, op: str, p: dict[str, Any], retries: int = 0, principal: str | None = None) -> None:
        """Raise what AWS would answer for a call over one of its limits (`retries`: the client's, for a throttle).
        `principal`: the stack's function or state machine making it; None for the harness's own (a test's polling of
        an execution), which no API quota counts."""
        if service == "sqs" and op == "SendMessageBatch":
            entries = p.get("Entries", [])
            total = sum(_utf8(e.get("MessageBody", "")) for e in entries)
            if len(entries) > SQS_BATCH_ENTRIES:
                raise self._no(op, "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", f"{len(entries)} entries; at most 10")
            if total > SQS_BATCH_BYTES:
                raise self._no(op, "AWS.SimpleQueueService.BatchRequestTooLong", f"{total:,} bytes of bodies; at most {SQS_BATCH_BYTES:,}")
            bodies = [_utf8(e.get("MessageBody", "")) for e in entries]
        elif service == "sqs" and op == "SendMessage":
            bodies = [_utf8(p.get("MessageBody", ""))]
        else:
            bodies = []
        limit = self.message_bytes.get(str(p.get("QueueUrl", "")), SQS_MESSAGE_BYTES)
        if any(b > limit for b in bodies):
            raise self._no(op, "InvalidParameterValue", f"a message of {max(bodies):,} bytes; the queue takes {limit:,}")
        if service == "dynamodb":
            self._dynamo(op, p)
            self.partitions.admit(op, p, retries)
        if service == "events" and op == "PutEvents":
            entries = p.get("Entries", [])
            size = sum(_utf8(e.get("Detail", "")) + _utf8(e.get("DetailType", "")) + _utf8(e.get("Source", "")) for e in entries)
            if len(entries) > 10 or size > EVENTS_BYTES:
                raise self._no(op, "ValidationException", f"{len(entries)} entries of {size:,} bytes; at most 10 and {EVENTS_BYTES:,}")
        if service == "states" and principal is not None:
            self.sfn_api.admit(op, retries)
        if service == "states" and op == "StartExecution":
            if _utf8(p.get("input", "")) > STATE_DATA_BYTES:
                raise self._no(op, "InvalidExecutionInput", f"input of {_utf8(p['input']):,} bytes; at most {STATE_DATA_BYTES:,}")
            name = p.get("name")
            if name:
                key = (str(p["stateMachineArn"]), str(name))
                with self._lock:
                    seen = key in self._names
                    self._names.add(key)
                if seen:  # unique for 90 days, closed executions included
                    raise self._no(op, "ExecutionAlreadyExists", f"execution name {name!r} was used by an execution of this state machine")
        if service == "lambda" and op == "Invoke":
            asynchronous = p.get("InvocationType") == "Event"
            limit = LAMBDA_ASYNC_BYTES if asynchronous else LAMBDA_SYNC_BYTES
            size = len(p.get("Payload") or b"")
            if size > limit:
                raise self._no(op, "RequestTooLargeException", f"payload of {size:,} bytes; at most {limit:,}")

    def _dynamo(self, op: str, p: dict[str, Any]) -> None:
        items: list[dict[str, Any]] = []
        if op == "PutItem":
            items = [p["Item"]]
        elif op == "TransactWriteItems":
            if len(p["TransactItems"]) > DYNAMO_TRANSACTION_ITEMS:
                raise self._no(op, "ValidationException", f"{len(p['TransactItems'])} items in one transaction; at most 100")
            items = [t["Put"]["Item"] for t in p["TransactItems"] if "Put" in t]
        elif op == "BatchWriteItem":
            items = [r["PutRequest"]["Item"] for reqs in p["RequestItems"].values() for r in reqs if "PutRequest" in r]
        for item in items:
            if (size := dynamo_item_bytes(item)) > DYNAMO_ITEM_BYTES:
                raise self._no(op, "ValidationException", f"an item of about {size:,} bytes; at most {DYNAMO_ITEM_BYTES:,}")

    def state_data(self, what: str, data: bytes) -> str | None:
        """A state's input or output over 256 KiB: the task fails with States.DataLimitExceeded (returns its message)."""
        if len(data) <= STATE_DATA_BYTES:
            return None
        message = f"{what} of {len(data):,} bytes; a state's input and output hold at most {STATE_DATA_BYTES:,}"
        with self._lock:
            self.refused.append(f"States.DataLimitExceeded: {message}")
        return message


INLINE_MAP_CONCURRENCY = 40
DISTRIBUTED_MAP_CONCURRENCY = 10_000  # child executions a Distributed Map runs at once


def inline_maps_over_concurrency(definition: dict[str, Any]) -> list[str]:
    """Inline Map states that ask for more than 40 iterations at once (0 or absent: unbounded), which AWS caps at 40,
    and Distributed Maps past their 10,000 child executions at once."""
    out: list[str] = []

    def walk(states: dict[str, Any]) -> None:
        for name, state in states.items():
            if state.get("Type") == "Map":
                processor = state.get("ItemProcessor") or state.get("Iterator") or {}
                mode = processor.get("ProcessorConfig", {}).get("Mode", "INLINE")
                wanted = int(state.get("MaxConcurrency", 0))
                if mode == "INLINE" and not 0 < wanted <= INLINE_MAP_CONCURRENCY:
                    out.append(f"Map state {name}: MaxConcurrency {wanted or 'unbounded'}; an inline Map runs at most 40 at once")
                if mode == "DISTRIBUTED" and wanted > DISTRIBUTED_MAP_CONCURRENCY:
                    out.append(f"Map state {name}: MaxConcurrency {wanted}; a Distributed Map runs at most 10,000 children at once")
                walk(processor.get("States", {}))
            for branch in state.get("Branches", []):
                walk(branch.get("States", {}))

    walk(definition.get("States", {}))
    return out
