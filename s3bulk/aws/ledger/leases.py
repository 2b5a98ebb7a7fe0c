"""The ledger's leases: who is working a job now, so a stopped job's report waits for the work in flight, and so a
job its owner capped (`s3bulk tune JOB_ID --concurrency N`) runs at most N batches at once.

Its own module because it is a concern of its own with items of its own (the lease shards, `job#ID#lease#NN`): workers
and listers hold and release them around each batch and call, a stop stamps its epoch on each, and Finalize and
ExecutionEnded read how many hold the job.

A cap is spread over the shards (shard i takes N // 32, plus one for the first N % 32), so no item is hot. A capped
worker's hold also names itself in its shard's `holders` map with the time its invocation must end by: a hold that
finds the shard full prunes the entries past their time (a worker Lambda ended never released its own) and asks again,
so a cap never shrinks for good, then tries other shards, and else the batch comes back later, uncounted.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

from s3bulk.aws.ledger.base import LedgerBase
from s3bulk.aws.ledger.keys import DEFAULT_TTL_DAYS, counter_shard, job_key, lease_key

# How many of a capped job's lease shards a worker tries before it hands its batch back.
CAP_TRIES = 3


class AtCapacity(RuntimeError):
    """The job runs as many batches as its owner allowed (s3bulk tune JOB_ID --concurrency N): this one waits."""


@dataclass(frozen=True, slots=True)
class Lease:
    """A hold on one lease shard: release it with the same shard (and, under a cap, the same holder entry)."""

    shard: int
    epoch: float  # the shard's stop epoch when held
    entry: str = ""  # the holder's name in the shard's `holders` map: set only under a cap


@dataclass(frozen=True, slots=True)
class Room:
    """What a released hold left on its lease shard: batches of the job that may start now on it (`free`), and whether
    the job is or was capped (only then may it have parked batches waiting for that room: aws/held.py)."""

    shard: int
    free: int = 0
    capped: bool = False


# Parked batches a release sends on from a job whose cap was lifted (each sent batch's own release sends as many).
UNCAPPED_SEND = 4


def room_of(shard: int, attrs: dict[str, Any], now: float) -> Room:
    """The room a lease shard's item (as a write returned it) has for a capped job's batches: its share of the cap less
    its live holders (a holder past its time was a worker Lambda ended)."""
    if "cap" not in attrs:
        return Room(shard, UNCAPPED_SEND, capped=True) if "uncapped" in attrs else Room(shard)
    live = sum(1 for v in attrs.get("holders", {}).get("M", {}).values() if float(v["N"]) >= now)
    return Room(shard, max(0, int(attrs["cap"]["N"]) - live), capped=True)


def cap_shares(n: int, shards: int) -> list[int]:
    """A cap of n batches at once, spread over the lease shards: shard i may hold this many."""
    return [n // shards + (1 if i < n % shards else 0) for i in range(shards)]


class LeasesMixin(LedgerBase):
    # -- leases: who is working the job now, so a stopped job's report waits for the work in flight ----------------
    def hold(self, job_id: str, holder: str, *, until: float | None = None, first: int | None = None) -> Lease:
        """An invocation starts working the job (a worker's batch, a lister's call): one more on the holder's lease
        shard. The lease carries that shard's stop epoch: newer than the one the caller last saw means the job was
        stopped since, whatever a cached status says. Release it when done, whatever happens.

        `until` (a worker: when its invocation must end, epoch seconds) makes the hold count against the job's cap,
        if its owner set one: AtCapacity when CAP_TRIES shards are full (nothing is held then). `first`: the shard to
        try first (a parked batch sent on by a release that left room there)."""
        shard = first if first is not None and 0 <= first < self.shards else counter_shard(holder, self.shards)
        tried: list[int] = []
        while True:
            tried.append(shard)
            attrs = self._add_working(job_id, shard, 1)
            epoch = float(attrs.get("stop_epoch", {}).get("N", "0"))
            if until is None or "cap" not in attrs:
                return Lease(shard, epoch)
            active = int(attrs.get("cap_shards", {}).get("N", str(self.shards)))  # a cap under 32 lives on that many shards
            if shard < active and self._enter(job_id, shard, holder, until):
                return Lease(shard, epoch, holder)
            self._add_working(job_id, shard, -1)
            others = [i for i in range(active) if i not in tried]
            if not others or len(tried) >= CAP_TRIES:
                raise AtCapacity(f"job {job_id} runs as many batches at once as s3bulk tune allowed it; this one waits")
            shard = random.choice(others)

    def _add_working(self, job_id: str, shard: int, n: int) -> dict[str, Any]:
        expires = {"N": str(int(time.time() + DEFAULT_TTL_DAYS * 86400))}
        r = self._write(
            lambda: self.client.update_item(
                TableName=self.table,
                Key=lease_key(job_id, shard),
                UpdateExpression="ADD working :n SET expires_at = :exp",
                ExpressionAttributeValues={":n": {"N": str(n)}, ":exp": expires},
                ReturnValues="ALL_NEW",
            )
        )
        return dict(r.get("Attributes", {}))

    def _enter(self, job_id: str, shard: int, holder: str, until: float) -> bool:
        """Name the holder in a capped shard's `holders` if it has room; a full one is pruned of holders past their
        time first (one read, one write), then asked once more."""
        key = lease_key(job_id, shard)
        enter = {
            "UpdateExpression": "SET holders.#h = :until",
            "ConditionExpression": "attribute_not_exists(cap) OR size(holders) < cap",
            "ExpressionAttributeNames": {"#h": holder},
            "ExpressionAttributeValues": {":until": {"N": f"{until:.0f}"}},
        }
        if self._update_if(key, **enter):
            return True
        item = self.client.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item", {})
        now = time.time()
        stale = [name for name, v in item.get("holders", {}).get("M", {}).items() if float(v["N"]) < now]
        if not stale:
            return False
        names = {f"#s{i}": name for i, name in enumerate(stale[:50])}
        self._write(
            lambda: self.client.update_item(
                TableName=self.table,
                Key=key,
                UpdateExpression="REMOVE " + ", ".join(f"holders.{n}" for n in names),
                ExpressionAttributeNames=names,
            )
        )
        return self._update_if(key, **enter)

    def release(self, job_id: str, lease: Lease) -> Room:
        """The hold ends; the room it leaves on its shard (read from the same write) says whether parked batches may go."""
        remove = {"UpdateExpression": "ADD working :minus REMOVE holders.#h", "ExpressionAttributeNames": {"#h": lease.entry}}
        r = self._write(
            lambda: self.client.update_item(
                TableName=self.table,
                Key=lease_key(job_id, lease.shard),
                **(remove if lease.entry else {"UpdateExpression": "ADD working :minus"}),
                ExpressionAttributeValues={":minus": {"N": "-1"}},
                ReturnValues="ALL_NEW",
            )
        )
        return room_of(lease.shard, dict(r.get("Attributes", {})), time.time())

    def set_cap(self, job_id: str, n: int | None) -> None:
        """The owner's cap on the job's batches at once (None: no cap of its own), on every lease shard and the job
        item. Holds from now on count against it; batches already running finish."""
        if n is None:  # `holders` stays: a capped hold still running releases its entry from it
            for shard in range(self.shards):  # `uncapped`: releases still send on the batches parked under the cap
                self._update_if(
                    lease_key(job_id, shard),
                    UpdateExpression="REMOVE cap, cap_shards SET uncapped = :t",
                    ExpressionAttributeValues={":t": {"BOOL": True}},
                )
            self._update_if(job_key(job_id), UpdateExpression="REMOVE max_workers")
            return
        # `capped` first, and never removed: the progress check sweeps parked batches only for a job that was ever
        # capped (completion.progress_step), and no batch is parked under a cap before the lease shards hold it.
        self._update_if(
            job_key(job_id),
            UpdateExpression="SET #c = :t",
            ExpressionAttributeNames={"#c": "capped"},
            ExpressionAttributeValues={":t": {"BOOL": True}},
        )
        active = {"N": str(min(n, self.shards))}
        for shard, share in enumerate(cap_shares(n, self.shards)):
            self._update_if(
                lease_key(job_id, shard),
                UpdateExpression="SET cap = :cap, cap_shards = :active, holders = if_not_exists(holders, :none) ADD working :zero",
                ExpressionAttributeValues={":cap": {"N": str(share)}, ":active": active, ":none": {"M": {}}, ":zero": {"N": "0"}},
            )
        self._update_if(job_key(job_id), UpdateExpression="SET max_workers = :n", ExpressionAttributeValues={":n": {"N": str(n)}})

    def mark_stopped(self, job_id: str, epoch: float) -> None:
        """Every lease shard learns the stop (idempotent: the epoch is the stop's time). A hold after this sees it, so
        no invocation starts work on a stale cached status once `working` has been read."""
        for shard in range(self.shards):
            key = lease_key(job_id, shard)
            self._update_if(key, UpdateExpression="SET stop_epoch = :e", ExpressionAttributeValues={":e": {"N": f"{epoch:.3f}"}})

    def rooms(self, job_id: str) -> list[Room]:
        """The room on each lease shard of a capped (or once capped) job: one BatchGetItem."""
        now = time.time()
        items = self._get_many([lease_key(job_id, i) for i in range(self.shards)], None)
        return [room_of(int(str(i["pk"]["S"]).rsplit("#", 1)[1]), i, now) for i in items]

    def working(self, job_id: str) -> int:
        """Invocations working the job now (an invocation Lambda ended leaves its hold behind: callers bound the wait)."""
        leases = self._get_many([lease_key(job_id, i) for i in range(self.shards)], ("working",))
        return sum(int(i.get("working", {}).get("N", "0")) for i in leases)
