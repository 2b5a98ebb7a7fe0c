"""The cost model's sizing logic: CPU-bound workers cost the same GB-seconds at any size, latency-bound ones more."""

from __future__ import annotations

import pytest

from bench.cost_model import LATENCY_S, THREADS, per_million, render, worker_sizing


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
