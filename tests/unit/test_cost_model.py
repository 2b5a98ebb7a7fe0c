"""The cost model's sizing logic: CPU-bound workers cost the same GB-seconds at any size, latency-bound ones more."""

from __future__ import annotations

import json

import pytest

from bench.cost_model import (
    LATENCY_S,
    THREADS,
    at_scale,
    batch_operations,
    lister_keys_per_s,
    per_million,
    render,
    s3_requests,
    worker_memory_for,
    worker_sizing,
    worker_threads_for,
)


def test_a_cpu_bound_worker_costs_the_same_gb_seconds_at_any_memory_size() -> None:
    small, larger = worker_sizing(0.6, 512), worker_sizing(0.6, 1024)
    assert larger.objects_per_s == pytest.approx(2 * small.objects_per_s)
    assert larger.gb_seconds == pytest.approx(small.gb_seconds)


def test_past_the_latency_bound_more_memory_only_costs_more() -> None:
    big, bigger = worker_sizing(0.6, 3008), worker_sizing(0.6, 10240)
    assert big.objects_per_s == bigger.objects_per_s == pytest.approx(THREADS / LATENCY_S)
    assert bigger.dollars > big.dollars


def test_orchestration_per_million_is_far_below_batch_operations_fees() -> None:
    total = sum(per_million(0.6, 1024, 50).values())
    assert 0 < total < 0.10
    assert "S3 Batch Operations" in render(0.6, "test")


def test_one_lister_pages_its_shard_one_step_after_another() -> None:
    # 80 ms LIST + 25 ms send and checkpoint + 20 ms of one core at 512/1,769 of a vCPU
    assert lister_keys_per_s() == pytest.approx(1000 / (0.080 + 0.025 + 0.020 * 1769 / 512))  # ~5,740
    assert lister_keys_per_s(1769) == pytest.approx(1000 / 0.125)


def test_at_100_million_objects_on_one_prefix_the_s3_put_limit_bounds_the_job_and_every_worker_waits_billed() -> None:
    r = at_scale(1e8, 16, 50, 1, 0.6)
    assert r.listing_per_s == pytest.approx(16 * lister_keys_per_s())  # ~92,000 keys/s: not the bottleneck
    assert r.workers_per_s == pytest.approx(50 * 1024 / 1769 * 1000 / 0.6)  # CPU-bound 1,024 MB workers, ~48,200/s
    assert (r.s3_per_s, r.per_s, r.bound) == (3500, 3500, "S3 PUT limit")
    assert r.seconds == pytest.approx(1e8 / 3500 + 0.08)  # ~7.9 h
    # 50 workers x 1 GB x 28,571.5 s, at $0.0000133334 per GB-s
    assert r.costs["Lambda workers (GB-s)"] == pytest.approx(50 * (1e8 / 3500 + 0.08) * 0.0000133334)  # ~$19.05
    # 100,000 messages of 100 KB: 2 requests to send, 2 to receive; 20,000 deletes; $0.40 per million
    assert r.costs["SQS (send, receive, delete)"] == pytest.approx((1e5 * 4 + 2e4) * 0.40 / 1e6)  # $0.168
    # 100,000 transactions of 4 WRU + 100,000 checkpoints of 1 WRU at $0.625/M, 100,000 reads at $0.125/M
    assert r.costs["DynamoDB (TransactWriteItems per batch, checkpoint per page)"] == pytest.approx(0.3125 + 0.0125)
    assert batch_operations(1e8) == pytest.approx(0.25 + 100 + 0.25)
    assert s3_requests(1e8) == pytest.approx(500 + (1e5 + 400) * 0.005 / 1000)


def test_one_shard_makes_listing_the_bound_once_s3_has_partitions_to_spare() -> None:
    r = at_scale(1e8, 1, 200, 100, 0.6)
    assert r.bound == "listing"
    assert r.seconds == pytest.approx(1e8 / lister_keys_per_s() + 0.08)  # ~4.4 h
    # Fed by one lister, workers run only as the messages keep them busy: the per-million cost, 100 times
    assert r.costs["Lambda workers (GB-s)"] == pytest.approx(100 * worker_sizing(0.6, 1024).dollars, rel=1e-4)
    assert "At scale: 100 M and 1 B" in render(0.6, "test")


def test_worker_threads_cover_the_cpu_rate_times_the_latency_within_what_large_bodies_fit() -> None:
    # 1,024 MB buys 0.579 vCPU: at 0.55 ms/object that is 1,053 objects/s, 31.6 in flight at 30 ms -> 32 threads.
    assert worker_threads_for(0.55, 1024) == 32
    # At 0.30 ms/object, 1,930 objects/s would want 64 in flight, but 64 threads' bodies (24 MiB each) need 2 GB.
    assert worker_threads_for(0.30, 1024) == 32
    assert worker_threads_for(0.30, 2048) == 64
    assert worker_threads_for(2.0, 1024) == 16  # a slow worker needs few in flight


def test_worker_memory_is_the_largest_cpu_bound_size_that_holds_its_threads_bodies() -> None:
    assert worker_memory_for(0.55, 32) == 1024  # 1,280 MB would outrun 32 threads' 1,067 objects/s
    assert worker_memory_for(0.30, 32) == 1024  # 512 MB is CPU-bound but cannot hold 32 threads' bodies
    assert worker_memory_for(0.30, 64) == 2048


def test_the_stacks_worker_defaults_are_the_models_for_the_measured_cpu_per_object() -> None:
    """infra/config.py's defaults are re-derived from docs/benchmarks.json whenever `make bench` changes the CPU per object."""
    from bench.cost_model import ROOT, measured_cpu_ms
    from infra.config import DeployConfig

    cpu_ms, _ = measured_cpu_ms(json.loads((ROOT / "docs" / "benchmarks.json").read_text()))
    defaults = DeployConfig(read_buckets=(), write_buckets=(), delete_buckets=())
    assert defaults.worker_threads == worker_threads_for(cpu_ms, defaults.worker_memory_mb)
    assert defaults.worker_memory_mb == worker_memory_for(cpu_ms, defaults.worker_threads)
