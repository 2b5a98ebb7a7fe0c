"""infra/buildcache.py: a tool built once per machine, however many processes ask at once, and never half-built."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from infra.buildcache import build_once


def test_two_builders_at_once_build_once_and_both_find_the_build(tmp_path: Path) -> None:
    final = tmp_path / "cache" / "tool-1.0"
    builds: list[Path] = []

    def build(work: Path) -> Path:
        builds.append(work)
        time.sleep(0.3)  # the other caller waits on the lock meanwhile
        (work / "tool").write_text("built")
        return work

    callers = [
        threading.Thread(
            target=build_once, args=(final, "tool-1.0"), kwargs={"ready": (final / "tool").is_file, "build": build, "what": "tool"}
        )
        for _ in range(2)
    ]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    assert len(builds) == 1 and (final / "tool").read_text() == "built"
    assert not list(final.parent.glob(".tool-1.0-*"))  # no temp folder left


def test_a_failed_build_leaves_nothing_and_a_killed_ones_leftovers_are_cleared(tmp_path: Path) -> None:
    final = tmp_path / "tool-2.0"
    final.mkdir()  # a folder without what makes it ready (a build interrupted by hand)
    stale = tmp_path / ".tool-2.0-killed"
    stale.mkdir()

    def fails(work: Path) -> Path:
        (work / "half").write_text("x")
        raise RuntimeError("compiler error")

    with pytest.raises(RuntimeError, match="compiler error"):
        build_once(final, "tool-2.0", ready=lambda: (final / "tool").is_file(), build=fails, what="tool")
    assert not stale.exists() and not list(tmp_path.glob(".tool-2.0-*"))
    assert not (final / "tool").exists()

    def builds(work: Path) -> Path:
        (work / "prefix").mkdir()
        (work / "prefix" / "tool").write_text("ok")
        return work / "prefix"  # a folder inside the work folder becomes the build

    build_once(final, "tool-2.0", ready=lambda: (final / "tool").is_file(), build=builds, what="tool")
    assert (final / "tool").read_text() == "ok" and not list(tmp_path.glob(".tool-2.0-*"))
