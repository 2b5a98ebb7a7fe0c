"""ObjectWriter on the in-memory store: one PUT or a bounded multipart upload, aborted on any failure."""

from __future__ import annotations

import io
import os
import threading
import zlib

import pytest

from s3bulk.bodies.writer import MAX_PART, ObjectWriter, part_size_for, write_stream
from s3bulk.store import Body, ObjectHead, StoreError, crc32_header
from s3bulk.testing.memstore import MemoryStore

MiB = 1024 * 1024


def _store() -> MemoryStore:
    store = MemoryStore()
    store.create_bucket("out")
    return store


def test_a_body_up_to_the_threshold_is_one_put_with_its_content_type_metadata_and_tags() -> None:
    store = _store()
    head = ObjectHead(0, "", "text/csv", {"origin": "test"})
    etag = write_stream(ObjectWriter(store, "out", "a.csv", head=head, tags={"team": "data"}, threshold=6 * MiB), b"x" * (6 * MiB))
    obj = store.get("out", "a.csv")
    assert store.calls == {"PutObject": 1}
    assert (obj.etag, obj.size, obj.content_type, obj.metadata, obj.tags) == (
        etag,
        6 * MiB,
        "text/csv",
        {"origin": "test"},
        {"team": "data"},
    )


def test_a_body_past_the_threshold_goes_up_in_parts_and_arrives_byte_exact() -> None:
    store = _store()
    body = os.urandom(23 * MiB + 17)
    etag = write_stream(ObjectWriter(store, "out", "big", tags={"t": "1"}, part_size=5 * MiB, threshold=5 * MiB), io.BytesIO(body))
    assert store.get_body("out", "big") == body
    assert etag.endswith('-5"')  # 4 full parts and a short last one
    assert store.calls["UploadPart"] == 5 and "PutObject" not in store.calls
    assert store.get("out", "big").tags == {"t": "1"}
    assert store.open_uploads == 0


class _Gauge(MemoryStore):
    """Counts parts on the wire at once, and can fail one part."""

    def __init__(self, fail_part: int = 0) -> None:
        super().__init__()
        self.fail_part = fail_part
        self.active = 0
        self.peak = 0
        self._gate = threading.Lock()
        self.release = threading.Event()

    def upload_part(self, bucket: str, key: str, upload_id: str, part_number: int, body: Body, *, crc32: int | None = None) -> str:
        with self._gate:
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            self.release.wait(0.02)
            if part_number == self.fail_part:
                raise StoreError("InternalError", "part lost", 500)
            return super().upload_part(bucket, key, upload_id, part_number, body, crc32=crc32)
        finally:
            with self._gate:
                self.active -= 1


def test_parts_in_flight_never_exceed_the_bound() -> None:
    store = _Gauge()
    store.create_bucket("out")
    write_stream(ObjectWriter(store, "out", "big", part_size=5 * MiB, threshold=5 * MiB, in_flight=2), bytes(40 * MiB))
    assert store.peak == 2
    assert store.get("out", "big").size == 40 * MiB


def test_a_failed_part_aborts_the_upload_and_leaves_no_orphan_or_object() -> None:
    store = _Gauge(fail_part=3)
    store.create_bucket("out")
    with pytest.raises(StoreError, match="part lost"):
        write_stream(ObjectWriter(store, "out", "big", part_size=5 * MiB, threshold=5 * MiB), bytes(30 * MiB))
    assert store.open_uploads == 0
    assert store.calls["AbortMultipartUpload"] == 1
    assert store.keys("out") == []


def test_an_exception_in_the_callers_block_aborts_the_upload() -> None:
    store = _store()
    with pytest.raises(RuntimeError, match="user code"), ObjectWriter(store, "out", "big", part_size=5 * MiB, threshold=5 * MiB) as w:
        w.write(bytes(12 * MiB))
        raise RuntimeError("user code failed halfway")
    assert store.open_uploads == 0
    assert store.keys("out") == []


def test_a_known_size_picks_one_part_size_that_fits_ten_thousand_parts() -> None:
    writer = ObjectWriter(_store(), "out", "k", size_hint=200 * 1024 * MiB)  # 200 GiB
    assert writer._next_part_size() == 21 * MiB  # ceil(200 GiB / 10,000) in whole MiB


def test_an_unknown_size_grows_its_parts_so_ten_thousand_reach_five_tebibytes() -> None:
    total = sum(part_size_for(n, 8 * MiB) for n in range(1, 10_001))
    assert total >= 5 * 1024 * 1024 * MiB
    assert part_size_for(1, 8 * MiB) == 8 * MiB and part_size_for(1001, 8 * MiB) == 16 * MiB
    assert max(part_size_for(n, 8 * MiB) for n in range(1, 10_001)) <= MAX_PART


def test_an_empty_body_is_one_empty_put() -> None:
    store = _store()
    write_stream(ObjectWriter(store, "out", "empty"), b"")
    assert store.get_body("out", "empty") == b""


class _FlipsAByte(MemoryStore):
    """Corrupts part 2 on the way (after the writer computed its CRC32), as a bad NIC or proxy would."""

    def upload_part(self, bucket: str, key: str, upload_id: str, part_number: int, body: Body, *, crc32: int | None = None) -> str:
        if part_number == 2:
            body = bytes([body[0] ^ 0xFF]) + bytes(body[1:])
        return super().upload_part(bucket, key, upload_id, part_number, body, crc32=crc32)


def test_each_part_and_the_whole_object_carry_a_crc32_and_a_corrupted_part_aborts_the_upload() -> None:
    body = bytes(range(256)) * (48 * 1024)  # 12 MiB: 3 parts of 5 MiB at most
    store = MemoryStore()
    store.create_bucket("b")
    writer = ObjectWriter(store, "b", "ok", part_size=5 * MiB, threshold=5 * MiB)
    write_stream(writer, body)
    assert writer.crc32 == zlib.crc32(body)
    assert store.head_object("b", "ok").checksum == f"CRC32:{crc32_header(zlib.crc32(body))}"

    bad = _FlipsAByte()
    bad.create_bucket("b")
    with pytest.raises(StoreError, match="BadDigest"):
        write_stream(ObjectWriter(bad, "b", "broken", part_size=5 * MiB, threshold=5 * MiB), body)
    assert bad.list_page("b", "").objects == [] and bad.calls.get("AbortMultipartUpload") == 1
