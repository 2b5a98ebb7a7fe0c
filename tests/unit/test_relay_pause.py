"""A relay longer than a worker's time pauses after a part and goes on in the next invocation from the first byte its
upload lacks: each part sent once, the object byte-exact with its CRC-32 checked whole, no upload left behind."""

from __future__ import annotations

import os
import threading
import time
import zlib
from collections.abc import Callable
from typing import Any

import pytest

from s3bulk.bodies.writer import crc32_combine
from s3bulk.ops.copies import CopyPaused
from s3bulk.ops.relay import relay_object
from s3bulk.store import ObjectInfo, StoreError
from s3bulk.testing.memstore import MemoryStore

MiB = 1024 * 1024


def stores(size: int) -> tuple[MemoryStore, MemoryStore, bytes, ObjectInfo]:
    src, dst = MemoryStore(), MemoryStore()
    src.create_bucket("src-b")
    dst.create_bucket("dst-b")
    body = os.urandom(size)
    src.put_object("src-b", "big", body)
    [obj] = src.list_page("src-b", "").objects
    return src, dst, body, obj


def after(asks: int) -> Callable[[], bool]:
    """keep_going that says yes `asks` times (the relay asks once a part is on its way), then no: time is short."""
    left = [asks]

    def keep_going() -> bool:
        left[0] -= 1
        return left[0] >= 0

    return keep_going


def test_crc32_combine_is_zlibs_for_any_split() -> None:
    data = os.urandom(3 * MiB + 17)
    for cut in (0, 1, MiB, len(data)):
        assert crc32_combine(zlib.crc32(data[:cut]), zlib.crc32(data[cut:]), len(data) - cut) == zlib.crc32(data)


def test_a_relay_paused_twice_goes_on_from_its_upload_and_sends_each_part_once() -> None:
    src, dst, body, obj = stores(45 * MiB + 123)  # six 8 MiB parts
    upload = ""
    pauses = 0
    for _ in range(5):
        try:
            relay_object(src, dst, "src-b", obj, "dst-b", "out/big", keep_going=after(1), upload_id=upload)
            break
        except CopyPaused as paused:
            upload, pauses = paused.upload_id, pauses + 1
            assert (paused.parts_total, paused.parts_done) == (6, 3 + 2 * (pauses - 1))
    assert pauses == 2
    assert dst.get_body("dst-b", "out/big") == body
    assert dst.calls["UploadPart"] == 6 and dst.calls["CreateMultipartUpload"] == 1 and dst.calls["ListParts"] == 2
    assert dst.open_uploads == 0


def test_a_source_changed_while_paused_fails_and_its_upload_is_aborted() -> None:
    src, dst, _, obj = stores(20 * MiB)
    with pytest.raises(CopyPaused) as info:
        relay_object(src, dst, "src-b", obj, "dst-b", "out/big", keep_going=after(0))
    src.put_object("src-b", "big", b"new")
    with pytest.raises(StoreError) as failed:
        relay_object(src, dst, "src-b", obj, "dst-b", "out/big", upload_id=info.value.upload_id)
    assert failed.value.code == "PreconditionFailed" and dst.open_uploads == 0


def test_an_upload_that_is_gone_starts_over() -> None:
    src, dst, body, obj = stores(20 * MiB)
    with pytest.raises(CopyPaused) as info:
        relay_object(src, dst, "src-b", obj, "dst-b", "out/big", keep_going=after(0))
    dst.abort_multipart_upload("dst-b", "out/big", info.value.upload_id)
    relay_object(src, dst, "src-b", obj, "dst-b", "out/big", upload_id=info.value.upload_id)
    assert dst.get_body("dst-b", "out/big") == body and dst.calls["CreateMultipartUpload"] == 2


class Watch:
    """A batch run's side of a relay's upload (ops/batchrun.ItemWatch): what it heard, and the freeze."""

    def __init__(self) -> None:
        self.uploads: list[str] = []
        self.landed_parts = 0
        self.frozen = False

    def upload(self, upload_id: str) -> None:
        self.uploads.append(upload_id)

    def landed(self) -> None:
        self.landed_parts += 1

    def abandoned(self) -> bool:
        return self.frozen


def test_a_relay_frozen_mid_part_leaves_its_upload_to_the_child_which_finishes_it_with_one_upload(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The run working a relay is frozen while its third part is on the wire: the relay heard of the upload and the two
    parts that landed (no strike: it was progressing), and when its part fails at last it neither aborts the upload
    nor goes on; the child, given that upload, lists its parts and sends only the rest."""
    src, dst, body, obj = stores(45 * MiB + 123)  # six 8 MiB parts
    real = MemoryStore.upload_part
    release = threading.Event()

    def third_hangs_then_fails(self: MemoryStore, bucket: str, key: str, upload_id: str, number: int, *a: Any, **kw: Any) -> str:
        if number == 3 and not release.is_set():
            release.wait(10)
            raise StoreError("RequestTimeout", "the connection went silent", 400)
        return str(real(self, bucket, key, upload_id, number, *a, **kw))

    monkeypatch.setattr(MemoryStore, "upload_part", third_hangs_then_fails)
    watch = Watch()
    outcome: list[BaseException] = []

    def relay() -> None:
        try:
            relay_object(src, dst, "src-b", obj, "dst-b", "out/big", keep_going=lambda: not watch.frozen, watch=watch)
        except BaseException as exc:  # noqa: BLE001 - the test reads what the frozen relay ended with
            outcome.append(exc)

    frozen_lane = threading.Thread(target=relay)
    frozen_lane.start()
    deadline = time.monotonic() + 10
    while watch.landed_parts < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert watch.landed_parts == 2 and len(watch.uploads) == 1
    watch.frozen = True  # the worker's freeze: the object and its upload go on in a child batch
    release.set()
    frozen_lane.join(10)
    [ended] = outcome
    assert not isinstance(ended, CopyPaused) or ended.upload_id == watch.uploads[0]
    assert dst.open_uploads == 1 and dst.calls.get("AbortMultipartUpload", 0) == 0  # left open for the child
    relay_object(src, dst, "src-b", obj, "dst-b", "out/big", upload_id=watch.uploads[0])  # the child
    assert dst.get_body("dst-b", "out/big") == body
    assert dst.calls["CreateMultipartUpload"] == 1 and dst.open_uploads == 0
