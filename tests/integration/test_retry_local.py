"""`s3bulk run JOB --retry-failed`: after a run whose destination refused some keys, the retry (its own run, read from
the report or the key log) copies exactly those objects, lists nothing, and the destination ends complete.

Real servers: SeaweedFS, and the fault proxy in front of it for the first run (which denies a fifth of the keys)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from s3bulk.testing.faultproxy import FaultPlan, FaultProxy
from tests.integration.conftest import cli_env, client_for, run_cli
from tests.integration.helpers import assert_exact_copy, seed_small, write_job
from tests.integration.test_faults import port_of

pytestmark = [pytest.mark.seaweed]

N = 120


@pytest.mark.parametrize("source", ["report", "key-log"])
def test_retry_failed_copies_exactly_what_the_run_failed_and_lists_nothing(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path, source: str
) -> None:
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    expected = seed_small(direct, src, "in/", N)
    keys = sorted(k[3:] for k in expected)
    denied = frozenset(f"out/{k}" for k in keys[::5])
    job = write_job(
        tmp_path / "job.json",
        {
            "operation": "copy",
            "source": {"bucket": src, "prefix": "in/"},
            "destination": {"bucket": dst, "prefix": "out/"},
            "options": {"batch_size": 20, "object_retries": 0},
        },
    )
    env = cli_env(tmp_path)
    state = ["--state-dir", str(tmp_path / "state")]
    with FaultProxy(port_of(seaweed), FaultPlan(denied_keys=denied, seed=3)) as proxy:
        first = run_cli(
            "run",
            str(job),
            "--endpoint-url",
            proxy.endpoint_url,
            "--report",
            str(tmp_path / "r1.json"),
            "--key-log",
            str(tmp_path / "k1.jsonl"),
            "--progress",
            "off",
            *state,
            env=env,
        )
    assert first.returncode == 1, first.stderr
    r1 = json.loads((tmp_path / "r1.json").read_text())
    assert (r1["succeeded"], r1["failed"]) == (N - len(denied), len(denied))

    given = tmp_path / ("r1.json" if source == "report" else "k1.jsonl")
    again = run_cli(
        "run",
        str(job),
        "--retry-failed",
        str(given),
        "--endpoint-url",
        seaweed,
        "--report",
        str(tmp_path / "r2.json"),
        "--progress",
        "off",
        *state,
        env=env,
    )
    assert again.returncode == 0, again.stderr
    r2 = json.loads((tmp_path / "r2.json").read_text())
    # Only the failed objects, read from the manifest the retry wrote: scanned is the manifest's rows, not the listing.
    assert (r2["scanned"], r2["listed"], r2["succeeded"], r2["failed"]) == (len(denied), len(denied), len(denied), 0)
    assert_exact_copy(direct, dst, "out/", {"out/" + k[3:]: v for k, v in expected.items()})
    [manifest] = (tmp_path / "state" / "retries").glob("*.csv")
    assert len(manifest.read_text().splitlines()) == len(denied)

    nothing = run_cli("run", str(job), "--retry-failed", str(tmp_path / "r2.json"), "--endpoint-url", seaweed, *state, env=env)
    assert nothing.returncode == 2 and "names no failed object; nothing to retry" in nothing.stderr


def test_a_retry_of_a_delete_whose_manifest_named_another_bucket_deletes_nothing_outside_the_jobs_selection(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    direct = client_for(seaweed)
    mine, other = bucket_factory(direct, "mine"), bucket_factory(direct, "other")
    for bucket in (mine, other):
        for key in ("doomed.bin", "precious.bin"):
            direct.put_object(Bucket=bucket, Key=key, Body=key.encode())
    (tmp_path / "list.csv").write_text(f"{mine},doomed.bin\n{other},precious.bin\n{mine},a,b,c,d\n")
    job = write_job(
        tmp_path / "job.json",
        {"operation": "delete", "source": {"bucket": mine, "manifest": {"path": str(tmp_path / "list.csv")}}},
    )
    env, state = cli_env(tmp_path), ["--state-dir", str(tmp_path / "state"), "--yes"]
    first = run_cli("run", str(job), "--endpoint-url", seaweed, "--report", str(tmp_path / "r1.json"), *state, env=env)
    assert first.returncode == 1, first.stderr
    r1 = json.loads((tmp_path / "r1.json").read_text())
    assert (r1["succeeded"], r1["failed"]) == (1, 2)
    assert r1["failures_by_code"] == {"ManifestBucketMismatch": 1, "InvalidManifestRow": 1}

    again = run_cli("run", str(job), "--retry-failed", str(tmp_path / "r1.json"), "--endpoint-url", seaweed, *state, env=env)
    # The retry refuses to turn either row into a key of the job's bucket, and says why, in one line.
    assert again.returncode == 2, again.stderr
    assert "2 failures are manifest rows the job refused" in again.stderr and "nothing to retry" in again.stderr
    assert again.stderr.count("\n") == 1
    kept = {(b, o["Key"]) for b in (mine, other) for o in direct.list_objects_v2(Bucket=b).get("Contents", [])}
    assert kept == {(mine, "precious.bin"), (other, "doomed.bin"), (other, "precious.bin")}


def test_a_copy_stopped_by_the_failure_breaker_is_finished_by_the_resume_it_printed_once_the_cause_is_fixed(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    """A destination that refuses every write (a bucket policy) trips the breaker after about 1,000 objects: exit 4 and
    a line ending in the resume command. With the policy fixed, that command redoes the objects the breaker's run
    failed and then the rest: exit 0, every object copied once, nothing left failed."""
    n = 2_500
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    expected = seed_small(direct, src, "in/", n)
    job = write_job(
        tmp_path / "job.json",
        {
            "job_id": "refused",
            "operation": "copy",
            "source": {"bucket": src, "prefix": "in/"},
            "destination": {"bucket": dst, "prefix": "out/"},
            "options": {"batch_size": 100, "object_retries": 0},  # the default failure_breaker: more than half of 1,000
        },
    )
    env, state = cli_env(tmp_path), ["--state-dir", str(tmp_path / "state"), "--progress", "off"]
    every = frozenset("out/" + k[3:] for k in expected)
    with FaultProxy(port_of(seaweed), FaultPlan(denied_keys=every, seed=5)) as proxy:
        first = run_cli("run", str(job), "--endpoint-url", proxy.endpoint_url, "--report", str(tmp_path / "r1.json"), *state, env=env)
        assert first.returncode == 4, first.stderr
        r1 = json.loads((tmp_path / "r1.json").read_text())
        assert (r1["status"], r1["stop_reason"], r1["succeeded"]) == ("stopped", "failure_breaker", 0)
        assert 1_000 <= r1["failed"] < n and r1["failures_by_code"] == {"AccessDenied": r1["failed"]}
        [line] = [x for x in first.stderr.splitlines() if x.startswith("failure breaker:")]
        command = line.split("Fix the cause, then: ")[1].split()
        assert command[:3] == ["s3bulk", "run", "--resume"]

        proxy.plan = FaultPlan()  # the bucket policy fixed; the run goes to the endpoint its ledger remembers
        before = proxy.stats.requests["CopyObject"]
        final = run_cli(*command[1:], "--report", str(tmp_path / "r2.json"), *state, env=env)
        copies = proxy.stats.requests["CopyObject"] - before
    assert final.returncode == 0, final.stderr
    assert "redoing first the" in final.stdout + final.stderr
    r2 = json.loads((tmp_path / "r2.json").read_text())
    assert (r2["status"], r2["listed"], r2["succeeded"], r2["failed"]) == ("succeeded", n, n, 0)
    assert 0 < r2["redone_after_breaker"] <= r1["failed"]
    assert copies == n  # each object copied once by the resume: the redone ones and the rest, none twice
    assert_exact_copy(direct, dst, "out/", {"out/" + k[3:]: v for k, v in expected.items()})
