"""An endpoint that goes away: the job stops fast and resumably, rides out a short outage, and never mistakes a 403 for one.

Real servers: a SeaweedFS of the test's own (halted mid-job, then started again on the same
data and port) and the fault proxy (which refuses connections for a few seconds, or denies keys).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from s3bulk.job import parse_job
from s3bulk.local.engine import Engine
from s3bulk.local.server import SeaweedServer
from s3bulk.s3.faststore import FastS3Store
from s3bulk.s3.stores import S3Store
from s3bulk.testing.faultproxy import FaultPlan, FaultProxy
from tests.integration.conftest import S3BULK, cli_env, client_for, run_cli
from tests.integration.helpers import assert_exact_copy, seed_small, write_job
from tests.integration.test_crash_resume import committed
from tests.integration.test_faults import port_of

pytestmark = [pytest.mark.seaweed, pytest.mark.slow]

WINDOW = 3.0  # options.outage_seconds in these tests
# After the window: the CLI's threads leave their attempts (at once on the fast path) and it writes its report.
MARGIN = 10.0


def copy_job(path: Path, src: str, dst: str, **options: Any) -> Path:
    doc = {"operation": "copy", "source": {"bucket": src, "prefix": "in/"}, "destination": {"bucket": dst, "prefix": "out/"}}
    return write_job(path, {**doc, "options": {"batch_size": 50, "concurrency": 8, **options}})


def start_run(job: Path, endpoint: str, env: dict[str, str], tmp_path: Path, name: str) -> subprocess.Popen[str]:
    cmd = [*S3BULK, "run", str(job), "--endpoint-url", endpoint, "--progress", "off", "-q"]
    cmd += ["--report", str(tmp_path / f"{name}.json"), "--key-log", str(tmp_path / "keys.jsonl")]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_commits(proc: subprocess.Popen[str], state: Path, batches: int) -> None:
    """Until the run's ledger holds `batches` committed batches: the job is under way."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ledgers = list(state.glob("*.sqlite"))
        if ledgers and committed(ledgers[0])[0] >= batches:
            return
        assert proc.poll() is None, f"the run ended before the outage: {proc.communicate()}"
        time.sleep(0.01)
    raise AssertionError("the run committed nothing within 60 s")


def test_a_server_gone_mid_job_stops_the_run_with_exit_3_and_resume_finishes_it_exactly(
    bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    n = 1000
    state = tmp_path / "state"
    env = cli_env(tmp_path) | {"S3BULK_STATE_DIR": str(state)}
    with SeaweedServer() as server:
        direct = client_for(server.endpoint_url)
        src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
        expected = seed_small(direct, src, "in/", n)
        job = copy_job(tmp_path / "job.json", src, dst, outage_seconds=WINDOW)
        proc = start_run(job, server.endpoint_url, env, tmp_path, "first")
        wait_for_commits(proc, state, 3)
        server.halt()  # every connection refused from here on
        halted = time.monotonic()
        _, stderr = proc.communicate(timeout=120)
        took = time.monotonic() - halted

        report = json.loads((tmp_path / "first.json").read_text())
        assert proc.returncode == 3, stderr
        assert took < WINDOW + MARGIN, f"stopped {took:.1f} s after the server went away"
        assert (report["status"], report["failed"]) == ("stopped", 0)
        assert report["done"] > 0 and report["not_done"] > 0 and report["done"] + report["not_done"] == report["listed"]
        keys = [json.loads(line) for line in (tmp_path / "keys.jsonl").read_text().splitlines()]
        assert [k for k in keys if k["outcome"] != "succeeded"] == []  # nothing tried during the outage was written off
        (job_id,) = [p.stem for p in state.glob("*.sqlite")]
        (line,) = stderr.splitlines()  # one clear line: endpoint, error, since when, and how to go on
        assert line.startswith(f"stopped: {server.endpoint_url} unreachable since ")
        assert "Connection refused" in line and f"s3bulk run --resume {job_id}" in line

        server.start()  # the same data, on the same port
        resumed = run_cli(
            "run", "--resume", job_id, "--endpoint-url", server.endpoint_url, "-q", "--report", str(tmp_path / "r.json"), env=env
        )
        assert resumed.returncode == 0, resumed.stderr
        final = json.loads((tmp_path / "r.json").read_text())
        assert (final["status"], final["listed"], final["succeeded"], final["failed"]) == ("succeeded", n, n, 0)
        assert_exact_copy(direct, dst, "out/", {"out/" + k[3:]: v for k, v in expected.items()})


def test_an_outage_shorter_than_the_window_delays_the_job_and_fails_nothing(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    n, outage = 400, 5.0
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    expected = seed_small(direct, src, "in/", n)
    state = tmp_path / "state"
    env = cli_env(tmp_path) | {"S3BULK_STATE_DIR": str(state)}
    # No object rounds: an object tried during the outage would fail once its 8 attempts (~6 s of backoff) ran out.
    job = copy_job(tmp_path / "job.json", src, dst, outage_seconds=4 * outage, object_retries=0)
    with FaultProxy(port_of(seaweed)) as proxy:
        proc = start_run(job, proxy.endpoint_url, env, tmp_path, "report")
        wait_for_commits(proc, state, 2)
        started = time.monotonic()
        proxy.down_for(outage).join()
        _, stderr = proc.communicate(timeout=120)
        took = time.monotonic() - started
    report = json.loads((tmp_path / "report.json").read_text())
    assert proc.returncode == 0, stderr
    assert (report["status"], report["succeeded"], report["failed"]) == ("succeeded", n, 0)
    assert report["retries"] > 0 and took >= outage  # the outage happened, and the job waited it out
    assert_exact_copy(direct, dst, "out/", {"out/" + k[3:]: v for k, v in expected.items()})


@pytest.mark.parametrize("path", ["fast", "botocore"])
def test_denied_keys_fail_one_by_one_and_never_stop_the_job(seaweed: str, bucket_factory: Callable[[Any, str], str], path: str) -> None:
    n = 150
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    seed_small(direct, src, "in/", n)
    keys = sorted(f"{i % 37:02d}/obj-{i:05d}" for i in range(n))
    denied = frozenset(f"out/{k}" for k in keys[: n // 5])  # the first fifth in listing order: at the start, only denials
    doc = {"operation": "copy", "source": {"bucket": src, "prefix": "in/"}, "destination": {"bucket": dst, "prefix": "out/"}}
    # Denials answered slowly, two threads: the job's first ~2 s see nothing but 403s, twice the window.
    job = parse_job(json.dumps({**doc, "options": {"outage_seconds": 1, "batch_size": 20}}))
    plan = FaultPlan(denied_keys=denied, deny_delay=0.15, slowdown=0.05, seed=5)
    with FaultProxy(port_of(seaweed), plan) as proxy:
        client = client_for(proxy.endpoint_url, 8)
        store = FastS3Store(client, 8) if path == "fast" else S3Store(client)
        report = Engine(job, store, concurrency=2).run()
    s = report.summary()
    assert (s["status"], report.exit_code, s["succeeded"], s["failed"]) == ("failed", 1, n - len(denied), len(denied))
    assert {f["key"] for f in report.tally.failures()} == {"in/" + k[4:] for k in denied}
    assert {f["error"] for f in report.tally.failures()} == {"AccessDenied"}
    assert proxy.stats.injected["SlowDown"] > 0  # throttled too, and retried
    assert (store.breaker.failures, store.breaker.tripped) == (0, None)  # no answer was ever taken for no answer
