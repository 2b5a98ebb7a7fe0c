"""DeleteObjects: at most 1,000 keys a request, per-key errors read from the 200 response."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from s3bulk.ops.delete import delete_keys
from s3bulk.store import KeyFailure, StoreError
from s3bulk.testing.memstore import MemoryStore


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore()
    s.create_bucket("b-b")
    for i in range(10):
        s.put_object("b-b", f"k{i}", b"x")
    return s


def test_deletes_every_key_in_one_request(store: MemoryStore) -> None:
    assert delete_keys(store, "b-b", [f"k{i}" for i in range(10)]) == []
    assert store.keys("b-b") == []
    assert store.calls["DeleteObjects"] == 1


def test_more_than_1000_keys_is_a_caller_bug() -> None:
    with pytest.raises(ValueError):
        delete_keys(MemoryStore(), "b-b", ["k"] * 1001)


def test_per_key_permanent_errors_are_returned_not_raised(store: MemoryStore) -> None:
    store.faults.append(lambda op, b, k: StoreError("AccessDenied", "locked") if k == "k3" else None)
    failures = delete_keys(store, "b-b", [f"k{i}" for i in range(10)], sleep=lambda s: None)
    assert [(f.key, f.code) for f in failures] == [("k3", "AccessDenied")]
    assert store.keys("b-b") == ["k3"]
    assert store.calls["DeleteObjects"] == 1


def test_per_key_throttling_is_retried_until_it_clears(store: MemoryStore) -> None:
    seen: dict[str, int] = {}

    def flaky(op: str, bucket: str, key: str) -> StoreError | None:
        seen[key] = seen.get(key, 0) + 1
        return StoreError("SlowDown", "reduce rate") if key in {"k1", "k2"} and seen[key] < 3 else None

    store.faults.append(flaky)
    assert delete_keys(store, "b-b", [f"k{i}" for i in range(10)], sleep=lambda s: None) == []
    assert store.calls["DeleteObjects"] == 3
    assert store.keys("b-b") == []


def test_per_key_retries_are_bounded_and_then_reported(store: MemoryStore) -> None:
    store.faults.append(lambda op, b, k: StoreError("InternalError", "boom") if k == "k0" else None)
    failures = delete_keys(store, "b-b", ["k0", "k1"], attempts=4, sleep=lambda s: None)
    assert [(f.key, f.code) for f in failures] == [("k0", "InternalError")]
    assert store.calls["DeleteObjects"] == 4


def test_permanent_and_retryable_failures_are_both_kept(store: MemoryStore) -> None:
    store.faults.append(lambda op, b, k: StoreError("AccessDenied") if k == "k0" else StoreError("SlowDown") if k == "k1" else None)
    failures = delete_keys(store, "b-b", ["k0", "k1", "k2"], attempts=2, sleep=lambda s: None)
    assert sorted((f.key, f.code) for f in failures) == [("k0", "AccessDenied"), ("k1", "SlowDown")]


def test_a_whole_request_failure_fails_every_key_with_its_code(store: MemoryStore) -> None:
    def boom(bucket: str, keys: Sequence[str], version_ids: Sequence[str] = ()) -> list[KeyFailure]:
        raise StoreError("AccessDenied", "denied", 403)

    store.delete_objects = boom  # type: ignore[method-assign]
    failures = delete_keys(store, "b-b", ["k0", "k1"], sleep=lambda s: None)
    assert [(f.key, f.code) for f in failures] == [("k0", "AccessDenied"), ("k1", "AccessDenied")]
    assert store.keys("b-b") == [f"k{i}" for i in range(10)]


def test_keys_xml_cannot_carry_go_one_by_one_and_the_rest_in_one_request(store: MemoryStore) -> None:
    odd = ["ctrl\x01key", "nonchar\uffff", "bell\x07"]
    for key in odd:
        store.put_object("b-b", key, b"x")
    assert delete_keys(store, "b-b", [*odd, "k0", "k1"]) == []
    assert sorted(store.keys("b-b")) == [f"k{i}" for i in range(2, 10)]
    assert (store.calls["DeleteObjects"], store.calls["DeleteObject"]) == (1, 3)


def test_a_single_key_delete_failure_is_reported_with_its_code(store: MemoryStore) -> None:
    store.put_object("b-b", "ctrl\x01key", b"x")
    store.faults.append(lambda op, b, k: StoreError("AccessDenied", "locked", 403) if op == "DeleteObject" and "\x01" in k else None)
    failures = delete_keys(store, "b-b", ["ctrl\x01key", "k0"], sleep=lambda s: None)
    assert [(f.key, f.code) for f in failures] == [("ctrl\x01key", "AccessDenied")]
    assert "k0" not in store.keys("b-b")


def test_a_retry_of_versions_sends_the_version_ids_again_even_when_the_server_names_none() -> None:
    store = MemoryStore()
    store.create_bucket("b-b")
    store.enable_versioning("b-b")
    for n in range(3):
        store.put_object("b-b", "k", f"{n}".encode())
    [(v0, _), (v1, _), (v2, _)] = store.versions("b-b", "k")
    sent: list[list[tuple[str, str]]] = []
    real = store.delete_objects

    def flaky(bucket: str, keys: Sequence[str], version_ids: Sequence[str] = ()) -> list[KeyFailure]:
        sent.append(list(zip(keys, version_ids or [""] * len(keys), strict=True)))
        if len(sent) == 1:  # a 200 with a per-key SlowDown that names the key but not its version
            return [KeyFailure("k", "SlowDown", "slow down")]
        return real(bucket, keys, version_ids)

    store.delete_objects = flaky  # type: ignore[method-assign]
    assert delete_keys(store, "b-b", ["k", "k"], version_ids=[v0, v1], sleep=lambda s: None) == []
    assert sent[1] == [("k", v0), ("k", v1)]  # never ("k", ""): that would hide the current version behind a marker
    assert [v for v, _ in store.versions("b-b", "k")] == [v2]
