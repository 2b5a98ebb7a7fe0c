"""The ledger's leases: who is working a job now, so a stopped job's report waits for the work in flight.

Its own module because it is a concern of its own with items of its own (the lease shards, `job#ID#lease#NN`): workers
and listers hold and release them around each batch and call, a stop stamps its epoch on each, and Finalize and
ExecutionEnded read how many hold the job.
"""

from __future__ import annotations

import time

from s3bulk.aws.ledger.base import LedgerBase
from s3bulk.aws.ledger.keys import DEFAULT_TTL_DAYS, counter_shard, lease_key


class LeasesMixin(LedgerBase):
    # -- leases: who is working the job now, so a stopped job's report waits for the work in flight ----------------
    def hold(self, job_id: str, holder: str) -> float:
        """An invocation starts working the job (a worker's batch, a lister's call): one more on the holder's lease
        shard. Returns that shard's stop epoch: newer than the one the caller last saw means the job was stopped since,
        whatever a cached status says. Release it when done, whatever happens."""
        expires = {"N": str(int(time.time() + DEFAULT_TTL_DAYS * 86400))}
        r = self._write(
            lambda: self.client.update_item(
                TableName=self.table,
                Key=lease_key(job_id, counter_shard(holder, self.shards)),
                UpdateExpression="ADD working :one SET expires_at = :exp",
                ExpressionAttributeValues={":one": {"N": "1"}, ":exp": expires},
                ReturnValues="ALL_NEW",
            )
        )
        return float(r.get("Attributes", {}).get("stop_epoch", {}).get("N", "0"))

    def release(self, job_id: str, holder: str) -> None:
        self._write(
            lambda: self.client.update_item(
                TableName=self.table,
                Key=lease_key(job_id, counter_shard(holder, self.shards)),
                UpdateExpression="ADD working :minus",
                ExpressionAttributeValues={":minus": {"N": "-1"}},
            )
        )

    def mark_stopped(self, job_id: str, epoch: float) -> None:
        """Every lease shard learns the stop (idempotent: the epoch is the stop's time). A hold after this sees it, so
        no invocation starts work on a stale cached status once `working` has been read."""
        for shard in range(self.shards):
            key = lease_key(job_id, shard)
            self._update_if(key, UpdateExpression="SET stop_epoch = :e", ExpressionAttributeValues={":e": {"N": f"{epoch:.3f}"}})

    def working(self, job_id: str) -> int:
        """Invocations working the job now (an invocation Lambda ended leaves its hold behind: callers bound the wait)."""
        leases = self._get_many([lease_key(job_id, i) for i in range(self.shards)], ("working",))
        return sum(int(i.get("working", {}).get("N", "0")) for i in leases)
