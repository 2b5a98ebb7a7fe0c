"""Undelete (delete with source.versions "delete-markers") journals each key it brings back, so `s3bulk undo` hides
it again under a new delete marker, leaving alone a key written since."""

from __future__ import annotations

import io
import json

from s3bulk.job import parse_job
from s3bulk.local.engine import Engine
from s3bulk.local.plan import make_plan
from s3bulk.local.undo import undo_log
from s3bulk.store import StoreError
from s3bulk.testing.memstore import MemoryStore

N = 60
JOB = {"operation": "delete", "source": {"bucket": "undel-b", "prefix": "d/", "versions": "delete-markers"}, "options": {"batch_size": 25}}


def deleted_prefix() -> MemoryStore:
    s = MemoryStore(page_size=7)
    s.create_bucket("undel-b")
    s.enable_versioning("undel-b")
    for i in range(N):
        s.put_object("undel-b", f"d/{i:03d}", b"first")
        s.put_object("undel-b", f"d/{i:03d}", f"last of {i}".encode())
        s.delete_object("undel-b", f"d/{i:03d}")
    s.put_object("undel-b", "d/alive", b"never deleted")
    return s


def current(s: MemoryStore, key: str) -> bytes | None:
    try:
        return s.get_body("undel-b", key)
    except StoreError:
        return None


def test_an_undelete_brings_back_each_keys_last_version_and_undo_hides_each_again_except_one_written_since() -> None:
    s = deleted_prefix()
    log = io.StringIO()
    summary = Engine(parse_job(json.dumps(JOB)), s, concurrency=3, key_log=log).run().summary()
    assert (summary["succeeded"], summary["failed"]) == (N, 0)
    assert all(current(s, f"d/{i:03d}") == f"last of {i}".encode() for i in range(N))
    entries = [json.loads(line)["undo"] for line in log.getvalue().splitlines() if '"undo"' in line]
    assert len(entries) == N and all(e["what"] == "version" and e["before"] == "" and "etag" in e["after"] for e in entries)

    s.put_object("undel-b", "d/007", b"written after the undelete")
    result = undo_log(io.BytesIO(log.getvalue().encode()), s)
    assert (result.restored, result.changed_since, result.failed) == (N - 1, 1, 0)
    assert [i for i in range(N) if current(s, f"d/{i:03d}") is not None] == [7]
    assert current(s, "d/alive") == b"never deleted"
    # Undo deletes nothing for good: each key's versions are all there, under one more delete marker.
    assert all(len(s.versions("undel-b", f"d/{i:03d}")) == 3 for i in range(N) if i != 7)  # first, last, the new marker


def test_an_undelete_whose_journal_read_fails_still_counts_the_key_and_says_it_was_not_journaled() -> None:
    s = deleted_prefix()
    s.faults.append(lambda op, b, k: StoreError("AccessDenied", "no HEAD here", 403) if op == "HeadObject" and k == "d/003" else None)
    log = io.StringIO()
    summary = Engine(parse_job(json.dumps(JOB)), s, concurrency=3, key_log=log).run().summary()
    assert (summary["succeeded"], summary["failed"]) == (N, 0)
    [line] = [json.loads(x) for x in log.getvalue().splitlines() if '"d/003"' in x]
    assert line["outcome"] == "succeeded" and line["undo"] is None and "not journaled: AccessDenied" in line["message"]


def test_plan_counts_an_undeletes_journal_heads() -> None:
    plan = make_plan(parse_job(json.dumps(JOB)), deleted_prefix())
    assert (plan.objects, plan.journal.get("HeadObject")) == (N, N)
