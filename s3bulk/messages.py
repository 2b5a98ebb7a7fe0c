"""Work-queue messages: one batch of listed objects, sized by bytes as well as count."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from pydantic import BaseModel, ConfigDict

from s3bulk.store import ObjectInfo

# SQS accepts 256 KiB per message; leave room for attributes and envelope.
MAX_MESSAGE_BYTES = 200_000


class BatchMessage(BaseModel):
    """Ids and keys only; the job spec is read from the ledger, never carried per message."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    job_id: str
    batch_id: str
    # key, size, ETag (and the storage class unless STANDARD): the listing's facts, so the worker needs no HEAD
    items: list[tuple[str, int, str] | tuple[str, int, str, str]]

    def objects(self) -> list[ObjectInfo]:
        return [ObjectInfo(i[0], i[1], i[2], storage_class=i[3] if len(i) == 4 else None) for i in self.items]

    def encode(self) -> str:
        """ASCII-only JSON: any key survives SQS's character rules."""
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=True, separators=(",", ":"))


def _item(obj: ObjectInfo) -> tuple[str, int, str] | tuple[str, int, str, str]:
    if obj.storage_class and obj.storage_class != "STANDARD":
        return (obj.key, obj.size, obj.etag, obj.storage_class)
    return (obj.key, obj.size, obj.etag)


def _item_bytes(obj: ObjectInfo) -> int:
    return len(json.dumps(_item(obj), ensure_ascii=True)) + 1


def pack(
    job_id: str, page: int, objects: Sequence[ObjectInfo], max_items: int, max_bytes: int = MAX_MESSAGE_BYTES
) -> Iterator[BatchMessage]:
    """Split one listing page into messages; ids derive from the page so a re-sent page dedupes."""
    overhead = len(BatchMessage(job_id=job_id, batch_id=f"{page:09d}-000", items=[]).encode())
    batch: list[tuple[str, int, str] | tuple[str, int, str, str]] = []
    size = overhead
    n = 0
    for obj in objects:
        cost = _item_bytes(obj)
        if batch and (len(batch) >= max_items or size + cost > max_bytes):
            yield BatchMessage(job_id=job_id, batch_id=f"{page:09d}-{n:03d}", items=batch)
            batch, size, n = [], overhead, n + 1
        batch.append(_item(obj))
        size += cost
    if batch:
        yield BatchMessage(job_id=job_id, batch_id=f"{page:09d}-{n:03d}", items=batch)
