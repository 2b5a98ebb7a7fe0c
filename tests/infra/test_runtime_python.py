"""The functions' Python on this machine: which interpreter compiles the asset, and where its source comes from."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from infra import bundling, runtime


def test_the_runtime_is_a_version_on_amazon_linux_2023_and_the_synth_compiles_with_an_interpreter_of_it(runtime_python: str) -> None:
    assert runtime.VERSION >= (3, 12) and runtime.RELEASE.startswith("{}.{}.".format(*runtime.VERSION))
    assert runtime.find() is not None
    assert runtime._version_of(runtime_python) == runtime.VERSION


def test_find_takes_the_named_interpreter_only_when_it_is_of_the_runtimes_version(
    runtime_python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "no-cache"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no python3.13 on it
    monkeypatch.setenv("S3BULK_RUNTIME_PYTHON", sys.executable)
    assert runtime.find() is None  # the suite's own Python is another version
    monkeypatch.setenv("S3BULK_RUNTIME_PYTHON", runtime_python)
    assert runtime.find() == runtime_python


def test_without_an_interpreter_of_the_runtimes_version_the_asset_is_left_uncompiled_with_a_warning_naming_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("X = 1\n")
    monkeypatch.setattr(runtime, "find", lambda: None)
    with pytest.warns(UserWarning, match=r"no Python 3\.13 found .* `make runtime-python` builds one, or set S3BULK_RUNTIME_PYTHON"):
        bundling._compile(tmp_path)
    assert not list(tmp_path.rglob("*.pyc"))


def test_the_source_comes_from_the_mirrors_apt_names_in_either_form_security_archives_last(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text(
        "# a comment\ndeb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian-security bookworm-security main\n"
        "deb-src http://one.example/debian/ bookworm main\n"
    )
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://two.example/debian\nSuites: bookworm\n\nTypes: deb\nURIs: https://one.example/debian\n"
    )
    (tmp_path / "sources.list.d" / "ignored.txt").write_text("deb http://never.example/debian bookworm main\n")
    mirrors = runtime.debian_mirrors((tmp_path / "sources.list", tmp_path / "sources.list.d"))
    assert mirrors == [
        "http://one.example/debian",
        "http://two.example/debian",
        "https://one.example/debian",
        "http://mirror.example/debian-security",
    ]


def test_a_source_whose_checksum_differs_is_refused_naming_both_digests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mirror = tmp_path / "mirror"
    (mirror / runtime.SOURCE_PATH).parent.mkdir(parents=True)
    (mirror / runtime.SOURCE_PATH).write_bytes(b"not the release")
    monkeypatch.setenv("S3BULK_DEBIAN_MIRROR", mirror.as_uri())
    (tmp_path / "work").mkdir()
    with pytest.raises(runtime.RuntimePythonError, match=rf"sha256 [0-9a-f]{{64}}, expected {runtime.SOURCE_SHA256}"):
        runtime._fetch_source(tmp_path / "work")
