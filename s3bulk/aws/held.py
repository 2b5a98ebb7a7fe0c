"""Held work: a stopped job's batches wait off the queue, and its resume sends them again at once.

A stopped job (an outage, its owner's `s3bulk stop`, the failure breaker) keeps its queued batches for `s3bulk resume`.
Handed back to the shared queue, each would come back every 15 minutes for days: SQS receives paid for nothing, up to
the queue's in-flight limit (about 120,000 messages), past which every other job on the stack starves. So a worker
parks such a batch in the report bucket (`jobs/ID/parked/BATCH.json`: one PUT) and deletes its message, and the resume's
first step (ResumeHeld) sends every parked batch again and empties it (a copy-only deployment deletes nothing), before
the listing goes on: work is going within seconds.

A capped job's batches over its cap wait off the queue too (ledger/parking.py): a worker parks one it cannot hold
(`jobs/ID/waiting/BATCH.json` and an entry in the ledger), and a worker whose hold ends sends on as many parked batches
as its lease shard has room for (`send_parked`), each to be held on that shard first, so the job runs at its cap with
no batch cycling through the queue.

A job the failure breaker stopped failed its objects for one systematic cause, which its owner has now fixed: the same
step takes each counted batch's failed objects back (ledger/redo.py) and sends them again as batches of their own,
named by key only, so the printed `s3bulk resume` finishes the job. Each call ends before its time does and says where
it stopped (`after`); the state machine calls again until `done`.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from s3bulk.aws.ledger import DynamoLedger, Room
from s3bulk.aws.messages import BatchMessage, pack
from s3bulk.aws.queue import QueueSender
from s3bulk.aws.reportbucket import ATTEMPT, ReportBucket
from s3bulk.aws.steps import TimeLeft
from s3bulk.breakers.failure import THROTTLING
from s3bulk.job.retry import version_failed
from s3bulk.store import UNKNOWN_SIZE, ObjectInfo

# The step starts nothing more with less than this left: a page of parked batches or one batch's redo takes seconds.
RESUME_MARGIN_S = 30.0
PARKED_PAGE = 100


@dataclass(frozen=True, slots=True)
class Redo:
    """One counted batch's failures part, split into the objects to do again and the failures that stay."""

    batch_id: str
    messages: list[BatchMessage]
    failed: int
    throttled: int
    kept: list[dict[str, Any]]
    keys: set[str]


def plan_redo(job_id: str, batch_id: str, body: bytes, new: str, batch_size: int) -> Redo:
    """The redo batches of a failures part (the same ones for the same part and `new` try, so a step that ended
    between its transaction and its send sends the same batches again). A failure that names no object (a manifest
    row the job refused, a sync's extraneous delete) stays failed, as `s3bulk retry` leaves it (retry.version_failed)."""
    redo: list[ObjectInfo] = []
    kept: list[dict[str, Any]] = []
    throttled = 0
    for line in body.decode("utf-8").splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        version = version_failed(str(entry.get("error") or ""), str(entry.get("message") or ""))
        if version is None or not entry.get("key"):
            kept.append(entry)
            continue
        redo.append(ObjectInfo(str(entry["key"]), UNKNOWN_SIZE, "", version_id=version))
        throttled += entry.get("error") in THROTTLING
    messages = list(pack(job_id, f"{batch_id}{ATTEMPT}{new}", redo, batch_size, alone=True))
    return Redo(batch_id, messages, len(redo), throttled, kept, {o.key for o in redo})


def _part(job_id: str, key: str) -> tuple[str, str]:
    """(batch id, try) of a failures part's key; a lister's part (bad manifest rows) has no try."""
    name = key.removeprefix(f"jobs/{job_id}/failures/").removesuffix(".jsonl")
    batch, sep, attempt = name.rpartition(ATTEMPT)
    return (batch, attempt) if sep else (name, "")


def resume_step(
    job_id: str,
    *,
    ledger: DynamoLedger,
    reports: ReportBucket,
    sender: QueueSender,
    time_left: TimeLeft,
    after: str = "",
    margin: float = RESUME_MARGIN_S,
) -> dict[str, Any]:
    """Send the job's parked batches again, then (after a failure breaker's stop) its failed objects; `after` is where
    an earlier call of this resume stopped."""
    out: dict[str, Any] = {"job_id": job_id, "done": False, "after": after}
    for parked in reports.parked(job_id, PARKED_PAGE):
        if time_left() < margin:
            return out  # called again, it lists from the start: what this call sent is emptied, and passed over
        sender.send([BatchMessage.model_validate_json(body) for _, body in parked])
        reports.empty([k for k, _ in parked])  # after the send: a step ended between the two sends them again
    job = ledger.spec(job_id)
    if not ledger.tripped(job_id):
        return {**out, "done": True}
    if job.source.versions == "current":  # a job on versions is retried with s3bulk retry, as the local runtime does
        for keys in reports.failure_part_keys(job_id, after):
            parts = [(k, *_part(job_id, k)) for k in keys]
            markers = ledger.markers(job_id, [b for _, b, a in parts if a])
            for key, batch, attempt in parts:
                if time_left() < margin:
                    return out
                marker = markers.get(batch, {})
                if attempt and marker.get("attempt", {}).get("S") == attempt:
                    _redo(job_id, batch, attempt, key, ledger=ledger, reports=reports, sender=sender, batch_size=job.options.batch_size)
                elif attempt and marker.get("redone_from", {}).get("S") == attempt:  # taken back, perhaps never sent
                    new = str(marker["attempt"]["S"])
                    sender.send(plan_redo(job_id, batch, reports.read(key), new, job.options.batch_size).messages)
                out["after"] = key
    ledger.untrip(job_id)
    return {**out, "done": True}


def _redo(
    job_id: str, batch: str, attempt: str, key: str, *, ledger: DynamoLedger, reports: ReportBucket, sender: QueueSender, batch_size: int
) -> None:
    """One counted batch's failed objects taken back and sent again; its new try keeps the rest of its key log and the
    failures that stay, so the report and `s3bulk undo` read the batch as before, less what is redone."""
    new = f"r{uuid.uuid4().hex[:11]}"
    redo = plan_redo(job_id, batch, reports.read(key), new, batch_size)
    if not redo.failed:
        return
    reports.put_failures(job_id, batch, redo.kept, new)
    lines = [
        line
        for line in reports.keys_part(job_id, batch, attempt).decode("utf-8").splitlines()
        if line.strip() and not _redone_line(line, redo.keys)
    ]
    reports.put_keys(job_id, batch, io.StringIO("".join(f"{line}\n" for line in lines)), new)
    taken = ledger.redo_batch(
        job_id, batch, counted=attempt, new=new, failed=redo.failed, throttled=redo.throttled, batch_ids=[m.batch_id for m in redo.messages]
    )
    if taken:
        sender.send(redo.messages)


def _redone_line(line: str, keys: set[str]) -> bool:
    """A key-log line of a failed object about to be redone: its redo writes the line that counts."""
    entry = json.loads(line)
    return entry.get("outcome") == "failed" and entry.get("key") in keys


def send_parked(job_id: str, room: Room, *, ledger: DynamoLedger, reports: ReportBucket, send: Callable[[str], None]) -> int:
    """Send on up to `room.free` of a capped job's parked batches, oldest first, each to be held on `room.shard`
    first; how many were sent. Claimed before the send and named off after it (ledger/parking.py), so two workers never
    send one batch twice, and one ended in between leaves it to be sent again once its claim lapses."""
    if not room.capped or room.free <= 0:
        return 0
    sent = 0
    for batch_id in ledger.parked(job_id, room.free):
        token = uuid.uuid4().hex
        if not ledger.claim_parked(job_id, batch_id, token):
            continue
        body = reports.waiting(job_id, batch_id)
        if body is not None:
            send(BatchMessage.model_validate_json(body).model_copy(update={"lease": room.shard}).encode())
            sent += 1
        ledger.unpark(job_id, batch_id, token)
    return sent


def sweep_parked(job_id: str, *, ledger: DynamoLedger, reports: ReportBucket, send: Callable[[str], None]) -> int:
    """The safety net of a capped job's parking, run at each progress check: a release that could not send on, or a
    sender ended between its claim and its send, may leave batches parked with room for them and nothing running
    whose release would send them. One read of the lease shards; a Query only where there is room."""
    return sum(send_parked(job_id, room, ledger=ledger, reports=reports, send=send) for room in ledger.rooms(job_id))
