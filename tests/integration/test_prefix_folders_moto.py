"""The issue's sync from a slash-less prefix, on a server that keeps `//` as S3 does (moto), on both request paths.

Before the fix `logs` under `backup/` copied `logs/000001.dat` to `backup//000001.dat`, deleted the real
`backup/000001.dat` as extraneous, and pulled `logs-old/a.dat` and `logs2024.txt` in; it exited 0.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from s3bulk.cli.contract import EXIT_INVALID
from tests.integration.conftest import cli_env, client_for, run_cli, run_job_cli
from tests.integration.helpers import snapshot, write_job

SOURCE = {"logs/000001.dat": b"one", "logs/000002.dat": b"two", "logs-old/a.dat": b"old", "logs2024.txt": b"year"}


@pytest.fixture(params=["fast", "botocore"])
def path_env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    return cli_env(tmp_path) | {"S3BULK_REQUEST_PATH": str(request.param)}


def seeded(moto_endpoint: str, bucket_factory: Callable[[Any, str], str]) -> tuple[Any, str, str]:
    client = client_for(moto_endpoint)
    src, dst = bucket_factory(client, "src"), bucket_factory(client, "dst")
    for key, body in SOURCE.items():
        client.put_object(Bucket=src, Key=key, Body=body)
    client.put_object(Bucket=dst, Key="backup/000001.dat", Body=b"one")  # the backup a sync must keep
    return client, src, dst


def sync(src: str, dst: str, source_prefix: str) -> dict[str, Any]:
    return {
        "operation": "copy",
        "source": {"bucket": src, "prefix": source_prefix},
        "destination": {"bucket": dst, "prefix": "backup/"},
        "options": {"if_exists": "skip-unchanged", "delete_extraneous": True},
    }


@pytest.mark.parametrize("command", ["run", "plan", "validate"])
def test_a_sync_from_a_slashless_prefix_is_refused_in_one_line_and_touches_nothing(
    command: str, moto_endpoint: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path, path_env: dict[str, str]
) -> None:
    client, src, dst = seeded(moto_endpoint, bucket_factory)
    before = (snapshot(client, src), snapshot(client, dst))
    job = write_job(tmp_path / "sync.json", sync(src, dst, "logs"))
    args = [command, str(job)] + (["--endpoint-url", moto_endpoint] if command != "validate" else [])
    done = run_cli(*args, env=path_env)
    assert done.returncode == EXIT_INVALID, done.stdout + done.stderr
    error = done.stderr.strip()
    assert len(error.splitlines()) == 1 and "'logs/'" in error and "source.raw_prefix" in error
    assert (snapshot(client, src), snapshot(client, dst)) == before


def test_a_sync_from_the_folder_keeps_the_backup_and_leaves_the_neighbours_out(
    moto_endpoint: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path, path_env: dict[str, str]
) -> None:
    client, src, dst = seeded(moto_endpoint, bucket_factory)
    job = write_job(tmp_path / "sync.json", sync(src, dst, "logs/"))
    dry = run_cli("run", str(job), "--endpoint-url", moto_endpoint, "--dry-run", env=path_env)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "'logs/000002.dat' -> 'backup/000002.dat'" in dry.stdout
    plan = run_cli("plan", str(job), "--endpoint-url", moto_endpoint, env=path_env)
    assert plan.returncode == 0 and "'logs/000002.dat' -> 'backup/000002.dat'" in plan.stdout, plan.stdout + plan.stderr
    done = run_cli("run", str(job), "--endpoint-url", moto_endpoint, "-q", "--no-ledger", env=path_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(snapshot(client, dst)) == ["backup/000001.dat", "backup/000002.dat"]


def test_raw_prefix_means_the_string_on_both_sides(
    moto_endpoint: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path, path_env: dict[str, str]
) -> None:
    client, src, dst = seeded(moto_endpoint, bucket_factory)
    doc = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "logs2", "raw_prefix": True},
        "destination": {"bucket": dst, "prefix": "y", "raw_prefix": True},
    }
    job = tmp_path / "raw.json"
    job.write_text(json.dumps(doc))
    done = run_cli("run", str(job), "--endpoint-url", moto_endpoint, "-q", "--no-ledger", env=path_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(snapshot(client, dst)) == ["backup/000001.dat", "y024.txt"]
    code, report, _, _ = run_job_cli(moto_endpoint, tmp_path, "again", doc)
    assert (code, report["succeeded"]) == (0, 1)
