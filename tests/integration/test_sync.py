"""Incremental sync through the CLI on SeaweedFS: a rerun copies exactly what changed, deletes what vanished."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from s3bulk.local.ledger import LocalLedger
from tests.integration.conftest import cli_env, client_for, run_cli, run_job_cli
from tests.integration.helpers import assert_exact_copy, list_keys, md5, seed_small, snapshot, write_job

pytestmark = pytest.mark.seaweed

N, K, M, D = 300, 11, 7, 5


def test_second_sync_copies_k_plus_m_skips_the_rest_and_deletes_d(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    seed_small(direct, src, "in/", N)
    state = tmp_path / "state"
    env = cli_env(tmp_path) | {"S3BULK_STATE_DIR": str(state)}
    job = write_job(
        tmp_path / "sync.json",
        {
            "operation": "copy",
            "source": {"bucket": src, "prefix": "in/"},
            "destination": {"bucket": dst, "prefix": "mirror/"},
            "options": {"if_exists": "skip-unchanged", "delete_extraneous": True, "batch_size": 50},
        },
    )

    def sync(name: str) -> tuple[dict[str, Any], LocalLedger]:
        report = tmp_path / f"{name}.json"
        done = run_cli("run", str(job), "--endpoint-url", seaweed, "-q", "--report", str(report), env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        doc = json.loads(report.read_text())
        return doc, LocalLedger.reading(state, doc["job_id"])

    first, ledger = sync("first")
    assert (first["succeeded"], first["skipped"], ledger.totals().succeeded) == (N, 0, N)
    ledger.close()
    untouched = snapshot(direct, dst)
    again, ledger = sync("again")  # the scheduled rerun with nothing changed
    assert (again["succeeded"], again["skipped"], ledger.totals().skipped) == (0, N, N)
    assert snapshot(direct, dst) == untouched
    ledger.close()

    keys = sorted(list_keys(direct, src, "in/"))
    for key in keys[:K]:
        direct.put_object(Bucket=src, Key=key, Body=b"changed " + key.encode())
    for i in range(M):
        direct.put_object(Bucket=src, Key=f"in/zz-new-{i}", Body=b"new")
    for key in keys[-D:]:
        direct.delete_object(Bucket=src, Key=key)
    second, ledger = sync("second")
    totals = ledger.totals()
    ledger.close()
    assert (second["succeeded"], second["skipped"], second["deleted_extraneous"], second["failed"]) == (K + M, N - K - D, D, 0)
    assert (totals.succeeded, totals.skipped) == (K + M, N - K - D)
    expected = {"mirror/" + k[3:]: md5(direct.get_object(Bucket=src, Key=k)["Body"].read()) for k in list_keys(direct, src, "in/")}
    assert_exact_copy(direct, dst, "mirror/", expected)


def test_a_sync_on_a_server_that_lists_folders_first_stops_before_deleting_what_the_source_holds(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    # SeaweedFS lists d/a/b before d/a-b and d/a.c; the merge join, reading S3's order, took both for extraneous
    # and deleted them (exit 0, deleted_extraneous 3). The listing now refuses an order that is not S3's.
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    for key in ("d/a-b", "d/a.c", "d/z"):
        direct.put_object(Bucket=src, Key=key, Body=b"same")
    for key in ("d/a/b", "d/a-b", "d/a.c", "d/z"):
        direct.put_object(Bucket=dst, Key=key, Body=b"same")
    doc = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "d/"},
        "destination": {"bucket": dst, "prefix": "d/"},
        "options": {"if_exists": "skip", "delete_extraneous": True},
    }
    code, report, _, _ = run_job_cli(seaweed, tmp_path, "sync", doc)
    assert code == 1 and "ListingOutOfOrder" in report["error"] and "deleted_extraneous" not in report
    assert sorted(list_keys(direct, dst, "")) == ["d/a-b", "d/a.c", "d/a/b", "d/z"]
