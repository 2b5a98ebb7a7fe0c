"""CLI flags that changed name keep working for one release, and a clash fails before anything runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from s3bulk.cli import _parser, main


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


def test_undo_help_names_every_operation_the_readme_says_it_undoes(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    bullet = readme[readme.index("- `s3bulk undo LOG.jsonl") :].split("\n- ")[0]
    named = [op for op in ("tag", "set-storage-class", "set-legal-hold", "set-acl", "set-retention") if op in bullet]
    assert len(named) == 5
    with pytest.raises(SystemExit):
        main(["--help"])
    helptext = re.sub(r"-\s+", "-", " ".join(capsys.readouterr().out.split()))  # argparse wraps at hyphens
    assert all(op in helptext for op in named), helptext
