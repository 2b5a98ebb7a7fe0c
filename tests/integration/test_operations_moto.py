"""set-storage-class and restore through the CLI on moto server (SeaweedFS refuses in-place copies and has no archive tiers)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import client_for
from tests.integration.test_operations_seaweed import run_job

pytestmark = pytest.mark.moto


def test_set_storage_class_keeps_bodies_metadata_and_tags(
    moto_endpoint: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    direct = client_for(moto_endpoint)
    src = bucket_factory(direct, "src")
    keys = [f"in/{i:03d} ü+%" for i in range(30)]
    for i, key in enumerate(keys):
        direct.put_object(
            Bucket=src, Key=key, Body=f"body {i}".encode(), Metadata={"origin": str(i)}, Tagging="keep=yes", ContentType="text/x-s3bulk"
        )
    direct.put_object(Bucket=src, Key="in/zz-already", Body=b"ia", StorageClass="STANDARD_IA")
    code, report, lines = run_job(
        moto_endpoint,
        tmp_path,
        "class",
        {"operation": "set-storage-class", "source": {"bucket": src, "prefix": "in/"}, "storage_class": "STANDARD_IA"},
    )
    assert code == 0, report
    assert (report["succeeded"], report["skipped"]) == (len(keys), 1)
    for i, key in enumerate(keys):
        head = direct.head_object(Bucket=src, Key=key)
        assert (head.get("StorageClass"), head["Metadata"], head["ContentType"]) == ("STANDARD_IA", {"origin": str(i)}, "text/x-s3bulk")
        assert direct.get_object(Bucket=src, Key=key)["Body"].read() == f"body {i}".encode()
        assert direct.get_object_tagging(Bucket=src, Key=key)["TagSet"] == [{"Key": "keep", "Value": "yes"}]
    assert {line["key"]: line["outcome"] for line in lines}["in/zz-already"] == "skipped"


def test_restore_requests_archived_objects_only_and_a_rerun_is_harmless(
    moto_endpoint: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    direct = client_for(moto_endpoint)
    src = bucket_factory(direct, "src")
    for i in range(6):
        direct.put_object(Bucket=src, Key=f"cold/g{i}", Body=b"g", StorageClass="GLACIER")
    direct.put_object(Bucket=src, Key="cold/d", Body=b"d", StorageClass="DEEP_ARCHIVE")
    direct.put_object(Bucket=src, Key="cold/warm", Body=b"w")
    job = {"operation": "restore", "source": {"bucket": src, "prefix": "cold/"}, "restore": {"days": 2, "tier": "Bulk"}}
    code, report, lines = run_job(moto_endpoint, tmp_path, "restore", job)
    assert code == 0, report
    assert (report["succeeded"], report["skipped"], report["failed"]) == (7, 1, 0)
    for key in [f"cold/g{i}" for i in range(6)] + ["cold/d"]:
        assert "Restore" in direct.head_object(Bucket=src, Key=key)
    assert "Restore" not in direct.head_object(Bucket=src, Key="cold/warm")
    assert {line["key"]: line["outcome"] for line in lines}["cold/warm"] == "skipped"
    code, report, _ = run_job(moto_endpoint, tmp_path, "restore-again", job)
    assert code == 0 and report["failed"] == 0 and report["succeeded"] + report["skipped"] == 8
