"""The whole hostile-key corpus (tests/corpus.py), including keys moto cannot route, through the engine on the fake store."""

from __future__ import annotations

import json
from typing import Any

import pytest

from s3bulk.job import parse_job
from s3bulk.local.engine import Engine
from s3bulk.testing.memstore import MemoryStore
from tests.corpus import CASES, body_of

KEYS = [c.key for c in CASES]


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore(page_size=7)
    s.create_bucket("src")
    s.create_bucket("dst")
    for case in CASES:
        s.put_object("src", case.key, body_of(case))
    return s


def run(store: MemoryStore, doc: dict[str, Any]) -> dict[str, Any]:
    report = Engine(parse_job(json.dumps(doc)), store, concurrency=4).run()
    return report.summary() | {"failures": list(report.tally.failures())}


def test_corpus_has_at_least_thirty_distinct_cases() -> None:
    assert len(set(KEYS)) == len(KEYS) >= 30


@pytest.mark.parametrize("operation", ["copy", "move"])
def test_every_key_arrives_byte_exact(store: MemoryStore, operation: str) -> None:
    summary = run(store, {"operation": operation, "source": {"bucket": "src"}, "destination": {"bucket": "dst"}})
    assert (summary["succeeded"], summary["failures"]) == (len(KEYS), [])
    assert {k: store.get_body("dst", k) for k in store.keys("dst")} == {c.key: body_of(c) for c in CASES}
    assert store.keys("src") == ([] if operation == "move" else sorted(KEYS))


def test_delete_removes_every_key(store: MemoryStore) -> None:
    summary = run(store, {"operation": "delete", "source": {"bucket": "src", "all": True}})
    assert (summary["succeeded"], summary["failures"]) == (len(KEYS), [])
    assert store.keys("src") == []


def test_each_case_gets_its_expected_outcome_under_a_prefix(store: MemoryStore) -> None:
    summary = run(store, {"operation": "move", "source": {"bucket": "src"}, "destination": {"bucket": "dst", "prefix": "x/"}})
    failed = {f["key"]: f["error"] for f in summary["failures"]}
    for case in CASES:
        assert failed.get(case.key, "ok") == case.under_prefix, case.why
    # A move never deletes a source whose copy failed.
    assert sorted(store.keys("src")) == sorted(failed)
