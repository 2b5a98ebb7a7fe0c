"""The canary on the fake store: a spread sample, read-back checks that can fail, and a resume that skips the sample."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from s3bulk.aws.allowlist import AllowList
from s3bulk.aws.validation import validate
from s3bulk.job import JobError, parse_job
from s3bulk.local import canary
from s3bulk.local.ledger import LocalLedger
from s3bulk.local.run import execute
from s3bulk.testing.memstore import MemoryStore


def store(n: int = 300) -> MemoryStore:
    s = MemoryStore(page_size=20)
    s.create_bucket("src-b")
    for i in range(n):
        s.put_object("src-b", f"in/{i:04d}", b"x" * (i % 7))
    return s


def tag_job(**options: Any) -> Any:
    return parse_job(
        json.dumps(
            {
                "operation": "tag",
                "source": {"bucket": "src-b", "prefix": "in/"},
                "tagging": {"mode": "replace", "tags": {"team": "data"}},
                "options": options,
            }
        )
    )


def run(job: Any, s: MemoryStore, ledger: LocalLedger) -> dict[str, Any]:
    report = execute(job, s, concurrency=4, console=Console(file=io.StringIO()), quiet=True, ledger=ledger)
    return report.summary() | {"exit": report.exit_code, "failures": list(report.tally.failures())}


def test_the_sample_is_spread_over_the_whole_key_range() -> None:
    picked = [i.obj.key for i in canary.sample(tag_job(), store(), 10)]
    assert len(picked) == len(set(picked)) == 10
    numbers = sorted(int(k[3:]) for k in picked)
    assert numbers[0] < 60 and numbers[-1] >= 240  # not the first ten keys: both ends of the range


def test_a_canary_that_reads_back_something_else_fails_naming_the_object_and_the_rest_is_not_started(tmp_path: Path) -> None:
    s = store()
    job = tag_job(canary=10)
    picked = {i.obj.key for i in canary.sample(job, s, 10)}
    victim = sorted(picked)[5]
    real = s.put_tags

    def ignores_one(bucket: str, key: str, tags: Any, *, version_id: str = "") -> None:
        if key != victim:  # a server that answers 200 but keeps the old tags on one object
            real(bucket, key, tags, version_id=version_id)

    s.put_tags = ignores_one  # type: ignore[method-assign]
    ledger = LocalLedger.create(tmp_path, "canary-job", job)
    out = run(job, s, ledger)
    assert (out["status"], out["exit"], out["succeeded"]) == ("failed", 1, 10)
    assert out["error"].startswith(f"canary: {victim}: its tags are {{}}")
    tagged = {k for k in s.keys("src-b") if s.get("src-b", k).tags}
    assert tagged == picked - {victim}  # nothing beyond the sample was touched


def test_the_resume_after_a_canary_tags_every_other_object_once_and_counts_all(tmp_path: Path) -> None:
    s = store()
    job = tag_job(canary=8)
    ledger = LocalLedger.create(tmp_path, "canary-job", job)
    first = run(job, s, ledger)
    ledger.close()
    # A canary's report says it is one, what it sampled and checked, and what runs the rest: never "succeeded".
    assert (first["status"], first["listed"], first["succeeded"]) == ("canary", 8, 8)
    assert first["canary"] == {"sampled": 8, "checked": 8, "rest": "s3bulk run --resume canary-job"}
    puts = s.calls["PutObjectTagging"]
    rest = run(job, s, LocalLedger.open(tmp_path, "canary-job"))
    assert (rest["status"], rest["listed"], rest["succeeded"], rest["failed"]) == ("succeeded", 300, 300, 0)
    assert s.calls["PutObjectTagging"] - puts == 292  # the sample's 8 are not tagged again
    assert all(s.get("src-b", k).tags == {"team": "data"} for k in s.keys("src-b"))


def test_a_canary_is_refused_in_a_dry_run_in_a_sync_and_on_the_stack() -> None:
    with pytest.raises(JobError, match=r"^job\.options\.canary: a canary acts on a sample, and dry_run"):
        tag_job(canary=3, dry_run=True)
    doc = {"operation": "delete", "source": {"bucket": "src-b", "prefix": "in/"}, "options": {"canary": 10}}
    allow = AllowList(frozenset({"src-b"}), frozenset(), frozenset({"src-b"}))
    with pytest.raises(JobError, match=r"^job\.options\.canary: the stack does not run a canary yet; run the canary with s3bulk run"):
        validate(doc, allow)


def test_a_delete_canary_then_resume_counts_every_object_scanned_once(tmp_path: Path) -> None:
    s = store(120)
    job = parse_job(json.dumps({"operation": "delete", "source": {"bucket": "src-b", "prefix": "in/"}, "options": {"canary": 6}}))
    ledger = LocalLedger.create(tmp_path, "canary-del", job)
    first = run(job, s, ledger)
    ledger.close()
    assert (first["status"], first["scanned"], first["listed"], first["succeeded"]) == ("canary", 6, 6, 6)
    assert len(s.keys("src-b")) == 114
    rest = run(job, s, LocalLedger.open(tmp_path, "canary-del"))
    assert (rest["scanned"], rest["listed"], rest["succeeded"], rest["failed"]) == (120, 120, 120, 0)
    assert s.keys("src-b") == []


def test_what_failed_in_a_canary_is_done_again_by_the_resume(tmp_path: Path) -> None:
    from s3bulk.store import StoreError

    s = store()
    job = tag_job(canary=10)
    victim = sorted(i.obj.key for i in canary.sample(job, s, 10))[3]
    denied = [True]
    s.faults.append(
        lambda op, b, k: StoreError("AccessDenied", "denied", 403) if op == "PutObjectTagging" and k == victim and denied[0] else None
    )
    ledger = LocalLedger.create(tmp_path, "canary-job", job)
    first = run(job, s, ledger)
    ledger.close()
    assert (first["status"], first["succeeded"], first["failed"]) == ("failed", 9, 1)
    assert [f["key"] for f in first["failures"]] == [victim]
    denied[0] = False  # the user fixed the permission
    rest = run(job, s, LocalLedger.open(tmp_path, "canary-job"))
    assert (rest["status"], rest["listed"], rest["succeeded"], rest["failed"], rest["failures"]) == ("succeeded", 300, 300, 0, [])
    assert s.get("src-b", victim).tags == {"team": "data"}


@pytest.mark.parametrize("algorithm", ["CRC64NVME", "CRC32C", "CRC32", "SHA256"])
def test_an_add_checksum_canary_reads_each_sampled_object_and_fails_on_a_stored_checksum_its_bytes_do_not_give(
    tmp_path: Path, algorithm: str
) -> None:
    s = store(60)
    job = parse_job(json.dumps({
        "operation": "add-checksum", "source": {"bucket": "src-b", "prefix": "in/"}, "checksum_algorithm": algorithm,
        "options": {"canary": 6},
    }))  # fmt: skip
    picked = sorted(i.obj.key for i in canary.sample(job, s, 6))
    victim = picked[2]
    real = s.copy_object

    def stores_zeros(*args: Any, **kwargs: Any) -> str:
        etag = real(*args, **kwargs)
        if args[1] == victim:  # a server that answers 200 and keeps an all-zero checksum (versitygw did)
            kept = s._get("src-b", victim)
            kept.checksum = f"{algorithm}:" + base64.b64encode(bytes(len(base64.b64decode(kept.checksum.split(":")[1])))).decode()
        return etag

    s.copy_object = stores_zeros  # type: ignore[method-assign]
    out = run(job, s, LocalLedger.create(tmp_path, "ck", job))
    assert (out["status"], out["exit"]) == ("failed", 1)
    assert out["error"].startswith(f"canary: {victim}: the server stored {algorithm} ") and "but its bytes give" in out["error"]
    good = run(job, store(60), LocalLedger.create(tmp_path / "good", "ck", job))
    assert (good["status"], good["exit"], good["canary"]["checked"]) == ("canary", 0, 6)
