"""When a job goes on in a new execution: Step Functions ends an execution at 25,000 history events.

A job may run for days: its listing Map adds a few events per lister call and shard, and its completion wait a dozen per
`poll_seconds`. The steps that loop (ListShard, CheckProgress) ask how long their execution's history is (one
GetExecutionHistory call, newest event first: its id is the count) and, past RENEW_AT, answer `renew`; the state machine
then starts a new execution that adopts the job and goes on from its checkpoints, and ends the old one
(infra/state_machine.py, "continue as new"). An execution that reaches the limit anyway is a stop, never a failure
(finish.history_limit).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

HISTORY_LIMIT = 25_000
# Room for what is in flight when the steps see it: each of up to 40 listing iterations ends its loop (a few events each)
# and the old execution starts the new one.
RENEW_AT = 20_000
# The most events an execution's history can gain a second: 40 inline listing iterations, each lister call 7 events
# and at least a second long, with room to spare. Until its history could have reached RENEW_AT at this rate, a step
# does not ask (GetExecutionHistory is throttled per account at 400 at once, then 20 a second: 1,000 listing children
# starting together must not all ask); past RENEW_AT the limit's 5,000 events of headroom cover any burst.
MAX_EVENTS_PER_S = 300.0


def started_at(value: Any) -> float | None:
    """`$$.Execution.StartTime` (ISO 8601, as Step Functions gives it) in epoch seconds, or None if it is not one."""
    if isinstance(value, int | float):
        return float(value)
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class History:
    def __init__(self, client: Any, renew_at: int = RENEW_AT, rate: float | None = None, clock: Callable[[], float] = time.time) -> None:
        self.client = client
        self.renew_at = renew_at
        self.rate = rate
        self.clock = clock
        self._known: dict[str, tuple[float, int]] = {}  # execution -> (when, events) last asked here, or its start
        self._lock = threading.Lock()

    def events(self, execution_arn: str) -> int:
        """How many events the execution's history holds: the newest one's id (ids count from 1)."""
        r = self.client.get_execution_history(executionArn=execution_arn, reverseOrder=True, maxResults=1)
        return max((int(e["id"]) for e in r.get("events", [])), default=0)

    def full(self, execution_arn: str | None, started: Any = None) -> bool:
        """The execution should hand its job on to a new one (None: a caller that did not say which execution it runs in).

        Asked only when the history could be near RENEW_AT: since the execution started (`started`, its StartTime), or
        since this container last asked, at MAX_EVENTS_PER_S."""
        if execution_arn is None:
            return False
        now = self.clock()
        with self._lock:
            known = self._known.get(execution_arn)
        begun = started_at(started) if started is not None else None
        if known is None and begun is not None:
            known = (begun, 0)
        rate = self.rate if self.rate is not None else MAX_EVENTS_PER_S
        if known is not None and known[1] + max(0.0, now - known[0]) * rate < self.renew_at:
            return False
        count = self.events(execution_arn)
        with self._lock:
            if len(self._known) > 1000:  # a container outlives many executions: keep the newest only
                self._known.clear()
            self._known[execution_arn] = (now, count)
        return count >= self.renew_at
