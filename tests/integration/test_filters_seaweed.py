"""source.tags and source.content_type through the CLI on SeaweedFS: copies and deletes act only on matches, exactly
counted, and every other object is left as it was (proven from the server and the --key-log file)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import client_for
from tests.integration.helpers import snapshot
from tests.integration.test_operations_seaweed import run_job

pytestmark = pytest.mark.seaweed

N = 60
KINDS = (("team=data&env=prod", "image/png"), ("team=ops", "text/plain; charset=utf-8"), ("", "image/jpeg"))


def seed(direct: Any, bucket: str) -> list[str]:
    """in/000..059: i % 3 == 0 team=data image/png; 1 team=ops text/plain; 2 untagged image/jpeg. Returns the keys."""
    keys = [f"in/{i:03d} ü+" for i in range(N)]
    for i, key in enumerate(keys):
        tagging, content_type = KINDS[i % 3]
        direct.put_object(Bucket=bucket, Key=key, Body=f"body {i}".encode(), ContentType=content_type, Tagging=tagging)
    return keys


def test_a_copy_filtered_by_tags_copies_only_the_tagged_objects(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    keys = seed(direct, src)
    before = snapshot(direct, src)
    doc = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "in/", "tags": {"team": "data"}},
        "destination": {"bucket": dst, "prefix": "out/"},
    }
    code, report, lines = run_job(seaweed, tmp_path, "copy-tags", doc)
    matches = keys[0::3]
    assert code == 0, report
    assert (report["listed"], report["succeeded"], report["skipped"], report["failed"]) == (N, len(matches), N - len(matches), 0)
    copied = [o["Key"] for o in direct.list_objects_v2(Bucket=dst).get("Contents", [])]
    assert sorted(copied) == sorted(k.replace("in/", "out/", 1) for k in matches)
    assert direct.get_object(Bucket=dst, Key=matches[1].replace("in/", "out/", 1))["Body"].read() == b"body 3"
    outcomes = {line["key"]: (line["outcome"], line["result"]) for line in lines}
    assert outcomes[keys[1]] == ("skipped", "filtered out: tag 'team' is 'ops'")
    assert outcomes[keys[2]] == ("skipped", "filtered out: tag 'team' is absent")
    assert snapshot(direct, src) == before


def test_a_delete_filtered_by_content_type_deletes_only_that_family(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    direct = client_for(seaweed)
    src = bucket_factory(direct, "src")
    keys = seed(direct, src)
    texts = keys[1::3]
    kept = [k for k in keys if k not in texts]
    kept_before = {k: direct.get_object(Bucket=src, Key=k)["Body"].read() for k in kept}
    doc = {"operation": "delete", "source": {"bucket": src, "prefix": "in/", "content_type": "TEXT/*"}, "options": {"batch_size": 25}}
    code, report, lines = run_job(seaweed, tmp_path, "delete-type", doc)
    assert code == 0, report
    assert (report["succeeded"], report["skipped"], report["failed"]) == (len(texts), len(kept), 0)
    left = sorted(o["Key"] for o in direct.list_objects_v2(Bucket=src).get("Contents", []))
    assert left == sorted(kept)
    assert {k: direct.get_object(Bucket=src, Key=k)["Body"].read() for k in kept} == kept_before
    assert sorted(line["key"] for line in lines if line["outcome"] == "succeeded") == sorted(texts)


def test_a_copy_filtered_by_content_type_and_a_delete_filtered_by_tags_act_only_on_matches(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    keys = seed(direct, src)
    images = [k for i, k in enumerate(keys) if i % 3 != 1]
    copy = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "in/", "content_type": "image/*"},
        "destination": {"bucket": dst, "prefix": "out/"},
    }
    code, report, _ = run_job(seaweed, tmp_path, "copy-type", copy)
    assert code == 0 and (report["succeeded"], report["skipped"]) == (len(images), N - len(images)), report
    copied = sorted(o["Key"] for o in direct.list_objects_v2(Bucket=dst).get("Contents", []))
    assert copied == sorted(k.replace("in/", "out/", 1) for k in images)
    assert direct.head_object(Bucket=dst, Key=images[0].replace("in/", "out/", 1))["ContentType"] == "image/png"

    delete = {"operation": "delete", "source": {"bucket": src, "prefix": "in/", "tags": {"team": "ops"}}}
    code, report, _ = run_job(seaweed, tmp_path, "delete-tags", delete)
    ops = keys[1::3]
    assert code == 0 and (report["succeeded"], report["skipped"]) == (len(ops), N - len(ops)), report
    left = sorted(o["Key"] for o in direct.list_objects_v2(Bucket=src).get("Contents", []))
    assert left == sorted(set(keys) - set(ops))
