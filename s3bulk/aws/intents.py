"""A listing page's intent: what the lister is about to send and record, stored before it sends anything.

A lister can die between sending a page's batches and recording the page (a timeout, memory, a throttled
checkpoint). Listing the page again is not a safe redo on a live prefix: keys added (or deleted by the job's own
workers, in a move) inside the page's range change what each batch id holds, and the ledger counts each id once,
so some keys would be dropped as "duplicates" of batches that held other keys. Instead the redo sends exactly the
stored messages again (same ids, same keys) and records the stored counts; keys that appeared since are listed by
the next page or the next job, never lost inside this one.
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from s3bulk.aws.messages import BatchMessage


class PageIntent(BaseModel):
    """One page of one listing shard, as its checkpoint will record it, with the messages it sends."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    shard: int
    page: int
    cursor: str | None  # where the next page starts (None once the shard is done)
    done: bool
    last_key: str | None
    scanned: int
    listed: int
    listed_bytes: int
    skipped: int = 0
    failed: int = 0
    extraneous: int = 0
    sent: int = 0
    borrowed: int = 0
    messages: list[str] = []  # each BatchMessage as encoded on the queue

    @classmethod
    def of(cls, messages: Sequence[BatchMessage], **fields: object) -> PageIntent:
        return cls.model_validate({**fields, "messages": [m.encode() for m in messages]})

    def batches(self) -> list[BatchMessage]:
        return [BatchMessage.model_validate_json(m) for m in self.messages]

    def dump(self) -> bytes:
        """gzip'd JSON: a page of a thousand keys under one prefix is a few kilobytes."""
        return gzip.compress(self.model_dump_json().encode("utf-8"), compresslevel=5)

    @classmethod
    def load(cls, body: bytes) -> PageIntent:
        return cls.model_validate_json(gzip.decompress(body))
