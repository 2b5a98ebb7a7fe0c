"""set-retention, set-legal-hold, set-acl and tag removal on the fake store: what each writes, what S3 refuses per key, and the stack's rules."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from s3bulk.aws.allowlist import AllowList
from s3bulk.job import JobError, parse_job
from s3bulk.local.engine import Engine
from s3bulk.local.plan import make_plan
from s3bulk.store import StoreError
from s3bulk.testing.memstore import MemoryStore

N = 40


def job(operation: str, **fields: Any) -> Any:
    return parse_job(json.dumps({"operation": operation, "source": {"bucket": "src-b", "prefix": "in/"}, **fields}))


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore(page_size=15)
    s.create_bucket("src-b")
    for i in range(N):
        s.put_object("src-b", f"in/{i:03d}", b"x", tags={"keep": "yes", "temp": "1", "review": "2"} if i % 2 else {"keep": "yes"})
    s.put_object("src-b", "out/other", b"x")
    return s


def run(store: MemoryStore, j: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The report's summary, with its failures under "failures", and the per-key log."""
    out = io.StringIO()
    report = Engine(j, store, concurrency=8, key_log=out).run()
    summary = {**report.summary(), "failures": list(report.tally.failures())}
    return summary, [json.loads(line) for line in out.getvalue().splitlines()]


def test_retention_is_set_on_every_selected_object_and_a_compliance_one_cannot_be_shortened(store: MemoryStore) -> None:
    locked = datetime(2040, 1, 1, tzinfo=UTC)
    store.put_retention("src-b", "in/005", "COMPLIANCE", locked)
    s, lines = run(store, job("set-retention", retention={"mode": "GOVERNANCE", "until": "2031-01-01T00:00:00Z"}))
    assert (s["succeeded"], s["failed"]) == (N - 1, 1)
    assert [(f["key"], f["error"]) for f in s["failures"]] == [("in/005", "AccessDenied")]
    assert store.get("src-b", "in/005").retention == ("COMPLIANCE", locked)  # untouched
    assert {store.get("src-b", f"in/{i:03d}").retention for i in range(N) if i != 5} == {("GOVERNANCE", datetime(2031, 1, 1, tzinfo=UTC))}
    assert store.get("src-b", "out/other").retention is None
    assert sum(1 for line in lines if line["outcome"] == "succeeded") == N - 1


def test_shortening_governance_needs_bypass_governance(store: MemoryStore) -> None:
    run(store, job("set-retention", retention={"mode": "GOVERNANCE", "until": "2035-01-01T00:00:00Z"}))
    shorter = {"mode": "GOVERNANCE", "until": "2030-01-01T00:00:00Z"}
    s, _ = run(store, job("set-retention", retention=shorter))
    assert (s["succeeded"], s["failed"]) == (0, N)
    s, _ = run(store, job("set-retention", retention={**shorter, "bypass_governance": True}))
    assert (s["succeeded"], s["failed"]) == (N, 0)
    assert store.get("src-b", "in/000").retention == ("GOVERNANCE", datetime(2030, 1, 1, tzinfo=UTC))


def test_legal_hold_and_acl_are_set_and_a_bucket_with_acls_disabled_fails_each_key_saying_why(store: MemoryStore) -> None:
    s, _ = run(store, job("set-legal-hold", legal_hold="ON"))
    assert s["succeeded"] == N and {store.get("src-b", f"in/{i:03d}").legal_hold for i in range(N)} == {"ON"}
    s, _ = run(store, job("set-acl", acl="bucket-owner-full-control"))
    assert s["succeeded"] == N and store.get("src-b", "in/017").acl == "bucket-owner-full-control"
    store.faults.append(
        lambda op, b, k: (
            StoreError("AccessControlListNotSupported", "The bucket does not allow ACLs", 400) if op == "PutObjectAcl" else None
        )
    )
    s, _ = run(store, job("set-acl", acl="public-read"))
    assert (s["succeeded"], s["failed"]) == (0, N)
    assert all("ACLs disabled" in f["message"] and "bucket policy" in f["message"] for f in s["failures"])


def test_tag_remove_takes_off_only_the_named_tags_and_skips_objects_without_them(store: MemoryStore) -> None:
    s, _ = run(store, job("tag", tagging={"mode": "remove", "keys": ["temp", "review"]}))
    assert (s["succeeded"], s["skipped"]) == (N // 2, N // 2)
    assert {tuple(store.get("src-b", f"in/{i:03d}").tags.items()) for i in range(N)} == {(("keep", "yes"),)}
    puts = store.calls.get("PutObjectTagging", 0)
    s, _ = run(store, job("tag", tagging={"mode": "remove", "keys": ["temp", "review"]}))
    assert (s["succeeded"], s["skipped"], store.calls.get("PutObjectTagging", 0)) == (0, N, puts)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"operation": "set-retention"}, r"^job\.retention: operation 'set-retention' needs retention"),
        (
            {"operation": "set-retention", "retention": {"mode": "GOVERNANCE", "until": "2030-01-01T00:00:00"}},
            r"^job\.retention\.until: .*timezone",
        ),
        ({"operation": "set-legal-hold", "legal_hold": "ON", "acl": "private"}, r"^job\.acl: acl is for operation 'set-acl'"),
        ({"operation": "set-acl", "acl": "private", "destination": {"bucket": "dst-b"}}, r"^job\.destination: destination is not allowed"),
        (
            {"operation": "tag", "tagging": {"mode": "remove", "keys": ["a"], "tags": {"a": "b"}}},
            r"^job\.tagging\.tags: mode remove takes keys",
        ),
        ({"operation": "tag", "tagging": {"mode": "merge", "keys": ["a"]}}, r"^job\.tagging\.keys: keys is for mode \"remove\""),
        ({"operation": "tag", "tagging": {"mode": "replace"}}, r"^job\.tagging\.tags: mode replace needs tags, .*write \{\} to remove"),
    ],
)
def test_a_bad_object_lock_acl_or_tag_removal_job_names_the_field(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(JobError, match=message):
        parse_job(json.dumps({"source": {"bucket": "src-b", "prefix": "in/"}, **fields}))


def test_the_stack_refuses_bypass_governance_unless_the_deployment_allows_it() -> None:
    j = job("set-retention", retention={"mode": "GOVERNANCE", "until": "2030-01-01T00:00:00Z", "bypass_governance": True})
    with pytest.raises(JobError, match=r"-c allow_object_lock=true"):  # least privilege: no Object Lock writes by default
        AllowList(frozenset({"src-b"}), frozenset({"src-b"}), frozenset()).check(j)
    allow = AllowList(frozenset({"src-b"}), frozenset({"src-b"}), frozenset(), object_lock=True)
    with pytest.raises(JobError, match=r"^job\.retention\.bypass_governance: .*-c allow_bypass_governance=true"):
        allow.check(j)
    AllowList(frozenset({"src-b"}), frozenset({"src-b"}), frozenset(), bypass_governance=True, object_lock=True).check(j)
    with pytest.raises(JobError, match=r"^job\.source\.bucket: 'src-b' is not in this deployment's write allow-list"):
        AllowList(frozenset({"src-b"}), frozenset(), frozenset()).check(job("set-acl", acl="private"))


def test_plan_counts_one_put_class_request_per_object(store: MemoryStore) -> None:
    for op, fields, call in (
        ("set-retention", {"retention": {"mode": "COMPLIANCE", "until": "2030-01-01T00:00:00Z"}}, "PutObjectRetention"),
        ("set-legal-hold", {"legal_hold": "OFF"}, "PutObjectLegalHold"),
        ("set-acl", {"acl": "private"}, "PutObjectAcl"),
    ):
        plan = make_plan(job(op, **fields), store)
        assert plan.requests == {"ListObjectsV2": 3, call: N}  # 41 keys in pages of 15, then one request per object
