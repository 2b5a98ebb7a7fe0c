"""When a job goes on in a new execution: Step Functions ends an execution at 25,000 history events.

A job may run for days: its listing Map adds a few events per lister call and shard, and its completion wait a dozen per
`poll_seconds`. The steps that loop (ListShard, CheckProgress) ask how long their execution's history is (one
GetExecutionHistory call, newest event first: its id is the count) and, past RENEW_AT, answer `renew`; the state machine
then starts a new execution that adopts the job and goes on from its checkpoints, and ends the old one
(infra/state_machine.py, "continue as new"). An execution that reaches the limit anyway is a stop, never a failure
(finish.history_limit).
"""

from __future__ import annotations

from typing import Any

HISTORY_LIMIT = 25_000
# Room for what is in flight when the steps see it: each of up to 40 listing iterations ends its loop (a few events each)
# and the old execution starts the new one.
RENEW_AT = 20_000


class History:
    def __init__(self, client: Any, renew_at: int = RENEW_AT) -> None:
        self.client = client
        self.renew_at = renew_at

    def events(self, execution_arn: str) -> int:
        """How many events the execution's history holds: the newest one's id (ids count from 1)."""
        r = self.client.get_execution_history(executionArn=execution_arn, reverseOrder=True, maxResults=1)
        return max((int(e["id"]) for e in r.get("events", [])), default=0)

    def full(self, execution_arn: str | None) -> bool:
        """The execution should hand its job on to a new one (None: a caller that did not say which execution it runs in)."""
        return execution_arn is not None and self.events(execution_arn) >= self.renew_at
