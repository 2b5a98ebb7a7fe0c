"""A job's end as an EventBridge event, as S3 Batch Operations emits its job status changes: users route it to SNS,
a ticket or the next step of a pipeline with a rule on `source: ["s3bulk"]`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

SOURCE = "s3bulk"
DETAIL_TYPE = "s3bulk Job Status Change"
# The summary fields the event carries (report.json has them all, and the failures).
FIELDS = ("job_id", "operation", "status", "listed", "succeeded", "skipped", "failed", "bytes", "seconds", "stop_reason", "error")


class JobEvents:
    """Puts one event per finished job on an event bus (the account's default one unless told otherwise)."""

    def __init__(self, client: Any, bus: str = "default") -> None:
        self.client = client
        self.bus = bus

    def ended(self, summary: Mapping[str, Any], report: str, ledger_status: str) -> str:
        """Best effort: the job's record is its report and ledger entry; what happened to the event is returned (and
        logged by the caller), never raised, so a missing rule or a throttled PutEvents cannot fail a finished job."""
        detail = {k: summary[k] for k in FIELDS if k in summary} | {"report": report, "ledger_status": ledger_status}
        entry = {"Source": SOURCE, "DetailType": DETAIL_TYPE, "Detail": json.dumps(detail), "EventBusName": self.bus}
        try:
            r = self.client.put_events(Entries=[entry])
        except Exception as exc:  # noqa: BLE001 - a notification, not the job's record
            return f"not sent: {type(exc).__name__}: {exc}"
        failed = r.get("Entries", [{}])[0]
        return "sent" if not r.get("FailedEntryCount") else f"not sent: {failed.get('ErrorCode')}: {failed.get('ErrorMessage')}"
