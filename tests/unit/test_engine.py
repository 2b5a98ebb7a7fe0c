"""The engine end to end on the fake store: every selected object is counted exactly once."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from s3bulk.job import MiB, parse_job
from s3bulk.local.engine import Engine
from s3bulk.ops.batch import BatchRunner
from s3bulk.ops.executor import BoundedExecutor
from s3bulk.store import ListPage, StoreError
from s3bulk.testing.memstore import MemoryStore


def make_job(operation: str = "copy", **options: Any) -> Any:
    doc: dict[str, Any] = {"operation": operation, "source": {"bucket": "src-b", "prefix": "in/"}, "options": options}
    if operation != "delete":
        doc["destination"] = {"bucket": "dst-b", "prefix": "out/"}
    return parse_job(json.dumps(doc))


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore(page_size=100)
    s.create_bucket("src-b")
    s.create_bucket("dst-b")
    for i in range(1234):
        s.put_object("src-b", f"in/{i:05d}", f"body-{i}".encode())
    s.put_object("src-b", "other/x", b"not selected")
    return s


def test_copy_copies_every_selected_object_and_counts_match(store: MemoryStore) -> None:
    report = Engine(make_job(batch_size=100), store, concurrency=8).run()
    s = report.summary()
    assert (s["status"], s["listed"], s["succeeded"], s["failed"], s["skipped"]) == ("succeeded", 1234, 1234, 0, 0)
    assert s["bytes"] == sum(len(f"body-{i}") for i in range(1234))
    assert store.keys("dst-b") == [f"out/{i:05d}" for i in range(1234)]
    assert all(store.get_body("dst-b", f"out/{i:05d}") == f"body-{i}".encode() for i in range(1234))
    assert "HeadObject" not in store.calls


def test_move_deletes_sources_only_after_confirmed_copies(store: MemoryStore) -> None:
    report = Engine(make_job("move", batch_size=500), store, concurrency=8).run()
    assert report.summary()["succeeded"] == 1234
    assert store.keys("src-b") == ["other/x"]
    assert len(store.keys("dst-b")) == 1234
    assert store.calls["DeleteObjects"] == 3  # one per batch of 500
    assert "HeadObject" not in store.calls  # matching MD5 ETags confirmed every copy


def test_move_keeps_the_source_when_its_copy_fails(store: MemoryStore) -> None:
    store.faults.append(lambda op, b, k: StoreError("AccessDenied", "denied", 403) if op == "PutObject" and k == "out/00007" else None)
    report = Engine(make_job("move"), store, concurrency=4).run()
    s = report.summary()
    assert (s["status"], s["succeeded"], s["failed"]) == ("failed", 1233, 1)
    assert "in/00007" in store.keys("src-b")
    assert list(report.tally.failures()) == [
        {"key": "in/00007", "error": "AccessDenied", "message": "denied (check the credentials' permissions and bucket policy)"}
    ]


def test_move_with_unconfirmable_copy_keeps_the_source(store: MemoryStore) -> None:
    # a copy whose destination ends up with the wrong size must never delete the source
    real_copy = store.copy_object

    def short_copy(*args: Any, **kwargs: Any) -> str:
        real_copy(*args, **kwargs)
        if args[3] == "out/00003":
            store.put_object("dst-b", "out/00003", b"x")
        return '"not-the-source-etag"'

    store.copy_object = short_copy  # type: ignore[method-assign]
    report = Engine(make_job("move"), store, concurrency=4).run()
    failures = list(report.tally.failures())
    assert [(f["key"], f["error"]) for f in failures] == [("in/00003", "CopyNotConfirmed")]
    assert "in/00003" in store.keys("src-b")
    assert report.summary()["succeeded"] == 1233


def test_move_reports_a_source_that_could_not_be_deleted(store: MemoryStore) -> None:
    store.faults.append(lambda op, b, k: StoreError("AccessDenied", "locked") if op == "DeleteObject" and k == "in/00042" else None)
    report = Engine(make_job("move"), store, concurrency=4).run()
    [failure] = list(report.tally.failures())
    assert failure["key"] == "in/00042"
    assert failure["message"].startswith("copied, but the source could not be deleted")
    assert "out/00042" in store.keys("dst-b")


def test_delete_removes_only_selected_keys_in_batches_of_at_most_1000(store: MemoryStore) -> None:
    report = Engine(make_job("delete"), store, concurrency=4).run()
    assert report.summary()["succeeded"] == 1234
    assert store.keys("src-b") == ["other/x"]
    assert store.calls["DeleteObjects"] == 2


def test_dry_run_changes_nothing_and_reports_what_would_be_done(store: MemoryStore) -> None:
    report = Engine(make_job("delete", dry_run=True), store).run()
    s = report.summary()
    assert (s["status"], s["listed"], s["would_process"], s["succeeded"]) == ("dry-run", 1234, 1234, 0)
    assert s["bytes"] == sum(len(f"body-{i}") for i in range(1234))
    assert len(store.keys("src-b")) == 1235
    assert "DeleteObjects" not in store.calls and "CopyObject" not in store.calls


def test_a_dry_runs_bytes_are_those_of_the_objects_it_would_process_not_of_those_it_would_skip(store: MemoryStore) -> None:
    for i in range(0, 1234, 10):
        store.put_object("dst-b", f"out/{i:05d}", f"body-{i}".encode())  # already copied: a sync skips them
    s = Engine(make_job(if_exists="skip", dry_run=True), store, concurrency=4).run().summary()
    assert (s["status"], s["skipped"], s["would_process"]) == ("dry-run", 124, 1234 - 124)
    assert s["bytes"] == sum(len(f"body-{i}") for i in range(1234) if i % 10)
    assert store.keys("dst-b") == [f"out/{i:05d}" for i in range(0, 1234, 10)]


def test_skip_leaves_existing_destination_objects_untouched(store: MemoryStore) -> None:
    for i in range(0, 1234, 10):
        store.put_object("dst-b", f"out/{i:05d}", b"already here")
    report = Engine(make_job(if_exists="skip"), store, concurrency=4).run()
    s = report.summary()
    assert (s["succeeded"], s["skipped"], s["failed"]) == (1234 - 124, 124, 0)
    assert store.get_body("dst-b", "out/00010") == b"already here"
    assert store.get_body("dst-b", "out/00011") == b"body-11"


def test_move_with_skip_keeps_the_source_of_a_skipped_object(store: MemoryStore) -> None:
    store.put_object("dst-b", "out/00005", b"already here")
    Engine(make_job("move", if_exists="skip"), store, concurrency=4).run()
    assert store.keys("src-b") == ["in/00005", "other/x"]


def test_permanent_failures_are_reported_and_every_other_object_succeeds(store: MemoryStore, tmp_path: Path) -> None:
    store.faults.append(
        lambda op, b, k: StoreError("NoSuchKey", "gone", 404) if op == "CopyObject" and k in {"in/00100", "in/01000"} else None
    )
    report = Engine(make_job(), store, concurrency=8).run()
    report.write(tmp_path / "r.json")
    doc = json.loads((tmp_path / "r.json").read_text())
    assert (doc["status"], doc["succeeded"], doc["failed"]) == ("failed", 1232, 2)
    assert sorted(f["key"] for f in doc["failures"]) == ["in/00100", "in/01000"]
    assert {f["error"] for f in doc["failures"]} == {"NoSuchKey"}
    assert report.exit_code == 1


def test_report_has_the_documented_fields(store: MemoryStore, tmp_path: Path) -> None:
    Engine(make_job(), store).run().write(tmp_path / "r.json")
    doc = json.loads((tmp_path / "r.json").read_text())
    assert {"job_id", "operation", "status", "listed", "succeeded", "skipped", "failed", "bytes", "seconds", "failures"} <= doc.keys()


def test_listing_failure_fails_the_job_with_a_clear_error(store: MemoryStore) -> None:
    report = Engine(parse_job('{"operation":"delete","source":{"bucket":"missing-b","prefix":"x/"}}'), store).run()
    assert report.status == "failed"
    assert report.error is not None and "NoSuchBucket" in report.error
    assert report.exit_code == 1


def test_work_starts_before_listing_finishes() -> None:
    """Every listing call after the first page is held back until a copy from that page has completed."""
    store = MemoryStore(page_size=10)
    store.create_bucket("src-b")
    store.create_bucket("dst-b")
    for i in range(30):
        store.put_object("src-b", f"in/{i:02d}", b"x")
    copied = threading.Event()
    real_list, real_copy = store.list_page, store.copy_object
    source_pages: list[str] = []

    def list_page(bucket: str, prefix: str, *args: Any, **kwargs: Any) -> ListPage:
        if bucket == "src-b":
            if source_pages:
                assert copied.wait(5), "no copy ran while listing was still going"
            source_pages.append(prefix)
        return real_list(bucket, prefix, *args, **kwargs)

    def copy(*args: Any, **kwargs: Any) -> str:
        etag = real_copy(*args, **kwargs)
        copied.set()
        return etag

    store.list_page = list_page  # type: ignore[method-assign]
    store.copy_object = copy  # type: ignore[method-assign]
    report = Engine(make_job(batch_size=5), store, concurrency=2).run()
    assert report.error is None
    assert report.summary()["succeeded"] == 30


def test_large_objects_take_the_multipart_path_inside_a_job(store: MemoryStore) -> None:
    store.put_object("src-b", "in/zz-big", b"q" * (11 * MiB), content_type="text/plain", tags={"k": "v"})
    report = Engine(make_job(multipart_threshold=8 * MiB, part_size=5 * MiB), store, concurrency=4).run()
    assert report.summary()["succeeded"] == 1235
    assert store.calls["UploadPartCopy"] == 3
    assert store.get("dst-b", "out/zz-big").tags == {"k": "v"}
    assert store.get_body("dst-b", "out/zz-big") == b"q" * (11 * MiB)


def test_listing_never_runs_far_ahead_of_the_workers() -> None:
    """Bounded memory: objects listed but not finished stay within queue + in-flight limits."""
    from s3bulk.local.engine import QUEUE_BATCHES

    store = MemoryStore(page_size=50)
    store.create_bucket("src-b")
    store.create_bucket("dst-b")
    for i in range(5000):
        store.put_object("src-b", f"in/{i:05d}", size=1)
    engine = Engine(make_job("delete", batch_size=50), store, concurrency=2)
    real_delete = store.delete_objects
    ahead = []

    def slow_delete(bucket: str, keys: Any, version_ids: Any = ()) -> Any:
        snap = engine.tally.snapshot()
        ahead.append(snap.listed - snap.done)
        return real_delete(bucket, keys, version_ids)

    store.delete_objects = slow_delete  # type: ignore[method-assign]
    assert engine.run().summary()["succeeded"] == 5000
    # queued batches + in-flight tasks (2 x workers) + the batch being built + one listing page
    bound = (QUEUE_BATCHES + 2 * 2 + 2) * 50 + 50
    assert max(ahead) <= bound
    assert len(ahead) == 100


def test_ctrl_c_stops_the_job_reports_it_and_exits_130(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C raises KeyboardInterrupt in the main thread while it hands batches to the workers.

    It is raised there directly: a signal sent from a worker thread reaches the main thread only when
    CPython next runs its handlers, which in a loaded test process can be after the job has ended.
    """
    real_start = BatchRunner.start
    starts: list[int] = []

    def start_then_interrupt(self: BatchRunner, *args: Any, **kwargs: Any) -> Any:
        starts.append(1)
        if len(starts) == 3:
            raise KeyboardInterrupt
        return real_start(self, *args, **kwargs)

    monkeypatch.setattr(BatchRunner, "start", start_then_interrupt)
    report = Engine(make_job("move", batch_size=100), store, concurrency=2).run()
    assert report.interrupted and report.exit_code == 130
    assert report.error is not None and "interrupted" in report.error
    done = report.summary()["succeeded"]
    assert done < 1234
    # every source that is gone has its copy; every succeeded object was really moved
    moved_away = {f"in/{i:05d}" for i in range(1234)} - set(store.keys("src-b"))
    assert {"out/" + k[3:] for k in moved_away} <= set(store.keys("dst-b"))
    assert len(moved_away) == done


def test_ctrl_c_while_the_last_tasks_finish_still_ends_in_a_report(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every batch is handed out; the interrupt lands while the main thread waits for the pool to drain."""
    real_shutdown = BoundedExecutor.shutdown
    waits: list[bool] = []

    def interrupted_drain(self: BoundedExecutor, wait: bool = True, cancel_futures: bool = False) -> None:
        if wait and not cancel_futures and not waits and self.max_workers == 2:
            waits.append(True)
            raise KeyboardInterrupt
        real_shutdown(self, wait, cancel_futures)

    monkeypatch.setattr(BoundedExecutor, "shutdown", interrupted_drain)
    report = Engine(make_job("copy", batch_size=100), store, concurrency=2).run()
    assert waits == [True]
    assert report.interrupted and report.exit_code == 130
    assert report.summary()["succeeded"] + report.summary()["failed"] <= 1234


@pytest.mark.parametrize(("dst_prefix", "if_exists"), [("archive/", "overwrite"), ("archive/", "skip"), ("", "overwrite")])
def test_a_move_of_a_prefix_that_is_one_whole_key_never_writes_its_bytes_to_a_folders_name(dst_prefix: str, if_exists: str) -> None:
    store = MemoryStore()
    store.create_bucket("src-b")
    store.create_bucket("dst-b")
    store.put_object("src-b", "single/precious.dat", b"precious")
    store.put_object("src-b", "single/precious.dat.bak", b"backup")
    store.put_object("dst-b", "archive/", b"")  # a folder marker: a sync must not take it for the copy
    job = parse_job(json.dumps({
        "operation": "move",
        "source": {"bucket": "src-b", "prefix": "single/precious.dat", "raw_prefix": True},
        "destination": {"bucket": "dst-b", "prefix": dst_prefix},
        "options": {"if_exists": if_exists},
    }))  # fmt: skip
    report = Engine(job, store, concurrency=2).run()
    s = report.summary()
    assert (s["succeeded"], s["failed"], report.exit_code) == (1, 1, 1)
    [failure] = report.tally.failures()
    assert failure["key"] == "single/precious.dat" and failure["error"] == "InvalidDestinationKey"
    assert f"set destination.prefix to '{dst_prefix}precious.dat' with destination.raw_prefix: true" in failure["message"]
    assert store.keys("src-b") == ["single/precious.dat"]  # the source stays: nothing was copied
    assert store.get_body("dst-b", f"{dst_prefix}.bak") == b"backup"  # the key beside it mapped to a real name and moved
    assert store.get_body("dst-b", "archive/") == b""
