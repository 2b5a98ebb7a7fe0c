"""add-checksum on the fake store: one CopyObject up to the threshold, a checksummed multipart copy above it."""

from __future__ import annotations

import json
from typing import Any

from s3bulk.job import parse_job
from s3bulk.local.engine import Engine
from s3bulk.testing.memstore import MemoryStore


def job(doc: dict[str, Any]) -> Any:
    return parse_job(json.dumps(doc))


def test_add_checksum_above_the_multipart_threshold_copies_in_parts_that_s3_checksums() -> None:
    store = MemoryStore()
    store.create_bucket("src-b")
    body = bytes(range(256)) * (12 * 1024 * 4)  # 12 MiB: three parts of 5 MiB at most
    store.put_object("src-b", "in/big", body, metadata={"m": "1"}, tags={"t": "1"}, content_type="text/x")
    store.put_object("src-b", "in/small", b"small")
    doc = {
        "operation": "add-checksum",
        "source": {"bucket": "src-b", "prefix": "in/"},
        "checksum_algorithm": "SHA256",
        "options": {"multipart_threshold": 5 * 1024 * 1024, "part_size": 5 * 1024 * 1024},
    }
    s = Engine(job(doc), store, concurrency=2).run().summary()
    assert (s["succeeded"], s["failed"]) == (2, 0)
    big = store.get("src-b", "in/big")
    assert big.checksum.startswith("SHA256:") and big.checksum.endswith("-3")  # composite: a checksum of the 3 parts'
    assert (store.get_body("src-b", "in/big"), big.metadata, big.tags, big.content_type) == (body, {"m": "1"}, {"t": "1"}, "text/x")
    assert store.get("src-b", "in/small").checksum.startswith("SHA256:") and store.calls["UploadPartCopy"] == 3
    again = Engine(job(doc), store, concurrency=2).run().summary()
    assert (again["succeeded"], again["skipped"]) == (0, 2)
