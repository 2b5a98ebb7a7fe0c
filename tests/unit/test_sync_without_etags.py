"""skip-unchanged on a server whose listings carry no ETag (issue 50): the modification time never decides alone.

Both objects are HEADed (their ETags and checksums); where those cannot decide either, the object is copied and the
report counts it."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from s3bulk.job import parse_job
from s3bulk.local.engine import Engine
from s3bulk.report import SIZE_ONLY, UNDECIDED_COPIED
from s3bulk.source.sync import Decision, decide
from s3bulk.store import ListPage, ObjectHead, ObjectInfo
from s3bulk.testing.memstore import MemoryStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class NoListedEtags(MemoryStore):
    """A server whose ListObjectsV2 entries carry no ETag (HEAD still sends one, unless `heads_too`)."""

    def __init__(self, *, heads_too: bool = False) -> None:
        super().__init__()
        self.heads_too = heads_too

    def list_page(self, *args: Any, **kwargs: Any) -> ListPage:
        page = super().list_page(*args, **kwargs)
        return replace(page, objects=[replace(o, etag="") for o in page.objects])

    def head_object(self, bucket: str, key: str, *, version_id: str = "") -> ObjectHead:
        head = super().head_object(bucket, key, version_id=version_id)
        return replace(head, etag="") if self.heads_too else head


def seeded(store: MemoryStore) -> MemoryStore:
    """Four same-size pairs, each destination written after its source: two unchanged, two changed in place."""
    store.create_bucket("src-b")
    store.create_bucket("dst-b")
    for name, src, dst in [
        ("same1", b"aaaa", b"aaaa"),
        ("same2", b"bbbb", b"bbbb"),
        ("new1", b"cccc", b"CCCC"),
        ("new2", b"dddd", b"DDDD"),
    ]:
        store.put_object("src-b", f"data/{name}", src, last_modified=T0)
        store.put_object("dst-b", f"mirror/{name}", dst, last_modified=T0 + timedelta(hours=1))
    return store


def sync(store: MemoryStore, tmp_path: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    doc = {
        "operation": "copy",
        "source": {"bucket": "src-b", "prefix": "data/"},
        "destination": {"bucket": "dst-b", "prefix": "mirror/"},
        "options": {"if_exists": "skip-unchanged"},
    }
    keys = tmp_path / "keys.jsonl"
    with keys.open("w", encoding="utf-8") as out:
        report = Engine(parse_job(json.dumps(doc)), store, concurrency=2, key_log=out).run()
    return report.summary(), {line["key"]: line for line in map(json.loads, keys.read_text().splitlines())}


def test_a_changed_object_of_the_same_size_under_an_older_source_is_copied_when_the_listing_has_no_etags(tmp_path: Path) -> None:
    store = seeded(NoListedEtags())
    report, _ = sync(store, tmp_path)
    assert (report["succeeded"], report["skipped"], report["failed"]) == (2, 2, 0)
    assert store.get_body("dst-b", "mirror/new1") == b"cccc" and store.get_body("dst-b", "mirror/new2") == b"dddd"
    assert store.calls["CopyObject"] == 2
    assert store.calls["HeadObject"] == 2 * 4  # both objects of each same-size pair; the copies' ETags confirm them
    assert UNDECIDED_COPIED not in report  # the HEADs' ETags decided every pair


def test_where_not_even_a_head_carries_an_etag_every_same_size_object_is_copied_and_counted(tmp_path: Path) -> None:
    store = seeded(NoListedEtags(heads_too=True))
    report, lines = sync(store, tmp_path)
    assert (report["succeeded"], report["skipped"]) == (4, 0)
    assert report[UNDECIDED_COPIED] == 4
    assert report[SIZE_ONLY] == 4  # nor can the copies be compared with their sources: their size confirms them
    assert all(store.get_body("dst-b", f"mirror/{n}") == store.get_body("src-b", f"data/{n}") for n in ("same1", "new1"))
    assert "no ETag or checksum could say whether it was unchanged" in lines["data/same1"]["result"]


def test_a_listing_without_etags_leaves_the_decision_to_both_heads_and_copies_where_they_cannot_decide() -> None:
    src, older_dst = ObjectInfo("k", 4, "", T0), ObjectInfo("k", 4, "", T0 + timedelta(hours=1))
    assert decide("skip-unchanged", src, older_dst) == Decision(False, recheck=False)
    assert decide("skip-unchanged", src, replace(older_dst, size=5)) == Decision(False)  # another size: no HEAD needed
    assert decide("skip-unchanged", replace(src, etag='"e"'), replace(older_dst, etag='"e"')) == Decision(True)
