"""The Lister's asset: the functions' asset plus pyarrow for Parquet and ORC manifests; the worker's stays without it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pyarrow
import pytest
from aws_cdk.assertions import Template

from app import build_app
from infra import bundling

ARM = bundling.PLATFORMS["arm64"]
LAMBDA_UNZIPPED_LIMIT = 250 * 1000 * 1000  # bytes, code and layers together


def _size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


@pytest.fixture(scope="module")
def lister_asset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lister")
    bundling.build(out, ARM, requirements=bundling.MANIFEST_REQUIREMENTS)
    return out


@pytest.fixture(scope="module")
def worker_asset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("worker")
    bundling.build(out, ARM)
    return out


def test_the_lister_asset_vendors_the_pinned_arm64_pyarrow_pruned_and_fits_lambda(lister_asset: Path, worker_asset: Path) -> None:
    pin = next(line.split("==")[1] for line in bundling.MANIFEST_REQUIREMENTS.read_text().splitlines() if line.startswith("pyarrow=="))
    assert f"__version__ = version = '{pin}'" in (lister_asset / "pyarrow" / "_generated_version.py").read_text()
    assert list((lister_asset / "pyarrow").glob("libparquet.so.*"))
    [orc] = (lister_asset / "pyarrow").glob(f"_orc.cpython-{bundling.RUNTIME_PYTHON[0]}{bundling.RUNTIME_PYTHON[1]}-aarch64-linux-gnu.so")
    assert orc.is_file()
    assert not [p for p in (lister_asset / "pyarrow").iterdir() if "flight" in p.name or p.name in {"include", "tests"}]
    assert (lister_asset / "botocore").is_dir() and (lister_asset / "s3bulk" / "source" / "columnar.py").is_file()
    assert _size(lister_asset) < LAMBDA_UNZIPPED_LIMIT
    # The worker's asset is the functions' asset as before: no columnar reader, tens of MB smaller.
    assert not (worker_asset / "pyarrow").exists()
    assert _size(lister_asset) - _size(worker_asset) > 50 * 1000 * 1000


def test_the_two_assets_hash_apart_and_only_the_listers_moves_with_the_pyarrow_pin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base, lister = bundling.asset_hash(ARM), bundling.asset_hash(ARM, requirements=bundling.MANIFEST_REQUIREMENTS)
    assert base != lister and bundling.asset_hash(ARM, requirements=bundling.MANIFEST_REQUIREMENTS) == lister
    (tmp_path / "requirements-lambda.txt").write_text(bundling.REQUIREMENTS.read_text())
    changed = tmp_path / "requirements-lambda-manifest.txt"
    changed.write_text(bundling.MANIFEST_REQUIREMENTS.read_text().replace("pyarrow==", "pyarrow==0.0.0+"))
    assert bundling.asset_hash(ARM, requirements=changed) not in {base, lister}
    # A base pin the manifest file includes (-r) moves both.
    (tmp_path / "requirements-lambda.txt").write_text(bundling.REQUIREMENTS.read_text().replace("boto3==", "boto3==0.0.0+"))
    monkeypatch.setattr(bundling, "REQUIREMENTS", tmp_path / "requirements-lambda.txt")
    assert bundling.asset_hash(ARM) != base
    assert bundling.asset_hash(ARM, requirements=tmp_path / "requirements-lambda-manifest.txt") != lister


def test_pyarrow_pruned_as_the_asset_prunes_it_still_reads_parquet_and_orc(tmp_path: Path) -> None:
    """This machine's pyarrow (the same pin), pruned as the arm64 one is: what a function imports must all be there."""
    tree = tmp_path / "tree"
    shutil.copytree(Path(pyarrow.__file__).parent, tree / "pyarrow", copy_function=os.link)  # links: unlinking leaves the venv's
    bundling._prune(tree)
    assert not (tree / "pyarrow" / "include").exists()
    code = (
        "import io, sys; sys.path.insert(0, sys.argv[1]); import pyarrow as pa, pyarrow.parquet as pq, pyarrow.orc as orc; "
        "assert pa.__file__.startswith(sys.argv[1]); t = pa.table({'bucket': ['b'], 'key': ['k']}); "
        "p = io.BytesIO(); pq.write_table(t, p); o = io.BytesIO(); orc.write_table(t, o); "
        "print(pq.ParquetFile(io.BytesIO(p.getvalue()), pre_buffer=True).read().num_rows, orc.ORCFile(io.BytesIO(o.getvalue())).read_stripe(0).num_rows); "
        # pyarrow's C++ threads can abort the interpreter's teardown ("terminate called without an active exception",
        # SIGABRT) after everything above succeeded: seen once in a clean-clone run. A Lambda never tears its
        # interpreter down, and s3bulk run ends with os._exit; so does this child, once its answer is out.
        "sys.stdout.flush(); import os; os._exit(0)"
    )
    out = subprocess.run([sys.executable, "-I", "-c", code, str(tree)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "1"]


def _code_keys(template: Template) -> dict[str, Any]:
    functions = template.find_resources("AWS::Lambda::Function")
    return {
        props["Properties"]["Handler"].split(".")[1]: props["Properties"]["Code"]["S3Key"]
        for props in functions.values()
        if props["Properties"].get("Handler", "").startswith("functions.")
    }


def test_only_the_lister_runs_from_the_asset_with_pyarrow() -> None:
    app = build_app({"read_buckets": "raw-logs", "write_buckets": "archive-bucket"})
    stack = app.node.find_child("S3Bulk")
    assert isinstance(stack, cdk.Stack)
    keys = _code_keys(Template.from_stack(stack))
    assert {"lister", "worker", "validate", "finalize"} <= set(keys)
    others = {key for name, key in keys.items() if name != "lister"}
    assert len(others) == 1 and keys["lister"] not in others  # every other function shares the lean asset
