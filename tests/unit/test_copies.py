"""Small objects cost one CopyObject; large ones are parallel, guarded, complete or aborted."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from s3bulk.job import MiB
from s3bulk.ops.copies import MAX_PARTS, CopySettings, copy_object, part_ranges
from s3bulk.ops.executor import BoundedExecutor
from s3bulk.store import ObjectInfo, StoreError
from s3bulk.testing.memstore import MemoryStore

SETTINGS = CopySettings(multipart_threshold=8 * MiB, part_size=5 * MiB)


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore()
    s.create_bucket("src-b")
    s.create_bucket("dst-b")
    return s


@pytest.fixture
def parts() -> Iterator[BoundedExecutor]:
    with BoundedExecutor(4) as ex:
        yield ex


def listed(store: MemoryStore, key: str) -> ObjectInfo:
    return next(o for o in store.list_page("src-b", key).objects if o.key == key)


def test_part_ranges_cover_every_byte_once() -> None:
    ranges = part_ranges(12 * MiB + 1, 5 * MiB)
    assert ranges == [(0, 5 * MiB - 1), (5 * MiB, 10 * MiB - 1), (10 * MiB, 12 * MiB)]


def test_part_size_grows_to_stay_within_10000_parts() -> None:
    size = 5 * 1024**4  # 5 TiB, the S3 maximum
    ranges = part_ranges(size, 5 * MiB)
    assert len(ranges) <= MAX_PARTS
    assert ranges[-1][1] == size - 1
    assert all(b - a + 1 >= 5 * MiB for a, b in ranges[:-1])


def test_small_object_is_one_copy_object_with_no_head(store: MemoryStore, parts: BoundedExecutor) -> None:
    store.put_object("src-b", "k", b"hello", metadata={"a": "1"}, tags={"t": "v"})
    done = copy_object(store, parts, "src-b", listed(store, "k"), "dst-b", "k2", SETTINGS)
    assert not done.multipart
    assert store.calls == {"ListObjectsV2": 1, "CopyObject": 1}
    assert store.get_body("dst-b", "k2") == b"hello"
    assert store.get("dst-b", "k2").metadata == {"a": "1"}


def test_object_at_the_threshold_still_uses_copy_object(store: MemoryStore, parts: BoundedExecutor) -> None:
    store.put_object("src-b", "k", size=8 * MiB)
    assert not copy_object(store, parts, "src-b", listed(store, "k"), "dst-b", "k", SETTINGS).multipart


def test_large_object_multipart_copy_keeps_bytes_type_metadata_and_tags(store: MemoryStore, parts: BoundedExecutor) -> None:
    body = bytes(range(256)) * (12 * MiB // 256) + b"tail"
    store.put_object("src-b", "big", body, content_type="video/mp4", metadata={"origin": "cam"}, tags={"team": "media", "a b": "c&d"})
    done = copy_object(store, parts, "src-b", listed(store, "big"), "dst-b", "out/big", SETTINGS)
    assert done.multipart
    copied = store.get("dst-b", "out/big")
    assert store.get_body("dst-b", "out/big") == body
    assert (copied.content_type, copied.metadata, copied.tags) == ("video/mp4", {"origin": "cam"}, {"team": "media", "a b": "c&d"})
    assert store.calls["UploadPartCopy"] == 3
    assert store.open_uploads == 0


def test_failed_part_aborts_the_upload_and_raises(store: MemoryStore, parts: BoundedExecutor) -> None:
    store.put_object("src-b", "big", size=20 * MiB)
    store.faults.append(lambda op, b, k: StoreError("AccessDenied", "no", 403) if op == "UploadPartCopy" else None)
    with pytest.raises(StoreError) as info:
        copy_object(store, parts, "src-b", listed(store, "big"), "dst-b", "big", SETTINGS)
    assert info.value.code == "AccessDenied"
    assert store.calls["AbortMultipartUpload"] == 1
    assert store.open_uploads == 0
    assert "big" not in store.keys("dst-b")


def test_source_changed_after_listing_fails_the_precondition(store: MemoryStore, parts: BoundedExecutor) -> None:
    store.put_object("src-b", "big", b"a" * (9 * MiB))
    stale = listed(store, "big")
    store.put_object("src-b", "big", b"b" * (9 * MiB))
    with pytest.raises(StoreError) as info:
        copy_object(store, parts, "src-b", stale, "dst-b", "big", SETTINGS)
    assert info.value.code == "PreconditionFailed"
    assert "big" not in store.keys("dst-b")


def test_source_overwritten_mid_copy_is_caught_by_copy_source_if_match(store: MemoryStore, parts: BoundedExecutor) -> None:
    store.put_object("src-b", "big", b"a" * (11 * MiB))
    info = listed(store, "big")
    swapped: list[bool] = []

    def overwrite_after_first_part(op: str, bucket: str, key: str) -> StoreError | None:
        if op == "UploadPartCopy" and not swapped:
            swapped.append(True)
            store.put_object("src-b", "big", b"b" * (11 * MiB))
        return None

    store.faults.append(overwrite_after_first_part)
    with pytest.raises(StoreError) as err:
        copy_object(store, parts, "src-b", info, "dst-b", "big", SETTINGS)
    assert err.value.code == "PreconditionFailed"
    assert store.open_uploads == 0
