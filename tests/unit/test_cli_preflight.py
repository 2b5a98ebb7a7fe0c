"""What a newcomer gets wrong fails in one line, exit 2, before any object is touched: no traceback reaches them.

Every case points at an endpoint where nothing listens: had the check come after the job started, the run would
wait out the outage breaker instead of returning at once, and a ledger or report file would be left behind.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from s3bulk.cli import main
from s3bulk.local.preflight import UsageError, endpoint_problem, settings

NOWHERE = "http://127.0.0.1:9"  # the discard port: nothing answers


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    config = tmp_path / "aws-config"
    config.write_text("[profile real]\nregion = eu-west-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("S3BULK_STATE_DIR", str(tmp_path / "state"))
    return tmp_path


def job_file(tmp: Path, **extra: Any) -> str:
    doc = {"operation": "copy", "source": {"bucket": "src-b", "prefix": "in/"}, "destination": {"bucket": "dst-b"}} | extra
    path = tmp / "job.json"
    path.write_text(json.dumps(doc))
    return str(path)


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    started = time.monotonic()
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert time.monotonic() - started < 5  # refused up front, not after trying the endpoint
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("flags", "names"),
    [
        (["--profile", "nosuch"], ["--profile", "nosuch", "aws configure"]),
        (["--report", "/nonexistent/dir/r.json"], ["--report", "does not exist"]),
        (["--report", "{tmp}"], ["--report", "is a directory"]),
        (["--endpoint-url", "127.0.0.1:8333"], ["--endpoint-url", "scheme"]),
        (["--endpoint-url", "htp://127.0.0.1:8333"], ["--endpoint-url", "scheme"]),
        (["--endpoint-url", "http://127.0.0.1:8333/path"], ["--endpoint-url", "path"]),
        (["--endpoint-url", "http://127.0.0.1:port"], ["--endpoint-url", "port"]),
    ],
    ids=["no-such-profile", "report-dir-missing", "report-is-a-dir", "no-scheme", "bad-scheme", "a-path", "bad-port"],
)
def test_run_refuses_bad_flags_in_one_line_before_anything_runs(
    env: Path, capsys: pytest.CaptureFixture[str], flags: list[str], names: list[str]
) -> None:
    flags = [f.replace("{tmp}", str(env)) for f in flags]
    endpoint = [] if "--endpoint-url" in flags else ["--endpoint-url", NOWHERE]
    err = refused(["run", job_file(env), *endpoint, *flags], capsys)
    assert all(n in err for n in names), err
    assert not (env / "state").exists() or not list((env / "state").iterdir())  # no ledger was made


@pytest.mark.parametrize("command", ["plan", "undo"])
def test_plan_and_undo_refuse_a_missing_profile_in_one_line(env: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    target = job_file(env) if command == "plan" else str(env / "keys.jsonl")
    (env / "keys.jsonl").write_text("")
    err = refused([command, target, "--endpoint-url", NOWHERE, "--profile", "nosuch"], capsys)
    assert "--profile" in err and "nosuch" in err


def test_a_profile_named_in_the_job_file_must_exist(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = job_file(env, destination={"bucket": "dst-b", "profile": "other-account"})
    err = refused(["run", job, "--endpoint-url", NOWHERE], capsys)
    assert "job.destination.profile" in err and "other-account" in err


def test_an_existing_profile_passes_the_check(env: Path) -> None:
    class Args:
        endpoint_url, region, profile = None, None, "real"

    assert settings(Args()).profile == "real"


@pytest.mark.parametrize(
    ("url", "fine"),
    [
        ("http://127.0.0.1:8333", True),
        ("https://s3.example.com/", True),
        ("http://[::1]:9000", True),
        ("ftp://host", False),
        ("http://:80", False),
        ("http://host/bucket", False),
        ("http://host?x=1", False),
    ],
)
def test_an_endpoint_is_a_scheme_a_host_and_a_port(url: str, fine: bool) -> None:
    assert (endpoint_problem(url) is None) is fine


def test_a_resume_goes_where_the_run_went_and_refuses_anywhere_else(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    origin: dict[str, str | None] = {"endpoint_url": "http://127.0.0.1:8333", "region": None, "profile": None}

    class Bare:
        endpoint_url, region, profile = None, None, None

    class Elsewhere:
        endpoint_url, region, profile = "http://127.0.0.1:9000", None, None

    assert settings(Bare(), origin, "copy-x").endpoint_url == "http://127.0.0.1:8333"  # no flag: the run's own endpoint
    with pytest.raises(UsageError, match=r"--resume copy-x: the run used --endpoint-url http://127\.0\.0\.1:8333"):
        settings(Elsewhere(), origin, "copy-x")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000")  # boto3 would follow it: so does the check
    with pytest.raises(UsageError, match=r"\$AWS_ENDPOINT_URL"):
        settings(Bare(), origin, "copy-x")
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    aws: dict[str, str | None] = {"endpoint_url": None, "region": "eu-west-1", "profile": None}
    with pytest.raises(UsageError, match=r"the run used no --endpoint-url \(AWS itself\)"):
        settings(Elsewhere(), aws, "copy-y")


def test_a_sync_with_allow_empty_source_needs_delete_extraneous(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(["validate", job_file(env, options={"allow_empty_source": True})], capsys)
    assert "options.allow_empty_source" in err


def test_a_local_run_that_must_be_confirmed_without_a_terminal_is_refused_in_one_line_naming_yes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = {"operation": "delete", "source": {"bucket": "src-b", "prefix": "in/"}, "options": {"confirm": True}}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "job.options.confirm:" in err[0] and "pass --yes" in err[0]
