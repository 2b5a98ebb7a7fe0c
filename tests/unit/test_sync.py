"""Incremental sync on the fake store: a rerun copies exactly what changed and deletes exactly what vanished."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from s3bulk.aws.messages import BatchMessage, pack
from s3bulk.job import JobError, parse_job
from s3bulk.local.engine import Engine
from s3bulk.source.sync import unchanged
from s3bulk.store import ObjectInfo
from s3bulk.testing.memstore import MemoryStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)
MD5 = '"0cc175b9c0f1b6a831c399e269772661"'


@pytest.mark.parametrize(
    ("src", "dst", "same"),
    [
        (ObjectInfo("k", 1, MD5, T0), ObjectInfo("k", 1, MD5, T0 - timedelta(days=1)), True),  # MD5 equal: age does not matter
        (ObjectInfo("k", 1, MD5, T0), ObjectInfo("k", 1, '"92eb5ffee6ae2fec3ad71c777531578f"', T0), False),  # same size, new bytes
        (ObjectInfo("k", 1, MD5, T0), ObjectInfo("k", 2, MD5, T0), False),  # size differs
        (ObjectInfo("k", 9, '"abc-2"', T0), ObjectInfo("k", 9, '"def-3"', T0 + timedelta(seconds=1)), True),  # multipart, newer copy
        (ObjectInfo("k", 9, '"abc-2"', T0), ObjectInfo("k", 9, MD5, T0 - timedelta(seconds=1)), False),  # source changed after the copy
        (ObjectInfo("k", 9, '"abc-2"', None), ObjectInfo("k", 9, '"abc-3"', T0), False),  # no dates: cannot tell, so copy
        (ObjectInfo("k", 9, '"abc-2"', None), ObjectInfo("k", 9, '"abc-2"', T0), True),  # equal multipart ETags: equal parts
        (ObjectInfo("k", 1, "", T0), ObjectInfo("k", 1, MD5, T0 + timedelta(days=1)), False),  # no ETag listed: never by age
    ],
)
def test_unchanged_means_same_size_and_md5_or_a_newer_copy_of_a_multipart_object(src: ObjectInfo, dst: ObjectInfo, same: bool) -> None:
    assert unchanged(src, dst) is same


def sync(store: MemoryStore, **options: Any) -> dict[str, Any]:
    doc = {
        "operation": "copy",
        "source": {"bucket": "src-b", "prefix": "data/", "exclude": ["*.tmp"]},
        "destination": {"bucket": "dst-b", "prefix": "mirror/"},
        "options": {"if_exists": "skip-unchanged", **options},
    }
    report = Engine(parse_job(json.dumps(doc)), store, concurrency=4).run()
    return report.summary()


def test_second_run_copies_changed_and_new_objects_and_deletes_vanished_ones() -> None:
    store = MemoryStore(page_size=17)
    for b in ("src-b", "dst-b"):
        store.create_bucket(b)
    n, k, m, d = 200, 7, 5, 4
    for i in range(n):
        store.put_object("src-b", f"data/{i:04d}", f"v1-{i:04d}".encode())
    first = sync(store)
    assert (first["succeeded"], first["skipped"]) == (n, 0)
    assert sync(store)["succeeded"] == 0  # nothing changed: nothing copied
    for i in range(k):
        store.put_object("src-b", f"data/{i:04d}", f"v2-{i:04d}".encode())  # same size, new bytes
    for i in range(m):
        store.put_object("src-b", f"data/new-{i}", b"new")
    for i in range(n - d, n):
        store.delete_object("src-b", f"data/{i:04d}")
    store.put_object("dst-b", "mirror/keep.tmp", b"excluded by the job's globs: not the sync's to delete")
    copies_before = store.calls["CopyObject"]
    dry = sync(store, delete_extraneous=True, dry_run=True)
    assert (dry["would_delete_extraneous"], store.calls["CopyObject"], len(store.keys("dst-b"))) == (d, copies_before, n + 1)
    second = sync(store, delete_extraneous=True)
    assert (second["succeeded"], second["skipped"], second["deleted_extraneous"], second["failed"]) == (k + m, n - k - d, d, 0)
    assert store.calls["CopyObject"] - copies_before == k + m
    expected = {"mirror/" + key[5:]: store.get_body("src-b", key) for key in store.keys("src-b")}
    assert {key: store.get_body("dst-b", key) for key in store.keys("dst-b") if key != "mirror/keep.tmp"} == expected
    assert "mirror/keep.tmp" in store.keys("dst-b")


def test_delete_extraneous_is_for_copy_jobs_only() -> None:
    doc = {"operation": "move", "source": {"bucket": "src-b"}, "destination": {"bucket": "dst-b"}, "options": {"delete_extraneous": True}}
    with pytest.raises(JobError, match=r"^job\.options\.delete_extraneous: .*'copy'"):
        parse_job(json.dumps(doc))


MP = '"9b2cf535f27731c974343645a3985328-3"'  # a multipart ETag: not an MD5 of the bytes


@pytest.mark.parametrize(
    ("src_sum", "dst_sum", "dst_age", "copied"),
    [
        ("CRC64NVME:AAAA", "CRC64NVME:AAAA", -1, False),  # same bytes by checksum, though the source is newer
        ("CRC64NVME:AAAA", "CRC64NVME:BBBB", +1, True),  # different bytes by checksum, though the copy is newer
        ("", "", +1, False),  # no checksums: a newer copy stands
        ("", "", -1, True),  # no checksums: a newer source is copied
        ("CRC32:AAAA-3", "CRC32:CCCC-2", +1, False),  # composite checksums of other part layouts cannot decide: age does
        ("CRC32:AAAA", "SHA256:BBBB", -1, True),  # different algorithms cannot decide: age does
    ],
)
def test_skip_unchanged_decides_multipart_etags_by_checksums_where_both_objects_carry_them(
    src_sum: str, dst_sum: str, dst_age: int, copied: bool
) -> None:
    store = MemoryStore()
    for b in ("src-b", "dst-b"):
        store.create_bucket(b)
    store.put_object("src-b", "data/big", b"x" * 64, etag=MP, checksum=src_sum, last_modified=T0)
    store.put_object(
        "dst-b", "mirror/big", b"y" * 64 if copied and src_sum else b"x" * 64, checksum=dst_sum, last_modified=T0 + timedelta(hours=dst_age)
    )
    report = sync(store, if_exists="skip-unchanged")
    assert (report["succeeded"], report["skipped"]) == ((1, 0) if copied else (0, 1))
    assert store.calls.get("CopyObject", 0) == (1 if copied else 0)
    # both objects' checksums, asked by the worker, not the lister; and a copy's own HEAD: a multipart source's ETag
    # cannot confirm a single-part copy (ops/identity.py), the source's HEAD is the one read already
    assert store.calls["HeadObject"] == (3 if copied else 2)


def test_the_stack_message_carries_which_objects_the_worker_decides_by_checksums() -> None:
    objs = [ObjectInfo(f"k{i}", 9, MP if i % 2 else MD5) for i in range(5)]
    [msg] = list(pack("job", 0, objs, 1000, rechecks={"k1": True, "k3": False}))
    back = BatchMessage.model_validate_json(msg.encode())
    assert back.rechecks() == {1: True, 3: False}
    assert "check" not in next(iter(pack("job", 0, objs, 1000))).encode()  # nothing to decide: no field on the wire
