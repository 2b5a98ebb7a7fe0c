"""Session-wide settings every layer shares."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_CDK_OUT = "S3BULK_TESTS_CDK_OUT"


def pytest_configure(config: pytest.Config) -> None:
    """Every CDK app a test builds synthesizes into one directory of this session's, removed when it ends.

    An App given no outdir makes a new temporary directory and never removes it: ~200 MB of staged assets per stack,
    hundreds a run. CDK_OUTDIR is read by the jsii process, which inherits this environment when the first test
    imports aws_cdk. Each xdist-style worker process runs its own session, so none shares a directory."""
    if "CDK_OUTDIR" in os.environ:
        return
    path = tempfile.mkdtemp(prefix="s3bulk-tests-cdk.out-")
    os.environ["CDK_OUTDIR"] = path
    os.environ[_CDK_OUT] = path


def pytest_unconfigure(config: pytest.Config) -> None:
    path = os.environ.pop(_CDK_OUT, None)
    if path is not None:
        os.environ.pop("CDK_OUTDIR", None)
        shutil.rmtree(path, ignore_errors=True)
