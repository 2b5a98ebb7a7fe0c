"""`s3bulk plan` on SeaweedFS: it changes nothing, and its counts are the real run's counts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import cli_env, client_for, run_cli
from tests.integration.helpers import seed_small, snapshot, write_job

pytestmark = pytest.mark.seaweed


def test_plan_changes_nothing_and_predicts_the_run(seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path) -> None:
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    seed_small(direct, src, "in/", 400)
    direct.put_object(Bucket=src, Key="in/zz-big", Body=b"b" * (11 * 1024 * 1024))
    direct.copy_object(Bucket=dst, Key="out/00/obj-00000", CopySource={"Bucket": src, "Key": "in/00/obj-00000"})  # unchanged
    env = cli_env(tmp_path)
    job = write_job(
        tmp_path / "job.json",
        {
            "operation": "copy",
            "source": {"bucket": src, "prefix": "in/", "exclude": ["*/obj-0001*"]},
            "destination": {"bucket": dst, "prefix": "out/"},
            "options": {"if_exists": "skip-unchanged", "multipart_threshold": 8 * 1024 * 1024, "part_size": 5 * 1024 * 1024},
        },
    )
    before = (snapshot(direct, src), snapshot(direct, dst))
    planned = run_cli("plan", str(job), "--endpoint-url", seaweed, "--json", env=env)
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert (snapshot(direct, src), snapshot(direct, dst)) == before
    report_path = tmp_path / "report.json"
    ran = run_cli("run", str(job), "--endpoint-url", seaweed, "-q", "--no-ledger", "--report", str(report_path), env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    report = json.loads(report_path.read_text())
    assert (plan["scanned"], plan["objects"], plan["skipped"]) == (report["scanned"], report["succeeded"], report["skipped"])
    assert plan["bytes"] == report["bytes"] and plan["skipped"] == 1
    assert plan["requests"]["UploadPartCopy"] == 3 and plan["requests"]["CopyObject"] == report["succeeded"] - 1
    assert plan["cost_usd"]["batch_operations_total"] > plan["cost_usd"]["stack_total"] > 0
    human = run_cli("plan", str(job), "--endpoint-url", seaweed, env=env)
    assert human.returncode == 0 and "S3 Batch Operations" in human.stdout and "ETA" in human.stdout


def test_plan_with_a_missing_destination_is_one_clear_error(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    direct = client_for(seaweed)
    src = bucket_factory(direct, "src")
    seed_small(direct, src, "in/", 3)
    job = write_job(
        tmp_path / "job.json", {"operation": "copy", "source": {"bucket": src}, "destination": {"bucket": "no-such-dst-bucket"}}
    )
    planned = run_cli("plan", str(job), "--endpoint-url", seaweed, env=cli_env(tmp_path))
    assert planned.returncode == 2  # as `run` exits: one line, exit 2 (issue 50)
    [line] = planned.stderr.strip().splitlines()
    assert "no-such-dst-bucket" in line and "no such bucket" in line
    assert "Traceback" not in planned.stderr
