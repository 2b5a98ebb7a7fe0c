"""The ledger's parking index: a capped job's waiting batches, so they leave the queue and come back as room frees up.

A job its owner capped (`s3bulk tune JOB_ID --concurrency N`) may have far more batches queued than it may run. Handed
back to the queue, each would come back every minute: an SQS receive and a Worker invocation per batch per minute, paid
for nothing, and up to the queue's in-flight limit (about 120,000 messages), past which every other job on the stack
starves. So a worker that finds the job at its cap parks the batch (its body in the report bucket, `jobs/ID/waiting/`)
and names it here, and a worker that releases a capped hold sends on as many parked batches as its lease shard has
room for (aws/held.py). One partition per job (`job#ID#parked`, sort key the batch id, so the oldest go first): its
writes come at most at the rate batches are listed and run under the cap, well under a partition's 1,000 a second.

A batch is claimed before it is sent (one conditional write: a second worker passes it over) and its entry deleted
after the send, on condition of that claim: a worker ended in between leaves a claim that lapses after PARK_CLAIM_S,
and the batch is sent again (its id dedupes it); one parked again meanwhile (it found the cap full once more) has a
fresh entry, which the delete leaves alone.
"""

from __future__ import annotations

import time
from typing import Any

from botocore.exceptions import ClientError

from s3bulk.aws.ledger.base import LedgerBase
from s3bulk.aws.ledger.keys import _conditional_failed

# A parked entry outlives any wait for room (a job capped low may keep a batch parked for weeks): it goes when it is sent,
# and TTL only reaps those of a job cancelled or abandoned with batches still parked.
PARKED_TTL_DAYS = 365
# A claimed batch whose sender ended before sending it is free to claim again after this long.
PARK_CLAIM_S = 120.0
# A Query reads this many entries more than it needs: claimed ones (being sent right now) are passed over.
PARK_SLACK = 10


def parked_key(job_id: str, batch_id: str) -> dict[str, Any]:
    return {"pk": {"S": f"job#{job_id}#parked"}, "sk": {"S": batch_id}}


class ParkingMixin(LedgerBase):
    def park(self, job_id: str, batch_id: str) -> None:
        """Name a waiting batch (its body already stored): a put, so a batch parked again replaces its entry and claim."""
        item = {**parked_key(job_id, batch_id), "expires_at": {"N": str(int(time.time() + PARKED_TTL_DAYS * 86400))}}
        self._write(lambda: self.client.put_item(TableName=self.table, Item=item))

    def parked(self, job_id: str, n: int, *, now: float | None = None) -> list[str]:
        """Up to n parked batches nobody is sending now, oldest first (one strongly consistent Query)."""
        now = time.time() if now is None else now
        r = self.client.query(
            TableName=self.table,
            KeyConditionExpression="pk = :pk",
            FilterExpression="attribute_not_exists(claim_until) OR claim_until < :now",
            ExpressionAttributeValues={":pk": {"S": f"job#{job_id}#parked"}, ":now": {"N": f"{now:.0f}"}},
            ProjectionExpression="sk",
            ConsistentRead=True,
            Limit=n + PARK_SLACK,
        )
        return [str(i["sk"]["S"]) for i in r.get("Items", [])][:n]

    def claim_parked(self, job_id: str, batch_id: str, token: str, *, now: float | None = None) -> bool:
        """This sender takes the batch: False when another holds a live claim, or it was sent already."""
        now = time.time() if now is None else now
        return self._update_if(
            parked_key(job_id, batch_id),
            UpdateExpression="SET claim = :t, claim_until = :until",
            ConditionExpression="attribute_exists(pk) AND (attribute_not_exists(claim_until) OR claim_until < :now)",
            ExpressionAttributeValues={":t": {"S": token}, ":until": {"N": f"{now + PARK_CLAIM_S:.0f}"}, ":now": {"N": f"{now:.0f}"}},
        )

    def unpark(self, job_id: str, batch_id: str, token: str) -> None:
        """The batch was sent: its entry goes, unless it was parked again since (a new entry, without this claim)."""
        try:
            self._write(
                lambda: self.client.delete_item(
                    TableName=self.table,
                    Key=parked_key(job_id, batch_id),
                    ConditionExpression="claim = :t",
                    ExpressionAttributeValues={":t": {"S": token}},
                )
            )
        except ClientError as exc:
            if not _conditional_failed(exc):
                raise
