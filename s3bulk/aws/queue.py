"""Send batch messages to SQS: at most 10 and 1 MiB per call, every per-entry failure retried or raised."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from s3bulk.aws.messages import BatchMessage

MAX_ENTRIES = 10
# SendMessageBatch's limit on the sum of its messages' bodies (UTF-8 bytes), whatever their count.
MAX_BATCH_BYTES = 1024 * 1024
ATTEMPTS = 6


def packs(bodies: Sequence[str], max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BATCH_BYTES) -> list[list[str]]:
    """The bodies in order, cut into SendMessageBatch calls of at most `max_entries` and `max_bytes` in all.

    A page of long keys (1,024-byte keys, 3 UTF-8 bytes per CJK character) makes messages near the per-message
    cap, and ten of those are far over the call's 1 MiB: cut by count alone, such a call fails on every retry.
    """
    out: list[list[str]] = []
    size = 0
    for body in bodies:
        n = len(body.encode("utf-8"))
        if out and len(out[-1]) < max_entries and size + n <= max_bytes:
            out[-1].append(body)
            size += n
        else:
            out.append([body])
            size = n
    return out


class SendError(RuntimeError):
    pass


class QueueSender:
    def __init__(self, client: Any, queue_url: str, sleep: Callable[[float], None] = time.sleep) -> None:
        self.client = client
        self.queue_url = queue_url
        self.sleep = sleep

    def send(self, messages: Sequence[BatchMessage]) -> None:
        """Raise unless every message was accepted; a partial send is safe to repeat (ids dedupe)."""
        for pack in packs([m.encode() for m in messages]):
            pending = {str(i): body for i, body in enumerate(pack)}
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
