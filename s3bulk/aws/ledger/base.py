"""The ledger's client and table, and the few reads and writes every part of it makes.

DynamoLedger is put together from mixins by concern (jobs, counting, listing, leases), each over this base: it holds
the client, the table, the number of counter shards and the sleep the conflict retries use, and the calls they share
(a job item's read, a listing shard query, a BatchGetItem of many keys, a conflict-retried write, a conditional update).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from s3bulk.aws.ledger.keys import COUNTER_SHARDS, T, _conditional_failed, job_key, retry_conflicts


class LedgerBase:
    def __init__(self, client: Any, table: str, *, shards: int = COUNTER_SHARDS, sleep: Callable[[float], None] = time.sleep) -> None:
        self.client = client
        self.table = table
        self.shards = shards
        self._sleep = sleep

    def _write(self, call: Callable[[], T]) -> T:
        return retry_conflicts(call, sleep=self._sleep)

    def _job_item(self, job_id: str, projection: str | None = None) -> dict[str, Any]:
        kw: dict[str, Any] = {"ProjectionExpression": projection} if projection else {}
        r = self.client.get_item(TableName=self.table, Key=job_key(job_id), ConsistentRead=True, **kw)
        item = r.get("Item")
        if item is None:
            raise KeyError(f"job {job_id!r} is not in the ledger")
        return dict(item)

    def _list_shards(self, job_id: str) -> list[dict[str, Any]]:
        """Every listing shard of the job: one Query of the job's partition (at most 1,000 small items, a few pages), strongly consistent."""
        items: list[dict[str, Any]] = []
        kw: dict[str, Any] = {}
        while True:
            r = self.client.query(
                TableName=self.table,
                KeyConditionExpression="pk = :pk AND begins_with(sk, :list)",
                ExpressionAttributeValues={":pk": {"S": f"job#{job_id}"}, ":list": {"S": "count#list#"}},
                ConsistentRead=True,
                **kw,
            )
            items += r.get("Items", [])
            if "LastEvaluatedKey" not in r:
                return items
            kw = {"ExclusiveStartKey": r["LastEvaluatedKey"]}

    def _get_many(self, keys: list[dict[str, Any]], projection: tuple[str, ...] | None) -> list[dict[str, Any]]:
        """BatchGetItem of any number of keys, 100 at a time, strongly consistent, unprocessed keys asked again."""
        found: list[dict[str, Any]] = []
        for start in range(0, len(keys), 100):  # BatchGetItem takes 100 keys
            ask: dict[str, Any] = {"Keys": keys[start : start + 100], "ConsistentRead": True}
            if projection:
                ask["ProjectionExpression"] = ", ".join(f"#p{i}" for i in range(len(projection)))
                ask["ExpressionAttributeNames"] = {f"#p{i}": name for i, name in enumerate(projection)}
            request: dict[str, Any] = {self.table: ask}
            while request:
                r = self.client.batch_get_item(RequestItems=request)
                found += r.get("Responses", {}).get(self.table, [])
                request = r.get("UnprocessedKeys") or {}
                if request:
                    self._sleep(0.1)  # throttled keys come back unprocessed: ask again after a pause
        return found

    def _update_if(self, key: dict[str, Any], **update: Any) -> bool:
        """UpdateItem, conflicts retried; False when its condition did not hold."""
        try:
            self._write(lambda: self.client.update_item(TableName=self.table, Key=key, **update))
            return True
        except ClientError as exc:
            if _conditional_failed(exc):
                return False
            raise
