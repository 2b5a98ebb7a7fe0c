"""One object of a batch: what it is (Item), what its task achieved (Done), its line in the per-key log and its undo
journal entry. Shared by the batch runner, the delete path and the engines that build batches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from s3bulk.job import Job, relays
from s3bulk.report import BY_TIME_SKIPPED, SIZE_ONLY, UNDECIDED_COPIED
from s3bulk.report.keylog import KeyLog, KeyRecord
from s3bulk.store import UNKNOWN_SIZE, ObjectHead, ObjectInfo


@dataclass(frozen=True, slots=True)
class Item:
    """One object of a batch and, for copy/move, where it goes."""

    obj: ObjectInfo
    dst_key: str = ""
    exists: bool = False
    dst_etag: str = ""  # set once copied, for the per-key log of a move
    attempts: int = 0
    pos: str = ""  # a manifest row's position (resume cursor); listings use the key
    # skip-unchanged the listings cannot decide (a multipart or missing ETag): the worker compares both HEADs; this is
    # the answer when they cannot decide either
    recheck: bool | None = None
    problem: tuple[str, str] | None = None  # (code, message): a manifest row that names no usable object
    upload_id: str = ""  # a multipart copy an earlier invocation paused (ops/copies.CopyPaused): go on with it
    strikes: int = 0  # invocations that had to end while this object was still in flight (the stack's worker)
    head: ObjectHead | None = None  # the HEAD source.content_type read: the operation uses it instead of its own
    alone: bool = False  # named by key only (an object redone after the breaker): no destination listing was joined with it
    result: str = ""  # a confirmed move's result for the per-key log, written once its source is deleted


# Operations that need an object's size or storage class, which a CSV manifest row does not give.
NEEDS_HEAD = frozenset({"copy", "move", "restore"})  # set-storage-class and add-checksum HEAD every object they copy


def heads_anyway(job: Job, obj: ObjectInfo) -> bool:
    """Whether the operation HEADs this object itself, so a content_type filter's HEAD costs nothing extra (it is
    handed on) and is read before the tags. `plan` prices by the same rule."""
    op, size = job.operation, obj.size
    if size == UNKNOWN_SIZE and op in NEEDS_HEAD:
        return True
    if op in {"copy", "move"}:
        return relays(job) or size > job.options.multipart_threshold
    return op in {"add-checksum", "set-storage-class"}


def needs_nothing(job: Job, obj: ObjectInfo) -> bool:
    """An object its operation skips from the listing alone, with no request: no filter call is spent on it."""
    return job.operation == "set-storage-class" and obj.size != UNKNOWN_SIZE and (obj.storage_class or "STANDARD") == job.storage_class


@dataclass(frozen=True, slots=True)
class Done:
    """What one object's task achieved: `changed` False is a skip (nothing needed doing)."""

    changed: bool
    dst_etag: str = ""
    src_checksum: str = ""
    dst_checksum: str = ""
    obj: ObjectInfo | None = None  # the object as a HEAD found it, when its manifest row gave no size
    undo: dict[str, Any] | None = None  # the undo journal: the state it replaced, and the state it set (keys.py)
    bytes: int | None = None  # bytes written, when not the object's size (a copy of a key's versions)
    result: str = ""  # for the per-key log, when there is more to say than the outcome
    notes: tuple[str, ...] = ()  # report.NOTES: how it was decided where no content evidence could say


# What the per-key log says of an object one of report.NOTES decided.
_SAID = {
    SIZE_ONLY: "copy confirmed by size only: no ETag or checksum could compare it with its source",
    UNDECIDED_COPIED: "copied: no ETag or checksum could say whether it was unchanged",
    BY_TIME_SKIPPED: "skipped as unchanged by the modification order only: no ETag or checksum could compare",
}


def said(notes: tuple[str, ...]) -> str:
    """The per-key log's result for an object decided without content evidence ("" for one that was not)."""
    return "; ".join(_SAID[n] for n in notes)


def write_outcome(
    keylog: KeyLog | None,
    item: Item,
    outcome: str,
    done: Done | None = None,
    attempts: int = 1,
    error: str = "",
    message: str = "",
    result: str = "",
) -> None:
    if keylog is None:
        return
    d = done or Done(False, item.dst_etag)
    keylog.write(
        KeyRecord(
            item.obj.key,
            outcome,
            item.obj.size,
            item.obj.etag,
            item.dst_key,
            d.dst_etag,
            d.src_checksum,
            d.dst_checksum,
            attempts,
            error,
            message,
            version_id=item.obj.version_id,
            upload_id=item.obj.upload_id,
            result=result or d.result or item.result,
            undo=d.undo if outcome == "succeeded" else None,
        )
    )


def undo_entry(bucket: str, what: str, before: Any, after: Any, version_id: str = "") -> dict[str, Any]:
    """One undo journal entry: `s3bulk undo` puts `before` back where the object (that version of it) still has `after`."""
    entry = {"bucket": bucket, "what": what, "before": before, "after": after}
    return {**entry, "version_id": version_id} if version_id else entry


def naming_version(obj: ObjectInfo, message: str) -> str:
    """A failure's message, naming the version or upload it was about (the report's failures carry key, code and message)."""
    if obj.upload_id:
        return f"upload {obj.upload_id}: {message}"
    return f"version {obj.version_id}: {message}" if obj.version_id else message
