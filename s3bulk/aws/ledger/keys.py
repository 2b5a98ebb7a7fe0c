"""The ledger's item keys, sizes and limits, and its retry of conflicting writes: what every part of it shares.

Its own module because everything else builds on it and it builds on nothing: the ledger's parts (base, jobs,
counting, listing, leases) name these keys and limits, and so do callers that never touch DynamoDB (the cost
model sizes the items by them; infra/ names the Jobs index and bounds the listing shards).
"""

from __future__ import annotations

import random
import time
import zlib
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from botocore.exceptions import ClientError

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
    "throttled",
    "redone",
    # report.NOTES: objects decided without content evidence, added by a batch only when it has some
    "confirmed_by_size_only",
    "unchanged_undecided_copied",
    "unchanged_by_time_skipped",
)
# Counters the lister adds on the job item; the rest are only ever added on shards.
LISTER_COUNTERS = ("scanned", "listed", "listed_bytes", "skipped", "failed", "batches", "pending", "extraneous")
WORKER_COUNTERS = ("succeeded", "skipped", "failed", "bytes", "retries", "object_retries", "pending", "throttled")
DEFAULT_TTL_DAYS = 30
# Enough shards that 1,000 concurrent workers finishing a batch a second each put ~30 writes/s
# on any one item (DynamoDB's per-item limit is 1,000 WCU/s, and transactions conflict far sooner).
COUNTER_SHARDS = 32
# A write that meets a TransactionConflict is retried this many times, with full jitter.
CONFLICT_ATTEMPTS = 12
CONFLICT_BASE_S = 0.02
CONFLICT_CAP_S = 2.0
# Listing shards a job may have: a Distributed Map runs them (infra/state_machine.py), the plan records them in parts
# (ListingMixin.plan), and each lister's step checkpoints its own item of the job's partition.
MAX_LIST_SHARDS = 1000
# A staged plan item holds this many ranges: two keys of at most 1,024 bytes each, under DynamoDB's 400 KB an item.
PLAN_RANGES_PER_ITEM = 100
# A transaction writes at most this many items (DynamoDB's limit).
TRANSACTION_ITEMS = 100
# A job its owner cancelled, until its report is written (then CANCELLED): final, never resumed.
CANCELLING = "CANCELLING"
CANCELLED = "CANCELLED"
# The ledger's sparse index of job items (infra/stack.py): partition `kind` = JOB_KIND, sort `created_at`.
JOBS_INDEX = "Jobs"
JOB_KIND = "job"
T = TypeVar("T")
# However many workers finish a batch at once, the shared rate rises at most this often.
RISE_SPACING_S = 2.0


def job_key(job_id: str) -> dict[str, Any]:
    return {"pk": {"S": f"job#{job_id}"}, "sk": {"S": "job"}}


def _key(job_id: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": f"job#{job_id}"}, "sk": {"S": sk}}


def counter_key(job_id: str, shard: int) -> dict[str, Any]:
    """A counter shard's key: a partition of its own."""
    return {"pk": {"S": f"job#{job_id}#count#{shard:02d}"}, "sk": {"S": "count"}}


def lease_key(job_id: str, shard: int) -> dict[str, Any]:
    """A lease shard's key: how many invocations are working the job on it (see DynamoLedger.hold)."""
    return {"pk": {"S": f"job#{job_id}#lease#{shard:02d}"}, "sk": {"S": "lease"}}


def marker_key(job_id: str, batch_id: str) -> dict[str, Any]:
    """A batch marker's key: a partition of its own, so markers spread as their counter updates do."""
    return {"pk": {"S": f"job#{job_id}#batch#{batch_id}"}, "sk": {"S": "batch"}}


def list_shard_key(index: int) -> str:
    return f"count#list#{index:04d}"


def plan_part_key(job_id: str, token: str, part: int) -> dict[str, Any]:
    """A staged plan's part (ListingMixin.plan): in the job's partition, apart from the listing shards' prefix."""
    return _key(job_id, f"plan#{token}#{part:03d}")


def counter_shard(batch_id: str, shards: int = COUNTER_SHARDS) -> int:
    """The counter shard a batch adds to: stable per batch, spread evenly over the shards."""
    return zlib.crc32(batch_id.encode()) % shards


# A transaction cancelled for one of these is tried again; botocore retries a throttled plain write itself, but never a
# cancelled transaction, whose throttling on a partition past its 1,000 writes a second comes back as a reason.
RETRYABLE_REASONS = frozenset({"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"})


def is_conflict(exc: ClientError) -> bool:
    """A write that lost a race with another transaction, or was throttled inside one: retryable, unlike a failed
    condition."""
    err = exc.response.get("Error", {}).get("Code")
    if err == "TransactionConflictException":
        return True
    if err == "TransactionCanceledException":
        reasons = {r.get("Code") for r in exc.response.get("CancellationReasons") or []}
        return bool(reasons & RETRYABLE_REASONS) and "ConditionalCheckFailed" not in reasons
    return False


def retry_conflicts(call: Callable[[], T], *, sleep: Callable[[float], None] = time.sleep, attempts: int = CONFLICT_ATTEMPTS) -> T:
    """Run a DynamoDB write, retrying TransactionConflict with capped exponential backoff and full jitter."""
    for attempt in range(attempts):
        try:
            return call()
        except ClientError as exc:
            if not is_conflict(exc) or attempt == attempts - 1:
                raise
            sleep(random.uniform(0, min(CONFLICT_CAP_S, CONFLICT_BASE_S * 2**attempt)))
    raise AssertionError("unreachable")


def _conditional_failed(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


def pending_updates(table: str, job_id: str, batch_ids: Sequence[str], shards: int, sign: int = 1) -> list[dict[str, Any]]:
    """TransactWriteItems Updates adding `sign` to `pending` on the counter shard of each batch (one per shard)."""
    expires = {"N": str(int(time.time() + DEFAULT_TTL_DAYS * 86400))}
    per: dict[int, int] = {}
    for batch_id in batch_ids:
        shard = counter_shard(batch_id, shards)
        per[shard] = per.get(shard, 0) + sign
    return [
        {
            "Update": {
                "TableName": table,
                "Key": counter_key(job_id, shard),
                "UpdateExpression": "ADD pending :n SET expires_at = :exp",
                "ExpressionAttributeValues": {":n": {"N": str(n)}, ":exp": expires},
            }
        }
        for shard, n in sorted(per.items())
        if n
    ]
