"""The ledger's listing shards: the plan of a job's key ranges, each shard's cursor and page, and the delete guard's count.

Its own module because the listers and the delete guard (aws/lister.py, aws/guard.py) are its writers: a shard's
item in the job's partition holds its range, its cursor and the lister's counts (checkpoint, conditional on the page
number, so no page is counted twice), and the guard's pass over the same range (guard_checkpoint).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from s3bulk.aws.ledger.base import LedgerBase
from s3bulk.aws.ledger.keys import (
    DEFAULT_TTL_DAYS,
    MAX_LIST_SHARDS,
    PLAN_RANGES_PER_ITEM,
    TRANSACTION_ITEMS,
    _key,
    job_key,
    list_shard_key,
    pending_updates,
    plan_part_key,
)


@dataclass(frozen=True, slots=True)
class ListShard:
    """One listing shard's state: keys k with after < k <= upto (no bound when upto is None), listed from its own cursor."""

    index: int
    after: str
    upto: str | None
    page: int = 0
    cursor: str | None = None
    done: bool = False
    last_key: str | None = None  # the last source key this shard listed (a sync's destination range starts after it)
    sent: int = 0  # deletes sent to the workers so far (selection.deletes; the delete guard holds it to `counted` + `borrowed`)
    counted: int | None = None  # the delete guard's count of this shard's deletes (aws/guard.py), once counted
    borrowed: int = 0  # sends past its count this shard took from the job's room under max_delete (DynamoLedger.borrow)


@dataclass(frozen=True, slots=True)
class GuardShard:
    """The delete guard's pass over one listing shard (aws/guard.py): its own cursor and page, and the deletes counted."""

    index: int
    after: str
    upto: str | None
    page: int = 0
    cursor: str | None = None
    done: bool = False
    counted: int = 0


class ListingMixin(LedgerBase):
    # -- listing shards ---------------------------------------------------------------------------
    def plan(self, job_id: str, ranges: list[tuple[str, str | None]]) -> int:
        """Record the job's listing shards once; returns how many there are (a re-plan keeps the first).

        Up to MAX_LIST_SHARDS shards are more items than a transaction holds, so a plan is written in three moves, each
        safe to lose or repeat: this call stages its ranges under a token of its own (PLAN_RANGES_PER_ITEM a part);
        one conditional write of the job item commits a token with the count (the first commit wins); then the
        committed plan's shard items are created, each only if absent, so a planner retried or late never resets a
        shard a lister has moved on, nor mixes two plans' ranges. Listers start after PlanListing returns, that is
        after every shard item exists.
        """
        if not 1 <= len(ranges) <= MAX_LIST_SHARDS:
            raise ValueError(f"a job is listed in 1-{MAX_LIST_SHARDS} shards, not {len(ranges)}")
        expires = {"N": str(int(time.time() + DEFAULT_TTL_DAYS * 86400))}
        token = uuid.uuid4().hex
        for part, start in enumerate(range(0, len(ranges), PLAN_RANGES_PER_ITEM)):
            staged = {
                **plan_part_key(job_id, token, part),
                "ranges": {"L": [_range_value(r) for r in ranges[start : start + PLAN_RANGES_PER_ITEM]]},
                "expires_at": expires,
            }
            self._put(staged)
        if not self._update_if(
            job_key(job_id),
            UpdateExpression="SET shards = :k, plan_token = :t",
            ConditionExpression="attribute_exists(pk) AND attribute_not_exists(shards)",
            ExpressionAttributeValues={":k": {"N": str(len(ranges))}, ":t": {"S": token}},
        ):
            item = self._job_item(job_id, "shards, plan_token")
            if "shards" not in item:
                raise RuntimeError(f"job {job_id!r}: its plan was neither recorded nor found")
            if "plan_token" not in item:
                return int(item["shards"]["N"])  # planned in one transaction, shard items with it (before plans were staged)
            ranges = self._staged_plan(job_id, item["plan_token"]["S"], int(item["shards"]["N"]))
        self._create_shards(job_id, ranges, expires)
        return len(ranges)

    def _put(self, item: dict[str, Any]) -> None:
        self._write(lambda: self.client.put_item(TableName=self.table, Item=item))

    def _transact(self, items: list[dict[str, Any]]) -> None:
        self._write(lambda: self.client.transact_write_items(TransactItems=items))

    def _staged_plan(self, job_id: str, token: str, count: int) -> list[tuple[str, str | None]]:
        """The committed plan's ranges, read back from its staged parts."""
        keys = [plan_part_key(job_id, token, part) for part in range(-(-count // PLAN_RANGES_PER_ITEM))]
        parts = sorted(self._get_many(keys, None), key=lambda item: str(item["sk"]["S"]))
        ranges = [_range_of(value) for part in parts for value in part["ranges"]["L"]]
        if len(ranges) != count:
            raise RuntimeError(f"job {job_id!r}: its committed plan holds {len(ranges)} ranges, not {count}")
        return ranges

    def _create_shards(self, job_id: str, ranges: Sequence[tuple[str, str | None]], expires: dict[str, str]) -> None:
        """Each shard's item, only where none is yet (a transaction of TRANSACTION_ITEMS at a time; the items that exist
        already are left out and the rest written again)."""
        items = []
        for i, (after, upto) in enumerate(ranges):
            item: dict[str, Any] = {**_key(job_id, list_shard_key(i)), "page": {"N": "0"}, "done": {"BOOL": False}, "expires_at": expires}
            if after:
                item["after"] = {"S": after}
            if upto is not None:
                item["upto"] = {"S": upto}
            items.append(item)
        for start in range(0, len(items), TRANSACTION_ITEMS):
            todo = items[start : start + TRANSACTION_ITEMS]
            while todo:
                puts = [{"Put": {"TableName": self.table, "Item": it, "ConditionExpression": "attribute_not_exists(pk)"}} for it in todo]
                try:
                    self._transact(puts)
                    break
                except ClientError as exc:
                    reasons = exc.response.get("CancellationReasons") or []
                    if len(reasons) != len(todo) or not any(r.get("Code") == "ConditionalCheckFailed" for r in reasons):
                        raise
                    todo = [it for it, r in zip(todo, reasons, strict=True) if r.get("Code") != "ConditionalCheckFailed"]

    def list_shard(self, job_id: str, index: int) -> ListShard:
        r = self.client.get_item(TableName=self.table, Key=_key(job_id, list_shard_key(index)), ConsistentRead=True)
        item = r.get("Item")
        if item is None:
            raise KeyError(f"job {job_id!r} has no listing shard {index}")
        return ListShard(
            index,
            item.get("after", {}).get("S", ""),
            item.get("upto", {}).get("S"),
            int(item["page"]["N"]),
            item.get("cursor", {}).get("S"),
            bool(item["done"]["BOOL"]),
            item.get("last_key", {}).get("S"),
            int(item.get("sent", {}).get("N", "0")),
            int(item["would_delete"]["N"]) if "would_delete" in item else None,
            int(item.get("borrowed", {}).get("N", "0")),
        )

    def borrow(self, job_id: str, n: int, room: int) -> bool:
        """Take n sends from the job's room under max_delete (its limit less what the shards counted), shared by every shard:
        False when less than n is left. A crash before the shard's checkpoint borrows again: the room only shrinks."""
        if n > room:
            return False
        return self._update_if(
            job_key(job_id),
            UpdateExpression="ADD borrowed :n",
            ConditionExpression="attribute_not_exists(borrowed) OR borrowed <= :most",
            ExpressionAttributeValues={":n": {"N": str(n)}, ":most": {"N": str(room - n)}},
        )

    # -- the delete guard's count (aws/guard.py): attributes of the listing shard's own item, apart from its listing --
    def guard_shard(self, job_id: str, index: int) -> GuardShard:
        r = self.client.get_item(TableName=self.table, Key=_key(job_id, list_shard_key(index)), ConsistentRead=True)
        item = r.get("Item")
        if item is None:
            raise KeyError(f"job {job_id!r} has no listing shard {index}")
        return GuardShard(
            index,
            item.get("after", {}).get("S", ""),
            item.get("upto", {}).get("S"),
            int(item.get("guard_page", {}).get("N", "0")),
            item.get("guard_cursor", {}).get("S"),
            bool(item.get("guard_done", {}).get("BOOL", False)),
            int(item.get("would_delete", {}).get("N", "0")),
        )

    def guard_checkpoint(
        self, job_id: str, shard: int, page: int, cursor: str | None, done: bool, counted: int | None, *, objects: int = 0, size: int = 0
    ) -> bool:
        """Record one counted page of a shard: the objects it selects and their bytes (what a confirmation shows) and,
        under the delete guard, its deletes (`counted`; None for a count that holds no limit). False if another
        invocation already did."""
        values: dict[str, Any] = {
            ":page": {"N": str(page)},
            ":next": {"N": str(page + 1)},
            ":done": {"BOOL": done},
            ":o": {"N": str(objects)},
            ":b": {"N": str(size)},
        }
        update = "SET guard_page = :next, guard_done = :done"
        if cursor is None:
            update += " REMOVE guard_cursor"
        else:
            update = "SET guard_page = :next, guard_done = :done, guard_cursor = :cursor"
            values[":cursor"] = {"S": cursor}
        update += " ADD would_act :o, would_bytes :b"
        if counted is not None:  # the listing holds each shard to it (ListShard.counted): only under max_delete
            update += ", would_delete :n"
            values[":n"] = {"N": str(counted)}
        return self._update_if(
            _key(job_id, list_shard_key(shard)),
            UpdateExpression=update,
            ConditionExpression="attribute_not_exists(guard_page) OR guard_page = :page",
            ExpressionAttributeValues=values,
        )

    def guard_total(self, job_id: str) -> tuple[int, bool]:
        """The deletes every shard counted, and whether every planned shard is counted."""
        item = self._job_item(job_id, "shards")
        shards = self._list_shards(job_id)
        total = sum(int(s.get("would_delete", {}).get("N", "0")) for s in shards)
        return total, _all_counted(item, shards)

    def checkpoint(
        self,
        job_id: str,
        shard: int,
        page: int,
        cursor: str | None,
        done: bool,
        *,
        scanned: int,
        listed: int,
        listed_bytes: int,
        skipped: int,
        batches: int,
        failed: int = 0,
        extraneous: int = 0,
        last_key: str | None = None,
        sent: int = 0,
        borrowed: int = 0,
        batch_ids: Sequence[str] = (),
        pages: int = 1,
    ) -> bool:
        """Record `pages` fully sent pages of a listing shard, from `page` on; False if another invocation already recorded them.

        `failed` counts entries that failed before any worker saw them (bad manifest rows,
        extraneous objects not deleted); `extraneous` the destination objects a sync deleted.
        `batch_ids` (the page's batches): each is added to `pending` on the counter shard that will count it, in the
        same transaction, so each counter shard's `pending` is exact once listing is done (counting.progress reads one
        shard per batch, not every shard); without them the page's batches are pending on the listing shard.
        """
        if batch_ids and len(batch_ids) != batches:
            raise ValueError(f"checkpoint: {batches} batches but {len(batch_ids)} batch ids")
        values: dict[str, Any] = {
            ":page": {"N": str(page)},
            ":next": {"N": str(page + pages)},
            ":done": {"BOOL": done},
            ":scanned": {"N": str(scanned)},
            ":listed": {"N": str(listed)},
            ":lbytes": {"N": str(listed_bytes)},
            ":skipped": {"N": str(skipped)},
            ":batches": {"N": str(batches)},
            ":failed": {"N": str(failed)},
            ":extraneous": {"N": str(extraneous)},
            ":sent": {"N": str(sent)},
            ":borrowed": {"N": str(borrowed)},
        }
        # Every name goes through a placeholder: several (cursor, page, bytes) are DynamoDB reserved words.
        names = {
            f"#{n}": n
            for n in (
                "page",
                "done",
                "scanned",
                "listed",
                "listed_bytes",
                "skipped",
                "batches",
                "pending",
                "failed",
                "extraneous",
                "sent",
                "borrowed",
            )
        }
        names["#cursor"] = "cursor"
        update = "SET #page = :next, #done = :done"
        if last_key is not None:
            names["#last_key"] = "last_key"
            values[":last_key"] = {"S": last_key}
            update += ", #last_key = :last_key"
        if cursor is None:
            remove = " REMOVE #cursor"
        else:
            update += ", #cursor = :cursor"
            values[":cursor"] = {"S": cursor}
            remove = ""
        update += (
            remove
            + " ADD #scanned :scanned, #listed :listed, #listed_bytes :lbytes, #skipped :skipped, #batches :batches,"
            + ("" if batch_ids else " #pending :batches,")
            + " #failed :failed, #extraneous :extraneous, #sent :sent, #borrowed :borrowed"
        )
        if batch_ids:
            del names["#pending"]
        shard_update: dict[str, Any] = {
            "Key": _key(job_id, list_shard_key(shard)),
            "UpdateExpression": update,
            "ConditionExpression": "#page = :page",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        pending = pending_updates(self.table, job_id, batch_ids, self.shards)
        if not done and not pending:
            return self._update_if(shard_update.pop("Key"), **shard_update)
        items = [{"Update": {"TableName": self.table, **shard_update}}, *pending]
        if done:  # the shard's last page: the job item counts it done in the same transaction, so whether listing is done is one read
            finished = {
                "TableName": self.table,
                "Key": job_key(job_id),
                "UpdateExpression": "ADD shards_done :one",
                "ExpressionAttributeValues": {":one": {"N": "1"}},
            }
            items.append({"Update": finished})
        try:
            self._write(lambda: self.client.transact_write_items(TransactItems=items))
            return True
        except ClientError as exc:
            reasons = exc.response.get("CancellationReasons") or []
            if reasons and reasons[0].get("Code") == "ConditionalCheckFailed":
                return False
            raise


def _all_counted(job: dict[str, Any], shards: list[dict[str, Any]]) -> bool:
    """Every planned listing shard of the job item has been counted (aws/guard.py)."""
    done = sum(1 for s in shards if s.get("guard_done", {}).get("BOOL"))
    return "shards" in job and done >= int(job["shards"]["N"])


def counted_selection(job: dict[str, Any], shards: list[dict[str, Any]]) -> tuple[int, int] | None:
    """(objects, bytes) the listing shards' count found selected, once every planned shard of the job item was counted."""
    if not _all_counted(job, shards):
        return None
    return sum(int(s.get("would_act", {}).get("N", "0")) for s in shards), sum(int(s.get("would_bytes", {}).get("N", "0")) for s in shards)


def _range_value(r: tuple[str, str | None]) -> dict[str, Any]:
    after, upto = r
    return {"L": [{"S": after}, {"NULL": True} if upto is None else {"S": upto}]}


def _range_of(value: dict[str, Any]) -> tuple[str, str | None]:
    after, upto = value["L"]
    return str(after["S"]), (None if "NULL" in upto else str(upto["S"]))
