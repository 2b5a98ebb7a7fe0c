"""Throttling and server faults injected at the HTTP layer in front of SeaweedFS: every object lands exactly once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest

from s3bulk.job import parse_job
from s3bulk.local.engine import Engine
from s3bulk.s3.faststore import FastS3Store
from s3bulk.s3.stores import S3Store
from s3bulk.testing.faultproxy import FaultPlan, FaultProxy
from tests.integration.conftest import client_for
from tests.integration.helpers import assert_exact_copy, list_keys, seed_small

pytestmark = pytest.mark.slow

N = 600


def port_of(endpoint: str) -> int:
    return int(urlsplit(endpoint).port or 0)


def store_for(endpoint: str, path: str) -> S3Store:
    client = client_for(endpoint, 72)
    return FastS3Store(client, 72) if path == "fast" else S3Store(client)


def job(op: str, src: str, dst: str | None = None) -> Any:
    doc: dict[str, Any] = {"operation": op, "source": {"bucket": src, "prefix": "in/"}}
    if dst:
        doc["destination"] = {"bucket": dst, "prefix": "out/"}
    return parse_job(__import__("json").dumps(doc))


@pytest.mark.parametrize(
    ("slowdown", "path"),
    [(0.10, "fast"), (0.10, "botocore"), (0.50, "fast")],
)
def test_copy_under_slowdown_500s_and_200_errors_copies_every_object_exactly(
    seaweed: str, bucket_factory: Callable[[Any, str], str], slowdown: float, path: str
) -> None:
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    expected = seed_small(direct, src, "in/", N)
    plan = FaultPlan(slowdown=slowdown, internal_error=0.05, copy_200_error=0.05, seed=7)
    with FaultProxy(port_of(seaweed), plan) as proxy:
        report = Engine(job("copy", src, dst), store_for(proxy.endpoint_url, path), concurrency=32).run()
    summary = report.summary()
    assert (summary["succeeded"], summary["failed"]) == (N, 0), summary
    assert_exact_copy(direct, dst, "out/", {"out/" + k[3:]: v for k, v in expected.items()})
    injected = sum(proxy.stats.injected.values())
    assert injected > N * slowdown * 0.8  # the faults really happened
    assert proxy.stats.forwarded["CopyObject"] + proxy.stats.injected["Copy200Error"] >= N
    # Every injected fault cost exactly one retry: an HTTP retry, or an object's extra round once those ran out.
    assert summary["retries"] + summary["object_retries"] == injected, (summary, proxy.stats.injected)


def test_delete_under_half_slowdown_removes_every_key(seaweed: str, bucket_factory: Callable[[Any, str], str]) -> None:
    direct = client_for(seaweed)
    src = bucket_factory(direct, "src")
    seed_small(direct, src, "in/", N)
    seed_small(direct, src, "keep/", 50)
    with FaultProxy(port_of(seaweed), FaultPlan(slowdown=0.5, internal_error=0.1, seed=3)) as proxy:
        report = Engine(job("delete", src), store_for(proxy.endpoint_url, "fast"), concurrency=8).run()
    assert (report.summary()["succeeded"], report.summary()["failed"]) == (N, 0)
    assert proxy.stats.injected["SlowDown"] > 0
    assert list_keys(direct, src, "in/") == []
    assert len(list_keys(direct, src, "keep/")) == 50


def test_move_under_faults_never_loses_an_object(seaweed: str, bucket_factory: Callable[[Any, str], str]) -> None:
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    expected = seed_small(direct, src, "in/", N)
    plan = FaultPlan(slowdown=0.3, internal_error=0.05, copy_200_error=0.05, seed=11)
    with FaultProxy(port_of(seaweed), plan) as proxy:
        report = Engine(job("move", src, dst), store_for(proxy.endpoint_url, "fast"), concurrency=32).run()
    assert (report.summary()["succeeded"], report.summary()["failed"]) == (N, 0)
    assert list_keys(direct, src, "in/") == []
    assert_exact_copy(direct, dst, "out/", {"out/" + k[3:]: v for k, v in expected.items()})


def test_faults_beyond_every_retry_are_reported_per_key_not_lost(seaweed: str, bucket_factory: Callable[[Any, str], str]) -> None:
    """A server that always throttles: the job ends (no hang) with every object reported failed, sources intact."""
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    seed_small(direct, src, "in/", 20)
    doc = job("move", src, dst).model_dump(mode="json")
    doc["options"]["object_retries"] = 0
    with FaultProxy(port_of(seaweed), FaultPlan(internal_error=1.0)) as proxy:
        client = client_for(proxy.endpoint_url, 8)
        client.meta.config.retries["max_attempts"] = 2
        report = Engine(parse_job(__import__("json").dumps(doc)), FastS3Store(client, 8), concurrency=8).run()
    summary = report.summary()
    assert (summary["succeeded"], summary["failed"]) == (0, 20)
    assert {f["error"] for f in report.tally.failures()} == {"InternalError"}
    assert len(list_keys(direct, src, "in/")) == 20  # a move whose copy failed keeps its source
    assert report.exit_code == 1
