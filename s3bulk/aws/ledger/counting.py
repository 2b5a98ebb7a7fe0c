"""The ledger's counters: a finished batch counted exactly once, and a job's counters read back as one sum.

Its own module because counting is what the ledger is for and what makes it hard: a batch adds to one of the counter
shards in the same transaction as its marker (finish_batch), and reading the job's counters or whether it is complete
sums the job item, its listing shards and its counter shards (counters, progress).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from s3bulk.aws.ledger.base import LedgerBase
from s3bulk.aws.ledger.keys import COUNTERS, DEFAULT_TTL_DAYS, counter_key, counter_shard, job_key, marker_key, pending_updates


@dataclass(frozen=True, slots=True)
class BatchCounts:
    succeeded: int = 0
    skipped: int = 0
    failed: int = 0
    bytes: int = 0
    retries: int = 0  # requests the S3 client retried while working the batch
    object_retries: int = 0  # extra rounds its objects needed
    throttled: int = 0  # of `failed`, those whose error was throttling (the failure breaker leaves them out)
    notes: tuple[tuple[str, int], ...] = ()  # (report.NOTES name, count): objects decided without content evidence


@dataclass(frozen=True, slots=True)
class Progress:
    """What decides whether a job is complete: read from the job item and the counter shards."""

    listing_done: bool
    pending: int
    status: str
    token: str | None
    counters: dict[str, int] = field(default_factory=dict)  # the job's counters, as read for this check
    capped: bool = False  # its owner capped it at some time (s3bulk tune): parked batches may wait for room

    @property
    def complete(self) -> bool:
        return self.listing_done and self.pending <= 0

    @property
    def ends_wait(self) -> bool:
        """The execution's completion wait is over: the job is complete, or stopping (an outage, the failure breaker:
        finalized now as stopped, whatever is pending)."""
        return self.complete or self.status == "STOPPING"


def _listing_done(item: dict[str, Any]) -> bool:
    """Every planned listing shard is done: the job item counts them (`shards_done`, added as each one's last page is recorded)."""
    return "shards" in item and int(item.get("shards_done", {}).get("N", "0")) >= int(item["shards"]["N"])


class CountingMixin(LedgerBase):
    def _counter_shards(self, job_id: str) -> list[dict[str, Any]]:
        """Every counter shard of the job (each under its own partition key): one consistent BatchGetItem."""
        return self._get_many([counter_key(job_id, i) for i in range(self.shards)], None)

    def _shard_items(self, job_id: str) -> list[dict[str, Any]]:
        """The listing shards and the counter shards: every item a counter is added to besides the job item."""
        return self._list_shards(job_id) + self._counter_shards(job_id)

    def _sum(self, item: dict[str, Any], shards: list[dict[str, Any]]) -> tuple[dict[str, int], bool]:
        """The job's counters (job item plus every listing and counter shard) and whether every planned listing shard is done."""
        total = {k: int(item[k]["N"]) for k in COUNTERS if k in item}
        for shard in shards:
            for k in COUNTERS:
                if k in shard:
                    total[k] = total.get(k, 0) + int(shard[k]["N"])
        return total, _listing_done(item)

    def counters(self, job_id: str) -> dict[str, int]:
        return self._sum(self._job_item(job_id), self._shard_items(job_id))[0]

    def progress(self, job_id: str, *, counters: bool = False, batch_id: str | None = None) -> Progress:
        """What decides whether the job is complete. Until listing is done that is the job item alone (it cannot be
        complete); after, every counter. `counters`: read them all anyway (the failure breaker weighs them).

        `batch_id`: asked by the worker that just counted that batch. Each counter shard's `pending` counts exactly the
        batches it will count (listing.checkpoint, finish_batch's child, redo_batch), so once listing is done a shard
        still pending means the job is not complete, and that shard's last batch asks again: its own shard is read
        (one item) and every counter only when it is drained. Whoever writes the last count reads after its write, so
        the drained shard's worker whose full read comes last sees the job complete; a job whose listing ends last is
        seen complete by AwaitCompletion's own check."""
        r = self.client.get_item(
            TableName=self.table,
            Key=job_key(job_id),
            ConsistentRead=True,
            ProjectionExpression="#s, #t, pending, shards, shards_done, failed, skipped, #c",
            ExpressionAttributeNames={"#s": "status", "#t": "completion_token", "#c": "capped"},
        )
        item = r.get("Item")
        if item is None:
            raise KeyError(f"job {job_id!r} is not in the ledger")
        token = item.get("completion_token", {}).get("S")
        listing_done = _listing_done(item)
        capped = bool(item.get("capped", {}).get("BOOL"))
        if not listing_done and not counters:
            return Progress(False, -1, item["status"]["S"], token, {}, capped)
        if batch_id is not None and not counters:
            own = self.client.get_item(
                TableName=self.table,
                Key=counter_key(job_id, counter_shard(batch_id, self.shards)),
                ConsistentRead=True,
                ProjectionExpression="pending",
            ).get("Item", {})
            left = int(own.get("pending", {}).get("N", "0"))
            if left > 0:
                return Progress(True, left, item["status"]["S"], token, {}, capped)
        total, _ = self._sum(item, self._shard_items(job_id))
        return Progress(listing_done, total.get("pending", 0), item["status"]["S"], token, total, capped)

    def weighed(self, job_id: str, listing: Mapping[str, int] | None = None) -> tuple[Progress, dict[str, int]]:
        """The counts the failure breaker weighs: the job item and its counter shards (a partition key each), read now,
        plus the listing shards' sums (a sync's skipped objects, a lister's failures): `listing` as read before, or read
        now when None (one Query of the job's own partition, which grows with the shards). Returns those sums too."""
        names = {"#s": "status", "#t": "completion_token", **{f"#c{i}": c for i, c in enumerate(COUNTERS)}}
        item = self.client.get_item(
            TableName=self.table,
            Key=job_key(job_id),
            ConsistentRead=True,
            ProjectionExpression="#s, #t, pending, shards, shards_done, " + ", ".join(n for n in names if n.startswith("#c")),
            ExpressionAttributeNames=names,
        ).get("Item")
        if item is None:
            raise KeyError(f"job {job_id!r} is not in the ledger")
        sums = dict(listing) if listing is not None else self._sum({}, self._list_shards(job_id))[0]
        total, done = self._sum(item, self._counter_shards(job_id))
        for k, n in sums.items():
            total[k] = total.get(k, 0) + n
        token = item.get("completion_token", {}).get("S")
        return Progress(done, total.get("pending", 0), item["status"]["S"], token, total), sums

    def counted_batch(self, job_id: str, batch_id: str) -> dict[str, Any] | None:
        """The batch's marker once it was counted (with `child`, the rest it handed on, when it was split), else None."""
        r = self.client.get_item(TableName=self.table, Key=marker_key(job_id, batch_id), ConsistentRead=True)
        item = r.get("Item")
        return dict(item) if item is not None else None

    def counted_attempts(self, job_id: str, batch_ids: Sequence[str]) -> dict[str, str]:
        """The attempt each of these batches was counted from (finish_batch's `attempt`); uncounted ones are absent."""
        prefix = f"job#{job_id}#batch#"
        items = self._get_many([marker_key(job_id, b) for b in dict.fromkeys(batch_ids)], ("pk", "attempt"))
        return {str(i["pk"]["S"]).removeprefix(prefix): i.get("attempt", {}).get("S", "") for i in items}

    def finish_batch(
        self, job_id: str, batch_id: str, counts: BatchCounts, ttl_days: int = DEFAULT_TTL_DAYS, *, attempt: str = "", child: str = ""
    ) -> bool:
        """Count a finished batch exactly once, on its counter shard; False means it was already counted.

        The marker keeps `attempt` (the worker's id for this try of the batch), so the report reads only the
        failures part of the try that was counted, never one a losing duplicate wrote.
        """
        expires = {"N": str(int(time.time() + ttl_days * 86400))}
        marker = {**marker_key(job_id, batch_id), "expires_at": expires, **({"attempt": {"S": attempt}} if attempt else {})}
        if child:  # the rest of the batch goes on as a batch of its own: still pending, so the job waits for it
            marker["child"] = {"S": child}
        values = {
            ":s": counts.succeeded,
            ":k": counts.skipped,
            ":f": counts.failed,
            ":b": counts.bytes,
            ":r": counts.retries,
            ":o": counts.object_retries,
            ":t": counts.throttled,
            # pending moves to the counter shard that will count the child (a net 0 when it is this one)
            ":minus": -1 if not child or _shard_of_child(child, self.shards) != counter_shard(batch_id, self.shards) else 0,
        }
        # Only the notes a batch has: most have none, and every attribute an update names costs its item's bytes.
        noted = [(f"#n{i}", f":n{i}", name, n) for i, (name, n) in enumerate(counts.notes) if n and name in COUNTERS]
        values.update({value: n for _, value, _, n in noted})
        adds = "".join(f", {attr} {value}" for attr, value, _, _ in noted)
        update: dict[str, Any] = {
            "TableName": self.table,
            "Key": counter_key(job_id, counter_shard(batch_id, self.shards)),
            "UpdateExpression": f"ADD #s :s, #k :k, #f :f, #b :b, #r :r, #o :o, #t :t, #p :minus{adds} SET expires_at = :exp",
            "ExpressionAttributeNames": {
                **{attr: name for attr, _, name, _ in noted},
                "#s": "succeeded",
                "#k": "skipped",
                "#f": "failed",
                "#b": "bytes",
                "#r": "retries",
                "#o": "object_retries",
                "#t": "throttled",
                "#p": "pending",
            },
            "ExpressionAttributeValues": {**{k: {"N": str(v)} for k, v in values.items()}, ":exp": expires},
        }
        items: list[dict[str, Any]] = [
            {"Put": {"TableName": self.table, "Item": marker, "ConditionExpression": "attribute_not_exists(pk)"}},
            {"Update": update},
        ]
        if values[":minus"]:
            items += pending_updates(self.table, job_id, [str(json.loads(child)["batch_id"])] if child else [], self.shards)
        try:
            self._write(lambda: self.client.transact_write_items(TransactItems=items))
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


def _shard_of_child(child: str, shards: int) -> int:
    """The counter shard of a child batch (its encoded message)."""
    return counter_shard(str(json.loads(child)["batch_id"]), shards)
