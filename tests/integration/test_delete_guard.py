"""The delete guard (options.max_delete) through the CLI on SeaweedFS: count first, then act."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import client_for, run_job_cli
from tests.integration.helpers import list_keys, seed_small, snapshot

pytestmark = pytest.mark.seaweed

N = 120


def test_a_delete_over_max_delete_deletes_nothing_and_one_at_the_limit_deletes_everything(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    direct = client_for(seaweed)
    bucket = bucket_factory(direct, "guarded")
    seed_small(direct, bucket, "old/", N)
    before = snapshot(direct, bucket)
    job = {"operation": "delete", "source": {"bucket": bucket, "prefix": "old/"}, "options": {"max_delete": N - 1}}
    code, report, lines, stderr = run_job_cli(seaweed, tmp_path, "over", job)
    assert code == 2 and report == {} and lines == []
    [line] = stderr.strip().splitlines()
    assert line.startswith("error: job.options.max_delete: the job would delete 120 objects, over max_delete 119; nothing was deleted")
    assert snapshot(direct, bucket) == before

    code, report, _, _ = run_job_cli(seaweed, tmp_path, "at", {**job, "options": {"max_delete": N}})
    assert (code, report["succeeded"], report["failed"]) == (0, N, 0)
    assert list_keys(direct, bucket, "old/") == []


def test_a_sync_whose_extraneous_deletes_exceed_max_delete_copies_and_deletes_nothing(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    seed_small(direct, src, "in/", 30)
    seed_small(direct, dst, "stale/gone/", 10)  # no source key maps to these
    before = snapshot(direct, dst)
    job = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "in/"},
        "destination": {"bucket": dst, "prefix": "stale/"},
        "options": {"delete_extraneous": True, "if_exists": "skip-unchanged", "max_delete": 5},
    }
    code, _, _, stderr = run_job_cli(seaweed, tmp_path, "sync", job)
    assert code == 2 and "would delete 10 extraneous destination objects, over max_delete 5" in stderr
    assert snapshot(direct, dst) == before
