"""Send batch messages to SQS: at most 10 per call, every per-entry failure retried or raised."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from s3bulk.aws.messages import BatchMessage

MAX_ENTRIES = 10
ATTEMPTS = 6


class SendError(RuntimeError):
    pass


class QueueSender:
    def __init__(self, client: Any, queue_url: str, sleep: Callable[[float], None] = time.sleep) -> None:
        self.client = client
        self.queue_url = queue_url
        self.sleep = sleep

    def send(self, messages: Sequence[BatchMessage]) -> None:
        """Raise unless every message was accepted; a partial send is safe to repeat (ids dedupe)."""
        for start in range(0, len(messages), MAX_ENTRIES):
            pending = {str(i): m.encode() for i, m in enumerate(messages[start : start + MAX_ENTRIES])}
            for attempt in range(ATTEMPTS):
                r = self.client.send_message_batch(
                    QueueUrl=self.queue_url, Entries=[{"Id": k, "MessageBody": v} for k, v in pending.items()]
                )
                failed = r.get("Failed", [])
                permanent = [f for f in failed if f.get("SenderFault")]
                if permanent:
                    f = permanent[0]
                    raise SendError(f"SQS refused a batch message: {f.get('Code')}: {f.get('Message')}")
                pending = {f["Id"]: pending[f["Id"]] for f in failed}
                if not pending:
                    break
                self.sleep(min(2.0, 0.05 * 2**attempt) * random.uniform(0.5, 1.0))
            else:
                raise SendError(f"SQS kept failing {len(pending)} batch message(s) after {ATTEMPTS} attempts")


class Returns:
    """What a worker does with a record it hands back: bring it back soon, not after the hour-long visibility timeout."""

    def __init__(self, client: Any, queue_url: str) -> None:
        self.client = client
        self.queue_url = queue_url

    def later(self, receipt_handle: str, seconds: int) -> None:
        """Visible again in `seconds`; a failure here only means the record waits out its visibility timeout."""
        try:
            self.client.change_message_visibility(QueueUrl=self.queue_url, ReceiptHandle=receipt_handle, VisibilityTimeout=seconds)
        except Exception:  # noqa: BLE001 - best effort: the record still comes back, only later
            return

    def requeue(self, body: str) -> None:
        """Send the record again as a new message, with a fresh receive count (the batch id still dedupes it)."""
        self.client.send_message(QueueUrl=self.queue_url, MessageBody=body)
