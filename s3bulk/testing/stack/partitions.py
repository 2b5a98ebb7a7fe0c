"""DynamoDB's throughput per partition on the in-process stack: moto serves any rate, AWS does not.

An on-demand table serves at most 3,000 read units and 1,000 write units a second per partition, and one partition key
never spans partitions, so a key read or written faster than that is throttled whatever the table's capacity
(DynamoDB developer guide, "Partitions and data distribution", "burst and adaptive capacity"). Here each partition key
is its own partition, its units counted over the last second:

- a plain call over either budget is answered ProvisionedThroughputExceededException, and retried as botocore retries
  it (the client's max_attempts, backoff up to 20 s) before its caller sees it;
- a transaction with an item over budget is cancelled: TransactionCanceledException, `ThrottlingError` as that item's
  reason, which botocore never retries (the ledger does: ledger/keys.py).

Units as DynamoDB counts them: a strongly consistent read of up to 4 KB is 1 (eventually consistent 0.5), a Query by
the bytes of all the items it read and a GetItem or BatchGetItem by each item's (charged once the answer is back:
`charge_read`), a write of up to 1 KB 1 (a Put by its item's size; an Update as 1, its item's size unknown here), and
twice that in a transaction. A new on-demand table's own 12,000 read and 4,000 write units a second bound every key
together. `scale` divides the budgets, so a test's few dozen batches a second stand for that many times more on AWS.
"""

from __future__ import annotations

import json
import math
import random
import re
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

READ_UNITS_S = 3000.0
WRITE_UNITS_S = 1000.0
# A new on-demand table serves at most this many units a second in all, whatever its partitions (DynamoDB developer
# guide, "Initial throughput for on-demand capacity mode"); the stack has one table.
TABLE_READ_UNITS_S = 12000.0
TABLE_WRITE_UNITS_S = 4000.0
READ_UNIT_BYTES = 4096
WINDOW_S = 1.0
MAX_BACKOFF_S = 20.0
_PK_BOUND = re.compile(r"\bpk\s*=\s*(:\w+)")


def kind_of(pk: str) -> str:
    """The ledger's item kind from its partition key (`job#ID`, `job#ID#count#03` ...): what a report groups by."""
    parts = pk.split("#")
    return parts[2] if len(parts) > 2 else parts[0]


def dynamo_item_bytes(item: dict[str, Any]) -> int:
    """DynamoDB's item size: attribute names plus values (UTF-8 strings, raw binary); close enough above a few bytes."""
    return sum(len(name.encode("utf-8")) + len(json.dumps(value, ensure_ascii=False).encode("utf-8")) for name, value in item.items())


def _item_units(item: dict[str, Any]) -> float:
    return float(max(1, math.ceil(dynamo_item_bytes(item) / 1024)))


def charges(op: str, p: dict[str, Any]) -> list[tuple[str, float, bool]]:
    """(partition key, units, is a write) for each item a call touches; [] for calls not counted here."""
    read = 1.0
    if op == "GetItem":
        return [(p["Key"]["pk"]["S"], read if p.get("ConsistentRead") else read / 2, False)]
    if op == "BatchGetItem":
        return [
            (k["pk"]["S"], read if ask.get("ConsistentRead") else read / 2, False)
            for ask in p["RequestItems"].values()
            for k in ask["Keys"]
        ]
    if op == "Query" and (m := _PK_BOUND.search(p.get("KeyConditionExpression", ""))):
        value = p.get("ExpressionAttributeValues", {}).get(m.group(1), {}).get("S")
        return [(value, read if p.get("ConsistentRead") else read / 2, False)] if value else []
    if op == "PutItem":
        return [(p["Item"]["pk"]["S"], _item_units(p["Item"]), True)]
    if op in ("UpdateItem", "DeleteItem"):
        return [(p["Key"]["pk"]["S"], 1.0, True)]
    if op == "BatchWriteItem":
        out = []
        for reqs in p["RequestItems"].values():
            for r in reqs:
                if "PutRequest" in r:
                    out.append((r["PutRequest"]["Item"]["pk"]["S"], _item_units(r["PutRequest"]["Item"]), True))
                else:
                    out.append((r["DeleteRequest"]["Key"]["pk"]["S"], 1.0, True))
        return out
    if op == "TransactWriteItems":
        out = []
        for t in p["TransactItems"]:
            [(action, body)] = t.items()
            units = _item_units(body["Item"]) if action == "Put" else 1.0
            out.append((body["Key"]["pk"]["S"] if "Key" in body else body["Item"]["pk"]["S"], 2 * units, True))
        return out
    return []


@dataclass
class Partitions:
    """Units used per partition key over the last second; budgets divided by `scale`."""

    scale: float = 1.0
    throttled: Counter[str] = field(default_factory=Counter)  # refusals by item kind (kind_of)
    peak: dict[str, float] = field(default_factory=dict)  # by item kind and reads or writes, the most one key used in a second
    total: dict[tuple[str, bool], float] = field(default_factory=dict)  # every unit taken, by (partition key, is a write)
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    table_throttled: int = 0  # refusals for the table's own budget
    _used: dict[tuple[str, bool], deque[tuple[float, float]]] = field(default_factory=dict)
    _table: dict[bool, deque[tuple[float, float]]] = field(default_factory=lambda: {True: deque(), False: deque()})
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _over(self, touched: list[tuple[str, float, bool]]) -> list[int]:
        """Indices of the items whose partition has no room for them now; when none, their units are taken."""
        now = self.clock()
        with self._lock:
            totals: dict[tuple[str, bool], float] = {}
            idle: set[tuple[str, bool]] = set()
            for pk, units, write in touched:
                window = self._used.setdefault((pk, write), deque())
                while window and window[0][0] <= now - WINDOW_S:
                    window.popleft()
                if not window:
                    idle.add((pk, write))
                totals[(pk, write)] = totals.get((pk, write), sum(u for _, u in window)) + units
            budget = {True: WRITE_UNITS_S / self.scale, False: READ_UNITS_S / self.scale}
            # A partition that served nothing this second serves a call whatever its size (a scaled budget may be
            # smaller than one transaction, which AWS's never is).
            over = [i for i, (pk, _, write) in enumerate(touched) if totals[(pk, write)] > budget[write] and (pk, write) not in idle]
            table = {True: TABLE_WRITE_UNITS_S / self.scale, False: TABLE_READ_UNITS_S / self.scale}
            for write in (True, False):
                window = self._table[write]
                while window and window[0][0] <= now - WINDOW_S:
                    window.popleft()
                asked = sum(u for _, u, w in touched if w == write)
                if asked and window and sum(u for _, u in window) + asked > table[write]:
                    # As for a partition: a key that served nothing this second is served (a scaled table budget may
                    # hold less than one transaction, which AWS's never does).
                    busy = [i for i, (pk, _, w) in enumerate(touched) if w == write and (pk, w) not in idle]
                    if busy:
                        self.table_throttled += 1
                        over = sorted({*over, *busy})
            if over:
                for i in over:
                    self.throttled[kind_of(touched[i][0])] += 1
                return over
            for pk, units, write in touched:
                self._take(now, pk, units, write)
            for (pk, write), total in totals.items():
                kind = f"{kind_of(pk)} {'writes' if write else 'reads'}"
                self.peak[kind] = max(self.peak.get(kind, 0.0), total)
            return []

    def _take(self, now: float, pk: str, units: float, write: bool) -> None:
        """Count units a key used (under the lock): in its partition's window, the table's, and the run's total."""
        self._used.setdefault((pk, write), deque()).append((now, units))
        self._table[write].append((now, units))
        self.total[(pk, write)] = self.total.get((pk, write), 0.0) + units

    def charge_read(self, op: str, p: dict[str, Any], answer: dict[str, Any]) -> None:
        """What a read returned, charged as DynamoDB charges it: a Query by the bytes of all it read (a unit per 4 KB,
        half when eventually consistent), a GetItem and each item of a BatchGetItem by their own size, rounded up per
        item. `admit` took a unit per key before the call; the rest is taken now, counted against the budgets of the
        calls that follow, as DynamoDB's consumed capacity is."""
        try:
            touched = charges(op, p)
        except (KeyError, TypeError, ValueError):
            return
        if not touched or op not in ("Query", "GetItem", "BatchGetItem"):
            return
        extra: dict[str, float] = {}
        if op == "Query":
            pk, admitted, _ = touched[0]  # 1 when consistent, 0.5 eventually
            size = sum(dynamo_item_bytes(i) for i in answer.get("Items", []))
            extra[pk] = max(0.0, math.ceil(size / READ_UNIT_BYTES) * admitted - admitted)
        else:
            found = [answer["Item"]] if op == "GetItem" and "Item" in answer else []
            for items in answer.get("Responses", {}).values():
                found += items
            unit = {key: units for key, units, _ in touched}
            for item in found:
                key = str(item.get("pk", {}).get("S", ""))
                if key in unit:
                    units = math.ceil(dynamo_item_bytes(item) / READ_UNIT_BYTES) * unit[key]
                    extra[key] = extra.get(key, 0.0) + max(0.0, units - unit[key])
        now = self.clock()
        with self._lock:
            for pk, units in extra.items():
                if units > 0:
                    self._take(now, pk, units, False)

    def hottest(self) -> dict[str, float]:
        """By item kind and reads or writes, the most units any one key of that kind took over the whole run."""
        out: dict[str, float] = {}
        for (pk, write), units in self.total.items():
            kind = f"{kind_of(pk)} {'writes' if write else 'reads'}"
            out[kind] = max(out.get(kind, 0.0), units)
        return out

    def admit(self, op: str, p: dict[str, Any], retries: int) -> None:
        """Take the call's units, or answer as DynamoDB does when a partition has none left (a plain call retried as
        botocore would, `retries` times, before it is raised)."""
        try:
            touched = charges(op, p)
        except (KeyError, TypeError, ValueError):  # not the ledger's key shape: moto validates it as DynamoDB would
            return
        if not touched:
            return
        for attempt in range(retries + 1):
            over = self._over(touched)
            if not over:
                return
            if op == "TransactWriteItems":
                reasons = [{"Code": "ThrottlingError" if i in over else "None"} for i in range(len(touched))]
                answer: Any = {
                    "Error": {
                        "Code": "TransactionCanceledException",
                        "Message": "Transaction cancelled, please refer cancellation reasons",
                    },
                    "CancellationReasons": reasons,
                    "ResponseMetadata": {"HTTPStatusCode": 400},
                }
                raise ClientError(answer, op)
            if attempt < retries:
                self.sleep(random.random() * min(MAX_BACKOFF_S, 2**attempt))
        message = "The level of configured provisioned throughput for the table was exceeded (a partition past its units a second)"
        raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": message}}, op)
