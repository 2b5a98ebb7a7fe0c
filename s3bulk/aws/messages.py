"""Work-queue messages: one batch of listed objects, sized by bytes as well as count."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from s3bulk.store import ObjectInfo

Entry = (
    tuple[str, int, str]
    | tuple[str, int, str, str]
    | tuple[str, int, str, str, str]
    | tuple[str, int, str, str, str, str]
    | tuple[str, int, str, str, str, str, str]
)

# SQS has accepted 1 MiB per message since 2025 (256 KiB before). A batch stays near the old size: a Worker's event
# carries up to worker_batch_size of them, and a lister's step intent holds every message of its pages.
MAX_MESSAGE_BYTES = 200_000
# The objects' bytes one batch may hold, so a page of large objects spreads over many workers and each batch fits one
# invocation: half of what a worker moves in its time at the slowest large-object rate measured (docs/benchmarks.md,
# 1 GiB server-side copy: 188 MB/s) over the 600 s worker less its 150 s margin: 188 MB/s x 450 s / 2, about 40 GiB.
# An object larger than this is a batch of its own (its copy pauses and goes on across invocations).
MAX_BATCH_OBJECT_BYTES = 40 * 1024**3


class BatchMessage(BaseModel):
    """Ids and keys only; the job spec is read from the ledger, never carried per message."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    job_id: str
    batch_id: str
    # key, size, ETag (and the storage class unless STANDARD, and the version id when the job acts on versions, and
    # the upload id of an abort-uploads job's upload, and a rewind's version current when listed): the listing's facts,
    # so the worker needs no HEAD
    items: list[Entry]
    # skip-unchanged pairs only checksums can decide (multipart ETags): item index, and the answer if they cannot
    check: list[tuple[int, bool]] = Field(default_factory=list)
    # multipart copies an earlier invocation paused (a child batch's): item index, and the open upload to go on with
    resume: list[tuple[int, str]] = Field(default_factory=list)
    # objects that were still in flight when an invocation had to end without them (a child batch's): item index, and
    # how many invocations ended so; past a few, the object is failed instead of tried again
    hung: list[tuple[int, int]] = Field(default_factory=list)
    # items that are delete markers (a job on versions): the listing said so, and a filter must not ask S3 about one
    # (GetObjectTagging or HEAD of a marker's version is 405 on S3, 404 on some servers, which reads as "gone")
    markers: list[int] = Field(default_factory=list)
    # objects named by key only, redone after the failure breaker (aws/held.py): no listing was joined with them, so a
    # skip mode asks the destination itself
    alone: bool = False
    # a capped job's parked batch sent on by a worker whose release left room on this lease shard: held there first
    lease: int | None = None

    def objects(self) -> list[ObjectInfo]:
        markers = set(self.markers)
        return [
            ObjectInfo(
                i[0],
                i[1],
                i[2],
                storage_class=(i[3] or None) if len(i) >= 4 else None,
                version_id=i[4] if len(i) >= 5 else "",
                upload_id=i[5] if len(i) >= 6 else "",
                replaces=i[6] if len(i) == 7 else None,
                delete_marker=n in markers,
            )
            for n, i in enumerate(self.items)
        ]

    def rechecks(self) -> dict[int, bool]:
        return dict(self.check)

    def uploads(self) -> dict[int, str]:
        return dict(self.resume)

    def strikes(self) -> dict[int, int]:
        return dict(self.hung)

    def rest(
        self,
        objects: Sequence[ObjectInfo],
        checks: Mapping[int, bool],
        attempt: str,
        uploads: Mapping[int, str] | None = None,
        hung: Mapping[int, int] | None = None,
    ) -> BatchMessage:
        """The part of this batch one invocation could not reach, as a batch of its own (a "child"): its id derives
        from this one's and from the try that counted this one, so whoever sends it again sends the same batch. An
        object whose copy paused part way carries its open upload (`uploads`), so the child goes on with it."""
        return BatchMessage(
            job_id=self.job_id,
            batch_id=f"{self.batch_id}~{attempt[:8]}",
            items=[_item(o) for o in objects],
            check=sorted(checks.items()),
            resume=sorted((uploads or {}).items()),
            hung=sorted((hung or {}).items()),
            markers=[n for n, o in enumerate(objects) if o.delete_marker],
            alone=self.alone,
        )

    def encode(self) -> str:
        """ASCII-only JSON: any key survives SQS's character rules."""
        return json.dumps(self.model_dump(mode="json", exclude_defaults=True), ensure_ascii=True, separators=(",", ":"))


def _item(obj: ObjectInfo) -> Entry:
    storage_class = obj.storage_class if obj.storage_class and obj.storage_class != "STANDARD" else ""
    if obj.replaces is not None:  # a rewind's entry: the version to make current, and the one current when listed
        return (obj.key, obj.size, obj.etag, storage_class, obj.version_id, obj.upload_id, obj.replaces)
    if obj.upload_id:
        return (obj.key, obj.size, obj.etag, storage_class, obj.version_id, obj.upload_id)
    if obj.version_id:
        return (obj.key, obj.size, obj.etag, storage_class, obj.version_id)
    if storage_class:
        return (obj.key, obj.size, obj.etag, storage_class)
    return (obj.key, obj.size, obj.etag)


def _item_bytes(obj: ObjectInfo) -> int:
    return len(json.dumps(_item(obj), ensure_ascii=True)) + 1


def pack(
    job_id: str,
    page: int | str,
    objects: Sequence[ObjectInfo],
    max_items: int,
    max_bytes: int = MAX_MESSAGE_BYTES,
    rechecks: Mapping[str, bool] | None = None,
    max_object_bytes: int = MAX_BATCH_OBJECT_BYTES,
    alone: bool = False,
) -> Iterator[BatchMessage]:
    """Split one listing page into messages of at most `max_items` objects, `max_bytes` of message and `max_object_bytes`
    of the objects themselves; ids derive from the page (a number, or a shard-and-page id) so a re-sent page dedupes."""
    page_id = page if isinstance(page, str) else f"{page:09d}"
    overhead = len(BatchMessage(job_id=job_id, batch_id=f"{page_id}-000", items=[], check=[(0, True)], markers=[0]).encode())
    batch: list[Entry] = []
    check: list[tuple[int, bool]] = []
    markers: list[int] = []
    size = overhead
    held = 0  # the objects' bytes (a manifest row without a size counts none)
    n = 0
    for obj in objects:
        cost = _item_bytes(obj) + (12 if rechecks and obj.key in rechecks else 0) + (6 if obj.delete_marker else 0)
        if batch and (len(batch) >= max_items or size + cost > max_bytes or held + max(obj.size, 0) > max_object_bytes):
            yield BatchMessage(job_id=job_id, batch_id=f"{page_id}-{n:03d}", items=batch, check=check, markers=markers, alone=alone)
            batch, check, markers, size, held, n = [], [], [], overhead, 0, n + 1
        held += max(obj.size, 0)
        if rechecks and obj.key in rechecks:
            check.append((len(batch), rechecks[obj.key]))
        if obj.delete_marker:
            markers.append(len(batch))
        batch.append(_item(obj))
        size += cost
    if batch:
        yield BatchMessage(job_id=job_id, batch_id=f"{page_id}-{n:03d}", items=batch, check=check, markers=markers, alone=alone)
