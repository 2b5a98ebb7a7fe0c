"""verify and tag through the CLI on SeaweedFS, each proven from the server and the --key-log file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import cli_env, client_for, run_cli, run_job_cli
from tests.integration.helpers import seed_small, snapshot

pytestmark = pytest.mark.seaweed

N = 120


def run_job(endpoint: str, tmp_path: Path, name: str, doc: dict[str, Any]) -> tuple[int, dict[str, Any], list[dict[str, Any]]]:
    code, report, lines, _ = run_job_cli(endpoint, tmp_path, name, doc)
    return code, report, lines


def test_verify_reports_the_corrupted_copy_and_nothing_else(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    seed_small(direct, src, "in/", N)
    copy = {"operation": "copy", "source": {"bucket": src, "prefix": "in/"}, "destination": {"bucket": dst, "prefix": "out/"}}
    code, report, copied = run_job(seaweed, tmp_path, "copy", copy)
    assert code == 0 and report["succeeded"] == N and len(copied) == N
    victim = sorted(line["dst_key"] for line in copied if line["size"] > 10)[3]
    body = direct.get_object(Bucket=dst, Key=victim)["Body"].read()
    direct.put_object(Bucket=dst, Key=victim, Body=bytes([body[0] ^ 0xFF]) + body[1:])  # same size, one byte flipped
    before = snapshot(direct, dst)

    code, report, lines = run_job(seaweed, tmp_path, "verify", {**copy, "operation": "verify"})
    assert code == 1
    assert (report["succeeded"], report["failed"]) == (N - 1, 1)
    failed = [line for line in lines if line["outcome"] == "failed"]
    assert [(f["dst_key"], f["error"]) for f in failed] == [(victim, "ContentMismatch")]
    assert report["failures"][0]["error"] == "ContentMismatch"
    assert all(line["src_checksum"] == line["dst_checksum"] != "" for line in lines if line["outcome"] == "succeeded")
    assert snapshot(direct, dst) == before  # verify changed nothing


def test_tag_merge_keeps_other_tags_on_every_object(seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path) -> None:
    direct = client_for(seaweed)
    src = bucket_factory(direct, "src")
    keys = [f"in/{i:03d} ü+%" for i in range(40)]
    for i, key in enumerate(keys):
        direct.put_object(Bucket=src, Key=key, Body=f"body {i}".encode(), Tagging="keep=yes&team=old")
    job = {
        "operation": "tag",
        "source": {"bucket": src, "prefix": "in/"},
        "tagging": {"mode": "merge", "tags": {"team": "data", "cost": "7"}},
    }
    code, report, lines = run_job(seaweed, tmp_path, "tag", job)
    assert code == 0 and report["succeeded"] == len(keys)
    assert sorted(line["key"] for line in lines) == keys
    for key in keys:
        tags = {t["Key"]: t["Value"] for t in direct.get_object_tagging(Bucket=src, Key=key)["TagSet"]}
        assert tags == {"keep": "yes", "team": "data", "cost": "7"}
    code, report, lines = run_job(seaweed, tmp_path, "tag-again", job)
    assert code == 0 and (report["succeeded"], report["skipped"]) == (0, len(keys))  # nothing left to change


def test_add_checksum_of_a_large_object_is_a_multipart_copy_whose_composite_crc32_seaweedfs_keeps(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    """Above the threshold: parts S3 checksums, and a completion that carries them (SeaweedFS keeps the composite value;
    it keeps no checksum after a single CopyObject, so small objects are tested on moto)."""
    import base64
    import zlib

    direct = client_for(seaweed)
    bucket = bucket_factory(direct, "ck")
    part = 5 * 1024 * 1024
    bodies = {f"big/{i}": bytes([i]) * (2 * part + 1000 * (i + 1)) for i in range(2)}
    for key, body in bodies.items():
        direct.put_object(Bucket=bucket, Key=key, Body=body, Metadata={"m": key}, Tagging="t=1", ContentType="video/x")
    job = {
        "operation": "add-checksum",
        "source": {"bucket": bucket, "prefix": "big/"},
        "checksum_algorithm": "CRC32",
        "options": {"multipart_threshold": part, "part_size": part},
    }
    code, report, _ = run_job(seaweed, tmp_path, "checksum", job)
    assert (code, report["succeeded"], report["failed"]) == (0, 2, 0), report
    for key, body in bodies.items():
        parts = [body[at : at + part] for at in range(0, len(body), part)]
        crcs = b"".join(zlib.crc32(p).to_bytes(4, "big") for p in parts)
        want = f"{base64.b64encode(zlib.crc32(crcs).to_bytes(4, 'big')).decode()}-{len(parts)}"
        head = direct.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
        assert head["ChecksumCRC32"] == want
        assert (head["Metadata"], head["ContentType"], head["ContentLength"]) == ({"m": key}, "video/x", len(body))
        assert direct.get_object_tagging(Bucket=bucket, Key=key)["TagSet"] == [{"Key": "t", "Value": "1"}]
        assert direct.get_object(Bucket=bucket, Key=key)["Body"].read() == body
    code, again, _ = run_job(seaweed, tmp_path, "checksum-again", job)
    assert (code, again["succeeded"], again["skipped"]) == (0, 0, 2)


def test_set_encryption_then_undo_on_a_server_without_default_encryption_puts_none_back_keeping_everything_else(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    # SeaweedFS refuses a copy onto itself that only names an encryption, so both ways replace the metadata with the
    # object's own; undo's copy back to none failed every object before.
    direct = client_for(seaweed)
    bucket = bucket_factory(direct, "enc")
    for i in range(20):
        direct.put_object(Bucket=bucket, Key=f"in/{i:02d}", Body=b"x" * i, Metadata={"n": str(i)}, ContentType="text/x-demo")
    log = tmp_path / "keys.jsonl"
    (tmp_path / "job.json").write_text(
        f'{{"operation": "set-encryption", "source": {{"bucket": "{bucket}", "prefix": "in/"}}, "encryption": {{"sse": "AES256"}}}}'
    )
    env = cli_env(tmp_path)
    done = run_cli("run", str(tmp_path / "job.json"), "--endpoint-url", seaweed, "--key-log", str(log), "-q", "--no-ledger", env=env)
    assert done.returncode == 0, done.stderr
    heads = [direct.head_object(Bucket=bucket, Key=f"in/{i:02d}") for i in range(20)]
    assert {h.get("ServerSideEncryption") for h in heads} == {"AES256"}
    undone = run_cli("undo", str(log), "--endpoint-url", seaweed, env=env)
    assert undone.returncode == 0 and "restored 20;" in undone.stdout, undone.stdout + undone.stderr
    for i in range(20):
        h = direct.head_object(Bucket=bucket, Key=f"in/{i:02d}")
        assert (h.get("ServerSideEncryption"), h["Metadata"], h["ContentType"], h["ContentLength"]) == (
            None,
            {"n": str(i)},
            "text/x-demo",
            i,
        )
        assert direct.get_object(Bucket=bucket, Key=f"in/{i:02d}")["Body"].read() == b"x" * i
