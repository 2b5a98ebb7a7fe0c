"""Real servers for the integration layer: SeaweedFS (weed mini) and moto, loopback, free ports, stopped at the end."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from s3bulk.local.server import ACCESS_KEY, SECRET_KEY, LocalServerError, SeaweedServer
from s3bulk.s3.clients import ClientSettings, make_s3_client
from tests.integration.motoserver import PlainMotoServer
from tests.integration.versitygw import VersityServer, ensure_versitygw


@pytest.fixture(scope="session", autouse=True)
def moto_keeps_s3s_rules() -> Iterator[None]:
    """moto, in-process or as a server, answers as S3 does where it would not by itself (tests/integration/moto_s3.py)."""
    from tests.integration.moto_s3 import s3_as_aws

    with s3_as_aws():
        yield


@pytest.fixture(scope="session")
def seaweed() -> Iterator[str]:
    with SeaweedServer() as server:
        yield server.endpoint_url


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build versitygw (once per machine, ~2 min on a cold Go cache) before the first test that needs it, outside any
    test's pytest-timeout: a fixture's setup counts against its test's `timeout`. `make test` builds it before pytest;
    this covers a bare `pytest`. A failed build is left to the `versitygw` fixture, which raises it in the tests."""
    if session.config.option.collectonly:
        return
    if any("versitygw" in getattr(item, "fixturenames", ()) for item in session.items):
        capture = session.config.pluginmanager.getplugin("capturemanager")
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext(), contextlib.suppress(LocalServerError):
            ensure_versitygw()  # says on stderr that it builds, and how long it took


@pytest.fixture(scope="session")
def versitygw() -> Iterator[str]:
    """versitygw 1.8.0 (POSIX backend): an S3 implementation nobody here wrote, for differential tests."""
    with VersityServer() as server:
        yield server.endpoint_url


@pytest.fixture(scope="session")
def moto_plain() -> Iterator[str]:
    """moto as shipped, in its own process: moto_keeps_s3s_rules patches only this process's moto."""
    with PlainMotoServer() as server:
        yield server.endpoint_url


def client_for(endpoint: str, pool: int = 64) -> Any:
    return make_s3_client(ClientSettings(endpoint_url=endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY), pool)


@pytest.fixture
def bucket_factory() -> Callable[[Any, str], str]:
    def make(client: Any, role: str) -> str:
        name = f"{role}-{uuid.uuid4().hex[:10]}"
        client.create_bucket(Bucket=name)
        return name

    return make


def cli_env(tmp_path: Path) -> dict[str, str]:
    """Credentials for local servers and no access to the machine's AWS config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_ACCESS_KEY_ID=ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY=SECRET_KEY,
        AWS_CONFIG_FILE=str(tmp_path / "no-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-credentials"),
        AWS_EC2_METADATA_DISABLED="true",
    )
    return env


S3BULK = [sys.executable, "-m", "s3bulk"]


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The real entry point in a child process, as a user runs it."""
    return subprocess.run([*S3BULK, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False)


def run_job_cli(
    endpoint: str, tmp_path: Path, name: str, doc: dict[str, Any], *extra: str
) -> tuple[int, dict[str, Any], list[dict[str, Any]], str]:
    """`s3bulk run` on a job document (`extra`: more flags): exit code, report, per-key log lines and stderr ({} and [] when
    not written)."""
    job = tmp_path / f"{name}.json"
    job.write_text(json.dumps(doc))
    report, keys = tmp_path / f"{name}-report.json", tmp_path / f"{name}-keys.jsonl"
    done = run_cli(
        "run",
        str(job),
        "--endpoint-url",
        endpoint,
        "-q",
        "--no-ledger",
        "--report",
        str(report),
        "--key-log",
        str(keys),
        *extra,
        env=cli_env(tmp_path),
    )
    lines = [json.loads(line) for line in keys.read_text().splitlines()] if keys.exists() else []
    return done.returncode, json.loads(report.read_text()) if report.exists() else {}, lines, done.stderr
