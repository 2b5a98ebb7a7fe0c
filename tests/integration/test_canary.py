"""The canary (--canary N) through the CLI on SeaweedFS: a sample across the key range first, then --resume does each other object once."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import cli_env, client_for, run_cli
from tests.integration.helpers import assert_exact_copy, list_keys, seed_small, write_job

pytestmark = pytest.mark.seaweed

N = 600
SAMPLE = 12


def test_a_canary_copies_a_spread_sample_and_the_resume_does_every_other_object_exactly_once(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "canary-src"), bucket_factory(direct, "canary-dst")
    expected = seed_small(direct, src, "in/", N)
    doc = {"operation": "copy", "source": {"bucket": src, "prefix": "in/"}, "destination": {"bucket": dst, "prefix": "in/"}}
    job = write_job(tmp_path / "job.json", doc)
    log = tmp_path / "keys.jsonl"
    common = ["--endpoint-url", seaweed, "--state-dir", str(tmp_path / "state"), "--key-log", str(log), "--progress", "off"]

    first = run_cli("run", str(job), "--canary", str(SAMPLE), "--report", str(tmp_path / "canary.json"), *common, env=cli_env(tmp_path))
    assert first.returncode == 0, first.stderr
    assert "canary: 12 objects sampled across the selection; 0 failed" in first.stdout
    assert "checked 12: 0 not as the job meant" in first.stdout
    # The hint is a command that works as printed (here it names the --state-dir too): the run's id follows --resume.
    [resume] = [
        line.split("--resume ")[1].split()[0] for line in first.stdout.splitlines() if "s3bulk run --resume" in line and "all good" in line
    ]
    copied = list_keys(direct, dst, "")
    assert len(copied) == SAMPLE
    # Spread over the key range: the 37 key groups in/00/ .. in/36/ are sampled far apart, not the first keys listed.
    groups = {key.split("/")[1] for key in copied}
    assert len(groups) >= SAMPLE // 2 and max(groups) >= "30"
    report = json.loads((tmp_path / "canary.json").read_text())
    assert (report["status"], report["listed"], report["succeeded"], report["failed"]) == ("canary", SAMPLE, SAMPLE, 0)
    assert (report["canary"]["sampled"], report["canary"]["checked"]) == (SAMPLE, SAMPLE)
    assert report["canary"]["rest"].startswith(f"s3bulk run --resume {resume}")

    rest = run_cli("run", "--resume", resume, "--report", str(tmp_path / "rest.json"), *common, env=cli_env(tmp_path))
    assert rest.returncode == 0, rest.stderr
    assert "canary:" not in rest.stdout
    final = json.loads((tmp_path / "rest.json").read_text())
    assert (final["scanned"], final["listed"], final["succeeded"], final["failed"]) == (N, N, N, 0)
    assert_exact_copy(direct, dst, "in/", expected)
    done = Counter(json.loads(line)["key"] for line in log.read_text().splitlines())
    assert set(done) == set(expected) and set(done.values()) == {1}  # each object done once, the sample's in the canary


def test_a_canary_is_refused_in_a_dry_run_and_without_a_ledger_with_nothing_done(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "canary-src"), bucket_factory(direct, "canary-dst")
    seed_small(direct, src, "in/", 5)
    job = write_job(
        tmp_path / "job.json", {"operation": "copy", "source": {"bucket": src, "prefix": "in/"}, "destination": {"bucket": dst}}
    )
    dry = run_cli("run", str(job), "--canary", "3", "--dry-run", "--endpoint-url", seaweed, env=cli_env(tmp_path))
    nol = run_cli("run", str(job), "--canary", "3", "--no-ledger", "--endpoint-url", seaweed, env=cli_env(tmp_path))
    assert (dry.returncode, nol.returncode) == (2, 2)
    assert dry.stderr.strip().startswith("error: job.options.canary: a canary acts on a sample, and dry_run needs")
    assert nol.stderr.strip().startswith("error: --no-ledger: a canary's rest runs with --resume")
    assert list_keys(direct, dst, "") == []
