"""The Lambda assets as they will run: a bare Python of the runtime's version with an old runtime SDK, the asset as /var/task.

The python3.13 runtime ships whatever boto3/botocore AWS last put in a Region,
older ones among them (1.30.x with urllib3 1.26, before
`Config(request_checksum_calculation=...)` existed). These tests build the assets
with the stack's own bundler (for this machine's architecture, the only
difference from the deployed arm64 asset), put one first on the path of an
interpreter of the runtime's version (not the suite's) that has nothing else but
that old SDK, and drive a job through the four real handlers against a moto
server: a copy from a listing on the functions' asset, and copies from a Parquet
object list and an ORC inventory on the Lister's. The negative control rebuilds
the layout the stack used before vendoring (our code alone, Powertools as a
layer, the runtime's SDK) and shows it failing on the first S3 client.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from infra import bundling
from infra.config import DeployConfig
from tests.integration.aws_harness import REGION, create_queues, create_table

pytestmark = [pytest.mark.moto, pytest.mark.slow]

DRIVER = Path(__file__).with_name("lambda_runtime") / "driver.py"
OLD_RUNTIME_SDK = ["boto3==1.27.1", "botocore==1.30.1", "urllib3<2"]
# What the Powertools layer holds once it has deleted the SDK it would otherwise shadow.
LAYER = ["aws-lambda-powertools[parser,tracer]==3.37.0", "pydantic==2.14.3", "aws-xray-sdk==2.15.0"]
LAYER_DELETES = ("boto3", "botocore", "s3transfer", "urllib3", "jmespath", "dateutil", "six.py")
SRC, DST, REPORTS, TABLE = "fidelity-src", "fidelity-dst", "fidelity-reports", "fidelity-ledger"
N = 60


MACHINE = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}[platform.machine().lower()]


def _pip_target(target: Path, requirements: list[str]) -> Path:
    """Wheels for the runtime's Python version and this machine, whatever version runs the suite."""
    subprocess.run(
        [
            sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
            "--only-binary=:all:", "--implementation", "cp", "--python-version", "{}.{}".format(*bundling.RUNTIME_PYTHON),
            *(f"--platform={p}" for p in bundling.pip_platforms(bundling.PLATFORMS[MACHINE])),
            "--target", str(target), *requirements,
        ],
        check=True,
        timeout=600,
    )  # fmt: skip
    return target


@pytest.fixture(scope="module")
def lambda_python(tmp_path_factory: pytest.TempPathFactory, runtime_python: str) -> Path:
    """A venv with no packages at all, on an interpreter of the runtime's version (not the project's venv)."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([runtime_python, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    version = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True, check=True)
    assert tuple(int(v) for v in version.stdout.split()) == bundling.RUNTIME_PYTHON
    return python


@pytest.fixture(scope="module")
def runtime_sdk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _pip_target(tmp_path_factory.mktemp("var-runtime"), OLD_RUNTIME_SDK)


@dataclass
class Stack:
    env: dict[str, str]
    s3: Any
    cfg: dict[str, Any]


@pytest.fixture
def stack(moto_endpoint: str, tmp_path: Path) -> Iterator[Stack]:
    creds = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": REGION}
    kw: dict[str, Any] = {
        "endpoint_url": moto_endpoint,
        "region_name": REGION,
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    }
    s3, sqs, ddb = (boto3.client(name, **kw) for name in ("s3", "sqs", "dynamodb"))
    suffix = tmp_path.name[-12:].lower().replace("_", "-")
    src, dst, reports, table = (f"{n}-{suffix}" for n in (SRC, DST, REPORTS, TABLE))
    for bucket in (src, dst, reports):
        s3.create_bucket(Bucket=bucket)
    create_table(ddb, table)
    url, arn, _ = create_queues(sqs, 5)
    for i in range(N):
        s3.put_object(Bucket=src, Key=f"in/{i:03d} ü", Body=f"object {i}".encode() * (i + 1))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        **creds,
        "AWS_ENDPOINT_URL": moto_endpoint,
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_SERVICE_NAME": "s3bulk",
        "POWERTOOLS_METRICS_NAMESPACE": "S3Bulk",
        "S3BULK_TABLE": table,
        "S3BULK_QUEUE_URL": url,
        "S3BULK_REPORT_BUCKET": reports,
        "S3BULK_READ_BUCKETS": f"{src},{dst}",
        "S3BULK_WRITE_BUCKETS": dst,
        "S3BULK_DELETE_BUCKETS": "",
        "S3BULK_CONCURRENCY": "8",
        "S3BULK_REQUEST_CONCURRENCY": "64",  # the stack's default: a copy's threads, within the worker's memory
        "S3BULK_LIST_PAGE_SIZE": "25",
    }
    job = {"operation": "copy", "source": {"bucket": src, "prefix": "in/"}, "destination": {"bucket": dst, "prefix": "out/"}}
    yield Stack(
        env, s3, {"job": job, "table": table, "queue_url": url, "queue_arn": arn, "src": src, "dst": dst, "endpoint": moto_endpoint}
    )


def _drive(python: Path, path: list[Path], stack: Stack) -> subprocess.CompletedProcess[str]:
    env = {**stack.env, "PYTHONPATH": os.pathsep.join(str(p) for p in path), "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [str(python), str(DRIVER), json.dumps(stack.cfg)], env=env, capture_output=True, text=True, timeout=300, check=False, cwd="/"
    )


@pytest.fixture(scope="module")
def vendored_task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The functions' asset as the stack bundles it (for this machine's architecture)."""
    task = tmp_path_factory.mktemp("var-task")
    bundling.build(task, bundling.PLATFORMS[MACHINE])
    return task


@pytest.fixture(scope="module")
def lister_task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Lister's asset (the functions' plus pyarrow) as the stack bundles it, for this machine's architecture."""
    task = tmp_path_factory.mktemp("var-task-lister")
    bundling.build(task, bundling.PLATFORMS[MACHINE], requirements=bundling.MANIFEST_REQUIREMENTS)
    return task


def test_the_vendored_asset_runs_a_copy_job_through_the_handlers_on_an_old_runtime_sdk(
    lambda_python: Path, runtime_sdk: Path, stack: Stack, vendored_task: Path
) -> None:
    """All four handlers in one process held to the worker's MemorySize (1,024 MB), as Lambda holds each."""
    task = vendored_task
    proc = _drive(lambda_python, [task, runtime_sdk], stack)

    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (out["botocore"], Path(out["botocore_file"]).is_relative_to(task)) == ("1.44.5", True)
    assert 0 < out["peak_rss_mb"] < DeployConfig(("a",), (), ()).worker_memory_mb
    assert (out["result"]["status"], out["result"]["failed"]) == ("succeeded", 0)
    for i in range(N):
        body = stack.s3.get_object(Bucket=stack.cfg["dst"], Key=f"out/{i:03d} ü")["Body"].read()
        assert body == f"object {i}".encode() * (i + 1)


@pytest.mark.parametrize("fmt", ["parquet", "orc-inventory"])
def test_the_listers_asset_reads_a_parquet_list_and_an_orc_inventory_on_the_runtimes_python(
    lambda_python: Path, runtime_sdk: Path, stack: Stack, lister_task: Path, fmt: str
) -> None:
    """pyarrow's manylinux_2_28 wheel for the runtime's version, as the Lister's asset vendors it: every third key listed."""
    import pyarrow as pa

    from bench.inventory_copy import encode

    src, keys = stack.cfg["src"], [f"in/{i:03d} ü" for i in range(0, N, 3)]
    sizes = [len(f"object {i}".encode() * (i + 1)) for i in range(0, N, 3)]
    if fmt == "parquet":
        table = pa.table({"bucket": [src] * len(keys), "key": keys})
        stack.s3.put_object(Bucket=src, Key="lists/keys.parquet", Body=encode(table, "Parquet", 7))
        manifest = {"bucket": src, "key": "lists/keys.parquet", "format": "parquet"}
    else:
        rows = {"bucket": [src] * len(keys), "key": keys, "is_latest": [True] * len(keys), "is_delete_marker": [False] * len(keys)}
        data = encode(pa.table({**rows, "size": pa.array(sizes, pa.int64())}), "ORC", 7)
        stack.s3.put_object(Bucket=src, Key="inv/data/part-0.orc", Body=data)
        files = [{"key": "inv/data/part-0.orc", "size": len(data), "MD5checksum": "unchecked"}]
        doc = {"destinationBucket": f"arn:aws:s3:::{src}", "fileFormat": "ORC", "fileSchema": "(its own)", "files": files}
        stack.s3.put_object(Bucket=src, Key="inv/manifest.json", Body=json.dumps(doc).encode())
        manifest = {"bucket": src, "key": "inv/manifest.json", "format": "inventory"}
    stack.cfg["job"] = {**stack.cfg["job"], "source": {"bucket": src, "prefix": "in/", "manifest": manifest}}

    proc = _drive(lambda_python, [lister_task, runtime_sdk], stack)

    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert Path(out["pyarrow_file"]).is_relative_to(lister_task) and out["python"] == list(bundling.RUNTIME_PYTHON)
    assert (out["result"]["status"], out["result"]["failed"]) == ("succeeded", 0)
    copied = {o["Key"] for o in stack.s3.list_objects_v2(Bucket=stack.cfg["dst"]).get("Contents", [])}
    assert copied == {"out/" + k[3:] for k in keys}


def test_a_function_over_its_memory_size_is_ended_as_lambda_ends_it(
    lambda_python: Path, runtime_sdk: Path, stack: Stack, vendored_task: Path
) -> None:
    """The same job in a function of 48 MB: less than the interpreter with boto3 needs, so it is ended, never finished."""
    stack.cfg["memory_mb"] = 48
    proc = _drive(lambda_python, [vendored_task, runtime_sdk], stack)
    assert proc.returncode == 137, proc.stdout[-2000:] + proc.stderr[-2000:]
    killed = json.loads(proc.stdout.strip().splitlines()[-1])
    assert killed["killed"] == "Runtime.OutOfMemory" and killed["rss_mb"] > killed["limit_mb"] == 48
    assert "Contents" not in stack.s3.list_objects_v2(Bucket=stack.cfg["dst"])


def test_without_vendoring_the_old_runtime_sdk_fails_the_job_on_its_first_s3_client(
    lambda_python: Path, runtime_sdk: Path, stack: Stack, tmp_path: Path
) -> None:
    """The layout before vendoring: our sources alone in the task dir, Powertools as a layer, the runtime's SDK."""
    task = tmp_path / "var-task"
    for rel in bundling.source_files():
        (task / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(bundling.ROOT / rel, task / rel)
    layer = _pip_target(tmp_path / "opt-python", LAYER)
    for name in LAYER_DELETES:
        for p in layer.glob(f"{name}*"):
            shutil.rmtree(p) if p.is_dir() else p.unlink()

    proc = _drive(lambda_python, [task, layer, runtime_sdk], stack)

    assert proc.returncode != 0
    assert "request_checksum_calculation" in proc.stderr, proc.stderr[-3000:]
