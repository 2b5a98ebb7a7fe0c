"""Per-object failures on a real server: reported with key and code, exit 1, every other object succeeds."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from s3bulk.job import parse_job
from s3bulk.local.engine import Engine
from s3bulk.s3.stores import S3Store
from tests.integration.conftest import cli_env, client_for, run_cli
from tests.integration.helpers import assert_exact_copy, list_keys, seed_small, write_job


@pytest.fixture
def client(seaweed: str) -> Any:
    return client_for(seaweed)


class VanishingSource(S3Store):
    """Deletes chosen source keys (through the real server) just before the engine copies them."""

    def __init__(self, client: Any, vanish: set[str]) -> None:
        super().__init__(client)
        self.vanish = vanish

    def copy_object(self, src_bucket: str, src_key: str, dst_bucket: str, dst_key: str, **kwargs: Any) -> str:
        if src_key in self.vanish:
            self.client.delete_object(Bucket=src_bucket, Key=src_key)
        return super().copy_object(src_bucket, src_key, dst_bucket, dst_key, **kwargs)


def test_source_deleted_mid_job_is_a_reported_failure_and_the_rest_succeed(
    client: Any, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    src, dst = bucket_factory(client, "src"), bucket_factory(client, "dst")
    md5s = seed_small(client, src, "in/", 600)
    gone = {"in/05/obj-00301", "in/20/obj-00575"}
    doc = {"operation": "copy", "source": {"bucket": src, "prefix": "in/"}, "destination": {"bucket": dst, "prefix": "out/"}}
    report = Engine(parse_job(json.dumps(doc)), VanishingSource(client, gone), concurrency=8).run()
    report.write(tmp_path / "r.json")
    written = json.loads((tmp_path / "r.json").read_text())
    assert (written["status"], written["succeeded"], written["failed"]) == ("failed", 598, 2)
    assert sorted((f["key"], f["error"]) for f in written["failures"]) == sorted((k, "NoSuchKey") for k in gone)
    assert report.exit_code == 1
    assert_exact_copy(client, dst, "out/", {"out/" + k[3:]: v for k, v in md5s.items() if k not in gone})


def test_cli_exits_1_and_names_the_key_the_server_refused(
    seaweed: str, client: Any, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    """The destination prefix makes one key's name longer than the server accepts (KeyTooLongError)."""
    src, dst = bucket_factory(client, "src"), bucket_factory(client, "dst")
    md5s = seed_small(client, src, "in/", 100)
    long_key = "in/" + "n" * 250
    client.put_object(Bucket=src, Key=long_key, Body=b"too long once renamed")
    job = write_job(
        tmp_path / "job.json",
        {
            "operation": "copy",
            "source": {"bucket": src, "prefix": "in/"},
            "destination": {"bucket": dst, "prefix": "renamed-with-a-longer-prefix-", "raw_prefix": True},
        },
    )
    proc = run_cli("run", str(job), "--endpoint-url", seaweed, "--report", str(tmp_path / "r.json"), env=cli_env(tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert (report["succeeded"], report["failed"]) == (100, 1)
    assert [(f["key"], f["error"]) for f in report["failures"]] == [(long_key, "KeyTooLongError")]
    assert "KeyTooLongError" in proc.stdout
    assert len(list_keys(client, dst)) == 100
    assert md5s  # the 100 seeded objects are the ones that succeeded
