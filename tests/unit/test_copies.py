"""Small objects cost one CopyObject; large ones are parallel, guarded, complete or aborted."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from s3bulk.job import MiB
from s3bulk.ops.copies import MAX_PARTS, CopyPaused, CopySettings, copy_in_place, copy_object, part_ranges
from s3bulk.ops.executor import BoundedExecutor
from s3bulk.s3.params import apply_carry
from s3bulk.store import Carried, Encryption, ObjectInfo, StoreError
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


@pytest.mark.parametrize("size", [1024, 12 * MiB], ids=["single-copy", "multipart"])
def test_an_in_place_copy_redone_with_the_stale_listing_copies_nothing_and_fails_nothing(
    store: MemoryStore, parts: BoundedExecutor, size: int
) -> None:
    """A retry or a redelivered batch carries the listing's ETag, which the first copy changed (a multipart or
    SSE-KMS ETag never survives a copy): the HEAD, finding the class already changed, decides."""
    store.put_object("src-b", "k", b"z" * size, etag='"0123456789abcdef0123456789abcdef-2"')
    listed = ObjectInfo("k", size, '"0123456789abcdef0123456789abcdef-2"')
    settings = CopySettings(multipart_threshold=8 * MiB, part_size=5 * MiB, storage_class="STANDARD_IA")
    first = copy_in_place(store, parts, "src-b", listed, settings)
    again = copy_in_place(store, parts, "src-b", listed, settings)
    assert first.done is not None and again.done is None
    assert store.get("src-b", "k").storage_class == "STANDARD_IA" and again.head.etag == first.done.etag
    assert store.calls.get("CopyObject", 0) + store.calls.get("CreateMultipartUpload", 0) == 1


def test_a_retention_that_has_ended_is_not_named_again_on_the_copy(store: MemoryStore, parts: BoundedExecutor) -> None:
    """HEAD keeps reporting a retention after its date; S3 refuses a retain-until date in the past."""
    store.put_object("src-b", "old", b"o")
    store.put_object("src-b", "live", b"l")
    ended, running = datetime.now(UTC) - timedelta(days=1), datetime.now(UTC) + timedelta(days=30)
    store.put_retention("src-b", "live", "GOVERNANCE", running)
    with store._lock:  # an ended retention cannot be put any more: write it as time would have left it
        store.get("src-b", "old").retention = ("GOVERNANCE", ended)
    settings = CopySettings(multipart_threshold=8 * MiB, part_size=5 * MiB, storage_class="GLACIER_IR")
    for key in ("old", "live"):
        assert copy_in_place(store, parts, "src-b", ObjectInfo(key, 1), settings).done is not None
    assert (store.get("src-b", "old").retention, store.get("src-b", "live").retention) == (None, ("GOVERNANCE", running))


def test_carried_grants_and_encryption_become_the_parameters_s3_takes_on_a_copy() -> None:
    kwargs: dict[str, object] = {"Bucket": "b", "ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "the-jobs-key"}
    owner = {"ID": "owner-id"}
    grants = [
        {"Grantee": {"Type": "CanonicalUser", **owner}, "Permission": "FULL_CONTROL"},
        {"Grantee": {"Type": "Group", "URI": "http://acs.amazonaws.com/groups/global/AllUsers"}, "Permission": "READ"},
        {"Grantee": {"Type": "Group", "URI": "http://acs.amazonaws.com/groups/global/AllUsers"}, "Permission": "WRITE"},
    ]
    apply_carry(kwargs, Carried(Encryption("AES256"), {"Owner": owner, "Grants": grants}, None, True))
    assert kwargs == {
        "Bucket": "b",
        "ServerSideEncryption": "AES256",  # the job's KMS key id does not stay beside it
        "GrantFullControl": 'id="owner-id"',
        "GrantRead": 'uri="http://acs.amazonaws.com/groups/global/AllUsers"',  # WRITE: no GrantWrite on a copy
        "ObjectLockLegalHoldStatus": "ON",
    }


def _countdown(parts_allowed: int) -> tuple[list[int], Callable[[], bool]]:
    """A keep_going that says yes `parts_allowed` times, then no (the invocation's deadline)."""
    asked = [0]

    def keep_going() -> bool:
        asked[0] += 1
        return asked[0] <= parts_allowed

    return asked, keep_going


def test_a_multipart_copy_paused_at_a_deadline_goes_on_from_its_upload_and_copies_each_part_once(
    store: MemoryStore, parts: BoundedExecutor
) -> None:
    body = bytes(range(256)) * (23 * MiB // 256)  # 23 MiB: five 5 MiB parts
    store.put_object("src-b", "big", body, metadata={"m": "1"}, tags={"t": "v"})
    obj = listed(store, "big")
    upload = ""
    invocations = 0
    for allowed in (2, 1, 99):  # three invocations: two parts, one part, the rest
        invocations += 1
        _, keep_going = _countdown(allowed)
        try:
            done = copy_object(store, parts, "src-b", obj, "dst-b", "big", SETTINGS, keep_going=keep_going, upload_id=upload)
            break
        except CopyPaused as paused:
            assert paused.parts_total == 5 and paused.parts_done == {2: 2, 1: 3}[allowed]
            upload = paused.upload_id
    assert invocations == 3 and done.multipart
    assert store.get_body("dst-b", "big") == body
    assert (store.get("dst-b", "big").metadata, store.get("dst-b", "big").tags) == ({"m": "1"}, {"t": "v"})
    assert store.calls["UploadPartCopy"] == 5  # each part copied once across the three invocations
    assert (store.calls["CreateMultipartUpload"], store.calls["ListParts"], store.calls.get("AbortMultipartUpload", 0)) == (1, 2, 0)
    assert store.open_uploads == 0


def test_a_paused_copy_whose_upload_is_gone_starts_a_new_one(store: MemoryStore, parts: BoundedExecutor) -> None:
    body = b"z" * (12 * MiB)
    store.put_object("src-b", "big", body)
    obj = listed(store, "big")
    _, keep_going = _countdown(1)
    with pytest.raises(CopyPaused) as paused:
        copy_object(store, parts, "src-b", obj, "dst-b", "big", SETTINGS, keep_going=keep_going)
    store.abort_multipart_upload("dst-b", "big", paused.value.upload_id)  # a lifecycle rule reaped it meanwhile
    done = copy_object(store, parts, "src-b", obj, "dst-b", "big", SETTINGS, upload_id=paused.value.upload_id)
    assert done.multipart and store.get_body("dst-b", "big") == body
    assert store.calls["CreateMultipartUpload"] == 2 and store.open_uploads == 0


def test_a_paused_copy_whose_source_changed_meanwhile_fails_and_aborts_its_upload(store: MemoryStore, parts: BoundedExecutor) -> None:
    store.put_object("src-b", "big", b"a" * (12 * MiB))
    obj = listed(store, "big")
    _, keep_going = _countdown(1)
    with pytest.raises(CopyPaused) as paused:
        copy_object(store, parts, "src-b", obj, "dst-b", "big", SETTINGS, keep_going=keep_going)
    store.put_object("src-b", "big", b"b" * (12 * MiB))  # overwritten between two invocations
    with pytest.raises(StoreError) as err:
        copy_object(store, parts, "src-b", obj, "dst-b", "big", SETTINGS, upload_id=paused.value.upload_id)
    assert err.value.code == "PreconditionFailed" and store.open_uploads == 0
    assert "big" not in store.keys("dst-b")


def test_a_paused_upload_holding_parts_of_another_size_is_aborted_and_started_again(store: MemoryStore, parts: BoundedExecutor) -> None:
    body = b"q" * (16 * MiB)
    store.put_object("src-b", "big", body)
    obj = listed(store, "big")
    _, keep_going = _countdown(2)
    with pytest.raises(CopyPaused) as paused:
        copy_object(store, parts, "src-b", obj, "dst-b", "big", SETTINGS, keep_going=keep_going)
    other = CopySettings(multipart_threshold=8 * MiB, part_size=6 * MiB)  # the job's part_size changed in between
    done = copy_object(store, parts, "src-b", obj, "dst-b", "big", other, upload_id=paused.value.upload_id)
    assert done.multipart and store.get_body("dst-b", "big") == body
    assert store.calls["AbortMultipartUpload"] == 1 and store.open_uploads == 0
