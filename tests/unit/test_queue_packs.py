"""SendMessageBatch calls hold at most 10 messages and 1 MiB of bodies, in the messages' order."""

from __future__ import annotations

from typing import Any

from s3bulk.aws.queue import MAX_BATCH_BYTES, QueueSender, packs


def test_long_unicode_messages_are_cut_by_bytes_as_well_as_count() -> None:
    body = "键" * 66_000  # 198,000 UTF-8 bytes: about one message's worth of 300-character CJK keys
    cut = packs([f"{i}{body}" for i in range(23)])
    assert [len(p) for p in cut] == [5, 5, 5, 5, 3]
    assert all(sum(len(b.encode()) for b in p) <= MAX_BATCH_BYTES for p in cut)
    assert [b[:2] for p in cut for b in p] == [f"{i}{body}"[:2] for i in range(23)]  # order kept
    assert [len(p) for p in packs(["x"] * 23)] == [10, 10, 3]


def test_the_sender_never_makes_a_call_sqs_would_refuse() -> None:
    class Sqs:
        def __init__(self) -> None:
            self.calls: list[list[dict[str, Any]]] = []

        def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
            assert len(Entries) <= 10 and sum(len(e["MessageBody"].encode()) for e in Entries) <= MAX_BATCH_BYTES
            self.calls.append(Entries)
            return {"Successful": [{"Id": e["Id"]} for e in Entries]}

    class Msg:
        def __init__(self, body: str) -> None:
            self.body = body

        def encode(self) -> str:
            return self.body

    sqs = Sqs()
    QueueSender(sqs, "url").send([Msg("é" * 100_000) for _ in range(12)])  # type: ignore[misc]
    assert sum(len(c) for c in sqs.calls) == 12 and len(sqs.calls) == 3
