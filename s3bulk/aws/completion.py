"""Resume a job's execution when its last batch is done, with the task token the execution is waiting on.

The state machine waits for completion with `.waitForTaskToken` instead of polling in a loop,
so an execution's history does not grow with the job's length. Whoever sees the job complete
(the worker that counts the last batch, or the Await step if listing finished last) sends the
token; a second send for the same token is answered "already done" and ignored.
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

# The token's wait already ended (sent by someone else, or timed out and replaced by a new one).
_SPENT = {"TaskTimedOut", "TaskDoesNotExist", "InvalidToken"}


class Completion:
    def __init__(self, client: Any) -> None:
        self.client = client

    def send(self, token: str, job_id: str) -> bool:
        """True if this call resumed the execution."""
        try:
            self.client.send_task_success(taskToken=token, output=json.dumps({"job_id": job_id, "complete": True}))
            return True
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _SPENT:
                return False
            raise
