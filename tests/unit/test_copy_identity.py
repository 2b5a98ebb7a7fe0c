"""A copy is confirmed by content identity (ops/identity.py), never by a server's 200 or by its size where anything
can decide: a CopyObject that copied a same-size neighbour fails its object, and a move keeps that source (issue 50)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from s3bulk.job import MiB, parse_job
from s3bulk.local.engine import Engine
from s3bulk.local.ledger import LocalLedger
from s3bulk.ops.identity import BY_CHECKSUM, BY_ETAG, BY_SIZE, COPY_MISMATCH, SIZE_MISMATCH, judge
from s3bulk.report import SIZE_ONLY, Counts, summarize
from s3bulk.store import Encryption, ObjectHead, StoreError
from s3bulk.testing.memstore import MemoryStore

KMS = Encryption("aws:kms", "key-1")
NEIGHBOURS = {"dc/a+b.bin": "dc/a%2Bb.bin"}  # the key asked -> the key a quirky server copies instead


def md5(body: bytes) -> str:
    return '"' + hashlib.md5(body, usedforsecurity=False).hexdigest() + '"'


class NeighbourCopies(MemoryStore):
    """A server whose copies (CopyObject and UploadPartCopy) of some keys read a same-size neighbour instead."""

    def copy_object(self, src_bucket: str, src_key: str, dst_bucket: str, dst_key: str, **kwargs: Any) -> str:
        return super().copy_object(src_bucket, NEIGHBOURS.get(src_key, src_key), dst_bucket, dst_key, **kwargs)

    def upload_part_copy(self, src_bucket: str, src_key: str, *args: Any, **kwargs: Any) -> Any:
        return super().upload_part_copy(src_bucket, NEIGHBOURS.get(src_key, src_key), *args, **kwargs)


class KmsCopies(MemoryStore):
    """SSE-KMS as S3 does it: every write gets an ETag that is no MD5 of its bytes, so equal bytes have other ETags."""

    def copy_object(self, src_bucket: str, src_key: str, dst_bucket: str, dst_key: str, **kwargs: Any) -> str:
        super().copy_object(src_bucket, src_key, dst_bucket, dst_key, **kwargs)
        with self._lock:
            obj = self._get(dst_bucket, dst_key, "")
            obj.etag = md5(f"kms {dst_bucket}/{dst_key}".encode())
            return obj.etag


def seeded(store: MemoryStore, **put: Any) -> MemoryStore:
    store.create_bucket("src-b")
    store.create_bucket("dst-b")
    store.put_object("src-b", "dc/a+b.bin", b"the real source", **put)
    store.put_object("src-b", "dc/a%2Bb.bin", b"its neighbour!!", **put)  # same size, other bytes
    for i in range(20):
        store.put_object("src-b", f"dc/{i:02d}.bin", f"body {i:02d}".encode(), **put)
    return store


def run(
    store: MemoryStore, operation: str, tmp_path: Path, *, ledger: bool = False, **options: Any
) -> tuple[dict[str, Any], dict[str, dict[str, Any]], int]:
    doc = {
        "operation": operation,
        "source": {"bucket": "src-b", "prefix": "dc/"},
        "destination": {"bucket": "dst-b", "prefix": "out/"},
        "options": options,
    }
    keys = tmp_path / f"{operation}-keys.jsonl"
    job = parse_job(json.dumps(doc))
    kept = LocalLedger.create(tmp_path / "state", f"{operation}-1", job) if ledger else None
    with keys.open("w", encoding="utf-8") as out:
        report = Engine(job, store, concurrency=4, key_log=out, ledger=kept).run()
    lines = {line["key"]: line for line in map(json.loads, keys.read_text().splitlines())}
    return report.summary() | {"failures": list(report.tally.failures())}, lines, report.exit_code


def test_a_move_whose_server_copied_a_same_size_neighbour_fails_that_object_and_keeps_its_source(tmp_path: Path) -> None:
    store = seeded(NeighbourCopies())
    report, lines, code = run(store, "move", tmp_path)
    assert [(f["key"], f["error"]) for f in report["failures"]] == [("dc/a+b.bin", COPY_MISMATCH)]
    assert "content MD5s" in report["failures"][0]["message"]
    assert (report["succeeded"], report["failed"], code) == (21, 1, 1)
    assert store.get_body("src-b", "dc/a+b.bin") == b"the real source"  # the source stays
    assert store.keys("src-b") == ["dc/a+b.bin"]  # every other object moved
    assert lines["dc/a+b.bin"]["outcome"] == "failed"
    assert "HeadObject" in store.calls and store.calls["HeadObject"] == 2  # only the contradicted copy was HEADed


def test_a_copy_whose_result_contradicts_its_source_is_a_failure_not_a_success(tmp_path: Path) -> None:
    store = seeded(NeighbourCopies())
    report, _, code = run(store, "copy", tmp_path)
    assert [(f["key"], f["error"]) for f in report["failures"]] == [("dc/a+b.bin", COPY_MISMATCH)]
    assert (report["status"], report["succeeded"], code) == ("failed", 21, 1)


def test_copies_whose_etag_is_the_listed_one_cost_no_request_beyond_the_copy(tmp_path: Path) -> None:
    store = seeded(MemoryStore())
    report, _, _ = run(store, "move", tmp_path)
    assert (report["succeeded"], report["failed"]) == (22, 0)
    assert "HeadObject" not in store.calls and store.calls["CopyObject"] == 22
    assert SIZE_ONLY not in report


def test_kms_copies_whose_etags_differ_are_confirmed_by_equal_checksums_with_two_heads_each(tmp_path: Path) -> None:
    store = seeded(KmsCopies(), encryption=KMS)
    for key in store.keys("src-b"):  # S3 keeps a full-object checksum, and a CopyObject copies it
        body = store.get_body("src-b", key)
        store.put_object("src-b", key, body, encryption=KMS, checksum=f"CRC64NVME:{hashlib.sha1(body).hexdigest()}")
    report, lines, code = run(store, "move", tmp_path)
    assert (report["succeeded"], report["failed"], code) == (22, 0, 0)
    assert SIZE_ONLY not in report and all(not line.get("result") for line in lines.values())
    assert store.calls["HeadObject"] == 2 * 22


@pytest.mark.parametrize("ledger", [False, True], ids=["no-ledger", "ledger"])
def test_kms_copies_nothing_but_their_size_confirms_are_counted_in_the_report_and_the_key_log(tmp_path: Path, ledger: bool) -> None:
    store = seeded(KmsCopies(), encryption=KMS)
    report, lines, code = run(store, "move", tmp_path, ledger=ledger)
    assert (report["succeeded"], report["failed"], code) == (22, 0, 0)
    assert report[SIZE_ONLY] == 22
    assert all("confirmed by size only" in line["result"] for line in lines.values())


def test_a_multipart_copy_of_a_neighbour_fails_on_its_source_pin_and_one_nothing_compares_is_counted(tmp_path: Path) -> None:
    """Parts are copied pinned to the source's ETag (CopySourceIfMatch), which a neighbour does not have. A multipart
    copy's ETag cannot be compared with a single-part source's and, without checksums, nothing else can: that copy
    is confirmed by its size, and the report and the key log say so."""
    store = NeighbourCopies()
    store.create_bucket("src-b")
    store.create_bucket("dst-b")
    store.put_object("src-b", "dc/a+b.bin", b"a" * (6 * MiB))
    store.put_object("src-b", "dc/a%2Bb.bin", b"b" * (6 * MiB))
    report, lines, code = run(store, "move", tmp_path, multipart_threshold=5 * MiB, part_size=5 * MiB)
    assert [(f["key"], f["error"]) for f in report["failures"]] == [("dc/a+b.bin", "PreconditionFailed")]
    assert (report["succeeded"], report[SIZE_ONLY], code) == (1, 1, 1)
    assert store.keys("src-b") == ["dc/a+b.bin"]
    assert "confirmed by size only" in lines["dc/a%2Bb.bin"]["result"]


def head(size: int = 5, etag: str = md5(b"abcde"), checksum: str = "", kms: bool = False) -> ObjectHead:
    return ObjectHead(size, etag, checksum=checksum, encryption=KMS if kms else None)


@pytest.mark.parametrize(
    ("src", "dst", "confirmed"),
    [
        (head(), head(), BY_ETAG),
        (head(checksum="CRC32:x"), head(etag='"abc-2"', checksum="CRC32:x"), BY_CHECKSUM),
        (head(kms=True), head(etag=md5(b"other"), kms=True), BY_SIZE),  # KMS ETags are no MD5s: nothing decides
        (head(etag='"abc-2"'), head(), BY_SIZE),  # a multipart ETag against an MD5: nothing decides
        (head(checksum="CRC32:x-2"), head(etag=md5(b"other"), checksum="CRC32:y-3", kms=True), BY_SIZE),  # composites
        (head(), head(etag=md5(b"edcba")), COPY_MISMATCH),  # two content MD5s that differ
        (head(etag='"abc-2"', checksum="CRC64NVME:x"), head(checksum="CRC64NVME:y"), COPY_MISMATCH),  # full checksums
        (head(), head(size=4), SIZE_MISMATCH),
    ],
)
def test_the_identity_rule_takes_the_strongest_evidence_and_size_only_where_nothing_else_decides(
    src: ObjectHead, dst: ObjectHead, confirmed: str
) -> None:
    if confirmed in {COPY_MISMATCH, SIZE_MISMATCH}:
        with pytest.raises(StoreError) as err:
            judge(src, dst)
        assert err.value.code == confirmed
    else:
        assert judge(src, dst) == confirmed


def test_the_report_names_the_copies_only_their_size_confirmed_and_says_nothing_when_there_were_none() -> None:
    def summary(counts: Counts) -> dict[str, Any]:
        return summarize("j", "move", "succeeded", counts, 1.0, tolerated_failures=0)

    assert summary(Counts(succeeded=3, confirmed_by_size_only=2))[SIZE_ONLY] == 2
    assert SIZE_ONLY not in summary(Counts(succeeded=3))
    # the stack's ledger counters reach the same field by name
    assert Counts.of_counters({"succeeded": 3, SIZE_ONLY: 1}).confirmed_by_size_only == 1


def test_a_copy_nothing_listed_an_etag_for_is_confirmed_by_the_sources_head_alone_when_the_etags_agree() -> None:
    """An inventory without ETags: one HEAD of the source decides where the copy's ETag equals it (two cost 3x the
    requests of the copy itself), and a neighbour's copy is still caught by the copy's HEAD."""
    from s3bulk.ops.copies import CopyDone
    from s3bulk.ops.identity import confirm_copy
    from s3bulk.store import ObjectInfo

    store = MemoryStore()
    for b in ("src-b", "dst-b"):
        store.create_bucket(b)
    store.put_object("src-b", "in/a", b"a" * 10)
    store.put_object("src-b", "in/b", b"b" * 10)
    good = store.copy_object("src-b", "in/a", "dst-b", "out/a")
    before = store.calls.get("HeadObject", 0)
    assert confirm_copy(store, store, "src-b", ObjectInfo("in/a", 10, ""), "dst-b", "out/a", CopyDone(good, False)) == BY_ETAG
    assert store.calls["HeadObject"] - before == 1
    wrong = store.copy_object("src-b", "in/b", "dst-b", "out/a2")  # the server copied the neighbour
    with pytest.raises(StoreError) as raised:
        confirm_copy(store, store, "src-b", ObjectInfo("in/a", 10, ""), "dst-b", "out/a2", CopyDone(wrong, False))
    assert raised.value.code == COPY_MISMATCH
