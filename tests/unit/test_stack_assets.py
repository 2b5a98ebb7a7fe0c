"""The stack harness refuses an import a function's own deployment package could not satisfy (stack/assets.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import s3bulk  # noqa: F401 - loaded before the rule, as the harness loads the handlers before a stack runs
from s3bulk.testing.stack.assets import assets_of, imports_from_assets
from s3bulk.testing.stack.iam import acting_as


def staged(root: Path, *paths: str) -> None:
    for p in paths:
        (root / p).parent.mkdir(parents=True, exist_ok=True)
        (root / p).write_text("")


def template() -> dict[str, object]:
    def fn(key: str) -> dict[str, object]:
        return {"Type": "AWS::Lambda::Function", "Properties": {"Code": {"S3Key": f"{key}.zip"}}}

    return {"Resources": {"Worker": fn("lean"), "Lister": fn("fat"), "Queue": {"Type": "AWS::SQS::Queue"}}}


def run_as(fn: str, code: str, importer: str = "s3bulk.probe") -> None:
    with acting_as(fn):
        exec(code, {"__name__": importer})  # an import statement, made as that module makes it


def test_a_function_imports_only_what_its_own_asset_holds_and_the_refusal_is_recorded(tmp_path: Path) -> None:
    staged(tmp_path / "asset.lean", "s3bulk/__init__.py", "s3bulk/ops/batch.py", "functions/__init__.py")
    staged(tmp_path / "asset.fat", "s3bulk/__init__.py", "s3bulk/ops/batch.py", "pyarrow/__init__.py")
    assets = assets_of(template(), tmp_path)
    assert set(assets) == {"Worker", "Lister"}
    refused: list[str] = []
    with imports_from_assets(assets, refused):
        run_as("Lister", "import pyarrow")
        run_as("Worker", "import json, s3bulk")  # the standard library, and what the package holds
        with pytest.raises(ModuleNotFoundError, match="not in the Worker function's deployment package"):
            run_as("Worker", "import pyarrow")
        with pytest.raises(ModuleNotFoundError):
            run_as("Worker", "from s3bulk.local import engine")  # the local runtime is never packaged
        run_as("Worker", "import pyarrow", importer="moto.backends")  # not our code: not checked
        run_as("Nobody", "import pyarrow")  # a thread working for no function of the stack
    assert refused == [
        "Worker: s3bulk.probe imports pyarrow, which its asset does not hold",
        "Worker: s3bulk.probe imports s3bulk.local, which its asset does not hold",
    ]
    run_as("Worker", "import pyarrow")  # outside a running stack: no rule
