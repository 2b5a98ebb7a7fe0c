"""A listing step's intent: what the lister is about to send and record, stored before it sends anything.

A step is one page or several in a row (lister.PAGES_PER_STEP): the lister lists them, then stores one intent,
sends their batches and records them in one checkpoint, so each costs an intent PUT and a checkpoint a step.

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
    """Pages of one listing shard in a row, as their checkpoint will record them, with the messages they send."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    shard: int
    page: int  # the first page
    pages: int = 1  # how many pages from `page` on (an intent stored before steps had several is one page)
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

    @classmethod
    def joined(cls, intents: Sequence[PageIntent]) -> PageIntent:
        """Consecutive pages' intents as one: the first's page, the last's position, the counts and messages of all."""
        first, last = intents[0], intents[-1]
        summed = ("scanned", "listed", "listed_bytes", "skipped", "failed", "extraneous", "sent", "borrowed")
        return cls.model_validate(
            {
                **last.model_dump(),
                "page": first.page,
                "pages": sum(i.pages for i in intents),
                **{name: sum(getattr(i, name) for i in intents) for name in summed},
                "messages": [m for i in intents for m in i.messages],
            }
        )

    def batches(self) -> list[BatchMessage]:
        return [BatchMessage.model_validate_json(m) for m in self.messages]

    def dump(self) -> bytes:
        """gzip'd JSON: a page of a thousand keys under one prefix is a few kilobytes."""
        return gzip.compress(self.model_dump_json().encode("utf-8"), compresslevel=5)

    @classmethod
    def load(cls, body: bytes) -> PageIntent:
        return cls.model_validate_json(gzip.decompress(body))
