"""In-place operations through the CLI on moto server: set-storage-class, restore, Object Lock, ACLs and tag removal
(SeaweedFS refuses in-place copies and has no archive tiers or Object Lock)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from s3bulk.job import parse_job
from s3bulk.local.engine import Engine
from s3bulk.s3.stores import S3Store
from tests.integration.conftest import cli_env, client_for, run_cli
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


def test_retention_and_legal_hold_are_applied_to_every_selected_object_and_read_back(moto_endpoint: str, tmp_path: Path) -> None:
    """moto answers GetObjectRetention with a 500, so retention is read back from HEAD (x-amz-object-lock-*), as S3 sends it too."""
    direct = client_for(moto_endpoint)
    bucket = f"locked-{uuid.uuid4().hex[:10]}"
    direct.create_bucket(Bucket=bucket, ObjectLockEnabledForBucket=True)
    keys = [f"records/{i:03d} é+%" for i in range(25)]
    for key in keys:
        direct.put_object(Bucket=bucket, Key=key, Body=key.encode())
    until = "2035-06-30T00:00:00Z"
    job = {
        "operation": "set-retention",
        "source": {"bucket": bucket, "prefix": "records/"},
        "retention": {"mode": "GOVERNANCE", "until": until},
    }
    code, report, _ = run_job(moto_endpoint, tmp_path, "retention", job)
    # moto does not refuse shortening a COMPLIANCE retention (S3 does: AccessDenied); that per-key refusal is
    # proven on the in-memory store (tests/unit/test_object_lock_operations.py).
    assert (code, report["succeeded"], report["failed"]) == (0, 25, 0), report
    for key in keys:
        head = direct.head_object(Bucket=bucket, Key=key)
        assert (head["ObjectLockMode"], head["ObjectLockRetainUntilDate"].astimezone(UTC)) == (
            "GOVERNANCE",
            datetime(2035, 6, 30, tzinfo=UTC),
        )

    hold = {"operation": "set-legal-hold", "source": {"bucket": bucket, "prefix": "records/00", "raw_prefix": True}, "legal_hold": "ON"}
    code, report, _ = run_job(moto_endpoint, tmp_path, "hold", hold)
    assert (code, report["succeeded"]) == (0, 10)
    statuses = {k: direct.get_object_legal_hold(Bucket=bucket, Key=k)["LegalHold"].get("Status", "OFF") for k in keys}
    assert statuses == {k: "ON" if k.startswith("records/00") else "OFF" for k in keys}


def test_retention_on_a_bucket_without_object_lock_fails_each_key_saying_why(
    moto_endpoint: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    direct = client_for(moto_endpoint)
    bucket = bucket_factory(direct, "plain")
    direct.put_object(Bucket=bucket, Key="r/a", Body=b"a")
    job = {
        "operation": "set-retention",
        "source": {"bucket": bucket, "prefix": "r/"},
        "retention": {"mode": "GOVERNANCE", "until": "2030-01-01T00:00:00Z"},
    }
    code, report, _ = run_job(moto_endpoint, tmp_path, "no-lock", job)
    assert (code, report["failed"]) == (1, 1)
    [failure] = report["failures"]
    assert failure["key"] == "r/a" and "needs a bucket with Object Lock enabled" in failure["message"]


def test_set_acl_applies_a_canned_acl_and_tag_remove_takes_off_only_the_named_tags(
    moto_endpoint: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    direct = client_for(moto_endpoint)
    bucket = bucket_factory(direct, "acl")
    for i in range(12):
        direct.put_object(Bucket=bucket, Key=f"shared/{i:02d}", Body=b"x", Tagging="temporary=yes&team=data&review=1")
    direct.put_object(Bucket=bucket, Key="shared/untagged", Body=b"x")
    code, report, _ = run_job(
        moto_endpoint, tmp_path, "acl", {"operation": "set-acl", "source": {"bucket": bucket, "prefix": "shared/"}, "acl": "public-read"}
    )
    assert (code, report["succeeded"]) == (0, 13)
    grants = direct.get_object_acl(Bucket=bucket, Key="shared/05")["Grants"]
    assert any(g["Permission"] == "READ" and g["Grantee"].get("URI", "").endswith("/global/AllUsers") for g in grants)

    remove = {
        "operation": "tag",
        "source": {"bucket": bucket, "prefix": "shared/"},
        "tagging": {"mode": "remove", "keys": ["temporary", "review"]},
    }
    code, report, _ = run_job(moto_endpoint, tmp_path, "untag", remove)
    assert (code, report["succeeded"], report["skipped"]) == (0, 12, 1)  # the untagged object needs no write
    for i in range(12):
        assert direct.get_object_tagging(Bucket=bucket, Key=f"shared/{i:02d}")["TagSet"] == [{"Key": "team", "Value": "data"}]
    code, report, _ = run_job(moto_endpoint, tmp_path, "untag-again", remove)
    assert (code, report["succeeded"], report["skipped"]) == (0, 0, 13)  # a rerun reads and writes nothing


def test_undo_after_a_tag_replace_restores_the_exact_previous_tag_sets_and_skips_an_object_retagged_after_the_job(
    moto_endpoint: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    direct = client_for(moto_endpoint)
    bucket = bucket_factory(direct, "undo")
    keys = [f"docs/{i:02d} ü+%" for i in range(24)]
    for i, key in enumerate(keys):
        direct.put_object(Bucket=bucket, Key=key, Body=b"x", **({"Tagging": f"owner=team{i % 3}&n={i}"} if i % 4 else {}))

    def tag_sets() -> dict[str, list[dict[str, str]]]:
        return {k: sorted(direct.get_object_tagging(Bucket=bucket, Key=k)["TagSet"], key=lambda t: t["Key"]) for k in keys}

    before = tag_sets()
    job = {
        "operation": "tag",
        "source": {"bucket": bucket, "prefix": "docs/"},
        "tagging": {"mode": "replace", "tags": {"owner": "migrated"}},
    }
    code, report, _ = run_job(moto_endpoint, tmp_path, "retag", job)
    assert (code, report["succeeded"]) == (0, 24)
    direct.put_object_tagging(Bucket=bucket, Key=keys[7], Tagging={"TagSet": [{"Key": "owner", "Value": "late-change"}]})
    log = str(tmp_path / "retag-keys.jsonl")
    env = cli_env(tmp_path)

    dry = run_cli("undo", log, "--endpoint-url", moto_endpoint, "--dry-run", env=env)
    assert dry.returncode == 0 and dry.stdout.startswith("would restore 23; left alone (changed since the job) 1; failed 0"), dry
    done = run_cli("undo", log, "--endpoint-url", moto_endpoint, env=env)
    assert done.returncode == 0 and done.stdout.startswith("restored 23; left alone (changed since the job) 1; failed 0"), done
    assert keys[7] in done.stdout
    assert tag_sets() == {**before, keys[7]: [{"Key": "owner", "Value": "late-change"}]}


@pytest.mark.parametrize("algorithm", ["CRC32", "SHA256"])
def test_add_checksum_has_s3_keep_the_checksum_of_each_object_unchanged_and_a_rerun_copies_nothing(
    moto_endpoint: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path, algorithm: str
) -> None:
    """moto computes CRC32 and SHA256 right (its CRC64NVME is a CRC32, and SeaweedFS keeps none: a canary says so)."""
    import base64
    import hashlib
    import zlib

    direct = client_for(moto_endpoint)
    src = bucket_factory(direct, "src")
    bodies = {f"in/{i:03d} ü+%": f"body {i}".encode() * (i + 1) for i in range(20)}
    for i, (key, body) in enumerate(bodies.items()):
        direct.put_object(
            Bucket=src,
            Key=key,
            Body=body,
            Metadata={"origin": str(i)},
            Tagging="keep=yes",
            ContentType="text/x-s3bulk",
            CacheControl="max-age=7",
        )
    job = {"operation": "add-checksum", "source": {"bucket": src, "prefix": "in/"}, "checksum_algorithm": algorithm}
    code, report, _ = run_job(moto_endpoint, tmp_path, "checksum", job)
    assert code == 0, report
    assert (report["succeeded"], report["skipped"], report["failed"]) == (20, 0, 0)
    for i, (key, body) in enumerate(bodies.items()):
        head = direct.head_object(Bucket=src, Key=key, ChecksumMode="ENABLED")
        want = (
            base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode()
            if algorithm == "CRC32"
            else base64.b64encode(hashlib.sha256(body).digest()).decode()
        )
        assert head[f"Checksum{algorithm}"] == want
        assert (head["Metadata"], head["ContentType"], head["CacheControl"]) == ({"origin": str(i)}, "text/x-s3bulk", "max-age=7")
        assert direct.get_object(Bucket=src, Key=key)["Body"].read() == body
        assert direct.get_object_tagging(Bucket=src, Key=key)["TagSet"] == [{"Key": "keep", "Value": "yes"}]
    code, again, _ = run_job(moto_endpoint, tmp_path, "checksum-again", job)
    assert (code, again["succeeded"], again["skipped"]) == (0, 0, 20)


def test_undo_of_a_governance_retention_takes_it_off_again_through_the_cli(moto_endpoint: str, tmp_path: Path) -> None:
    direct = client_for(moto_endpoint)
    bucket = f"lock-{uuid.uuid4().hex[:10]}"
    direct.create_bucket(Bucket=bucket, ObjectLockEnabledForBucket=True)
    keys = [f"held/{i:02d}" for i in range(8)]
    for key in keys:
        direct.put_object(Bucket=bucket, Key=key, Body=b"x")
    job = {
        "operation": "set-retention",
        "source": {"bucket": bucket, "prefix": "held/"},
        "retention": {"mode": "GOVERNANCE", "until": "2031-01-01T00:00:00Z"},
    }
    code, report, lines = run_job(moto_endpoint, tmp_path, "hold", job)
    assert (code, report["succeeded"]) == (0, 8)
    assert {line["undo"]["before"] for line in lines} == {None}
    assert {direct.head_object(Bucket=bucket, Key=k).get("ObjectLockMode") for k in keys} == {"GOVERNANCE"}
    done = run_cli("undo", str(tmp_path / "hold-keys.jsonl"), "--endpoint-url", moto_endpoint, env=cli_env(tmp_path))
    assert done.returncode == 0 and done.stdout.startswith("restored 8; left alone (changed since the job) 0; failed 0"), done
    assert {direct.head_object(Bucket=bucket, Key=k).get("ObjectLockMode") for k in keys} == {None}


def test_undo_of_a_set_acl_puts_each_objects_own_grants_back_through_the_cli(
    moto_endpoint: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    direct = client_for(moto_endpoint)
    bucket = bucket_factory(direct, "acl")
    keys = [f"shared/{i:02d}" for i in range(6)]
    for key in keys:
        direct.put_object(Bucket=bucket, Key=key, Body=b"x")
    direct.put_object_acl(Bucket=bucket, Key=keys[2], ACL="authenticated-read")

    def grants() -> dict[str, list[tuple[str, str]]]:
        out = {}
        for key in keys:
            acl = direct.get_object_acl(Bucket=bucket, Key=key)["Grants"]
            out[key] = sorted((g["Grantee"].get("URI", "owner"), g["Permission"]) for g in acl)
        return out

    before = grants()
    code, report, _ = run_job(
        moto_endpoint, tmp_path, "share", {"operation": "set-acl", "source": {"bucket": bucket, "prefix": "shared/"}, "acl": "public-read"}
    )
    assert (code, report["succeeded"]) == (0, 6)
    assert grants() != before
    done = run_cli("undo", str(tmp_path / "share-keys.jsonl"), "--endpoint-url", moto_endpoint, env=cli_env(tmp_path))
    assert done.returncode == 0 and done.stdout.startswith("restored 6; left alone (changed since the job) 0; failed 0"), done
    assert grants() == before


@pytest.mark.parametrize(
    ("operation", "fields"),
    [("set-storage-class", {"storage_class": "STANDARD_IA"}), ("add-checksum", {"checksum_algorithm": "SHA256"})],
)
def test_an_in_place_copy_keeps_each_objects_own_kms_key(
    moto_endpoint: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path, operation: str, fields: dict[str, str]
) -> None:
    """moto, like S3, gives an in-place CopyObject that names no encryption the default (AES256), dropping the KMS key."""
    direct = client_for(moto_endpoint)
    src = bucket_factory(direct, "src")
    key_arn = "arn:aws:kms:us-east-1:123456789012:key/11112222-3333-4444-5555-666677778888"
    for i in range(5):
        direct.put_object(Bucket=src, Key=f"kms/{i}", Body=b"secret", ServerSideEncryption="aws:kms", SSEKMSKeyId=key_arn)
    direct.put_object(Bucket=src, Key="kms/s3-managed", Body=b"plain", ServerSideEncryption="AES256")
    code, report, _ = run_job(
        moto_endpoint, tmp_path, "keep-kms", {"operation": operation, "source": {"bucket": src, "prefix": "kms/"}, **fields}
    )
    assert (code, report["succeeded"], report["failed"]) == (0, 6, 0), report
    for i in range(5):
        head = direct.head_object(Bucket=src, Key=f"kms/{i}", ChecksumMode="ENABLED")
        assert (head["ServerSideEncryption"], head["SSEKMSKeyId"]) == ("aws:kms", key_arn)
        assert head.get("StorageClass") == fields.get("storage_class") and ("ChecksumSHA256" in head) == (operation == "add-checksum")
    assert direct.head_object(Bucket=src, Key="kms/s3-managed")["ServerSideEncryption"] == "AES256"


def test_an_in_place_copy_keeps_each_objects_grants_in_a_bucket_with_acls(
    moto_endpoint: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    """moto, like S3, gives a copy no ACL of its source's. A bucket without ownership controls has ACLs enabled."""
    direct = client_for(moto_endpoint)
    src = bucket_factory(direct, "src")
    other = "79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be"
    direct.put_object(Bucket=src, Key="acl/public", Body=b"p", ACL="public-read")
    direct.put_object(
        Bucket=src, Key="acl/shared", Body=b"s", GrantRead=f'id="{other}"', GrantFullControl='id="' + _owner(direct, src) + '"'
    )
    direct.put_object(Bucket=src, Key="acl/big", Body=b"b" * (6 * 1024 * 1024), ACL="public-read")
    direct.put_object(Bucket=src, Key="acl/private", Body=b"x")

    def grants(key: str) -> list[tuple[str, str]]:
        got = direct.get_object_acl(Bucket=src, Key=key)["Grants"]
        return sorted((g["Grantee"].get("URI") or g["Grantee"].get("ID", ""), g["Permission"]) for g in got)

    before = {k: grants(f"acl/{k}") for k in ("public", "shared", "big", "private")}
    job = {"operation": "set-storage-class", "source": {"bucket": src, "prefix": "acl/"}, "storage_class": "STANDARD_IA"}
    code, report, _ = run_job(moto_endpoint, tmp_path, "keep-acl", {**job, "options": {"multipart_threshold": 5 * 1024 * 1024}})
    assert (code, report["succeeded"], report["failed"]) == (0, 4, 0), report.get("failures")
    assert {k: grants(f"acl/{k}") for k in before} == before
    assert ("http://acs.amazonaws.com/groups/global/AllUsers", "READ") in before["public"] and (other, "READ") in before["shared"]
    assert direct.head_object(Bucket=src, Key="acl/big")["StorageClass"] == "STANDARD_IA"


def _owner(client: Any, bucket: str) -> str:
    return str(client.get_bucket_acl(Bucket=bucket)["Owner"]["ID"])


def test_set_storage_class_in_an_object_lock_bucket_keeps_the_new_versions_retention_and_legal_hold(moto_endpoint: str) -> None:
    """moto, like S3, gives a copy no Object Lock of its source's: the new version would be unprotected.

    moto also refuses Object Lock headers on a CopyObject without a Content-MD5 (its PutObject rule; S3 takes them
    without one, as boto3's managed copy and Batch Operations' copy send them), so this test adds an empty body's MD5
    to the copies, in-process on botocore's path.
    """
    direct = client_for(moto_endpoint)
    bucket = f"locked-{uuid.uuid4().hex[:10]}"
    direct.create_bucket(Bucket=bucket, ObjectLockEnabledForBucket=True)
    until = datetime(2036, 1, 31, tzinfo=UTC)
    for i in range(4):
        direct.put_object(
            Bucket=bucket,
            Key=f"held/{i}",
            Body=b"r",
            ChecksumAlgorithm="CRC32",
            ObjectLockMode="GOVERNANCE",
            ObjectLockRetainUntilDate=until,
            ObjectLockLegalHoldStatus="ON" if i % 2 else "OFF",
        )
    client = client_for(moto_endpoint)
    sent: list[dict[str, str]] = []

    def for_moto(request: Any, **_: Any) -> None:
        if "x-amz-copy-source" in request.headers:
            request.headers["Content-MD5"] = "1B2M2Y8AsgTpgAmY7PhCfg=="  # of b""
            sent.append({k.lower(): str(v) for k, v in request.headers.items()})

    client.meta.events.register("before-sign.s3.CopyObject", for_moto)
    job = {"operation": "set-storage-class", "source": {"bucket": bucket, "prefix": "held/"}, "storage_class": "STANDARD_IA"}
    report = Engine(parse_job(json.dumps(job)), S3Store(client), concurrency=2).run()
    assert (report.summary()["succeeded"], list(report.tally.failures())) == (4, [])
    assert len(sent) == 4 and all(h["x-amz-object-lock-mode"] == "GOVERNANCE" for h in sent)
    for i in range(4):
        versions = direct.list_object_versions(Bucket=bucket, Prefix=f"held/{i}")["Versions"]
        head = direct.head_object(Bucket=bucket, Key=f"held/{i}")
        assert len(versions) == 2 and head["StorageClass"] == "STANDARD_IA"
        assert (head["ObjectLockMode"], head["ObjectLockRetainUntilDate"].astimezone(UTC)) == ("GOVERNANCE", until)
        assert head.get("ObjectLockLegalHoldStatus", "OFF") == ("ON" if i % 2 else "OFF")


def test_set_encryption_through_the_cli_rekeys_by_an_in_place_copy_that_keeps_everything_and_undo_puts_sse_s3_back(
    moto_endpoint: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    """An endpoint that is not AWS never gets UpdateObjectEncryption (it might take it for a PutObject): each object is
    copied onto itself under the key, keeping body, metadata, tags and class; `s3bulk undo` copies it back."""
    direct = client_for(moto_endpoint)
    bucket = bucket_factory(direct, "enc")
    key_arn = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    keys = [f"data/{i:02d}" for i in range(10)]
    for i, key in enumerate(keys):
        direct.put_object(
            Bucket=bucket,
            Key=key,
            Body=f"body {i}".encode(),
            ServerSideEncryption="AES256",
            Metadata={"n": str(i)},
            Tagging=f"team=t{i % 2}",
            StorageClass="STANDARD_IA" if i % 2 else "STANDARD",
        )

    def state() -> dict[str, tuple[Any, ...]]:
        out = {}
        for k in keys:
            h = direct.head_object(Bucket=bucket, Key=k)
            tags = direct.get_object_tagging(Bucket=bucket, Key=k)["TagSet"]
            body = direct.get_object(Bucket=bucket, Key=k)["Body"].read()
            out[k] = (body, h["Metadata"], tags, h.get("StorageClass", "STANDARD"))
        return out

    before = state()
    job = {
        "operation": "set-encryption",
        "source": {"bucket": bucket, "prefix": "data/"},
        "encryption": {"sse": "aws:kms", "kms_key_id": key_arn},
    }
    code, report, lines = run_job(moto_endpoint, tmp_path, "enc", job)
    assert (code, report["succeeded"], report["failed"]) == (0, 10, 0), report
    heads = [direct.head_object(Bucket=bucket, Key=k) for k in keys]
    assert {(h.get("ServerSideEncryption"), h.get("SSEKMSKeyId")) for h in heads} == {("aws:kms", key_arn)}
    assert state() == before
    assert {json.dumps(line["undo"]["before"], sort_keys=True) for line in lines} == {
        json.dumps({"sse": "AES256", "kms_key_id": "", "bucket_key": False}, sort_keys=True)
    }
    done = run_cli("undo", str(tmp_path / "enc-keys.jsonl"), "--endpoint-url", moto_endpoint, env=cli_env(tmp_path))
    assert done.returncode == 0 and done.stdout.startswith("restored 10; left alone (changed since the job) 0; failed 0"), done
    assert {direct.head_object(Bucket=bucket, Key=k).get("ServerSideEncryption") for k in keys} == {"AES256"}
    assert state() == before
