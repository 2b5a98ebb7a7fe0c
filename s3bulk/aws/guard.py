"""The delete guard on the stack (options.max_delete): count the whole selection first, then act.

The state machine runs the guard between PlanListing and ListShards when a delete, move or rewind
job sets max_delete, and for any job held for `s3bulk confirm` (its count, objects and bytes, is what the owner confirms). CountShards pages every listing shard once, as ListShards will (the same
ranges, filters and manifest rows), sending nothing: each page's deletes (selection.deletes: its
selected objects, or a rewind's delete markers) are added to the shard's count in the ledger, with the shard's own guard cursor, so a count may take many
invocations. CheckCount then refuses the job, before the first delete, when the counts add up
to more than max_delete.

The listing that follows never sends a shard more objects than that shard counted (list_step
checks its `sent` against `counted`), so a selection that grew after the count stops the job
before the batch that would pass the limit, as the CLI's run does.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import islice

from s3bulk.aws.allowlist import AllowList
from s3bulk.aws.ledger import DynamoLedger
from s3bulk.aws.lister import LIST_MARGIN_S, MANIFEST_PAGE, ListOutcome, selected_rows
from s3bulk.aws.steps import OpenSide, TimeLeft, job_stores
from s3bulk.job import Job, JobError
from s3bulk.source.listing import lister
from s3bulk.source.manifest import ManifestReader
from s3bulk.source.selection import GUARDED_OPS, Selector, deletes
from s3bulk.source.shards import Shard, list_shard_page
from s3bulk.store import ObjectStore


def guarded(job: Job) -> bool:
    """Whether the job's listing waits for the delete guard's count."""
    return job.options.max_delete is not None and job.operation in GUARDED_OPS and not job.options.dry_run


def counts_first(job: Job) -> bool:
    """Whether the selection is counted before the listing sends anything: for the delete guard, and for a job held
    for `s3bulk confirm`, whose owner is shown what it would do (objects, bytes, cost) before confirming."""
    return guarded(job) or (job.options.confirm and not job.options.dry_run)


def count_step(
    job_id: str,
    shard: int,
    *,
    ledger: DynamoLedger,
    store: ObjectStore,
    allow: AllowList,
    time_left: TimeLeft,
    margin: float = LIST_MARGIN_S,
    open_side: OpenSide | None = None,
) -> ListOutcome:
    """Count one shard's selected objects from its guard cursor until it is done or time is short."""
    job = ledger.spec(job_id)
    allow.check(job)
    store = job_stores(job, store, open_side)[0]
    src = job.source
    selector = Selector(src, job.operation)
    limited = guarded(job)  # max_delete: its deletes are counted too, and the listing is held to them
    state = ledger.guard_shard(job_id, shard)
    pages = 0
    while not state.done and time_left() > margin:
        if src.manifest is not None:
            rows = list(islice(ManifestReader(store, src).rows(after=state.cursor or state.after or None, upto=state.upto), MANIFEST_PAGE))
            done = len(rows) < MANIFEST_PAGE
            selected = selected_rows(rows, selector, src.prefix)  # of the rows list_step will send
            cursor = None if done or not rows else rows[-1].pos
        else:
            page = list_shard_page(lister(store, src, job.operation), src.bucket, src.prefix, Shard(state.after, state.upto), state.cursor)
            done, cursor = page.done, page.next_token
            selected = [o for o in page.objects if selector.matches(o)]
        counted = deletes(job.operation, selected) if limited else None
        size = sum(max(o.size, 0) for o in selected)
        if ledger.guard_checkpoint(job_id, shard, state.page, cursor, done, counted, objects=len(selected), size=size):
            pages += 1
            state = replace(state, page=state.page + 1, cursor=cursor, done=done, counted=state.counted + (counted or 0))
        else:  # another invocation counted this page first: carry on from its checkpoint
            state = ledger.guard_shard(job_id, shard)
    return ListOutcome(job_id, shard, state.done, pages)


def check_step(job_id: str, *, ledger: DynamoLedger) -> int:
    """The count, once every shard is counted; over max_delete the job fails here, before any delete."""
    job = ledger.spec(job_id)
    limit = job.options.max_delete if guarded(job) else None  # a count for options.confirm alone holds no limit
    total, complete = ledger.guard_total(job_id)
    if not complete:
        raise RuntimeError(f"job {job_id}: the delete guard's count is not finished")  # the state machine only asks after every shard
    if limit is not None and total > limit:
        what = "keys (each hidden under a delete marker)" if job.operation == "rewind" else "objects"
        raise JobError(
            f"job.options.max_delete: the job would delete {total:,} {what}, over max_delete {limit:,}; nothing was deleted. "
            "Narrow the selection, or raise max_delete if that many is right"
        )
    return total
