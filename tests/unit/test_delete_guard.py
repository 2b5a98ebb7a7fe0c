"""The delete guard on the fake store: the count is the run's own selection, and over the limit nothing is deleted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from s3bulk.aws.allowlist import AllowList
from s3bulk.aws.validation import validate
from s3bulk.job import JobError, parse_job
from s3bulk.local.engine import Engine
from s3bulk.local.run import guard_deletes
from s3bulk.source.listing import iter_objects
from s3bulk.testing.memstore import MemoryStore


def store() -> MemoryStore:
    s = MemoryStore(page_size=7)
    for b in ("src-b", "dst-b"):
        s.create_bucket(b)
    for i in range(50):
        s.put_object("src-b", f"in/{i:03d}.{'log' if i % 5 else 'keep'}", b"x")
    return s


def job(op: str = "delete", **options: Any) -> Any:
    doc: dict[str, Any] = {"operation": op, "source": {"bucket": "src-b", "prefix": "in/", "exclude": ["*.keep"]}, "options": options}
    if op == "move":
        doc["destination"] = {"bucket": "dst-b", "prefix": "moved/"}
    return parse_job(json.dumps(doc))


@pytest.mark.parametrize("op", ["delete", "move"])
def test_the_guard_counts_what_the_run_selects_and_over_the_limit_deletes_nothing(op: str) -> None:
    s = store()
    with pytest.raises(JobError, match=r"^job\.options\.max_delete: the job would delete 40 objects, over max_delete 39"):
        guard_deletes(job(op, max_delete=39), s)
    assert s.calls.get("DeleteObjects", 0) == s.calls.get("CopyObject", 0) == 0
    assert guard_deletes(job(op, max_delete=40), s) == 40  # the filter's 10 *.keep objects are not counted
    assert Engine(job(op, max_delete=40), s, concurrency=4).run().summary()["succeeded"] == 40


def test_max_delete_is_refused_where_nothing_is_deleted_and_for_a_sync_on_the_stack() -> None:
    with pytest.raises(JobError, match=r"^job\.options\.max_delete: max_delete guards deletes .* not 'tag'"):
        parse_job(
            json.dumps(
                {
                    "operation": "tag",
                    "source": {"bucket": "src-b", "prefix": "in/"},
                    "tagging": {"tags": {"a": "b"}},
                    "options": {"max_delete": 1},
                }
            )
        )
    sync = {
        "operation": "copy",
        "source": {"bucket": "src-b", "prefix": "in/"},
        "destination": {"bucket": "dst-b"},
        "options": {"max_delete": 10, "delete_extraneous": True},
    }
    allow = AllowList(frozenset({"src-b", "dst-b"}), frozenset({"dst-b"}), frozenset({"src-b", "dst-b"}))
    with pytest.raises(JobError, match=r"^job\.options\.max_delete: on the stack a sync finds its extraneous objects while it copies"):
        validate(sync, allow)
    validate({"operation": "delete", "source": {"bucket": "src-b", "prefix": "in/"}, "options": {"max_delete": 10}}, allow)


def test_a_count_that_fails_is_one_line_naming_the_guard_and_nothing_is_deleted() -> None:
    from s3bulk.store import StoreError

    s = store()
    s.faults.append(lambda op, b, k: StoreError("AccessDenied", "no listing for you", 403) if op == "ListObjectsV2" else None)
    with pytest.raises(JobError, match=r"^job\.options\.max_delete: counting the deletes failed \(AccessDenied: no listing for you\)"):
        guard_deletes(job("delete", max_delete=5), s)
    assert s.calls.get("DeleteObjects", 0) == 0


def test_the_stack_refuses_an_outage_window_its_workers_could_not_sit_out() -> None:
    doc = {"operation": "delete", "source": {"bucket": "src-b", "prefix": "in/"}, "options": {"outage_seconds": 301}}
    allow = AllowList(frozenset({"src-b"}), frozenset(), frozenset({"src-b"}))
    with pytest.raises(JobError, match=r"^job\.options\.outage_seconds: .* at most 300"):
        validate(doc, allow)
    doc["options"] = {"outage_seconds": 300}
    assert validate(doc, allow)["job_id"]


def test_a_selection_that_grew_after_the_count_is_still_never_deleted_past_the_limit() -> None:
    s = store()
    j = job("delete", max_delete=40, batch_size=7)
    assert guard_deletes(j, s) == 40
    for i in range(50, 70):  # new objects land between the count and the run
        s.put_object("src-b", f"in/{i:03d}.log", b"x")
    report = Engine(j, s, concurrency=4).run()
    summary = report.summary()
    assert summary["succeeded"] <= 40 and summary["status"] == "failed"
    assert report.error is not None and report.error.startswith("job.options.max_delete: the selection grew past 40")
    remaining = [o.key for o in iter_objects(s, "src-b", "in/") if o.key.endswith(".log")]
    assert len(remaining) == 60 - summary["succeeded"] >= 20


def test_a_shard_on_the_stack_knows_how_far_a_page_would_take_it_past_its_count() -> None:
    from s3bulk.aws.ledger import ListShard
    from s3bulk.aws.lister import past_count

    assert past_count(ListShard(3, "a", "b", sent=900), 10_000) == 0  # no count: no guard
    assert past_count(ListShard(3, "a", "b", sent=900, counted=1000), 100) == 0  # exactly up to its count
    assert past_count(ListShard(3, "a", "b", sent=900, counted=1000), 101) == 1
    assert past_count(ListShard(3, "a", "b", sent=1001, counted=1000, borrowed=1), 50) == 50  # what it borrowed is spent
