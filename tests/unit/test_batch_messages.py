"""Batch messages: cut by count, by message bytes and by the bytes of the objects they hold."""

from __future__ import annotations

from s3bulk.aws.messages import MAX_BATCH_OBJECT_BYTES, BatchMessage, pack
from s3bulk.store import UNKNOWN_SIZE, ObjectInfo

GiB = 1024**3


def sizes(messages: list[BatchMessage]) -> list[list[int]]:
    return [[o.size for o in m.objects()] for m in messages]


def test_a_page_of_large_objects_is_cut_so_no_batch_holds_more_bytes_than_one_invocation_moves() -> None:
    objs = [ObjectInfo(f"k{i}", 15 * GiB, "e") for i in range(7)]
    msgs = list(pack("job", 3, objs, 1000))
    assert sizes(msgs) == [[15 * GiB] * 2] * 3 + [[15 * GiB]]  # 40 GiB a batch at most: two of 15 GiB each
    assert [m.batch_id for m in msgs] == [f"000000003-{n:03d}" for n in range(4)]  # ids still derive from the page
    assert [o.key for m in msgs for o in m.objects()] == [o.key for o in objs]  # every object once, in order


def test_an_object_larger_than_the_cap_is_a_batch_of_its_own_and_small_ones_are_not_cut() -> None:
    objs = [ObjectInfo("a", 1, "e"), ObjectInfo("huge", MAX_BATCH_OBJECT_BYTES * 3, "e"), ObjectInfo("b", 1, "e")]
    assert sizes(list(pack("job", 0, objs, 1000))) == [[1], [MAX_BATCH_OBJECT_BYTES * 3], [1]]
    small = [ObjectInfo(f"k{i}", 1024, "e") for i in range(2500)]
    assert [len(m.items) for m in pack("job", 0, small, 1000)] == [1000, 1000, 500]


def test_manifest_rows_without_a_size_count_no_bytes() -> None:
    rows = [ObjectInfo(f"k{i}", UNKNOWN_SIZE, "") for i in range(30)]
    assert [len(m.items) for m in pack("job", 0, rows, 10, max_object_bytes=1)] == [10, 10, 10]


def test_a_delete_marker_stays_one_through_a_message_and_a_child_batch_and_costs_its_bytes() -> None:
    objs = [
        ObjectInfo(f"k{i}", 0 if i % 3 == 0 else 10, "" if i % 3 == 0 else "e", version_id=f"v{i}", delete_marker=i % 3 == 0)
        for i in range(9)
    ]
    [msg] = pack("job", 1, objs, max_items=100)
    back = BatchMessage.model_validate_json(msg.encode())
    assert [o.delete_marker for o in back.objects()] == [i % 3 == 0 for i in range(9)]
    child = back.rest(back.objects()[4:], {}, "attempt-1")
    assert [o.delete_marker for o in BatchMessage.model_validate_json(child.encode()).objects()] == [i % 3 == 0 for i in range(4, 9)]
    # The cut by bytes counts the marker list: every message stays under the cap.
    many = [ObjectInfo(f"key-{i:06d}", 0, "", version_id=f"version-{i:06d}", delete_marker=True) for i in range(3000)]
    assert all(len(m.encode()) <= 20_000 for m in pack("job", 2, many, max_items=1000, max_bytes=20_000))
