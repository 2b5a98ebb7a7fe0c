"""A point in time: copy takes each key as it was at source.as_of, rewind makes every key under the prefix so in place
(restoring a version, or a delete marker for a key that did not exist), no version is ever deleted, and `s3bulk undo`
of the rewind's journal brings the later state back."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from s3bulk.job import JobError, parse_job
from s3bulk.local.engine import Engine
from s3bulk.local.ledger import LocalLedger
from s3bulk.local.plan import make_plan
from s3bulk.local.run import execute, guard_deletes
from s3bulk.local.undo import undo_log
from s3bulk.testing.memstore import MemoryStore

T0 = datetime(2026, 11, 1, tzinfo=UTC)
AS_OF = T0 + timedelta(days=10)


class Clock:
    def __init__(self) -> None:
        self.at = T0

    def __call__(self) -> datetime:
        return self.at


def history() -> tuple[MemoryStore, Clock, dict[str, bytes | None]]:
    """A versioned prefix with a life before and after AS_OF; returns what each key was at AS_OF (None: absent)."""
    clock = Clock()
    s = MemoryStore(page_size=4)
    s.now = clock
    s.create_bucket("vers-b")
    s.enable_versioning("vers-b")
    s.put_object("vers-b", "p/overwritten", b"old", last_modified=T0)
    s.put_object("vers-b", "p/deleted-later", b"kept then", last_modified=T0)
    s.put_object("vers-b", "p/untouched", b"same", last_modified=T0)
    s.put_object("vers-b", "p/gone-then", b"short-lived", last_modified=T0)
    clock.at = T0 + timedelta(days=2)
    s.delete_object("vers-b", "p/gone-then")  # a delete marker before AS_OF
    s.put_object("vers-b", "p/back-after", b"first life", last_modified=T0 + timedelta(days=1))
    clock.at = T0 + timedelta(days=3)
    s.delete_object("vers-b", "p/back-after")
    # After AS_OF: an overwrite, a delete, a new key, and a key that comes back.
    s.put_object("vers-b", "p/overwritten", b"new", last_modified=AS_OF + timedelta(hours=1))
    clock.at = AS_OF + timedelta(hours=2)
    s.delete_object("vers-b", "p/deleted-later")
    s.put_object("vers-b", "p/created-after", b"fresh", last_modified=AS_OF + timedelta(hours=3))
    s.put_object("vers-b", "p/back-after", b"second life", last_modified=AS_OF + timedelta(hours=4))
    clock.at = AS_OF + timedelta(days=1)
    then = {
        "p/overwritten": b"old",
        "p/deleted-later": b"kept then",
        "p/untouched": b"same",
        "p/gone-then": None,
        "p/back-after": None,
        "p/created-after": None,
    }
    return s, clock, then


def state(s: MemoryStore) -> dict[str, bytes | None]:
    keys = {o.key for o in s.list_versions_page("vers-b", "p/", max_keys=1000).objects}
    out: dict[str, bytes | None] = {}
    for key in sorted(keys):
        try:
            out[key] = s.get_body("vers-b", key)
        except Exception:  # noqa: BLE001 - a delete marker is current
            out[key] = None
    return out


def rewind(s: MemoryStore, log: io.StringIO | None = None, **extra: Any) -> dict[str, Any]:
    doc = {"operation": "rewind", "source": {"bucket": "vers-b", "prefix": "p/", "versions": {"as_of": AS_OF.isoformat()}}, **extra}
    return Engine(parse_job(json.dumps(doc)), s, concurrency=3, key_log=log).run().summary()


def test_a_rewind_leaves_every_key_as_it_was_at_the_instant_and_deletes_no_version() -> None:
    s, _, then = history()
    versions_before = {k: len(s.versions("vers-b", k)) for k in then}
    summary = rewind(s)
    assert (summary["succeeded"], summary["skipped"], summary["failed"]) == (4, 2, 0), summary
    assert state(s) == then
    # Restored versions and delete markers are new versions: nothing was deleted for good.
    assert all(
        len(s.versions("vers-b", k)) == versions_before[k] + 1
        for k in ("p/overwritten", "p/deleted-later", "p/created-after", "p/back-after")
    )
    assert len(s.versions("vers-b", "p/untouched")) == versions_before["p/untouched"]
    again = rewind(s)  # already as it was: a second rewind changes nothing
    assert (again["succeeded"], again["skipped"]) == (0, 6) and state(s) == then


def test_undo_of_a_rewind_brings_the_later_state_back_and_leaves_a_key_changed_since() -> None:
    s, clock, _ = history()
    later = state(s)
    log = io.StringIO()
    rewind(s, log)
    clock.at += timedelta(hours=1)
    s.put_object("vers-b", "p/overwritten", b"edited after the rewind")
    result = undo_log(io.BytesIO(log.getvalue().encode()), s)
    assert (result.restored, result.changed_since, result.failed) == (3, 1, 0)
    assert state(s) == {**later, "p/overwritten": b"edited after the rewind"}


def test_copy_as_of_copies_each_key_that_existed_then_as_it_was() -> None:
    s, _, then = history()
    s.create_bucket("dst-b")
    doc = {
        "operation": "copy",
        "source": {"bucket": "vers-b", "prefix": "p/", "as_of": AS_OF.isoformat()},
        "destination": {"bucket": "dst-b", "prefix": "t/"},
    }
    summary = Engine(parse_job(json.dumps(doc)), s, concurrency=3).run().summary()
    assert (summary["succeeded"], summary["failed"]) == (3, 0)
    copied = {o.key: s.get_body("dst-b", o.key) for o in s.list_page("dst-b", "t/").objects}
    assert copied == {"t/" + k[2:]: v for k, v in then.items() if v is not None}


def test_plan_counts_a_rewinds_copies_and_delete_markers_and_nothing_for_keys_already_as_they_were() -> None:
    s, _, _ = history()
    job = parse_job(json.dumps({"operation": "rewind", "source": {"bucket": "vers-b", "prefix": "p/", "as_of": AS_OF.isoformat()}}))
    plan = make_plan(job, s)
    assert plan.requests.get("CopyObject") == 2 and plan.requests.get("DeleteObject") == 2 and plan.requests.get("HeadObject") == 2
    assert state(s)["p/overwritten"] == b"new"  # a plan changes nothing


def test_a_bucket_without_versioning_is_refused_before_anything_is_touched() -> None:
    s = MemoryStore()
    s.create_bucket("plain-b")
    s.put_object("plain-b", "p/a", b"x")
    doc = {"operation": "rewind", "source": {"bucket": "plain-b", "prefix": "p/", "as_of": AS_OF.isoformat()}}
    report = Engine(parse_job(json.dumps(doc)), s, concurrency=2).run()
    assert report.summary()["succeeded"] == 0 and "versioning" in str(report.summary().get("error"))
    assert s.get_body("plain-b", "p/a") == b"x"


@pytest.mark.parametrize(
    ("source", "field"),
    [
        ({"bucket": "vers-b", "prefix": "p/"}, "job.source.as_of"),
        ({"bucket": "vers-b", "prefix": "p/", "as_of": "2026-11-01T00:00:00Z", "versions": "all"}, "job.source.versions"),
        ({"bucket": "vers-b", "prefix": "p/", "versions": {"as_of": "yesterday"}}, "job.source.versions"),
    ],
)
def test_a_rewind_without_a_usable_time_is_refused_naming_the_field(source: dict[str, Any], field: str) -> None:
    with pytest.raises(JobError) as err:
        parse_job(json.dumps({"operation": "rewind", "source": source}))
    assert str(err.value).startswith(field) and "\n" not in str(err.value)


def _rewind_job(**options: Any) -> Any:
    doc = {"operation": "rewind", "source": {"bucket": "vers-b", "prefix": "p/", "as_of": AS_OF.isoformat()}, "options": options}
    return parse_job(json.dumps(doc))


def test_max_delete_counts_only_the_keys_a_rewind_hides_under_a_delete_marker() -> None:
    s, _, then = history()
    later = state(s)
    # Two keys did not exist at AS_OF and exist now (created-after, back-after): two markers; the restores are no deletes.
    with pytest.raises(
        JobError, match=r"^job\.options\.max_delete: the job would delete 2 keys \(each hidden under a delete marker\), over max_delete 1"
    ):
        guard_deletes(_rewind_job(max_delete=1), s)
    assert state(s) == later and s.calls.get("CopyObject", 0) == 0  # counted, nothing changed
    assert guard_deletes(_rewind_job(max_delete=2), s) == 2
    summary = Engine(_rewind_job(max_delete=2), s, concurrency=3).run().summary()
    assert (summary["status"], summary["succeeded"]) == ("succeeded", 4) and state(s) == then


def test_a_rewind_that_would_hide_more_keys_after_its_count_stops_before_passing_max_delete() -> None:
    s, _, _ = history()
    job = _rewind_job(max_delete=2, batch_size=1)
    assert guard_deletes(job, s) == 2
    for i in range(3):  # keys written after the count (and after AS_OF): each one more delete marker
        s.put_object("vers-b", f"p/z-late-{i}", b"late", last_modified=AS_OF + timedelta(days=2))
    report = Engine(job, s, concurrency=1).run()
    assert report.error is not None and report.error.startswith("job.options.max_delete: the selection grew past 2"), report.error
    now = state(s)
    hidden = [k for k in ("p/back-after", "p/created-after", "p/z-late-0", "p/z-late-1", "p/z-late-2") if now[k] is None]
    assert hidden == ["p/back-after", "p/created-after"]  # the two counted; none of the late keys


def test_a_rewind_canary_checks_its_sample_against_as_of_and_the_resume_does_the_rest(tmp_path: Path) -> None:
    s, _, then = history()
    job = _rewind_job(canary=3)
    ledger = LocalLedger.create(tmp_path, "rewind-canary", job)
    first = execute(job, s, concurrency=2, console=Console(file=io.StringIO()), quiet=True, ledger=ledger)
    ledger.close()
    assert (first.summary()["status"], first.summary()["listed"], first.exit_code) == ("canary", 3, 0), first.summary()
    assert state(s) != then  # only the sample
    rest = execute(
        job, s, concurrency=2, console=Console(file=io.StringIO()), quiet=True, ledger=LocalLedger.open(tmp_path, "rewind-canary")
    )
    assert (rest.summary()["status"], rest.summary()["failed"]) == ("succeeded", 0) and state(s) == then


def test_a_rewind_canary_that_finds_a_key_not_as_it_was_fails_naming_it(tmp_path: Path) -> None:
    s, _, _ = history()
    job = _rewind_job(canary=6)

    def keeps_it(bucket: str, key: str, *, version_id: str = "") -> None:  # a server that answers 204 and deletes nothing
        return None

    s.delete_object = keeps_it  # type: ignore[method-assign]
    console = Console(file=io.StringIO())
    report = execute(job, s, concurrency=2, console=console, quiet=True, ledger=LocalLedger.create(tmp_path, "bad", job))
    assert (report.summary()["status"], report.summary()["failed"], report.exit_code) == ("failed", 0, 1), report.summary()
    assert report.error is not None and report.error.startswith("canary: p/back-after: it is there, and it did not exist"), report.error


def test_verify_as_of_compares_each_copy_with_the_version_the_key_had_then() -> None:
    s, _, _ = history()
    s.create_bucket("dst-b")
    src = {"bucket": "vers-b", "prefix": "p/", "as_of": AS_OF.isoformat()}
    copy = {"operation": "copy", "source": src, "destination": {"bucket": "dst-b", "prefix": "t/"}}
    Engine(parse_job(json.dumps(copy)), s, concurrency=3).run()
    verify = parse_job(json.dumps({**copy, "operation": "verify"}))
    good = Engine(verify, s, concurrency=3).run().summary()
    assert (good["succeeded"], good["failed"]) == (3, 0), good
    # The copy of overwritten holds what the key held at AS_OF ("old"), not today's "new": verify as of now would fail it.
    now = Engine(parse_job(json.dumps({**copy, "operation": "verify", "source": {"bucket": "vers-b", "prefix": "p/"}})), s, concurrency=3)
    assert now.run().summary()["failed"] >= 1
    s.put_object("dst-b", "t/untouched", b"spoilt")  # a copy that differs from the version then
    bad = Engine(verify, s, concurrency=3).run()
    assert bad.summary()["failed"] == 1 and [f["key"] for f in bad.tally.failures()] == ["p/untouched"]


def test_a_copy_as_of_to_another_endpoint_relays_each_version_then_and_verify_as_of_agrees() -> None:
    s, _, then = history()
    s.put_tags("vers-b", "p/overwritten", {"era": "now"})  # today's tags; the version then has none
    there = MemoryStore()
    there.create_bucket("dst-b")
    src = {"bucket": "vers-b", "prefix": "p/", "as_of": AS_OF.isoformat(), "endpoint_url": "https://other.example:9000"}
    copy = {"operation": "copy", "source": src, "destination": {"bucket": "dst-b", "prefix": "t/"}}
    summary = Engine(parse_job(json.dumps(copy)), s, dst_store=there, concurrency=3).run().summary()
    assert (summary["succeeded"], summary["failed"]) == (3, 0), summary
    copied = {o.key: there.get_body("dst-b", o.key) for o in there.list_page("dst-b", "t/").objects}
    assert copied == {"t/" + k[2:]: v for k, v in then.items() if v is not None}  # "old", not today's "new"
    assert there.get("dst-b", "t/overwritten").tags == {}
    verify = Engine(parse_job(json.dumps({**copy, "operation": "verify"})), s, dst_store=there, concurrency=3).run().summary()
    assert (verify["succeeded"], verify["failed"]) == (3, 0), verify
