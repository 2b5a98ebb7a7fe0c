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
    monkeypatch.setattr(runtime, "_installed", lambda: [])  # nor one an installer left off PATH on this machine
    monkeypatch.setenv("S3BULK_RUNTIME_PYTHON", sys.executable)
    assert runtime.find() is None  # the suite's own Python is another version
    monkeypatch.setenv("S3BULK_RUNTIME_PYTHON", runtime_python)
    assert runtime.find() == runtime_python


def test_without_an_interpreter_of_the_runtimes_version_synth_refuses_in_one_line_unless_precompile_is_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("X = 1\n")
    monkeypatch.setattr(runtime, "find", lambda: None)
    with pytest.raises(
        bundling.NoRuntimePython, match=r"^context precompile: .* no(ne)?.*make runtime-python.*-c precompile=false"
    ) as refused:
        bundling._compile(tmp_path)
    assert "\n" not in str(refused.value)
    bundling._compile(tmp_path, precompile=False)  # sources only: nothing to compile with, nothing asked
    assert not list(tmp_path.rglob("*.pyc"))
    from app import build_app

    with pytest.raises(ValueError, match=r"^context precompile: "):
        build_app({"read_buckets": "a-bucket", "write_buckets": "b-bucket"})  # app.py prints it as one line


def test_the_asset_follows_the_precompile_setting_never_what_the_machine_has(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two deployers, one with Python 3.13 and one without, deploy the same asset (else each deploy replaces the
    other's function code): what is compiled is the setting's to say."""
    platform = bundling.PLATFORMS["arm64"]
    found = bundling.asset_hash(platform)
    monkeypatch.setattr(runtime, "find", lambda: None)
    assert bundling.asset_hash(platform) == found
    assert bundling.asset_hash(platform, precompile=False) != found


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


def _fake_python(path: Path, version: str) -> Path:
    """A stand-in interpreter that answers the version question as a real one of `version` would."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho {version.replace('.', ' ')}\n")
    path.chmod(0o755)
    return path


def test_find_takes_a_python_313_that_uv_or_pyenv_installed_off_path_the_newest_release_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "no-cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("S3BULK_RUNTIME_PYTHON", raising=False)
    monkeypatch.delenv("PYENV_ROOT", raising=False)
    monkeypatch.setattr(runtime, "INSTALLED", tuple(p for p in runtime.INSTALLED if p.startswith("~/")))  # not this machine's /usr
    monkeypatch.setattr(sys, "version_info", (3, 11, 0))
    monkeypatch.setattr(Path, "home", lambda: tmp_path)
    runtime._version_of.cache_clear()
    assert runtime.find() is None
    _fake_python(tmp_path / ".pyenv/versions/3.13.2/bin/python3.13", "3.13")
    assert runtime.find() == str(tmp_path / ".pyenv/versions/3.13.2/bin/python3.13")
    _fake_python(tmp_path / ".local/share/uv/python/cpython-3.13.9-macos-aarch64-none/bin/python3.13", "3.13")
    newest = _fake_python(tmp_path / ".local/share/uv/python/cpython-3.13.10-macos-aarch64-none/bin/python3.13", "3.13")
    assert runtime.find() == str(newest)  # uv's before pyenv's, 3.13.10 before 3.13.9
    wrong = _fake_python(tmp_path / "elsewhere/python3.13", "3.12")  # named so, but another version
    monkeypatch.setenv("S3BULK_RUNTIME_PYTHON", str(wrong))
    assert runtime.find() == str(newest)
    runtime._version_of.cache_clear()


def test_where_it_cannot_build_one_make_runtime_python_says_how_to_get_python_313_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(runtime, "find", lambda: None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no apt-get: macOS, Fedora, ...
    assert runtime.main() == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("s3bulk: no python3.13 found, and s3bulk builds one only on Debian or Ubuntu with apt")
    assert "brew install python@3.13" in line and "uv python install 3.13" in line and "S3BULK_RUNTIME_PYTHON" in line
    assert not (runtime.cache_dir() / "bin").exists()  # nothing fetched or built
