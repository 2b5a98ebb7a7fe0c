"""Copy, move and delete 5,000 objects on real S3 servers (SeaweedFS and moto), verified byte for byte."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from s3bulk.cli import main
from tests.integration.conftest import cli_env, client_for, run_cli
from tests.integration.helpers import assert_exact_copy, list_keys, seed_small, write_job

N = 5000


@pytest.fixture(params=["seaweed", "moto_endpoint"])
def endpoint(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(request.param))


@pytest.fixture
def client(endpoint: str) -> Any:
    return client_for(endpoint)


def test_cli_copy_of_5000_objects_is_byte_exact_and_the_report_matches(
    endpoint: str, client: Any, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    src, dst = bucket_factory(client, "src"), bucket_factory(client, "dst")
    md5s = seed_small(client, src, "in/", N)
    client.put_object(Bucket=src, Key="elsewhere/x", Body=b"not selected")
    job = write_job(
        tmp_path / "job.json",
        {"operation": "copy", "source": {"bucket": src, "prefix": "in/"}, "destination": {"bucket": dst, "prefix": "out/"}},
    )
    proc = run_cli("run", str(job), "--endpoint-url", endpoint, "--report", str(tmp_path / "r.json"), env=cli_env(tmp_path))
    assert proc.returncode == 0, proc.stderr + proc.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert (report["status"], report["listed"], report["succeeded"], report["failed"], report["failures"]) == ("succeeded", N, N, 0, [])
    assert report["bytes"] == sum((i * 131) % 2048 for i in range(N))
    assert_exact_copy(client, dst, "out/", {"out/" + k[3:]: v for k, v in md5s.items()})
    assert "succeeded" in proc.stdout


def test_move_of_5000_objects_empties_the_source_and_keeps_every_byte(
    endpoint: str, client: Any, bucket_factory: Callable[[Any, str], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k, v in cli_env(tmp_path).items():
        monkeypatch.setenv(k, v)
    src, dst = bucket_factory(client, "src"), bucket_factory(client, "dst")
    md5s = seed_small(client, src, "in/", N)
    job = write_job(
        tmp_path / "job.json",
        {"operation": "move", "source": {"bucket": src, "prefix": "in/"}, "destination": {"bucket": dst, "prefix": "moved/"}},
    )
    assert main(["run", str(job), "--endpoint-url", endpoint, "--report", str(tmp_path / "r.json"), "-q"]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert (report["listed"], report["succeeded"], report["failed"]) == (N, N, 0)
    assert list_keys(client, src, "in/") == []
    assert_exact_copy(client, dst, "moved/", {"moved/" + k[3:]: v for k, v in md5s.items()})


def test_delete_of_5000_objects_removes_exactly_the_selected_ones(
    endpoint: str, client: Any, bucket_factory: Callable[[Any, str], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k, v in cli_env(tmp_path).items():
        monkeypatch.setenv(k, v)
    bucket = bucket_factory(client, "del")
    seed_small(client, bucket, "tmp/", N)
    keep = seed_small(client, bucket, "keep/", 50)
    job = write_job(tmp_path / "job.json", {"operation": "delete", "source": {"bucket": bucket, "prefix": "tmp/"}})
    assert main(["run", str(job), "--endpoint-url", endpoint, "--report", str(tmp_path / "r.json"), "-q"]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert (report["listed"], report["succeeded"], report["failed"]) == (N, N, 0)
    assert list_keys(client, bucket, "tmp/") == []
    assert sorted(list_keys(client, bucket)) == sorted(keep)
