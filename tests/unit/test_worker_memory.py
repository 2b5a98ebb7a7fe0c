"""The worker-memory rule: a relay or process job is refused at Validate when the deployment's workers cannot stream
it, and a worker sizes its body budget so that a job Validate lets through cannot outgrow the function's memory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from s3bulk.aws import env
from s3bulk.aws.allowlist import AllowList
from s3bulk.aws.validation import validate
from s3bulk.bodies.memory import (
    BODY_MB_PER_THREAD,
    DEFAULT_WORKER,
    MIN_BODY_BUDGET_MB,
    RUNTIME_MB,
    MiB,
    WorkerSize,
    body_budget_mb,
    check_worker_memory,
    memory_needed_mb,
    streaming_threads,
    streams_bodies,
)
from s3bulk.job import JobError, parse_job
from s3bulk.ops.pools import PART_WORKERS

SECRET = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:other-keys"
ALLOW = AllowList(
    frozenset({"src-b", "dst-b"}),
    frozenset({"dst-b"}),
    frozenset(),
    secrets=frozenset({SECRET}),
    endpoints=frozenset({(SECRET, "https://s3.other.example")}),
    sides=frozenset({(SECRET, "source"), (SECRET, "destination")}),
)
COPY: dict[str, Any] = {"operation": "copy", "source": {"bucket": "src-b"}, "destination": {"bucket": "dst-b"}}
RELAY: dict[str, Any] = {**COPY, "options": {"transfer": "relay"}}
ACROSS: dict[str, Any] = {**COPY, "source": {"bucket": "src-b", "endpoint_url": "https://s3.other.example", "credentials_secret": SECRET}}
PROCESS: dict[str, Any] = {**COPY, "operation": "process", "process": {"function": "tools:run"}}
REMOTE: dict[str, Any] = {
    **PROCESS,
    "process": {"batchops_lambda": "arn:aws:lambda:eu-west-1:123456789012:function:fn"},
}


def job(doc: dict[str, Any]) -> Any:
    return parse_job(json.dumps(doc))


def test_only_relays_and_process_code_in_the_worker_stream_bodies() -> None:
    assert [streams_bodies(job(d)) for d in (COPY, RELAY, ACROSS, PROCESS, REMOTE)] == [False, True, True, True, False]


def test_a_streaming_job_needs_the_runtime_the_least_budget_and_24_mib_a_thread() -> None:
    assert BODY_MB_PER_THREAD == 24  # one 8 MiB range, one 8 MiB part, one 8 MiB write buffer (docs/process.md)
    assert memory_needed_mb(job(RELAY), 32) == RUNTIME_MB + MIN_BODY_BUDGET_MB + 32 * 24 == 928
    assert memory_needed_mb(job(PROCESS), 64) == RUNTIME_MB + MIN_BODY_BUDGET_MB + 64 * 24 == 1696
    assert memory_needed_mb(job(COPY), 1000) == memory_needed_mb(job(REMOTE), 1000) == RUNTIME_MB


def test_the_rules_default_worker_is_the_deployments_default_worker() -> None:
    from infra.config import DeployConfig

    defaults = DeployConfig(read_buckets=(), write_buckets=(), delete_buckets=())
    assert (DEFAULT_WORKER.memory_mb, DEFAULT_WORKER.threads) == (defaults.worker_memory_mb, defaults.worker_threads)


def test_at_the_default_1024_mb_a_streaming_job_fits_with_a_128_mib_budget_where_a_quarter_would_not() -> None:
    need = memory_needed_mb(job(RELAY), 32, body_budget_mb(1024, 32))
    assert body_budget_mb(1024, 32) == 128
    assert need == 1024
    # The quarter of the memory the budget was before: 128 + 256 + 32 x 24 = 1,152 MB in a 1,024 MB function.
    assert memory_needed_mb(job(RELAY), 32, 1024 // 4) > 1024


@pytest.mark.parametrize("memory_mb", [512, 768, 1024, 1280, 1769, 2048, 3008, 10240])
def test_a_worker_with_no_more_threads_than_fit_never_budgets_past_its_memory(memory_mb: int) -> None:
    for threads in range(1, streaming_threads(memory_mb) + 1):
        budget = body_budget_mb(memory_mb, threads)
        assert MIN_BODY_BUDGET_MB <= budget <= memory_mb // 4
        assert memory_needed_mb(job(PROCESS), threads, budget) <= memory_mb
        check_worker_memory(job(PROCESS), WorkerSize(memory_mb, threads))
    with pytest.raises(JobError):
        check_worker_memory(job(PROCESS), WorkerSize(memory_mb, streaming_threads(memory_mb) + 1))


def test_the_worker_takes_its_body_budget_from_its_own_memory_and_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"AWS_DEFAULT_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x"}.items():
        monkeypatch.setenv(name, value)
    for memory, threads, budget in (("1024", "32", 128), ("2048", "32", 512), ("1024", "8", 256)):
        cfg = env.AwsConfig.from_env({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": memory, "S3BULK_CONCURRENCY": threads})
        assert env.worker_service(cfg).budget.limit == budget * MiB


def test_jobs_that_hold_no_bodies_run_on_the_request_pool_and_streaming_jobs_on_the_threads_their_memory_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    cfg = env.AwsConfig.from_env({"S3BULK_CONCURRENCY": "32", "S3BULK_REQUEST_CONCURRENCY": "64"})
    worker = env.worker_service(cfg)
    assert (worker.pool.max_workers, worker.request_pool.max_workers, cfg.threads) == (32, 64, 64)
    assert [worker.pool_for(job(d)) is worker.request_pool for d in (COPY, RELAY, ACROSS, PROCESS, REMOTE)] == [
        True,
        False,
        False,
        False,
        True,
    ]
    assert worker.budget.limit == body_budget_mb(1024, 32) * MiB  # the budget is the streaming threads' alone
    # Every thread of the larger pool, and the part workers, get a connection of their own.
    assert env.store(cfg).client.meta.config.max_pool_connections == 64 + PART_WORKERS
    # A deployment from before the request pool (no S3BULK_REQUEST_CONCURRENCY): one size for both.
    older = env.worker_service(env.AwsConfig.from_env({"S3BULK_CONCURRENCY": "32"}))
    assert older.request_pool.max_workers == 32


def test_validate_reads_the_workers_memory_and_threads_from_the_environment() -> None:
    cfg = env.AwsConfig.from_env({"S3BULK_WORKER_MEMORY_MB": "2048", "S3BULK_CONCURRENCY": "48", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256"})
    assert env.worker_size(cfg) == WorkerSize(2048, 48)


@pytest.mark.parametrize("doc", [RELAY, ACROSS, PROCESS], ids=["relay", "across-endpoints", "process"])
def test_validate_accepts_a_streaming_job_at_the_default_worker(doc: dict[str, Any]) -> None:
    assert validate(doc, ALLOW)["job_id"]
    assert validate(doc, ALLOW, worker=WorkerSize(1024, 32))["job_id"]


def test_validate_refuses_a_relay_the_workers_memory_cannot_hold_naming_the_field_and_the_fix() -> None:
    with pytest.raises(JobError) as info:
        validate(RELAY, ALLOW, worker=WorkerSize(512, 32))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("job.options.transfer: this copy relays each object through the worker")
    assert "needs about 928 MB of worker memory and the deployment gives 512" in message
    assert message.endswith("set worker_memory_mb to at least 928 (or worker_threads to at most 14) in deploy.json and deploy again")


def test_validate_refuses_a_process_job_with_more_threads_than_the_memory_streams() -> None:
    with pytest.raises(JobError, match=r"^job\.process: .* with 64 worker threads needs about 1696 MB .* gives 1024; .*at most 36\)"):
        validate(PROCESS, ALLOW, worker=WorkerSize(1024, 64))


def test_jobs_that_hold_no_bodies_pass_whatever_the_workers_memory() -> None:
    small = WorkerSize(256, 256)
    assert validate(COPY, ALLOW, worker=small)["job_id"]
    check_worker_memory(job(REMOTE), small)


SAMPLES = sorted(Path("events").glob("*.json"))


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_each_sample_job_fits_the_default_worker(path: Path) -> None:
    check_worker_memory(parse_job(path.read_bytes()), DEFAULT_WORKER)
