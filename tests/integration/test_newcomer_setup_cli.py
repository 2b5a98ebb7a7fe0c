"""A new user's first mistakes, through the real entry point: a wrong endpoint or Region, a missing bucket, half a
key pair or a broken AWS config file, a rerun of an unfinished job, two runs of one job at once, a flag spelt as
another tool spells it. Each is one line and exit 2, in seconds, with nothing changed (issue 50, case 8)."""

from __future__ import annotations

import json
import os
import pty
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from s3bulk.job import load_job
from s3bulk.local.ledger import LocalLedger, spec_hash
from tests.integration.conftest import S3BULK, cli_env, client_for, run_cli
from tests.integration.helpers import list_keys, seed_small, write_job

COPY = {"operation": "copy", "source": {"bucket": "src-b", "prefix": "in/"}, "destination": {"bucket": "dst-b", "prefix": "out/"}}
# Loose on purpose (a loaded machine): the old behaviour waited outage_seconds (60 s) and then exited 3.
SECONDS = 30


def closed_port() -> str:
    """An endpoint nothing listens on: a port the kernel just handed out, closed again."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


def timed(*args: str, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = run_cli(*args, env=env, timeout=120)
    return done, time.monotonic() - started


def no_ledger_left(state: Path) -> bool:
    return not state.exists() or not list(state.glob("*.sqlite"))


@pytest.mark.parametrize("command", ["run", "plan"])
def test_an_endpoint_that_never_answered_fails_in_seconds_naming_it_and_leaves_no_run(command: str, tmp_path: Path) -> None:
    endpoint = closed_port()
    state = tmp_path / "state"
    env = cli_env(tmp_path) | {"S3BULK_STATE_DIR": str(state)}
    job = write_job(tmp_path / "j.json", COPY)
    done, took = timed(command, str(job), "--endpoint-url", endpoint, env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert took < SECONDS, took
    line = one_line(done.stderr)
    assert f"--endpoint-url: no answer from {endpoint}" in line and "connection refused" in line and "check the port" in line
    assert no_ledger_left(state)  # nothing to --resume


def test_a_misspelled_host_fails_in_seconds_naming_the_host(tmp_path: Path) -> None:
    env = cli_env(tmp_path) | {"S3BULK_STATE_DIR": str(tmp_path / "state")}
    job = write_job(tmp_path / "j.json", COPY)
    done, took = timed("run", str(job), "--endpoint-url", "http://no-such-host.invalid:8333", env=env)  # .invalid never resolves
    assert done.returncode == 2 and took < SECONDS, (took, done.stderr)
    assert "the host no-such-host.invalid does not resolve" in one_line(done.stderr)


@pytest.mark.moto
def test_https_against_an_http_endpoint_says_to_write_http(moto_endpoint: str, tmp_path: Path) -> None:
    env = cli_env(tmp_path) | {"S3BULK_STATE_DIR": str(tmp_path / "state")}
    job = write_job(tmp_path / "j.json", COPY)
    wrong = moto_endpoint.replace("http://", "https://")
    done, took = timed("run", str(job), "--endpoint-url", wrong, env=env)
    assert done.returncode == 2 and took < SECONDS, (took, done.stderr)
    assert f"no answer from {wrong}" in one_line(done.stderr) and "write http:// instead of https://" in done.stderr


def test_a_region_name_no_region_can_have_is_refused_offline(tmp_path: Path) -> None:
    job = write_job(tmp_path / "j.json", COPY)
    done, took = timed("plan", str(job), "--region", "us_east_1", env=cli_env(tmp_path))
    assert done.returncode == 2 and took < SECONDS, (took, done.stderr)
    assert one_line(done.stderr) == "error: --region: 'us_east_1' is not an AWS Region name (like us-east-1); did you mean us-east-1?"


def test_a_region_botocore_does_not_know_fails_fast_naming_the_closest(tmp_path: Path) -> None:
    """us-est-1 has a Region's shape (a Region newer than botocore must still work), so its endpoint is asked: its name
    does not resolve (or, offline, nothing does), and the line names the Regions it is closest to."""
    env = cli_env(tmp_path) | {"S3BULK_STATE_DIR": str(tmp_path / "state")}
    job = write_job(tmp_path / "j.json", COPY)
    done, took = timed("run", str(job), "--region", "us-est-1", env=env)
    assert done.returncode == 2 and took < SECONDS, (took, done.stderr)
    line = one_line(done.stderr)
    assert "https://s3.us-est-1.amazonaws.com" in line and "did you mean us-east-1" in line


@pytest.mark.seaweed
@pytest.mark.parametrize("side", ["source", "destination"])
def test_a_missing_bucket_is_one_line_and_exit_2_on_run_dry_run_and_plan(
    side: str, seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    c = client_for(seaweed)
    real = bucket_factory(c, "real")
    seed_small(c, real, "in/", 5)
    doc: dict[str, Any] = json.loads(json.dumps(COPY))
    doc["source"]["bucket"], doc["destination"]["bucket"] = ("no-such-bucket-27", real) if side == "source" else (real, "no-such-bucket-27")
    state = tmp_path / "state"
    env = cli_env(tmp_path) | {"S3BULK_STATE_DIR": str(state)}
    job = write_job(tmp_path / "j.json", doc)
    for args in (["run", str(job)], ["run", str(job), "--dry-run"], ["plan", str(job)]):
        done = run_cli(*args, "--endpoint-url", seaweed, env=env)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stdout == ""  # no table of zeros
        line = one_line(done.stderr)
        assert f"job.{side}.bucket 'no-such-bucket-27': no such bucket at {seaweed}" in line, line
    assert no_ledger_left(state)
    assert list_keys(c, real, "out/") == []


def _setups(tmp_path: Path) -> dict[str, dict[str, str]]:
    """Environments botocore cannot read: half a key pair, a config file that does not parse (named, or ~/.aws/config)."""
    garbage = tmp_path / "garbage-config"
    garbage.write_text("this is not\n[[[ an ini file\nkey value\n")
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "config").write_text(garbage.read_text())
    base = cli_env(tmp_path)
    partial = {k: v for k, v in base.items() if k != "AWS_SECRET_ACCESS_KEY"}
    default_files = {k: v for k, v in base.items() if k not in {"AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"}}
    return {
        "partial-keys": partial,
        "AWS_CONFIG_FILE-garbage": base | {"AWS_CONFIG_FILE": str(garbage)},
        "home-config-garbage": default_files | {"HOME": str(home)},
    }


EXPECTED = {
    "partial-keys": "incomplete AWS credentials in the environment: AWS_SECRET_ACCESS_KEY is missing",
    "AWS_CONFIG_FILE-garbage": "garbage-config ($AWS_CONFIG_FILE) cannot be parsed",
    "home-config-garbage": f"{os.sep}.aws{os.sep}config cannot be parsed",
}


@pytest.mark.parametrize("setup", sorted(EXPECTED))
@pytest.mark.parametrize("command", ["run", "plan", "undo", "submit"])
def test_an_aws_setup_botocore_cannot_read_is_one_line_naming_it_not_a_traceback(command: str, setup: str, tmp_path: Path) -> None:
    env = _setups(tmp_path)[setup] | {"S3BULK_STATE_DIR": str(tmp_path / "state")}
    job = write_job(tmp_path / "j.json", COPY)
    log = tmp_path / "keys.jsonl"
    log.write_text("")
    target = {"undo": [str(log)], "submit": [str(job), "--region", "us-east-1"]}.get(command, [str(job)])
    where = [] if command == "submit" else ["--endpoint-url", closed_port()]
    done = run_cli(command, *target, *where, env=env, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    line = one_line(done.stderr)
    assert EXPECTED[setup] in line and ("fix it" in line or "set it too" in line), line


def _interrupted_run(state: Path, job: Path, endpoint: str) -> str:
    """The ledger a run of `job` leaves when it is interrupted before its first batch (as Ctrl-C leaves it)."""
    ledger = LocalLedger.create(state, "copy-interrupted", load_job(str(job)), {"endpoint_url": endpoint, "region": None, "profile": None})
    ledger.finish("interrupted")
    ledger.close()
    return "copy-interrupted"


@pytest.mark.seaweed
def test_a_rerun_of_an_interrupted_job_asks_for_resume_or_restart_and_a_restart_sets_the_old_run_aside(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    c = client_for(seaweed)
    src, dst = bucket_factory(c, "src"), bucket_factory(c, "dst")
    seeded = seed_small(c, src, "in/", 30)
    state = tmp_path / "state"
    env = cli_env(tmp_path) | {"S3BULK_STATE_DIR": str(state)}
    job = write_job(
        tmp_path / "j.json", {**COPY, "source": {"bucket": src, "prefix": "in/"}, "destination": {"bucket": dst, "prefix": "out/"}}
    )
    old = _interrupted_run(state, job, seaweed)

    again = run_cli("run", str(job), "--endpoint-url", seaweed, env=env)
    assert again.returncode == 2, again.stdout + again.stderr
    line = one_line(again.stderr)
    assert f"its run {old} was interrupted" in line and f"s3bulk run --resume {old}" in line and "--restart" in line
    assert list_keys(c, dst, "out/") == []  # nothing started over silently

    restarted = run_cli("run", str(job), "--endpoint-url", seaweed, "--restart", env=env)
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    assert len(list_keys(c, dst, "out/")) == len(seeded)
    from s3bulk.local.ledger import SET_ASIDE

    assert LocalLedger.peek(state, old)[1] == SET_ASIDE
    stale = run_cli("run", "--resume", old, env=env)
    assert stale.returncode == 2 and "set aside by a --restart" in one_line(stale.stderr), stale.stderr
    bare = run_cli("run", str(job), "--resume", env=env)  # the restarted run finished: nothing stale to redo
    assert bare.returncode == 2 and "no unfinished run of this job" in one_line(bare.stderr), bare.stderr


@pytest.mark.seaweed
def test_a_second_run_of_the_same_job_at_once_is_refused_naming_the_first_runs_pid(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    """The first run holds its question on a terminal (a delete asks before it starts), so it is certainly running."""
    c = client_for(seaweed)
    bucket = bucket_factory(c, "src")
    seeded = seed_small(c, bucket, "in/", 10)
    state = tmp_path / "state"
    env = cli_env(tmp_path) | {"S3BULK_STATE_DIR": str(state)}
    job = write_job(tmp_path / "d.json", {"operation": "delete", "source": {"bucket": bucket, "prefix": "in/"}})
    main, side = pty.openpty()
    first = subprocess.Popen([*S3BULK, "run", str(job), "--endpoint-url", seaweed], env=env, stdin=side, stdout=side, stderr=side)
    os.close(side)
    try:
        said = b""
        deadline = time.monotonic() + 120
        while b"Go on?" not in said and time.monotonic() < deadline and first.poll() is None:
            said += os.read(main, 4096)
        assert b"Go on?" in said, said
        second = run_cli("run", str(job), "--endpoint-url", seaweed, "--yes", env=env)
        assert second.returncode == 2, second.stdout + second.stderr
        line = one_line(second.stderr)
        assert f"is running already (pid {first.pid}" in line, line
        os.write(main, b"n\n")
        assert first.wait(60) == 5  # declined: nothing was done
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
        os.close(main)
    assert sorted(list_keys(c, bucket, "in/")) == sorted(seeded)
    assert list(state.glob("*.lock")) == []  # released, and its file removed


def test_a_job_lock_is_released_when_its_process_is_killed(tmp_path: Path) -> None:
    from s3bulk.local.joblock import JobLock
    from s3bulk.local.ledger import LedgerError

    state = tmp_path / "state"
    job = write_job(tmp_path / "j.json", COPY)
    spec = spec_hash(load_job(str(job)))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import pathlib, sys; from s3bulk.local.joblock import JobLock; JobLock.take(pathlib.Path(sys.argv[1]), sys.argv[2]); "
            "print('held', flush=True); input()",
            str(state),
            spec,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(LedgerError, match=f"pid {holder.pid}"):
            JobLock.take(state, spec)
    finally:
        holder.kill()  # SIGKILL: no release of its own
        holder.wait()
    with JobLock.take(state, spec) as lock:
        assert lock.path.read_text().strip() == str(os.getpid())


@pytest.mark.parametrize(
    ("flags", "meant"),
    [(["--dryrun"], "--dry-run"), (["-n"], "--dry-run"), (["-y"], "--yes"), (["--dry-runn"], "--dry-run")],
)
def test_a_flag_spelt_as_another_tool_spells_it_gets_one_did_you_mean_line(flags: list[str], meant: str, tmp_path: Path) -> None:
    job = write_job(tmp_path / "j.json", COPY)
    done = run_cli("run", str(job), *flags, env=cli_env(tmp_path))
    assert done.returncode == 2
    assert one_line(done.stderr) == f"error: unrecognized arguments: {flags[0]}; did you mean {meant}? (see s3bulk run --help)"


def test_several_unknown_flags_are_each_answered_and_a_command_without_the_flag_suggests_nothing(tmp_path: Path) -> None:
    job = write_job(tmp_path / "j.json", COPY)
    both = run_cli("run", str(job), "-n", "-y", env=cli_env(tmp_path))
    assert "did you mean --dry-run (for -n), --yes (for -y)?" in one_line(both.stderr)
    plan = run_cli("plan", str(job), "-y", env=cli_env(tmp_path))  # plan has no --yes
    assert plan.returncode == 2 and one_line(plan.stderr) == "error: unrecognized arguments: -y (see s3bulk plan --help)"
