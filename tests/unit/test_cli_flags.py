"""CLI flags that changed name keep working for one release, and a clash fails before anything runs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import get_args

import pytest

from s3bulk.cli import _parser, main
from s3bulk.job import Operation
from s3bulk.local.preflight import UsageError


def test_ledger_is_still_accepted_as_the_old_name_of_key_log() -> None:
    args = _parser().parse_args(["run", "job.json", "--ledger", "keys.jsonl"])
    assert (args.key_log, args.key_log_deprecated) == (None, "keys.jsonl")
    assert _parser().parse_args(["run", "job.json", "--key-log", "k.jsonl"]).key_log == "k.jsonl"


def test_passing_both_key_log_and_its_old_name_exits_2_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"operation": "copy", "source": {"bucket": "src-b"}, "destination": {"bucket": "dst-b"}}))
    code = main(["run", str(job), "--key-log", str(tmp_path / "a.jsonl"), "--ledger", str(tmp_path / "b.jsonl")])
    assert code == 2
    assert "--key-log" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.json"]


def test_readme_and_help_name_exactly_the_operations_undo_puts_back(capsys: pytest.CaptureFixture[str]) -> None:
    from s3bulk.local.undo import UNDOES

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    line = readme[readme.index("s3bulk undo") :].split("\n")[0]
    operations = set(re.findall(r"[a-z][a-z-]+", line.split("#", 1)[1])) & set(get_args(Operation))
    assert operations == set(UNDOES.values()), line
    with pytest.raises(SystemExit):
        main(["--help"])
    helptext = re.sub(r"-\s+", "-", " ".join(capsys.readouterr().out.split()))  # argparse wraps at hyphens
    assert all(op in helptext for op in UNDOES.values()), helptext


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["run", "job.json", "--concurrency", "99999999999"], "argument --concurrency: 99,999,999,999 is outside 1-1024"),
        (["run", "job.json", "--concurrency", "0"], "argument --concurrency: 0 is outside 1-1024"),
        (["run", "job.json", "--concurrency", "many"], "argument --concurrency: 'many' is not a whole number"),
        (["undo", "keys.jsonl", "--concurrency", "1025"], "argument --concurrency: 1,025 is outside 1-1024"),
        (["tune", "job-1", "--concurrency", "1001"], "argument --concurrency: 1,001 is outside 0-1000"),
        (["tune", "--max-concurrency", "1"], "argument --max-concurrency: 1 is outside 2-1000"),
    ],
)
def test_a_concurrency_out_of_range_is_refused_while_parsing_in_one_line(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        main(argv)  # no job file, no log: refused before anything is read
    err = capsys.readouterr().err
    assert ended.value.code == 2 and err.startswith(f"error: {says}") and err.count("\n") == 1, err
    assert _parser().parse_args(["run", "job.json", "--concurrency", "1024"]).concurrency == 1024


def test_the_request_path_defaults_to_s3bulk_request_path_as_the_stacks_functions_read_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from s3bulk.cli.local import request_path

    monkeypatch.delenv("S3BULK_REQUEST_PATH", raising=False)
    for command in (["run", "j.json"], ["plan", "j.json"]):
        assert request_path(_parser().parse_args(command)) == "fast"
        monkeypatch.setenv("S3BULK_REQUEST_PATH", "botocore")
        assert request_path(_parser().parse_args(command)) == "botocore"
        assert request_path(_parser().parse_args([*command, "--request-path", "fast"])) == "fast"  # the flag wins
        monkeypatch.delenv("S3BULK_REQUEST_PATH")


@pytest.mark.parametrize("command", ["run", "plan"])
def test_a_bad_s3bulk_request_path_is_one_line_naming_the_variable(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("S3BULK_REQUEST_PATH", "quick")
    monkeypatch.setenv("S3BULK_STATE_DIR", str(tmp_path / "state"))
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"operation": "copy", "source": {"bucket": "src-b"}, "destination": {"bucket": "dst-b"}}))
    assert main([command, str(job), "--endpoint-url", "http://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert err == "error: $S3BULK_REQUEST_PATH: 'quick' is neither fast nor botocore; set one of them, or unset it (fast)\n"


def test_plan_builds_its_stores_on_the_request_path_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from s3bulk.cli import local

    asked: list[bool] = []

    def stores(*args: object, fast: bool = True, **kwargs: object) -> object:
        asked.append(fast)
        raise UsageError("stop here")

    monkeypatch.setattr(local, "_stores", stores)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"operation": "copy", "source": {"bucket": "src-b"}, "destination": {"bucket": "dst-b"}}))
    monkeypatch.setenv("S3BULK_REQUEST_PATH", "botocore")
    main(["plan", str(job), "--endpoint-url", "http://127.0.0.1:9"])
    main(["plan", str(job), "--endpoint-url", "http://127.0.0.1:9", "--request-path", "fast"])
    assert asked == [False, True]


@pytest.mark.parametrize("how", ["flag", "env"])
def test_a_state_dir_that_is_a_file_is_refused_in_one_line_before_anything_runs(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    afile = tmp_path / "state"
    afile.write_text("not a directory")
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"operation": "copy", "source": {"bucket": "src-b"}, "destination": {"bucket": "dst-b"}}))
    argv = ["run", str(job), "--endpoint-url", "http://127.0.0.1:9"]
    if how == "flag":
        argv += ["--state-dir", str(afile)]
    else:
        monkeypatch.setenv("S3BULK_STATE_DIR", str(afile))
    assert main(argv) == 2
    err = capsys.readouterr().err
    named = "--state-dir" if how == "flag" else "$S3BULK_STATE_DIR"
    assert err.startswith(f"error: {named} {afile}: is a file, not a directory;") and err.count("\n") == 1, err
    assert afile.read_text() == "not a directory"
