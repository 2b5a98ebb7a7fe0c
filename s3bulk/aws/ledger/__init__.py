"""The job ledger in DynamoDB: spec, status, listing cursor and counters that stay exact, with no hot item or key.

One table. A job's own partition holds what few writers touch; what every worker writes has partition keys of its own,
so 1,000 workers never meet on one key (DynamoDB serves about 1,000 writes/s and 3,000 reads/s per partition):
  pk=job#ID sk=job          the job: spec, status, the number of listing shards once planned (`shards`, with the
                            `plan_token` of the staged plan that won) and how many of them are done (`shards_done`),
                            the completion token
  pk=job#ID sk=count#list#NNNN  one listing shard: its key range (after, upto], its own page number and cursor, done,
                            and the counters its lister adds (scanned, listed, batches sent ...); at most 1,000
  pk=job#ID sk=plan#TOKEN#NNN  a planner's staged ranges (100 a part): the committed token's become the shard items
  pk=job#ID#count#NN sk=count  one of COUNTER_SHARDS counter items the workers add to; a batch picks its shard by a
                            hash of its id
  pk=job#ID#lease#NN sk=lease  one of COUNTER_SHARDS lease items: `working`, the invocations (workers, listers)
                            working the job now, and `stop_epoch`, when the job last stopped; a stopped job's report
                            waits for `working` to drain (DynamoLedger.hold)
  pk=job#ID#parked sk=BID  a capped job's batch waiting for room (ledger/parking.py): its body is in the report bucket
  pk=job#ID#batch#BID sk=batch  a marker per finished batch, written in the same transaction as its shard's counter
                            update, so a redelivered message is never counted twice
A job's counters are the sum over its job item, its listing shards (one Query) and its counter shards (one
BatchGetItem); listing is done when `shards_done` reaches `shards`, which the job item alone says. `pending` is kept
per counter shard: a page's checkpoint adds each batch it sent on the shard that will count it (in the same
transaction), and counting a batch takes it off there (a child or redo batch moves it to its own shard). So once
listing is done each shard's `pending` is exact, and the check a worker makes after each counted batch reads two items
(the job item and its own counter shard), every counter only when its shard is drained: whatever the listing shards.

No item takes transactional writes at a high rate: workers spread theirs over the shards;
each listing shard has its own item; the job item takes only plain UpdateItems (a rare
rate change, the status) and one transaction per listing shard when it is done. DynamoDB still answers
overlapping writes with TransactionConflict, which botocore does not retry, so every write
here retries conflicts with jittered backoff; each write is idempotent (conditional on the
marker or the page number), so a retry never counts twice.

The ledger is a package of modules by concern: `keys` (item keys, limits, the conflict retry), `base` (the client and
the reads and writes every part shares), `jobs` (the job item), `counting` (batches counted, counters read),
`listing` (listing shards and the delete guard's count), `leases` (who is working the job now), `parking` (a capped
job's waiting batches) and `redo` (a
resume after the failure breaker taking failed objects back). DynamoLedger
is their mixins put together, and every public name is importable from here.
"""

from __future__ import annotations

from s3bulk.aws.ledger.counting import BatchCounts, CountingMixin, Progress
from s3bulk.aws.ledger.jobs import JobRecord, JobsMixin, initial_item
from s3bulk.aws.ledger.keys import (
    CANCELLED,
    CANCELLING,
    CONFLICT_ATTEMPTS,
    CONFLICT_BASE_S,
    CONFLICT_CAP_S,
    COUNTER_SHARDS,
    COUNTERS,
    DEFAULT_TTL_DAYS,
    JOB_KIND,
    JOBS_INDEX,
    LISTER_COUNTERS,
    MAX_LIST_SHARDS,
    RISE_SPACING_S,
    WORKER_COUNTERS,
    counter_key,
    counter_shard,
    is_conflict,
    job_key,
    lease_key,
    list_shard_key,
    marker_key,
    retry_conflicts,
)
from s3bulk.aws.ledger.leases import AtCapacity, Lease, LeasesMixin, Room
from s3bulk.aws.ledger.listing import GuardShard, ListingMixin, ListShard
from s3bulk.aws.ledger.parking import ParkingMixin
from s3bulk.aws.ledger.redo import RedoMixin

__all__ = [
    "CANCELLED",
    "CANCELLING",
    "CONFLICT_ATTEMPTS",
    "CONFLICT_BASE_S",
    "CONFLICT_CAP_S",
    "COUNTERS",
    "COUNTER_SHARDS",
    "DEFAULT_TTL_DAYS",
    "JOBS_INDEX",
    "JOB_KIND",
    "LISTER_COUNTERS",
    "MAX_LIST_SHARDS",
    "RISE_SPACING_S",
    "WORKER_COUNTERS",
    "AtCapacity",
    "BatchCounts",
    "DynamoLedger",
    "GuardShard",
    "JobRecord",
    "Lease",
    "ListShard",
    "Progress",
    "Room",
    "counter_key",
    "counter_shard",
    "initial_item",
    "is_conflict",
    "job_key",
    "lease_key",
    "list_shard_key",
    "marker_key",
    "retry_conflicts",
]


class DynamoLedger(JobsMixin, CountingMixin, ListingMixin, LeasesMixin, ParkingMixin, RedoMixin):
    """The job ledger in DynamoDB (see the package's docstring): the job item, its counters, its listing shards, its leases,
    a capped job's parked batches and the redo of a breaker's failures."""
