"""A resume after the failure breaker (s3bulk/aws/held.py): which failures of a counted batch are redone, and how."""

from __future__ import annotations

import json

from s3bulk.aws.held import plan_redo
from s3bulk.store import UNKNOWN_SIZE


def _part(*entries: dict[str, str]) -> bytes:
    return "".join(json.dumps(e) + "\n" for e in entries).encode()


PART = _part(
    {"key": "a.bin", "error": "AccessDenied", "message": "Access Denied"},
    {"key": "b.bin", "error": "SlowDown", "message": "Please reduce your request rate"},
    {"key": "c.bin", "error": "ManifestBucketMismatch", "message": "row names bucket other"},
    {"key": "d.bin", "error": "AccessDenied", "message": "version v9: Access Denied"},
    {"key": "e.bin", "error": "AccessDenied", "message": "extraneous destination object not deleted: Access Denied"},
)


def test_a_redo_takes_every_failed_object_and_keeps_the_failures_that_name_no_object_to_redo() -> None:
    redo = plan_redo("job", "0001-000000003-002", PART, "r0123456789a", batch_size=1000)
    assert (redo.failed, redo.throttled) == (3, 1)
    assert redo.keys == {"a.bin", "b.bin", "d.bin"}
    assert [k["key"] for k in redo.kept] == ["c.bin", "e.bin"]  # a refused manifest row, a sync's extraneous delete
    [msg] = redo.messages
    assert msg.alone and msg.batch_id == "0001-000000003-002~r0123456789a-000"
    objects = msg.objects()
    assert [(o.key, o.size, o.version_id) for o in objects] == [
        ("a.bin", UNKNOWN_SIZE, ""),
        ("b.bin", UNKNOWN_SIZE, ""),
        ("d.bin", UNKNOWN_SIZE, "v9"),
    ]


def test_the_same_part_and_try_give_the_same_batches_so_a_step_ended_before_its_send_sends_them_again() -> None:
    first = plan_redo("job", "b", PART, "rfeed", batch_size=2)
    again = plan_redo("job", "b", PART, "rfeed", batch_size=2)
    assert [m.encode() for m in first.messages] == [m.encode() for m in again.messages]
    assert [m.batch_id for m in first.messages] == ["b~rfeed-000", "b~rfeed-001"]  # batch_size holds
    assert all(m.alone for m in first.messages)
    child = first.messages[0].rest(first.messages[0].objects()[1:], {}, "attempt1")
    assert child.alone  # a redo batch's rest is still named by key only


def test_a_part_with_nothing_to_redo_takes_nothing() -> None:
    redo = plan_redo("job", "b", _part({"key": "c.bin", "error": "InvalidManifestRow", "message": "bad row"}), "rx", batch_size=10)
    assert (redo.failed, redo.messages, len(redo.kept)) == (0, [], 1)
