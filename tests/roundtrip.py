"""The path a key takes through the distributed engine, run in one process for the property tests.

listing -> queue message JSON (as SQS carries it) -> the worker's parse -> copy -> listing of the destination.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from s3bulk.aws.messages import BatchMessage, pack
from s3bulk.job import MAX_KEY_BYTES, parse_job
from s3bulk.ops.batch import BatchRunner
from s3bulk.ops.executor import BoundedExecutor
from s3bulk.ops.items import Item
from s3bulk.report import Tally
from s3bulk.source.listing import iter_objects
from s3bulk.source.selection import KeyMapper
from s3bulk.store import ObjectStore

# Any Unicode scalar value (no surrogates: S3 keys are UTF-8), short enough to fit under a prefix.
KEY_CHARS = st.characters(codec="utf-8", exclude_categories=["Cs"])


def keys(chars: st.SearchStrategy[str] = KEY_CHARS) -> st.SearchStrategy[set[str]]:
    key = st.text(chars, min_size=1, max_size=40).filter(lambda k: k not in {".", ".."} and len(k.encode()) <= MAX_KEY_BYTES - 8)
    return st.sets(key, min_size=1, max_size=25)


def roundtrip(store: ObjectStore, src: str, dst: str, batch_items: int) -> Tally:
    """Copy src/ to dst/copy/ the way the Lambda path does; returns the tally."""
    job = parse_job(json.dumps({"operation": "copy", "source": {"bucket": src}, "destination": {"bucket": dst, "prefix": "copy/"}}))
    assert job.destination is not None
    mapper = KeyMapper(job.source, job.destination)
    listed = list(iter_objects(store, src, ""))
    wire: list[str] = [m.encode() for m in pack("job-1", 0, listed, batch_items)]
    tally = Tally()
    with BoundedExecutor(4) as pool, BoundedExecutor(2) as parts:
        runner = BatchRunner(job, store, pool, parts)
        for body in wire:
            msg = BatchMessage.model_validate(json.loads(body))
            items = [Item(o, mapper(o.key)) for o in msg.objects()]
            assert runner.start(items, tally).wait(60)
    return tally


def copied(store: Any, dst: str) -> set[str]:
    return {o.key.removeprefix("copy/") for o in iter_objects(store, dst, "copy/")}
