"""The Lambda asset: every pinned dependency vendored for arm64, our Lambda-side code only, compiled, with a stable hash."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from infra import bundling

ARM = bundling.PLATFORMS["arm64"]


def _tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def asset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("asset")
    bundling.build(out, ARM)
    return out


def test_the_asset_vendors_the_pinned_sdk_and_arm64_wheels(asset: Path) -> None:
    pins = dict(line.split("==") for line in bundling.REQUIREMENTS.read_text().splitlines() if "==" in line and not line.startswith("#"))
    version = next(line for line in (asset / "botocore" / "__init__.py").read_text().splitlines() if line.startswith("__version__"))
    assert version == f"__version__ = '{pins['botocore']}'"
    [core] = (asset / "pydantic_core").glob("_pydantic_core*.so")
    assert "aarch64" in core.name
    assert (asset / "aws_lambda_powertools").is_dir() and (asset / "aws_xray_sdk").is_dir()
    assert not (asset / "bin").exists()


def test_the_asset_holds_the_lambda_side_code_and_nothing_of_the_local_runtime_or_tests(asset: Path) -> None:
    assert (asset / "functions" / "worker" / "handler.py").is_file()
    assert (asset / "s3bulk" / "aws" / "worker.py").is_file()
    for gone in ("s3bulk/local", "s3bulk/testing", "s3bulk/cli", "tests", "infra", "bench"):
        assert not (asset / gone).exists(), gone


# Run by the runtime's interpreter: a pyc's magic number, cache tag and marshal format are its version's.
_CHECK_PYCS = """
import importlib.util, json, marshal, sys
from pathlib import Path
root = Path(sys.argv[1])
sources = [p for p in root.rglob("*.py") if "wrapt-stubs" not in p.parts]
missing = [str(p) for p in sources if not Path(importlib.util.cache_from_source(str(p))).is_file()]
pyc = Path(importlib.util.cache_from_source(str(root / "s3bulk" / "aws" / "worker.py"))).read_bytes()
print(json.dumps({
    "sources": len(sources), "missing": missing, "magic": pyc[:4] == importlib.util.MAGIC_NUMBER,
    "flags": int.from_bytes(pyc[4:8], "little"), "filename": marshal.loads(pyc[16:]).co_filename,
}))
"""


def test_every_module_is_precompiled_for_the_runtimes_python_with_unchecked_hash_pycs_for_the_task_root(
    asset: Path, runtime_python: str
) -> None:
    out = subprocess.run([runtime_python, "-I", "-c", _CHECK_PYCS, str(asset)], capture_output=True, text=True, timeout=120, check=True)
    seen = json.loads(out.stdout)
    assert seen["sources"] > 500 and seen["missing"] == []
    assert seen["magic"] is True  # compiled by the runtime's version, not by the Python that synthesized
    assert seen["flags"] == 0b01  # hash-based, source never checked: no compile, no mtime compare
    assert seen["filename"] == "/var/task/s3bulk/aws/worker.py"
    assert not list(asset.rglob(f"*.{sys.implementation.cache_tag}.pyc"))  # nothing for the synthesizing Python's own version


def test_two_builds_are_byte_identical(asset: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    bundling.build(again, ARM)
    assert _tree_digest(again) == _tree_digest(asset)


def test_the_asset_hash_is_stable_and_changes_with_a_pin_or_the_platform(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = bundling.asset_hash(ARM)
    assert bundling.asset_hash(ARM) == first
    assert bundling.asset_hash(bundling.PLATFORMS["x86_64"]) != first
    changed = tmp_path / "requirements-lambda.txt"
    changed.write_text(bundling.REQUIREMENTS.read_text().replace("boto3==", "boto3==0.0.0+"))
    monkeypatch.setattr(bundling, "REQUIREMENTS", changed)
    assert bundling.asset_hash(ARM) != first


def test_the_deployers_process_code_is_bundled_compiled_and_part_of_the_hash(tmp_path: Path) -> None:
    code = tmp_path / "my_tools"
    (code / "pkg").mkdir(parents=True)
    (code / "gzip_it.py").write_text("def run(obj):\n    return 'ok'\n")
    (code / "pkg" / "__init__.py").write_text("")
    out = tmp_path / "asset"
    bundling.build(out, ARM, code)
    assert (out / bundling.PROCESS_DIR / "gzip_it.py").read_text() == "def run(obj):\n    return 'ok'\n"
    assert (out / bundling.PROCESS_DIR / "pkg" / "__init__.py").is_file()
    before = bundling.asset_hash(ARM, code)
    assert before != bundling.asset_hash(ARM)
    (code / "gzip_it.py").write_text("def run(obj):\n    return 'changed'\n")
    assert bundling.asset_hash(ARM, code) != before
