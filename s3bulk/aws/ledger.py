"""The job ledger in DynamoDB: spec, status, listing cursor and counters that stay exact.

One table, two item kinds under the job's partition key:
  pk=job#ID sk=job         the job: spec, status, cursor, page, counters, pending
  pk=job#ID sk=batch#BID   a marker per finished batch, written in the same
                           transaction as the counter update, so a redelivered
                           message can never be counted twice.
`pending` is batches sent minus batches finished; the state machine reads it
(with listing_done) straight from DynamoDB to know when a job is done.
`send_rate` (with `rate_at`) is the job's adaptive per-worker request rate, shared by
all workers: a cut lowers it at once, a rise lands at most once per RISE_SPACING_S.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from s3bulk.job import Job, parse_job

COUNTERS = (
    "scanned",
    "listed",
    "listed_bytes",
    "skipped",
    "succeeded",
    "failed",
    "bytes",
    "batches",
    "pending",
    "extraneous",
    "retries",
    "object_retries",
)
DEFAULT_TTL_DAYS = 30
# However many workers finish a batch at once, the shared rate rises at most this often.
RISE_SPACING_S = 2.0


@dataclass(frozen=True, slots=True)
class JobRecord:
    job_id: str
    job: Job
    status: str
    cursor: str | None
    page: int
    listing_done: bool
    counters: dict[str, int]
    created_at: float
    last_key: str | None = None  # the last source key listed so far (a sync's destination range starts after it)

    def summary(self) -> dict[str, Any]:
        c = self.counters
        return {
            "job_id": self.job_id,
            "operation": self.job.operation,
            "status": self.status,
            "listing_done": self.listing_done,
            **{k: c.get(k, 0) for k in ("listed", "succeeded", "skipped", "failed", "bytes", "scanned", "pending", "batches")},
        }


@dataclass(frozen=True, slots=True)
class BatchCounts:
    succeeded: int = 0
    skipped: int = 0
    failed: int = 0
    bytes: int = 0
    retries: int = 0  # requests the S3 client retried while working the batch
    object_retries: int = 0  # extra rounds its objects needed


def job_key(job_id: str) -> dict[str, Any]:
    return {"pk": {"S": f"job#{job_id}"}, "sk": {"S": "job"}}


def initial_item(job_id: str, job: Job, now: float | None = None, ttl_days: int = DEFAULT_TTL_DAYS) -> dict[str, Any]:
    """The job's first ledger item, in DynamoDB's typed form (the state machine puts it as is)."""
    now = time.time() if now is None else now
    item: dict[str, Any] = {
        **job_key(job_id),
        "job_id": {"S": job_id},
        "spec": {"S": job.model_dump_json(exclude_none=True)},
        "status": {"S": "RUNNING"},
        "page": {"N": "0"},
        "listing_done": {"BOOL": False},
        "created_at": {"N": str(int(now))},
        "expires_at": {"N": str(int(now + ttl_days * 86400))},
    }
    for name in COUNTERS:
        item[name] = {"N": "0"}
    return item


def _conditional_failed(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


class DynamoLedger:
    def __init__(self, client: Any, table: str) -> None:
        self.client = client
        self.table = table

    def create(self, job_id: str, job: Job) -> None:
        """Idempotent: creating the same job again is a no-op (state machine retries)."""
        try:
            self.client.put_item(TableName=self.table, Item=initial_item(job_id, job), ConditionExpression="attribute_not_exists(pk)")
        except ClientError as exc:
            if not _conditional_failed(exc):
                raise

    def load(self, job_id: str) -> JobRecord:
        r = self.client.get_item(TableName=self.table, Key=job_key(job_id), ConsistentRead=True)
        item = r.get("Item")
        if item is None:
            raise KeyError(f"job {job_id!r} is not in the ledger")
        return JobRecord(
            job_id,
            parse_job(item["spec"]["S"]),
            item["status"]["S"],
            item.get("cursor", {}).get("S"),
            int(item["page"]["N"]),
            bool(item["listing_done"]["BOOL"]),
            {k: int(item[k]["N"]) for k in COUNTERS if k in item},
            float(item["created_at"]["N"]),
            item.get("last_key", {}).get("S"),
        )

    def checkpoint(
        self,
        job_id: str,
        page: int,
        cursor: str | None,
        listing_done: bool,
        *,
        scanned: int,
        listed: int,
        listed_bytes: int,
        skipped: int,
        batches: int,
        failed: int = 0,
        extraneous: int = 0,
        last_key: str | None = None,
    ) -> bool:
        """Record one fully sent page; False if another invocation already recorded it.

        `failed` counts entries that failed before any worker saw them (bad manifest rows,
        extraneous objects not deleted); `extraneous` the destination objects a sync deleted.
        """
        values: dict[str, Any] = {
            ":page": {"N": str(page)},
            ":next": {"N": str(page + 1)},
            ":done": {"BOOL": listing_done},
            ":scanned": {"N": str(scanned)},
            ":listed": {"N": str(listed)},
            ":lbytes": {"N": str(listed_bytes)},
            ":skipped": {"N": str(skipped)},
            ":batches": {"N": str(batches)},
            ":failed": {"N": str(failed)},
            ":extraneous": {"N": str(extraneous)},
        }
        # Every name goes through a placeholder: several (cursor, page, bytes) are DynamoDB reserved words.
        names = {
            f"#{n}": n
            for n in ("page", "listing_done", "scanned", "listed", "listed_bytes", "skipped", "batches", "pending", "failed", "extraneous")
        }
        names["#cursor"] = "cursor"
        update = "SET #page = :next, #listing_done = :done"
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
            + " ADD #scanned :scanned, #listed :listed, #listed_bytes :lbytes, #skipped :skipped, #batches :batches, #pending :batches,"
            " #failed :failed, #extraneous :extraneous"
        )
        return self._update_if(
            job_id,
            UpdateExpression=update,
            ConditionExpression="#page = :page",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )

    def _update_if(self, job_id: str, **update: Any) -> bool:
        """UpdateItem on the job item; False when its condition did not hold."""
        try:
            self.client.update_item(TableName=self.table, Key=job_key(job_id), **update)
            return True
        except ClientError as exc:
            if _conditional_failed(exc):
                return False
            raise

    def is_batch_done(self, job_id: str, batch_id: str) -> bool:
        key = {"pk": {"S": f"job#{job_id}"}, "sk": {"S": f"batch#{batch_id}"}}
        return "Item" in self.client.get_item(TableName=self.table, Key=key, ConsistentRead=True)

    def finish_batch(self, job_id: str, batch_id: str, counts: BatchCounts, ttl_days: int = DEFAULT_TTL_DAYS) -> bool:
        """Count a finished batch exactly once; False means it was already counted."""
        marker = {
            "pk": {"S": f"job#{job_id}"},
            "sk": {"S": f"batch#{batch_id}"},
            "expires_at": {"N": str(int(time.time() + ttl_days * 86400))},
        }
        try:
            self.client.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": self.table, "Item": marker, "ConditionExpression": "attribute_not_exists(pk)"}},
                    {
                        "Update": {
                            "TableName": self.table,
                            "Key": job_key(job_id),
                            "UpdateExpression": "ADD #s :s, #k :k, #f :f, #b :b, #r :r, #o :o, #p :minus",
                            "ExpressionAttributeNames": {
                                "#s": "succeeded",
                                "#k": "skipped",
                                "#f": "failed",
                                "#b": "bytes",
                                "#r": "retries",
                                "#o": "object_retries",
                                "#p": "pending",
                            },
                            "ExpressionAttributeValues": {
                                ":s": {"N": str(counts.succeeded)},
                                ":k": {"N": str(counts.skipped)},
                                ":f": {"N": str(counts.failed)},
                                ":b": {"N": str(counts.bytes)},
                                ":r": {"N": str(counts.retries)},
                                ":o": {"N": str(counts.object_retries)},
                                ":minus": {"N": "-1"},
                            },
                        }
                    },
                ]
            )
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

    def shared_rate(self, job_id: str) -> float | None:
        """The per-worker send rate the job's workers agreed on, or None before any throttle."""
        r = self.client.get_item(TableName=self.table, Key=job_key(job_id), ProjectionExpression="send_rate")
        value = r.get("Item", {}).get("send_rate")
        return float(value["N"]) if value else None

    def publish_rate(self, job_id: str, rate: float, *, cut: bool, now: float | None = None) -> bool:
        """A cut wins when lower; a rise only over an existing rate and not sooner than RISE_SPACING_S after the last change."""
        now = time.time() if now is None else now
        if cut:
            condition = "attribute_not_exists(send_rate) OR send_rate > :r"
            values = {":r": {"N": f"{rate:.3f}"}, ":now": {"N": f"{now:.3f}"}}
        else:
            condition = "send_rate < :r AND rate_at < :stale"
            values = {":r": {"N": f"{rate:.3f}"}, ":now": {"N": f"{now:.3f}"}, ":stale": {"N": f"{now - RISE_SPACING_S:.3f}"}}
        return self._update_if(
            job_id,
            UpdateExpression="SET send_rate = :r, rate_at = :now",
            ConditionExpression=f"attribute_exists(pk) AND ({condition})",
            ExpressionAttributeValues=values,
        )

    def set_status(self, job_id: str, status: str, **extra: str) -> None:
        names = {"#s": "status"}
        values: dict[str, Any] = {":s": {"S": status}}
        sets = ["#s = :s"]
        for i, (k, v) in enumerate(extra.items()):
            names[f"#e{i}"] = k
            values[f":e{i}"] = {"S": v}
            sets.append(f"#e{i} = :e{i}")
        self.client.update_item(
            TableName=self.table,
            Key=job_key(job_id),
            UpdateExpression="SET " + ", ".join(sets),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )
