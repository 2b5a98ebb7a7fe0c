"""The ledger's job item: a job's spec, status and tokens, and the job as the CLI and the steps read it back.

Its own module because the job item is the one item few writers touch (the state machine, a stop, the shared send
rate) and most readers read: its creation, its status and its changes (a stop, a cancel), the tokens an execution
waits on, the workers' shared send rate, and the whole job as a JobRecord (its counters read through counting).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from s3bulk.aws.ledger.counting import CountingMixin
from s3bulk.aws.ledger.keys import (
    CANCELLING,
    COUNTERS,
    DEFAULT_TTL_DAYS,
    JOB_KIND,
    JOBS_INDEX,
    RISE_SPACING_S,
    _conditional_failed,
    job_key,
)
from s3bulk.aws.ledger.leases import LeasesMixin
from s3bulk.aws.ledger.listing import counted_selection
from s3bulk.job import Job, parse_job
from s3bulk.report import Snapshot


@dataclass(frozen=True, slots=True)
class JobRecord:
    job_id: str
    job: Job
    status: str
    listing_done: bool
    counters: dict[str, int]
    created_at: float
    shards: int | None = None  # listing shards, once planned
    report: str | None = None  # report.json's URI, once written
    stop_reason: str | None = None  # set when an endpoint outage outlasted the stack's bound (the job stops, resumable)
    execution: str | None = None  # the name of the execution that runs (or last ran) the job
    updated_at: float | None = None  # when its status last changed (a finished job's end)
    awaiting_confirmation: bool = False  # options.confirm: planned, and held until s3bulk confirm
    max_workers: int | None = None  # its owner's cap on its batches at once (s3bulk tune JOB_ID --concurrency N)
    selection: tuple[int, int] | None = None  # (objects, bytes) counted before the listing (confirm, max_delete), once counted

    def snapshot(self) -> Snapshot:
        """The counts as the CLI's live line shows a local run's (report.Snapshot)."""
        c = self.counters
        return Snapshot(
            c.get("scanned", 0),
            c.get("listed", 0),
            c.get("listed_bytes", 0),
            self.listing_done,
            c.get("succeeded", 0),
            c.get("skipped", 0),
            c.get("failed", 0),
            c.get("bytes", 0),
        )

    def summary(self) -> dict[str, Any]:
        c = self.counters
        return {
            "job_id": self.job_id,
            "operation": self.job.operation,
            "status": self.status,
            "listing_done": self.listing_done,
            **{k: c.get(k, 0) for k in ("listed", "succeeded", "skipped", "failed", "bytes", "scanned", "pending", "batches")},
            **({"awaiting_confirmation": f"s3bulk confirm {self.job_id}"} if self.awaiting_confirmation else {}),
            **({"selected_objects": self.selection[0], "selected_bytes": self.selection[1]} if self.selection is not None else {}),
            **({"max_workers": self.max_workers} if self.max_workers is not None else {}),
        }


def initial_item(
    job_id: str, job: Job, now: float | None = None, ttl_days: int = DEFAULT_TTL_DAYS, *, execution: str | None = None
) -> dict[str, Any]:
    """The job's first ledger item, in DynamoDB's typed form (the state machine puts it as is, or reopens the job with it).

    `execution` names the execution running the job: the handler of an execution's end acts only on
    the job's current execution, not on one that ended after the job was submitted again.
    """
    now = time.time() if now is None else now
    item: dict[str, Any] = {
        **job_key(job_id),
        "job_id": {"S": job_id},
        "spec": {"S": job.model_dump_json(exclude_none=True)},
        "status": {"S": "RUNNING"},
        "kind": {"S": JOB_KIND},  # the key of the table's Jobs index (recent jobs, newest first): only job items have it
        "created_at": {"N": str(int(now))},
        "expires_at": {"N": str(int(now + ttl_days * 86400))},
    }
    if execution:
        item["execution"] = {"S": execution}
    for name in COUNTERS:
        item[name] = {"N": "0"}
    return item


class JobsMixin(CountingMixin, LeasesMixin):
    def create(self, job_id: str, job: Job) -> None:
        """Idempotent: creating the same job again is a no-op (state machine retries)."""
        try:
            self._write(
                lambda: self.client.put_item(
                    TableName=self.table, Item=initial_item(job_id, job), ConditionExpression="attribute_not_exists(pk)"
                )
            )
        except ClientError as exc:
            if not _conditional_failed(exc):
                raise

    def load(self, job_id: str) -> JobRecord:
        item = self._job_item(job_id)
        shards = self._list_shards(job_id)
        counters, listing_done = self._sum(item, shards + self._counter_shards(job_id))
        return JobRecord(
            job_id,
            parse_job(item["spec"]["S"], stored=True),
            item["status"]["S"],
            listing_done,
            counters,
            float(item["created_at"]["N"]),
            int(item["shards"]["N"]) if "shards" in item else None,
            item.get("report", {}).get("S"),
            item.get("stop_reason", {}).get("S"),
            item.get("execution", {}).get("S"),
            float(item["updated_at"]["N"]) if "updated_at" in item else None,
            "confirm_token" in item,
            int(item["max_workers"]["N"]) if "max_workers" in item else None,
            counted_selection(item, shards),
        )

    def recent(self, limit: int = 20) -> list[str]:
        """The ids of the most recent jobs, newest first (the Jobs index: one small Query, whatever the table holds)."""
        ids: list[str] = []
        kw: dict[str, Any] = {}
        while len(ids) < limit:
            r = self.client.query(
                TableName=self.table,
                IndexName=JOBS_INDEX,
                KeyConditionExpression="kind = :job",
                ExpressionAttributeValues={":job": {"S": JOB_KIND}},
                ScanIndexForward=False,
                Limit=limit - len(ids),
                **kw,
            )
            ids += [str(i["pk"]["S"]).removeprefix("job#") for i in r.get("Items", [])]
            if "LastEvaluatedKey" not in r:
                break
            kw = {"ExclusiveStartKey": r["LastEvaluatedKey"]}
        return ids

    def status(self, job_id: str, *, consistent: bool = False) -> str:
        """The job's status alone: one read of one attribute (workers poll it to stop a stopped job)."""
        r = self.client.get_item(
            TableName=self.table,
            Key=job_key(job_id),
            ProjectionExpression="#s",
            ExpressionAttributeNames={"#s": "status"},
            ConsistentRead=consistent,
        )
        item = r.get("Item")
        if item is None:
            raise KeyError(f"job {job_id!r} is not in the ledger")
        return str(item["status"]["S"])

    def stopped_at(self, job_id: str) -> float | None:
        """When an outage stopped the job (epoch seconds), or None."""
        item = self._job_item(job_id, "stopped_at")
        return float(item["stopped_at"]["N"]) if "stopped_at" in item else None

    def spec(self, job_id: str) -> Job:
        """The job alone (what a worker needs): one small GetItem, no counters."""
        return parse_job(self._job_item(job_id, "spec")["spec"]["S"], stored=True)

    def await_confirmation(self, job_id: str, token: str) -> None:
        """Store the token the execution waits on until its owner confirms the job (options.confirm)."""
        self._write(
            lambda: self.client.update_item(
                TableName=self.table,
                Key=job_key(job_id),
                UpdateExpression="SET confirm_token = :t",
                ExpressionAttributeValues={":t": {"S": token}},
            )
        )

    def take_confirmation(self, job_id: str) -> str | None:
        """The token a job waits on for its confirmation, removed as it is read (so it is sent once); None if none."""
        try:
            r = self._write(
                lambda: self.client.update_item(
                    TableName=self.table,
                    Key=job_key(job_id),
                    UpdateExpression="REMOVE confirm_token",
                    ConditionExpression="attribute_exists(confirm_token)",
                    ReturnValues="UPDATED_OLD",
                )
            )
        except ClientError as exc:
            if _conditional_failed(exc):
                return None
            raise
        return str(r["Attributes"]["confirm_token"]["S"])

    def await_completion(self, job_id: str, token: str) -> None:
        """Store the execution's task token; whoever sees the job complete next sends it (see completion.notify_if_complete)."""
        self._write(
            lambda: self.client.update_item(
                TableName=self.table,
                Key=job_key(job_id),
                UpdateExpression="SET #t = :t",
                ExpressionAttributeNames={"#t": "completion_token"},
                ExpressionAttributeValues={":t": {"S": token}},
            )
        )

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
            job_key(job_id),
            UpdateExpression="SET send_rate = :r, rate_at = :now",
            ConditionExpression=f"attribute_exists(pk) AND ({condition})",
            ExpressionAttributeValues=values,
        )

    def keep(self, job_id: str, *, now: float | None = None) -> bool:
        """Push the TTL of the job's own items (the job item, its listing shards) DEFAULT_TTL_DAYS ahead, at most once a
        day: DynamoDB would otherwise remove a job that runs, or waits at a low cap, that long after its creation, and
        with its listing shards the counts they hold. Workers' items are refreshed by their own writes. True if it did."""
        now = time.time() if now is None else now
        ahead = {"N": str(int(now + DEFAULT_TTL_DAYS * 86400))}
        soon = {"N": str(int(now + (DEFAULT_TTL_DAYS - 1) * 86400))}
        if not self._update_if(
            job_key(job_id),
            UpdateExpression="SET expires_at = :ahead",
            ConditionExpression="expires_at < :soon",
            ExpressionAttributeValues={":ahead": ahead, ":soon": soon},
        ):
            return False
        for shard in self._list_shards(job_id):
            self._update_if(
                {"pk": shard["pk"], "sk": shard["sk"]},
                UpdateExpression="SET expires_at = :ahead",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeValues={":ahead": ahead},
            )
        return True

    def stop(self, job_id: str, reason: str, *, tripped: bool = False) -> bool:
        """Mark a RUNNING job STOPPING (its endpoint is gone for good, or its owner stopped its execution); True for the
        one call that did. `tripped`: the failure breaker stopped it, so its resume redoes the failed objects (ledger/redo.py).

        Workers then hand its batches back uncounted (kept for the resume, not cancelled), listers send no more
        pages, and its report says stopped. Submitting the job again (ReopenJob) makes it RUNNING and removes the reason.
        """
        now = time.time()
        try:
            self._write(
                lambda: self.client.update_item(
                    TableName=self.table,
                    Key=job_key(job_id),
                    UpdateExpression="SET #s = :stopping, stop_reason = :r, stopped_at = :t" + (", tripped = :yes" if tripped else ""),
                    ConditionExpression="#s = :running",
                    ExpressionAttributeNames={"#s": "status"},
                    ExpressionAttributeValues={
                        ":stopping": {"S": "STOPPING"},
                        ":running": {"S": "RUNNING"},
                        ":r": {"S": reason[:1000]},
                        ":t": {"N": f"{now:.3f}"},
                        **({":yes": {"BOOL": True}} if tripped else {}),
                    },
                )
            )
        except ClientError as exc:
            if not _conditional_failed(exc):
                raise
            return False
        self.mark_stopped(job_id, now)
        return True

    def cancel(self, job_id: str, reason: str) -> str | None:
        """End a job for good (its owner's s3bulk cancel): CANCELLING until its report is written, then CANCELLED.
        Returns the status it had, or None when it had ended already (SUCCEEDED, FAILED, CANCELLED).

        Every lease shard learns of it at once, so no batch starts after this returns; workers drop its queued batches
        uncounted and listers send no more pages."""
        now = time.time()
        try:
            r = self._write(
                lambda: self.client.update_item(
                    TableName=self.table,
                    Key=job_key(job_id),
                    UpdateExpression="SET #s = :cancelling, stop_reason = :r, stopped_at = :t",
                    ConditionExpression="#s IN (:running, :stopping, :stopped)",
                    ExpressionAttributeNames={"#s": "status"},
                    ExpressionAttributeValues={
                        ":cancelling": {"S": CANCELLING},
                        ":running": {"S": "RUNNING"},
                        ":stopping": {"S": "STOPPING"},
                        ":stopped": {"S": "STOPPED"},
                        ":r": {"S": reason[:1000]},
                        ":t": {"N": f"{now:.3f}"},
                    },
                    ReturnValues="UPDATED_OLD",
                )
            )
        except ClientError as exc:
            if not _conditional_failed(exc):
                raise
            return None
        self.mark_stopped(job_id, now)
        return str(r["Attributes"]["status"]["S"])

    def set_status(self, job_id: str, status: str, **extra: str) -> None:
        names = {"#s": "status"}
        values: dict[str, Any] = {":s": {"S": status}, ":now": {"N": str(int(time.time()))}}
        sets = ["#s = :s", "updated_at = :now"]  # when a job last changed status: s3bulk jobs shows how long it ran
        for i, (k, v) in enumerate(extra.items()):
            names[f"#e{i}"] = k
            values[f":e{i}"] = {"S": v}
            sets.append(f"#e{i} = :e{i}")
        self._write(
            lambda: self.client.update_item(
                TableName=self.table,
                Key=job_key(job_id),
                UpdateExpression="SET " + ", ".join(sets),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        )
