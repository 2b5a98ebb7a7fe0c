"""abort-uploads on the fake store: the contract, the listing of open uploads by Initiated, idempotence and dry runs."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from s3bulk.cli.remote import holds_for_confirmation
from s3bulk.job import JobError, parse_job
from s3bulk.local.engine import Engine
from s3bulk.local.plan import load_prices, make_plan, s3_cost, storage_saved
from s3bulk.source.listing import UploadsView, iter_objects
from s3bulk.source.shards import Shard, list_shard_page, plan_ranges
from s3bulk.store import StoreError
from s3bulk.testing.memstore import MemoryStore

CUTOFF = datetime(2026, 11, 1, tzinfo=UTC)
OLD, NEW = CUTOFF - timedelta(days=3), CUTOFF + timedelta(hours=1)


def job(**source: Any) -> Any:
    doc = {
        "operation": "abort-uploads",
        "source": {"bucket": "src-b", "prefix": "in/", "modified_before": "2026-11-01T00:00:00Z", **source},
    }
    options = source.pop("options", None)
    if options is not None:
        doc["options"] = options
        del doc["source"]["options"]  # type: ignore[attr-defined]
    return parse_job(json.dumps(doc))


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore(page_size=7)
    s.create_bucket("src-b")
    return s


def seed(store: MemoryStore) -> tuple[set[str], set[str]]:
    """Old and new uploads under in/ (several per key, some keys with an object too), and old ones elsewhere."""
    old, new = set(), set()
    for i in range(20):
        key = f"in/{i:03d}"
        if i % 3 == 0:
            store.put_object("src-b", key, b"a finished object")
        old.add(store.start_upload("src-b", key, initiated=OLD - timedelta(minutes=i), part_sizes=[5, 7]))
        if i % 2 == 0:  # a second, newer upload of the same key: still being written
            new.add(store.start_upload("src-b", key, initiated=NEW))
        if i % 5 == 0:  # a second old one of the same key
            old.add(store.start_upload("src-b", key, initiated=OLD))
    store.start_upload("src-b", "other/x", initiated=OLD)
    return old, new


def open_ids(store: MemoryStore, prefix: str = "") -> set[str]:
    return {o.upload_id for o in iter_objects(UploadsView(store), "src-b", prefix)}


def run(store: MemoryStore, j: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The summary (with `failures`, as report.json lists them) and the per-key log."""
    out = io.StringIO()
    report = Engine(j, store, concurrency=4, key_log=out).run()
    summary = {**report.summary(), "failures": list(report.tally.failures())}
    return summary, [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_job_without_modified_before_is_refused_naming_the_field() -> None:
    doc = {"operation": "abort-uploads", "source": {"bucket": "src-b", "prefix": "in/"}}
    with pytest.raises(JobError) as err:
        parse_job(json.dumps(doc))
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("job.source.modified_before: ")
    assert "add one" in message


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"min_size": 10}, "job.source.min_size"),
        ({"manifest": {"bucket": "man-b", "key": "inv/manifest.json", "format": "inventory"}}, "job.source.manifest"),
        ({"options": {"max_delete": 10}}, "job.options.max_delete"),
        ({"options": {"canary": 5}}, "job.options.canary"),
    ],
)
def test_object_only_settings_are_refused_naming_the_field(extra: dict[str, Any], field: str) -> None:
    with pytest.raises(JobError) as err:
        job(**extra)
    assert str(err.value).startswith(f"{field}: ")


def test_the_listing_pages_every_open_upload_in_key_order_however_many_a_key_has(store: MemoryStore) -> None:
    old, new = seed(store)
    listed = list(iter_objects(UploadsView(store), "src-b", "in/"))
    assert {o.upload_id for o in listed} == old | new  # each upload once, across pages of 7 cut at key boundaries
    assert len(listed) == len(old | new)
    assert [o.key for o in listed] == sorted(o.key for o in listed)
    assert {o.last_modified is not None and (o.last_modified <= OLD or o.last_modified == NEW) for o in listed} == {True}


def test_shards_planned_over_uploads_cover_each_upload_once(store: MemoryStore) -> None:
    ids = [store.start_upload("src-b", f"in/{i % 10}/{i:04d}", initiated=OLD) for i in range(400) for _ in range(1 + i % 2)]
    view = UploadsView(store)
    shards = plan_ranges(view, "src-b", "in/", 4)
    seen: list[str] = []
    for shard in shards:
        token = None
        while True:
            page = list_shard_page(view, "src-b", "in/", Shard(shard.after, shard.upto), token)
            seen += [o.upload_id for o in page.objects]
            if page.done:
                break
            token = page.next_token
    assert len(shards) > 1
    assert sorted(seen) == sorted(ids)


def test_only_uploads_initiated_before_the_cutoff_are_aborted(store: MemoryStore) -> None:
    old, new = seed(store)
    summary, lines = run(store, job())
    assert (summary["listed"], summary["succeeded"], summary["failed"]) == (len(old), len(old), 0)
    assert open_ids(store, "in/") == new
    assert len(open_ids(store, "other/")) == 1  # outside the prefix
    assert store.calls["AbortMultipartUpload"] == len(old)
    assert {line["upload_id"] for line in lines} == old
    assert store.keys("src-b") == [f"in/{i:03d}" for i in range(0, 20, 3)]  # objects under the same keys untouched


def test_an_upload_already_gone_counts_as_done(store: MemoryStore) -> None:
    old, _ = seed(store)
    gone = sorted(old)[:3]
    store.faults.append(
        lambda op, bucket, key: (
            StoreError("NoSuchUpload", "The specified upload does not exist", 404)
            if op == "AbortMultipartUpload" and key in {"in/000", "in/001"}
            else None
        )
    )
    summary, lines = run(store, job())
    assert (summary["succeeded"], summary["failed"]) == (len(old), 0)
    assert sum(1 for line in lines if line["result"] == "already gone (NoSuchUpload)") == 3  # in/000 has two old uploads
    assert gone  # the seed made some


def test_a_rerun_after_every_abort_finds_nothing_to_do(store: MemoryStore) -> None:
    _, new = seed(store)
    run(store, job())
    summary, _ = run(store, job())
    assert (summary["listed"], summary["succeeded"]) == (0, 0)
    assert open_ids(store, "in/") == new


def test_another_error_fails_that_upload_with_its_key_code_and_upload_id(store: MemoryStore) -> None:
    old, _ = seed(store)
    store.faults.append(
        lambda op, bucket, key: (
            StoreError("AccessDenied", "Access Denied", 403) if op == "AbortMultipartUpload" and key == "in/004" else None
        )
    )
    summary, _ = run(store, job())
    assert summary["failed"] == 1 and summary["succeeded"] == len(old) - 1
    (failure,) = summary["failures"]
    assert failure["key"] == "in/004" and failure["error"] == "AccessDenied"
    assert failure["message"].startswith("upload upload-")
    assert failure["message"].split(":")[0].removeprefix("upload ") in open_ids(store, "in/004")


def test_a_dry_run_counts_the_old_uploads_and_aborts_none(store: MemoryStore) -> None:
    old, new = seed(store)
    summary, lines = run(store, job(options={"dry_run": True}))
    assert summary["status"] == "dry-run"
    assert summary["listed"] == len(old)
    assert open_ids(store, "in/") == old | new
    assert "AbortMultipartUpload" not in store.calls and lines == []


def test_the_plan_counts_old_uploads_their_parts_bytes_and_one_list_parts_each(store: MemoryStore) -> None:
    old, _ = seed(store)
    store.start_upload("src-b", "in/big", initiated=OLD, part_sizes=[5 * 1024**3] * 2)
    plan = make_plan(job(), store)
    uploads = len(old) + 1
    assert (plan.objects, plan.bytes) == (uploads, 20 * (5 + 7) + 10 * 1024**3)  # the second old uploads hold no parts
    assert plan.requests["ListParts"] == uploads and plan.requests["AbortMultipartUpload"] == uploads
    assert plan.requests["ListMultipartUploads"] >= 1
    assert store.open_uploads == uploads + 10 + 1  # the plan aborted nothing (10 new, 1 outside the prefix)
    prices = load_prices()
    # ListParts and the listing are LIST requests (PUT class); an abort is a DELETE, which is free.
    listing = plan.requests["ListParts"] + plan.requests["ListMultipartUploads"]
    assert s3_cost(plan.requests, prices) == pytest.approx(listing / 1000 * prices["s3_put_copy_post_list_per_1000"])
    assert storage_saved(plan, prices) == pytest.approx(plan.bytes / 1024**3 * prices["s3_standard_gb_month"])
    assert storage_saved(plan, {k: v for k, v in prices.items() if k != "s3_standard_gb_month"}) is None


def test_an_abort_uploads_job_is_asked_about_and_held_for_confirmation() -> None:
    assert holds_for_confirmation(job(), yes=False)
    assert not holds_for_confirmation(job(), yes=True)
