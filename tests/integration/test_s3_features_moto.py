"""S3 features a bulk job meets in the wild, on moto (which models them as S3 does).

Account checks, requester-pays and encryption headers on every request; SSE-KMS
copies; archived sources; versioned and Object Lock buckets; missing and empty buckets.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest

from s3bulk.job import MiB, parse_job
from s3bulk.local.engine import Engine
from s3bulk.report import Report
from s3bulk.s3.fastpath import FastS3
from s3bulk.s3.faststore import FastS3Store
from s3bulk.s3.stores import S3Store
from tests.integration.conftest import cli_env, client_for, run_cli
from tests.integration.helpers import list_keys, write_job

pytestmark = pytest.mark.moto

ACCOUNT = "123456789012"  # moto's account: the buckets' real owner


@pytest.fixture
def client(moto_endpoint: str) -> Any:
    return client_for(moto_endpoint)


def capture(client: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[list[tuple[str, dict[str, str]]], Callable[[], None]]:
    """Every request either path sends, as (method and target, lower-cased headers); call the second to stop."""
    sent: list[tuple[str, dict[str, str]]] = []
    real_send = FastS3._send

    def on_botocore(request: Any, **_: Any) -> None:
        headers = {k.lower(): v.decode() if isinstance(v, bytes) else v for k, v in request.headers.items()}
        sent.append((f"{request.method} {request.url}", headers))

    def on_fast(self: FastS3, method: str, bucket: str, key: str | None, query: str, headers: dict[str, str], *a: Any) -> Any:
        sent.append((f"{method} {bucket}/{key}?{query}", {k.lower(): v for k, v in headers.items()}))
        return real_send(self, method, bucket, key, query, headers, *a)

    def stop() -> None:
        client.meta.events.unregister("before-send.s3", on_botocore)
        monkeypatch.setattr(FastS3, "_send", real_send)

    client.meta.events.register("before-send.s3", on_botocore)
    monkeypatch.setattr(FastS3, "_send", on_fast)
    return sent, stop


def run(store: Any, doc: dict[str, Any]) -> Report:
    return Engine(parse_job(json.dumps(doc)), store, concurrency=4).run()


def failures(report: Report) -> dict[str, str]:
    return {f["key"]: f["error"] for f in report.tally.failures()}


@pytest.mark.parametrize("path", ["fast", "botocore"])
def test_every_request_carries_owner_payer_and_encryption_headers(
    client: Any, bucket_factory: Callable[[Any, str], str], monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    src, dst = bucket_factory(client, "src"), bucket_factory(client, "dst")
    for i in range(5):
        client.put_object(Bucket=src, Key=f"k{i}", Body=b"x" * i)
    client.put_object(Bucket=src, Key="big", Body=b"b" * (6 * MiB))
    sent, stop = capture(client, monkeypatch)
    store = FastS3Store(client, 8) if path == "fast" else S3Store(client)
    doc = {
        "operation": "move",
        "source": {"bucket": src, "expected_owner": ACCOUNT},
        "destination": {"bucket": dst, "expected_owner": ACCOUNT, "sse": "AES256", "acl": "bucket-owner-full-control"},
        "options": {"requester_pays": True, "multipart_threshold": 5 * MiB, "part_size": 5 * MiB},
    }
    report = run(store, doc)
    stop()
    assert (report.summary()["succeeded"], failures(report)) == (6, {})
    assert len(sent) >= 9  # listings, 5 copies, multipart (HEAD, tags, create, 2 parts, complete), deletes
    for what, headers in sent:
        assert headers.get("x-amz-expected-bucket-owner") == ACCOUNT, what
        assert headers.get("x-amz-request-payer") == "requester", what
    copies = [h for _, h in sent if "x-amz-copy-source" in h]
    assert len(copies) == 5 + 2 and all(h.get("x-amz-source-expected-bucket-owner") == ACCOUNT for h in copies)
    writes = [h for what, h in sent if ("x-amz-copy-source" in h and "uploadId" not in what) or what.endswith("?uploads")]
    assert all(h.get("x-amz-server-side-encryption") == "AES256" for h in writes if "x-amz-copy-source-range" not in h)
    assert len(writes) == 6 and all(h.get("x-amz-acl") == "bucket-owner-full-control" for h in writes)
    assert client.head_object(Bucket=dst, Key="big")["ServerSideEncryption"] == "AES256"


@pytest.mark.parametrize("path", ["fast", "botocore"])
def test_destination_acl_is_granted_on_every_copy_and_without_it_no_source_acl_is_carried(
    client: Any, bucket_factory: Callable[[Any, str], str], path: str
) -> None:
    src, dst = bucket_factory(client, "src"), bucket_factory(client, "dst")
    for i in range(4):
        client.put_object(Bucket=src, Key=f"k{i}", Body=b"x", ACL="public-read")
    client.put_object(Bucket=src, Key="big", Body=b"b" * (6 * MiB), ACL="public-read")

    def readers(bucket: str, key: str) -> set[str]:
        grants = client.get_object_acl(Bucket=bucket, Key=key)["Grants"]
        return {g["Grantee"].get("URI", g["Grantee"].get("ID", "")).rsplit("/", 1)[-1] for g in grants if g["Permission"] == "READ"}

    store = FastS3Store(client, 8) if path == "fast" else S3Store(client)
    options = {"multipart_threshold": 5 * MiB, "part_size": 5 * MiB}
    plain = {
        "operation": "copy",
        "source": {"bucket": src, "all": True},
        "destination": {"bucket": dst, "prefix": "plain/"},
        "options": options,
    }
    granted = {**plain, "destination": {"bucket": dst, "prefix": "granted/", "acl": "public-read"}}
    assert run(store, plain).summary()["succeeded"] == run(store, granted).summary()["succeeded"] == 5
    keys = [f"k{i}" for i in range(4)] + ["big"]
    assert {k: readers(dst, f"granted/{k}") for k in keys} == {k: {"AllUsers"} for k in keys}
    # As S3: a copy is private. (moto 5.2.5 answers GetObjectAcl with a 500 for an object completed from an upload
    # created without an ACL, so the multipart one is read on the granted side only.)
    assert {k: readers(dst, f"plain/{k}") for k in keys[:4]} == {k: set() for k in keys[:4]}


def test_sse_kms_copies_are_encrypted_with_the_named_key_and_moves_confirm(
    client: Any, moto_endpoint: str, bucket_factory: Callable[[Any, str], str]
) -> None:
    kms = boto3.client("kms", endpoint_url=moto_endpoint, region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")
    key_id = kms.create_key(Description="s3bulk test")["KeyMetadata"]["KeyId"]
    src, dst = bucket_factory(client, "src"), bucket_factory(client, "dst")
    for i in range(8):
        client.put_object(Bucket=src, Key=f"k{i}", Body=f"body-{i}".encode())
    client.put_object(Bucket=src, Key="big", Body=b"b" * (6 * MiB))
    doc = {
        "operation": "move",
        "source": {"bucket": src},
        "destination": {"bucket": dst, "sse": "aws:kms", "kms_key_id": key_id},
        "options": {"multipart_threshold": 5 * MiB},
    }
    report = run(FastS3Store(client, 8), doc)
    assert (report.summary()["succeeded"], failures(report)) == (9, {})
    assert list_keys(client, src) == []
    for key in list_keys(client, dst):
        head = client.head_object(Bucket=dst, Key=key)
        assert (head["ServerSideEncryption"], head["SSEKMSKeyId"].split("/")[-1]) == ("aws:kms", key_id), key
    assert client.get_object(Bucket=dst, Key="k3")["Body"].read() == b"body-3"


@pytest.mark.parametrize("path", ["fast", "botocore"])
def test_an_in_place_copy_names_the_objects_own_encryption_and_is_pinned_to_its_etag(
    client: Any, bucket_factory: Callable[[Any, str], str], monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    bucket = bucket_factory(client, "src")
    key_arn = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/0f0f0f0f-1111-2222-3333-444455556666"
    client.put_object(Bucket=bucket, Key="small", Body=b"s", ServerSideEncryption="aws:kms", SSEKMSKeyId=key_arn, BucketKeyEnabled=True)
    client.put_object(Bucket=bucket, Key="big", Body=b"b" * (6 * MiB), ServerSideEncryption="aws:kms", SSEKMSKeyId=key_arn)
    etags = {k: client.head_object(Bucket=bucket, Key=k)["ETag"] for k in ("small", "big")}
    requests, stop = capture(client, monkeypatch)
    store = FastS3Store(client, 8) if path == "fast" else S3Store(client)
    doc = {
        "operation": "set-storage-class",
        "source": {"bucket": bucket, "all": True},
        "storage_class": "STANDARD_IA",
        "options": {"multipart_threshold": 5 * MiB},
    }
    report = run(store, doc)
    stop()
    sent = [{"what": what, **headers} for what, headers in requests]
    assert (report.summary()["succeeded"], failures(report)) == (2, {})
    small = next(h for h in sent if "x-amz-copy-source" in h and "small" in h["what"])
    assert (small["x-amz-server-side-encryption"], small["x-amz-server-side-encryption-aws-kms-key-id"]) == ("aws:kms", key_arn)
    assert (small.get("x-amz-server-side-encryption-bucket-key-enabled"), small["x-amz-copy-source-if-match"]) == ("true", etags["small"])
    upload = next(h for h in sent if "uploads" in h["what"])  # CreateMultipartUpload of the big one
    assert (upload["x-amz-server-side-encryption"], upload["x-amz-server-side-encryption-aws-kms-key-id"]) == ("aws:kms", key_arn)
    assert all(h["x-amz-copy-source-if-match"] == etags["big"] for h in sent if "x-amz-copy-source-range" in h)
    for key in ("small", "big"):
        head = client.head_object(Bucket=bucket, Key=key)
        assert (head["StorageClass"], head["ServerSideEncryption"], head["SSEKMSKeyId"]) == ("STANDARD_IA", "aws:kms", key_arn)


def test_archived_sources_fail_once_as_restore_needed_and_the_rest_copy(client: Any, bucket_factory: Callable[[Any, str], str]) -> None:
    src, dst = bucket_factory(client, "src"), bucket_factory(client, "dst")
    client.put_object(Bucket=src, Key="cold", Body=b"c", StorageClass="GLACIER")
    client.put_object(Bucket=src, Key="deep", Body=b"d", StorageClass="DEEP_ARCHIVE")
    client.put_object(Bucket=src, Key="warm", Body=b"w")
    report = run(FastS3Store(client, 8), {"operation": "move", "source": {"bucket": src}, "destination": {"bucket": dst}})
    assert failures(report) == {"cold": "ObjectNotInActiveTierError", "deep": "ObjectNotInActiveTierError"}
    assert all("restore needed" in f["message"] for f in report.tally.failures())
    summary = report.summary()
    assert (summary["succeeded"], summary["retries"], summary["object_retries"], report.exit_code) == (1, 0, 0, 1)
    assert list_keys(client, dst) == ["warm"]
    assert list_keys(client, src) == ["cold", "deep"]  # a move never deletes a source it could not copy


def test_versioned_source_copies_current_versions_and_delete_leaves_markers(client: Any, bucket_factory: Callable[[Any, str], str]) -> None:
    src, dst = bucket_factory(client, "src"), bucket_factory(client, "dst")
    client.put_bucket_versioning(Bucket=src, VersioningConfiguration={"Status": "Enabled"})
    client.put_object(Bucket=src, Key="a", Body=b"a-v1")
    client.put_object(Bucket=src, Key="a", Body=b"a-v2")
    client.put_object(Bucket=src, Key="gone", Body=b"old")
    client.delete_object(Bucket=src, Key="gone")  # now only a delete marker is current
    copied = run(FastS3Store(client, 8), {"operation": "copy", "source": {"bucket": src}, "destination": {"bucket": dst}})
    assert (copied.summary()["succeeded"], list_keys(client, dst)) == (1, ["a"])
    assert client.get_object(Bucket=dst, Key="a")["Body"].read() == b"a-v2"
    deleted = run(FastS3Store(client, 8), {"operation": "delete", "source": {"bucket": src, "all": True}})
    assert (deleted.summary()["succeeded"], list_keys(client, src)) == (1, [])
    versions = client.list_object_versions(Bucket=src)
    assert sorted(v["Key"] for v in versions["Versions"]) == ["a", "a", "gone"]  # nothing is destroyed
    assert sorted(m["Key"] for m in versions["DeleteMarkers"]) == ["a", "gone"]


def test_object_lock_keeps_locked_versions_while_the_delete_adds_markers(client: Any, bucket_factory: Callable[[Any, str], str]) -> None:
    bucket = f"locked-{bucket_factory(client, 'x')}"
    client.create_bucket(Bucket=bucket, ObjectLockEnabledForBucket=True)
    client.put_object(Bucket=bucket, Key="held", Body=b"h")
    client.put_object_legal_hold(Bucket=bucket, Key="held", LegalHold={"Status": "ON"})
    client.put_object(Bucket=bucket, Key="free", Body=b"f")
    report = run(FastS3Store(client, 8), {"operation": "delete", "source": {"bucket": bucket, "all": True}})
    assert (report.summary()["succeeded"], failures(report)) == (2, {})
    held = [v for v in client.list_object_versions(Bucket=bucket)["Versions"] if v["Key"] == "held"]
    assert len(held) == 1
    with pytest.raises(client.exceptions.ClientError) as info:  # S3 itself refuses to destroy the locked version
        client.delete_object(Bucket=bucket, Key="held", VersionId=held[0]["VersionId"])
    assert info.value.response["Error"]["Code"] == "AccessDenied"


def test_missing_source_or_destination_bucket_is_one_clear_error(
    moto_endpoint: str, client: Any, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    real = bucket_factory(client, "src")
    client.put_object(Bucket=real, Key="k", Body=b"k")
    env = cli_env(tmp_path)
    for doc, named in (
        (
            {"operation": "copy", "source": {"bucket": "no-such-src-bucket"}, "destination": {"bucket": real, "prefix": "out/"}},
            "no-such-src-bucket",
        ),
        ({"operation": "copy", "source": {"bucket": real}, "destination": {"bucket": "no-such-dst-bucket"}}, "no-such-dst-bucket"),
    ):
        job = write_job(tmp_path / "job.json", doc)
        done = run_cli("run", str(job), "--endpoint-url", moto_endpoint, "--no-ledger", env=env)
        assert done.returncode == 2, done.stdout + done.stderr  # one line and exit 2, as the README promises (issue 50)
        [line] = done.stderr.strip().splitlines()
        assert "no such bucket" in line and named in line and "check the name" in line, done.stderr
        assert done.stdout == ""


def test_empty_source_succeeds_with_a_note(
    moto_endpoint: str, client: Any, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    src, dst = bucket_factory(client, "src"), bucket_factory(client, "dst")
    job = write_job(
        tmp_path / "job.json", {"operation": "copy", "source": {"bucket": src, "prefix": "nothing/"}, "destination": {"bucket": dst}}
    )
    done = run_cli("run", str(job), "--endpoint-url", moto_endpoint, "--no-ledger", env=cli_env(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"s3://{src}/nothing/ holds no object the job selects" in " ".join(done.stdout.split())


def test_object_ownership_reads_acls_disabled_and_a_bucket_without_controls(client: Any, bucket_factory: Callable[[Any, str], str]) -> None:
    enforced, legacy = bucket_factory(client, "src"), bucket_factory(client, "dst")
    client.put_bucket_ownership_controls(Bucket=enforced, OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})
    store = S3Store(client)
    assert (store.object_ownership(enforced), store.object_ownership(legacy)) == ("BucketOwnerEnforced", "")
