"""Session-wide settings every layer shares."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_OURS = "S3BULK_TESTS_CDK_OUT"  # the directory a test process made for itself (a worker inherits its parent's value)
_made: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    """Every CDK app a test builds synthesizes into a directory of this process's own, removed when it ends.

    An App given no outdir makes a new temporary directory and never removes it: ~200 MB of staged assets per stack,
    hundreds a run. CDK_OUTDIR is read by the jsii process, which inherits this environment when the first test
    imports aws_cdk. pytest-xdist's workers inherit the controller's environment, so each makes its own directory
    (two writing one stack's template into one directory would race, and the first to end would remove it under the
    other); a CDK_OUTDIR set before the run, by whoever runs it, is left as it is."""
    if "CDK_OUTDIR" in os.environ and os.environ.get("CDK_OUTDIR") != os.environ.get(_OURS):
        return
    path = tempfile.mkdtemp(prefix="s3bulk-tests-cdk.out-")
    os.environ["CDK_OUTDIR"] = os.environ[_OURS] = path
    _made.append(path)


def pytest_unconfigure(config: pytest.Config) -> None:
    while _made:
        shutil.rmtree(_made.pop(), ignore_errors=True)


@pytest.fixture(scope="session")
def runtime_python() -> str:
    """An interpreter of the functions' runtime version (`make test` builds it first; built here if it is missing)."""
    from infra import runtime

    return runtime.ensure()
