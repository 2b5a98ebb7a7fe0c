"""What a resume after the failure breaker redoes: each counted batch's failed objects, taken back in one transaction.

The breaker stops a job whose objects fail for one systematic cause (a bucket policy, a missing KMS grant); its owner
fixes the cause and runs the printed `s3bulk resume`. The objects that failed before the stop must then be done again,
or the resume ends with them still failed. Per counted batch, one transaction re-points the batch's marker to a new try
(`attempt`, whose failures part keeps only the failures not redone), takes the redone objects out of `failed` (and
`throttled`) on the batch's counter shard, and adds each redo batch to `pending` on the counter shard that will count
it; the marker keeps the try they replaced (`redone_from`), from whose part the same redo batches are built again,
so a step that ended between the transaction and the send sends them again. The job item's `tripped` says a breaker stopped it, until the resume's redo is done.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError

from s3bulk.aws.ledger.base import LedgerBase
from s3bulk.aws.ledger.keys import DEFAULT_TTL_DAYS, counter_key, counter_shard, job_key, marker_key, pending_updates


class RedoMixin(LedgerBase):
    def tripped(self, job_id: str) -> bool:
        """The failure breaker stopped the job, and no resume has redone its failed objects yet."""
        return bool(self._job_item(job_id, "tripped").get("tripped", {}).get("BOOL"))

    def untrip(self, job_id: str) -> None:
        """The resume's redo is done: a later resume (after another kind of stop) redoes nothing."""
        self._write(lambda: self.client.update_item(TableName=self.table, Key=job_key(job_id), UpdateExpression="REMOVE tripped"))

    def markers(self, job_id: str, batch_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The markers of these batches (their counted try, and a redo's `redone_from`), by batch id."""
        prefix = f"job#{job_id}#batch#"
        items = self._get_many([marker_key(job_id, b) for b in dict.fromkeys(batch_ids)], ("pk", "attempt", "redone_from"))
        return {str(i["pk"]["S"]).removeprefix(prefix): i for i in items}

    def redo_batch(
        self,
        job_id: str,
        batch_id: str,
        *,
        counted: str,
        new: str,
        failed: int,
        throttled: int,
        batch_ids: Sequence[str],
        ttl_days: int = DEFAULT_TTL_DAYS,
    ) -> bool:
        """Take `failed` objects of a counted batch back for redo, in the batches `batch_ids` sent next (each pending on
        the counter shard that will count it); False when its counted try is no longer `counted` (another resume step
        took them first)."""
        expires = {"N": str(int(time.time() + ttl_days * 86400))}
        marker = {
            "Update": {
                "TableName": self.table,
                "Key": marker_key(job_id, batch_id),
                "UpdateExpression": "SET attempt = :new, redone_from = :old, expires_at = :exp",
                "ConditionExpression": "attempt = :old",
                "ExpressionAttributeValues": {
                    ":new": {"S": new},
                    ":old": {"S": counted},
                    ":exp": expires,
                },
            }
        }
        own = counter_shard(batch_id, self.shards)
        here = sum(1 for b in batch_ids if counter_shard(b, self.shards) == own)  # one Update per item in a transaction
        elsewhere = pending_updates(self.table, job_id, [b for b in batch_ids if counter_shard(b, self.shards) != own], self.shards)
        counter = {
            "Update": {
                "TableName": self.table,
                "Key": counter_key(job_id, counter_shard(batch_id, self.shards)),
                "UpdateExpression": "ADD failed :f, throttled :t, pending :p, redone :r SET expires_at = :exp",
                "ExpressionAttributeValues": {
                    ":f": {"N": str(-failed)},
                    ":t": {"N": str(-throttled)},
                    ":p": {"N": str(here)},
                    ":r": {"N": str(failed)},
                    ":exp": expires,
                },
            }
        }
        try:
            self._write(lambda: self.client.transact_write_items(TransactItems=[marker, counter, *elsewhere]))
            return True
        except ClientError as exc:
            reasons = exc.response.get("CancellationReasons") or []
            if (
                exc.response.get("Error", {}).get("Code") == "TransactionCanceledException"
                and reasons
                and reasons[0].get("Code") == "ConditionalCheckFailed"
            ):
                return False
            raise
