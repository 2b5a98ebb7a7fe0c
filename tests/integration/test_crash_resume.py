"""kill -9 in the middle of a run, then `s3bulk run --resume`: finished batches are not redone, counts end exact, nothing is lost."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from s3bulk.testing.faultproxy import FaultPlan, FaultProxy
from tests.integration.conftest import S3BULK, cli_env, client_for, run_cli
from tests.integration.helpers import assert_exact_copy, list_keys, seed_small, write_job
from tests.integration.test_faults import port_of

pytestmark = pytest.mark.slow

N = 1200
LISTING_N = 2000  # the kill-while-listing case: three listing pages, so the listing is still going at the kill
BATCH = 50


def committed(ledger: Path) -> tuple[int, int]:
    """(batches, objects) the ledger has committed, read as another process would."""
    if not ledger.exists():
        return 0, 0
    db = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
    try:
        return db.execute("SELECT COUNT(*), COALESCE(SUM(listed), 0) FROM batch").fetchone()  # type: ignore[no-any-return]
    except sqlite3.OperationalError:
        return 0, 0
    finally:
        db.close()


def kill_after_first_commits(cmd: list[str], env: dict[str, str], state: Path, at_least: int) -> tuple[int, int]:
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ledgers = list(state.glob("*.sqlite"))
            if ledgers and committed(ledgers[0])[0] >= at_least:
                break
            assert proc.poll() is None, (
                f"the run ended before it could be killed: {proc.stdout.read().decode(errors='replace') if proc.stdout else ''}"
            )
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    return committed(next(state.glob("*.sqlite")))


def settled(count: Callable[[], int], quiet: float = 1.0, limit: float = 15.0) -> int:
    """A proxy counter once it has stopped moving: requests the killed process had already sent still reach the server
    (and are copies the resumed run then finds done or redoes), so the count is read after they have landed."""
    last, since, deadline = count(), time.monotonic(), time.monotonic() + limit
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = count()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
    return last


@pytest.mark.parametrize(
    ("operation", "plan", "n"),
    [
        ("copy", FaultPlan(), N),
        ("move", FaultPlan(), N),
        # The lister killed mid-listing: slow pages keep it listing while early batches commit.
        ("copy", FaultPlan(list_delay=0.4), LISTING_N),
    ],
    ids=["copy", "move", "copy-killed-while-listing"],
)
def test_kill_9_then_resume_finishes_the_job_without_redoing_finished_batches(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path, operation: str, plan: FaultPlan, n: int
) -> None:
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    expected = seed_small(direct, src, "in/", n)
    state = tmp_path / "state"
    env = cli_env(tmp_path) | {"S3BULK_STATE_DIR": str(state)}
    options: dict[str, Any] = {"batch_size": BATCH, "concurrency": 4}
    if plan.list_delay:
        options["list_workers"] = 1  # one page at a time, so the listing is still going when the kill comes
    job = write_job(
        tmp_path / "job.json",
        {
            "operation": operation,
            "source": {"bucket": src, "prefix": "in/"},
            "destination": {"bucket": dst, "prefix": "out/"},
            "options": options,
        },
    )
    with FaultProxy(port_of(seaweed), plan) as proxy:
        cmd = [*S3BULK, "run", str(job), "--endpoint-url", proxy.endpoint_url, "--progress", "off", "-q"]
        _, objects = kill_after_first_commits(cmd, env, state, at_least=3)
        assert 0 < objects < n
        if plan.list_delay:
            listed = proxy.stats.forwarded["ListObjectsV2"]
            assert listed < n // 1000 + 1  # the listing had not finished when the process died
        copies_before = settled(lambda: proxy.stats.forwarded["CopyObject"])

        done = run_cli("run", str(job), "--resume", "--endpoint-url", proxy.endpoint_url, "--report", str(tmp_path / "r.json"), env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        copies_after = proxy.stats.forwarded["CopyObject"] - copies_before

    report = json.loads((tmp_path / "r.json").read_text())
    assert (report["succeeded"], report["failed"], report["listed"]) == (n, 0, n)
    # The resumed run copied exactly what the ledger had not committed: finished batches were not redone.
    assert copies_after == n - objects
    assert_exact_copy(direct, dst, "out/", {"out/" + k[3:]: v for k, v in expected.items()})
    if operation == "move":
        assert list_keys(direct, src, "in/") == []


def test_resume_needs_an_unfinished_run_and_says_so(seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path) -> None:
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    seed_small(direct, src, "in/", 30)
    env = cli_env(tmp_path) | {"S3BULK_STATE_DIR": str(tmp_path / "state")}
    job = write_job(
        tmp_path / "job.json", {"operation": "copy", "source": {"bucket": src, "prefix": "in/"}, "destination": {"bucket": dst}}
    )
    first = run_cli("run", str(job), "--endpoint-url", seaweed, "-q", env=env)
    assert first.returncode == 0, first.stderr
    again = run_cli("run", str(job), "--resume", "--endpoint-url", seaweed, env=env)
    assert again.returncode == 2
    assert "no unfinished run of this job" in again.stderr and "without --resume" in again.stderr
    unknown = run_cli("run", "--resume", "copy-nope", "--endpoint-url", seaweed, env=env)
    assert unknown.returncode == 2
    assert "--resume copy-nope: no ledger" in unknown.stderr
