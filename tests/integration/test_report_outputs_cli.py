"""Where `s3bulk run` puts its report and what it says of failures, run as a user runs it: `--report -` and
/proc/self/fd/1 give stdout to the report alone, a symlinked path stays a link, and -q still says when objects failed."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import cli_env, client_for, run_cli
from tests.integration.helpers import seed_small, write_job

pytestmark = pytest.mark.seaweed


@pytest.fixture
def failing_job(seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path) -> Path:
    """A copy of 5 objects listed in a manifest, 2 of which are not there."""
    c = client_for(seaweed)
    src, dst = bucket_factory(c, "src"), bucket_factory(c, "dst")
    keys = [*sorted(seed_small(c, src, "in/", 3)), "in/gone-1", "in/gone-2"]
    manifest = tmp_path / "manifest.csv"
    manifest.write_text("".join(f"{src},{k}\n" for k in keys))
    doc = {"operation": "copy", "source": {"bucket": src, "manifest": {"path": str(manifest)}}, "destination": {"bucket": dst}}
    return write_job(tmp_path / "job.json", doc)


@pytest.mark.parametrize("target", ["-", "/proc/self/fd/1"])
def test_a_report_to_standard_output_has_stdout_to_itself_and_the_summary_goes_to_stderr(
    target: str, seaweed: str, failing_job: Path, tmp_path: Path
) -> None:
    env = cli_env(tmp_path) | {"S3BULK_STATE_DIR": str(tmp_path / "state")}
    r = run_cli("run", str(failing_job), "--endpoint-url", seaweed, "--report", target, "--progress", "off", env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    report = json.loads(r.stdout)  # the whole of stdout is the report
    assert (report["succeeded"], report["failed"]) == (3, 2)
    assert sorted(f["key"] for f in report["failures"]) == ["in/gone-1", "in/gone-2"]
    assert "succeeded" in r.stderr and "in/gone-1" in r.stderr and "Traceback" not in r.stderr  # the summary, on stderr
    assert not (tmp_path / "-").exists()


def test_a_symlinked_report_path_stays_a_link_to_the_report(seaweed: str, failing_job: Path, tmp_path: Path) -> None:
    (tmp_path / "reports").mkdir()
    link = tmp_path / "latest.json"
    link.symlink_to(tmp_path / "reports" / "run-1.json")
    r = run_cli("run", str(failing_job), "--endpoint-url", seaweed, "--no-ledger", "-q", "--report", str(link), env=cli_env(tmp_path))
    assert r.returncode == 1, r.stdout + r.stderr
    assert link.is_symlink() and os.readlink(link) == str(tmp_path / "reports" / "run-1.json")
    assert json.loads((tmp_path / "reports" / "run-1.json").read_text())["failed"] == 2


def test_quiet_still_prints_the_summary_and_each_failure_with_its_key_and_code_on_stderr_when_objects_fail(
    seaweed: str, failing_job: Path, tmp_path: Path
) -> None:
    report = tmp_path / "r.json"
    env = cli_env(tmp_path)
    r = run_cli("run", str(failing_job), "--endpoint-url", seaweed, "--no-ledger", "-q", "--report", str(report), env=env)
    assert (r.returncode, r.stdout) == (1, ""), r.stdout + r.stderr
    lines = r.stderr.splitlines()
    assert lines[0] == "summary: 5 listed, 3 succeeded, 0 skipped, 2 failed", lines
    failures = sorted(lines[1:-1])
    assert [f.split(":")[0].strip() for f in failures] == ["in/gone-1", "in/gone-2"], lines
    codes = {f["error"] for f in json.loads(report.read_text())["failures"]}
    assert all(f.split(": ")[1] in codes for f in failures), (failures, codes)  # each with the code the report gives it
    assert lines[-1] == f"failed: 2 object(s); the report at {report} lists every one"
    bare = run_cli("run", str(failing_job), "--endpoint-url", seaweed, "--no-ledger", "-q", env=env)
    assert (bare.returncode, bare.stdout) == (1, "")
    assert bare.stderr.splitlines()[-1] == "failed: 2 object(s); pass --report PATH to list every one"


def test_quiet_prints_nothing_when_nothing_failed(seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path) -> None:
    c = client_for(seaweed)
    src, dst = bucket_factory(c, "src"), bucket_factory(c, "dst")
    seed_small(c, src, "in/", 3)
    job = write_job(tmp_path / "ok.json", {"operation": "copy", "source": {"bucket": src}, "destination": {"bucket": dst}})
    r = run_cli("run", str(job), "--endpoint-url", seaweed, "--no-ledger", "-q", env=cli_env(tmp_path))
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


def test_a_gz_key_log_stores_each_object_in_under_60_bytes_and_undo_and_retry_read_it(
    seaweed: str, bucket_factory: Callable[[Any, str], str], failing_job: Path, tmp_path: Path
) -> None:
    c = client_for(seaweed)
    src, dst = bucket_factory(c, "src"), bucket_factory(c, "dst")
    n = 2000
    seed_small(c, src, "in/", n)
    env = cli_env(tmp_path)
    copy = write_job(tmp_path / "copy.json", {"operation": "copy", "source": {"bucket": src}, "destination": {"bucket": dst}})
    log = tmp_path / "copy.jsonl.gz"
    r = run_cli("run", str(copy), "--endpoint-url", seaweed, "--no-ledger", "-q", "--key-log", str(log), env=env)
    assert r.returncode == 0, r.stderr
    raw = log.read_bytes()
    lines = [json.loads(line) for line in gzip.decompress(raw).splitlines()]
    assert raw[:2] == b"\x1f\x8b" and len(lines) == n and {x["outcome"] for x in lines} == {"succeeded"}
    print(f"\nlocal key log: {len(raw) / n:.1f} bytes an object gzip'd, {len(gzip.decompress(raw)) / n:.0f} as lines")
    assert len(raw) / n <= 60

    tag = write_job(
        tmp_path / "tag.json",
        {"operation": "tag", "source": {"bucket": dst, "prefix": "in/00/"}, "tagging": {"mode": "merge", "tags": {"t": "1"}}},
    )
    tags_log = tmp_path / "tag.jsonl.gz"
    assert run_cli("run", str(tag), "--endpoint-url", seaweed, "--no-ledger", "-q", "--key-log", str(tags_log), env=env).returncode == 0
    tagged = [o["Key"] for o in c.list_objects_v2(Bucket=dst, Prefix="in/00/")["Contents"]]
    assert all(c.get_object_tagging(Bucket=dst, Key=k)["TagSet"] for k in tagged)
    undone = run_cli("undo", str(tags_log), "--endpoint-url", seaweed, env=env)
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert not any(c.get_object_tagging(Bucket=dst, Key=k)["TagSet"] for k in tagged)  # the gz journal was read

    failed_log = tmp_path / "failed.jsonl.gz"
    run_cli("run", str(failing_job), "--endpoint-url", seaweed, "--no-ledger", "-q", "--key-log", str(failed_log), env=env)
    report = tmp_path / "retry.json"
    again = run_cli(
        "run", str(failing_job), "--endpoint-url", seaweed, "--retry-failed", str(failed_log), "-q", "--report", str(report), env=env
    )
    assert again.returncode == 1  # the same two are still missing: retried from the gz key log, nothing listed again
    assert sorted(f["key"] for f in json.loads(report.read_text())["failures"]) == ["in/gone-1", "in/gone-2"]
