"""Faults injected where AWS would produce them: DynamoDB conflicts, workers out of time, duplicate deliveries."""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from botocore.awsrequest import AWSResponse, HTTPHeaders

import s3bulk.s3.clients as s3clients

DYNAMO_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})


def draw(seed: int, *parts: object) -> float:
    """A uniform [0, 1) value fixed by its arguments: the same decision whatever order threads make it in."""
    digest = hashlib.sha256(":".join(map(str, (seed, *parts))).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class _Body:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.body


@dataclass
class DynamoConflicts:
    """Answers a seeded fraction `rate` of DynamoDB writes with a conflict, instead of making them.

    UpdateItem/PutItem/DeleteItem get 400 TransactionConflictException; TransactWriteItems gets
    400 TransactionCanceledException whose first CancellationReason is TransactionConflict. The
    n-th write of each operation is decided by (seed, operation, n), so how many writes of each
    kind conflict does not depend on thread timing. botocore's retry modes retry neither.

    The hook is on `before-call`, whose answer replaces the call. On `before-send` every handler
    runs, in-process moto among them, so the write would be made and then reported as a
    conflict, which no real conflict does.
    """

    rate: float
    seed: int = 0
    writes: Counter[str] = field(default_factory=Counter)
    injected: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, model: Any, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        op = str(model.name)
        if op not in DYNAMO_WRITES:
            return None
        with self._lock:
            n = self.writes[op]
            self.writes[op] += 1
            if draw(self.seed, op, n) >= self.rate:
                return None
            self.injected[op] += 1
        meta = {"HTTPStatusCode": 400, "RequestId": uuid.uuid4().hex, "HTTPHeaders": {}, "RetryAttempts": 0}
        if op == "TransactWriteItems":
            items = len(params.get("TransactItems", [])) or 1
            reasons = [{"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}] + [{"Code": "None"}] * (items - 1)
            codes = ", ".join(r["Code"] for r in reasons)
            parsed: dict[str, Any] = {
                "Error": {"Code": "TransactionCanceledException", "Message": f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]"},
                "CancellationReasons": reasons,
            }  # fmt: skip
        else:
            parsed = {"Error": {"Code": "TransactionConflictException", "Message": "Transaction is ongoing for the item"}}
        headers = HTTPHeaders()
        headers["Content-Type"] = "application/x-amz-json-1.0"
        return AWSResponse("https://dynamodb.invalid", 400, headers, _Body(json.dumps(parsed).encode())), {
            **parsed,
            "ResponseMetadata": meta,
        }


@dataclass
class Faults:
    """What to break. `kill_invocations`: ordinals (1-based) of event-source invocations whose Lambda time runs
    out after `kill_after` clock reads, so the handler abandons the batch it is on and returns its records;
    `duplicate_rate`: a seeded fraction of first deliveries that SQS delivers twice (the body is enqueued again
    before the handler runs, so the two copies may be worked at the same time)."""

    dynamo: DynamoConflicts | None = None
    kill_invocations: frozenset[int] = frozenset()
    kill_after: int = 20
    # Instead of by ordinal: the first `kill_first` invocations that read the clock past `kill_after` (so they were
    # working objects, not skipping a duplicate already counted) have their time run out there.
    kill_first: int = 0
    duplicate_rate: float = 0.0
    seed: int = 0


@contextmanager
def hook_dynamo_clients(hook: DynamoConflicts) -> Iterator[None]:
    """Register `hook` on every DynamoDB client the product builds (s3bulk.s3.clients.make_client, wherever imported)."""
    original = s3clients.make_client

    def make_client(service: str, *args: Any, **kwargs: Any) -> Any:
        client = original(service, *args, **kwargs)
        if service == "dynamodb":
            client.meta.events.register("before-call.dynamodb.*", hook)
        return client

    with ExitStack() as stack:
        for module in list(sys.modules.values()):
            if getattr(module, "make_client", None) is original and getattr(module, "__name__", "").startswith(("s3bulk", "functions")):
                stack.enter_context(mock.patch.object(module, "make_client", make_client))
        yield
