"""`make`'s set-up, run with `make -n` on a copy of the Makefile (nothing installed, nothing fetched): a Python older
than pyproject's requires-python is refused in one line naming the Python needed and PYTHON=, before any venv is made;
a venv an older Python made is made again rather than reused; a good one is kept; `make test` also runs the unit layer
in a venv of the functions' runtime version (3.13)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OLD_PYTHON = "#!/bin/sh\nif [ \"$1\" = -V ]; then echo 'Python 3.10.12'; exit 0; fi\nexit 1\n"  # runs, but is 3.10


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """The files the Makefile's set-up reads, in a directory of their own."""
    for name in ("Makefile", "pyproject.toml", *(p.name for p in ROOT.glob("requirements*.txt"))):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def venv(clone: Path, python: str) -> None:
    """A venv whose python is `python`, installed: its stamps newer than every requirements file."""
    script(clone / ".venv" / "bin" / "python", f'#!/bin/sh\nexec "{python}" "$@"\n')
    later = time.time() + 60
    for stamp in (".runtime", ".dev"):
        (clone / ".venv" / stamp).touch()
        os.utime(clone / ".venv" / stamp, (later, later))


def make(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    return subprocess.run(["make", "-n", *args], cwd=clone, env=env, capture_output=True, text=True, timeout=60)


def test_python_min_is_pyprojects_requires_python() -> None:
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    [minimum] = re.findall(r"^PYTHON_MIN := (\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert requires == f">={minimum}"


def test_an_old_python_is_refused_in_one_line_naming_the_python_needed_and_python_before_any_venv(clone: Path) -> None:
    old = script(clone / "bin" / "python", OLD_PYTHON)
    done = make(clone, "demo", f"PYTHON={old}")
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.strip().splitlines()
    assert f"s3bulk needs Python 3.11 or later (3.11 to 3.13 are tested), and PYTHON={old} is Python 3.10.12" in line
    assert "run make demo PYTHON=python3.11" in line
    assert not (clone / ".venv").exists()


def test_a_python_that_is_not_there_is_refused_the_same_way(clone: Path) -> None:
    done = make(clone, "test", "PYTHON=python2.9-not-here")
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert "PYTHON=python2.9-not-here is not a Python that runs: run make test PYTHON=python3.11" in line


def test_a_venv_an_old_python_made_is_made_again_from_scratch_by_the_right_one(clone: Path) -> None:
    venv(clone, str(script(clone / "bin" / "python", OLD_PYTHON)))  # stamps and all: a venv taken for a good one
    done = make(clone, "demo", f"PYTHON={sys.executable}")
    assert done.returncode == 0, done.stderr
    steps = done.stdout.splitlines()
    assert steps[0] == "rm -rf .venv"
    assert steps[1].startswith(f"{sys.executable} -m venv .venv && ") and steps[1].endswith("|| { rm -rf .venv; exit 1; }")
    assert ".venv/bin/pip install -q -r requirements.txt" in steps and steps[-1] == ".venv/bin/s3bulk demo"


def test_a_good_venv_is_kept_whatever_python_names(clone: Path) -> None:
    venv(clone, sys.executable)
    old = script(clone / "bin" / "python", OLD_PYTHON)
    for args in ((), (f"PYTHON={old}",)):
        done = make(clone, "demo", *args)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == [".venv/bin/s3bulk demo"]


def test_make_test_runs_the_unit_layer_again_in_a_venv_of_the_runtime_version_after_the_suite(clone: Path) -> None:
    venv(clone, sys.executable)
    steps = make(clone, "test").stdout.splitlines()
    made = steps.index(
        '"$(.venv/bin/python -m infra.runtime)" -m venv .venv313 && .venv313/bin/pip install -q --upgrade pip || { rm -rf .venv313; exit 1; }'
    )
    assert steps.index(".venv313/bin/pip install -q -r requirements-dev.txt") > made
    assert steps[-2:] == [".venv/bin/pytest -n 2 --dist loadfile", ".venv313/bin/pytest tests/unit -n 2 --dist loadfile"]


def test_a_venv_whose_making_fails_is_removed_so_no_later_run_takes_it_for_made(clone: Path) -> None:
    # A Python new enough whose venv breaks half-way (here: before pip is upgraded in it); run for real, offline.
    broken = script(
        clone / "bin" / "python", f'#!/bin/sh\n[ "$1 $2" = "-m venv" ] && {{ mkdir -p "$3/bin"; exit 1; }}\nexec "{sys.executable}" "$@"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    done = subprocess.run(["make", "demo", f"PYTHON={broken}"], cwd=clone, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert not (clone / ".venv").exists()


def test_a_new_clone_is_not_taken_for_an_unusable_venv(clone: Path) -> None:
    """With no venv yet, the venv's own rule makes it. Taken for an unusable one, the phony remake made every stamp
    out of date for the whole run: a clean clone's `make test` installed its pins twice (and every make again)."""
    shown = "show-remake: ; @echo '[$(REMAKE_VENV)]'"
    fresh = make(clone, "--eval", shown, "show-remake", f"PYTHON={sys.executable}")
    assert fresh.stdout.strip() == "echo '[]'", fresh.stderr
    venv(clone, str(script(clone / "bin" / "python", OLD_PYTHON)))
    assert make(clone, "--eval", shown, "show-remake", f"PYTHON={sys.executable}").stdout.strip() == "echo '[remake-venv]'"
