"""tag, set-storage-class, restore and verify on the fake store, and the per-key log they all write."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from s3bulk.aws.allowlist import AllowList
from s3bulk.job import JobError, MiB, parse_job
from s3bulk.local.engine import Engine
from s3bulk.ops.acl import AclsEnabled, acl_doc
from s3bulk.store import Encryption, StoreError
from s3bulk.testing.memstore import MemoryStore

N = 60


def job(operation: str, **fields: Any) -> Any:
    doc: dict[str, Any] = {"operation": operation, "source": {"bucket": "src-b", "prefix": "in/"}, **fields}
    return parse_job(json.dumps(doc))


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore(page_size=25)
    for b in ("src-b", "dst-b"):
        s.create_bucket(b)
    for i in range(N):
        s.put_object("src-b", f"in/{i:03d}", f"body {i}".encode(), metadata={"origin": str(i)}, tags={"keep": "yes", "team": "old"})
    s.put_object("src-b", "elsewhere", b"not selected", tags={"team": "old"})
    return s


def run(store: MemoryStore, j: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    out = io.StringIO()
    report = Engine(j, store, concurrency=8, key_log=out).run()
    return report.summary(), [json.loads(line) for line in out.getvalue().splitlines()]


def test_tag_replace_sets_exactly_the_given_tags(store: MemoryStore) -> None:
    s, lines = run(store, job("tag", tagging={"mode": "replace", "tags": {"team": "data"}}))
    assert (s["succeeded"], s["failed"], s["skipped"]) == (N, 0, 0)
    assert all(store.get("src-b", f"in/{i:03d}").tags == {"team": "data"} for i in range(N))
    assert store.get("src-b", "elsewhere").tags == {"team": "old"}
    # With a per-key log, each replaced tag set is read first: the undo journal of the change.
    assert store.calls["PutObjectTagging"] == store.calls["GetObjectTagging"] == N
    assert sorted(line["key"] for line in lines) == [f"in/{i:03d}" for i in range(N)]
    assert {json.dumps(line["undo"], sort_keys=True) for line in lines} == {
        json.dumps({"bucket": "src-b", "what": "tags", "before": {"keep": "yes", "team": "old"}, "after": {"team": "data"}}, sort_keys=True)
    }


def test_tag_replace_without_a_key_log_reads_no_tags(store: MemoryStore) -> None:
    Engine(job("tag", tagging={"mode": "replace", "tags": {"team": "data"}}), store, concurrency=8).run()
    assert store.calls["PutObjectTagging"] == N and "GetObjectTagging" not in store.calls


def test_tag_merge_keeps_other_tags_and_a_rerun_writes_nothing(store: MemoryStore) -> None:
    tagging = {"mode": "merge", "tags": {"team": "data", "cost": "42"}}
    s, _ = run(store, job("tag", tagging=tagging))
    assert s["succeeded"] == N
    assert all(store.get("src-b", f"in/{i:03d}").tags == {"keep": "yes", "team": "data", "cost": "42"} for i in range(N))
    puts = store.calls["PutObjectTagging"]
    s, lines = run(store, job("tag", tagging=tagging))
    assert (s["succeeded"], s["skipped"]) == (0, N)
    assert store.calls["PutObjectTagging"] == puts
    assert {line["outcome"] for line in lines} == {"skipped"}


def test_a_merge_past_ten_tags_fails_that_object_only(store: MemoryStore) -> None:
    store.put_object("src-b", "in/full", b"x", tags={f"t{i}": "v" for i in range(9)})
    s, lines = run(store, job("tag", tagging={"mode": "merge", "tags": {"a": "1", "b": "2"}}))
    assert (s["succeeded"], s["failed"]) == (N, 1)
    failed = [line for line in lines if line["outcome"] == "failed"]
    assert [(f["key"], f["error"]) for f in failed] == [("in/full", "BadRequest")]
    assert len(store.get("src-b", "in/full").tags) == 9


def test_set_storage_class_copies_in_place_keeping_body_metadata_and_tags(store: MemoryStore) -> None:
    store.put_object("src-b", "in/already", b"ia", storage_class="STANDARD_IA")
    store.put_object("src-b", "in/frozen", b"cold", storage_class="GLACIER")
    s, lines = run(store, job("set-storage-class", storage_class="STANDARD_IA"))
    assert (s["succeeded"], s["skipped"], s["failed"]) == (N, 1, 1)
    for i in range(N):
        o = store.get("src-b", f"in/{i:03d}")
        assert (o.storage_class, o.body, o.metadata, o.tags) == (
            "STANDARD_IA",
            f"body {i}".encode(),
            {"origin": str(i)},
            {"keep": "yes", "team": "old"},
        )
    assert store.calls["CopyObject"] == N + 1  # the frozen one tried once (permanent), the IA one never
    frozen = next(line for line in lines if line["key"] == "in/frozen")
    assert frozen["error"] == "InvalidObjectState" and "restore needed" in frozen["message"]
    assert store.get("src-b", "in/frozen").storage_class == "GLACIER"


def test_set_storage_class_of_a_large_object_uses_a_multipart_copy_and_keeps_it(store: MemoryStore) -> None:
    body = bytes(range(256)) * (24 * MiB // 256)
    store.put_object("src-b", "in/big", body, tags={"k": "v"})
    j = job("set-storage-class", storage_class="GLACIER_IR", options={"multipart_threshold": 8 * MiB, "part_size": 8 * MiB})
    s, _ = run(store, j)
    assert s["failed"] == 0
    big = store.get("src-b", "in/big")
    assert (big.storage_class, big.body, big.tags) == ("GLACIER_IR", body, {"k": "v"})
    assert store.calls["UploadPartCopy"] == 3


KEY_ARN = "arn:aws:kms:eu-west-1:111122223333:key/0b3c5a9e-1111-2222-3333-444455556666"


@pytest.mark.parametrize("operation", ["set-storage-class", "add-checksum"])
@pytest.mark.parametrize("size", [1024, 12 * MiB], ids=["single-copy", "multipart"])
def test_an_in_place_copy_keeps_the_objects_own_kms_key_not_the_buckets_default(store: MemoryStore, operation: str, size: int) -> None:
    """A CopyObject that names no encryption takes the bucket's default; the object's own KMS key must survive."""
    store.bucket_encryption["src-b"] = Encryption("AES256")
    own = Encryption("aws:kms", KEY_ARN, bucket_key=True)
    store.put_object("src-b", "in/secret", b"k" * size, encryption=own)
    store.put_object("src-b", "in/plain", b"p" * size, encryption=Encryption("AES256"))
    fields: dict[str, Any] = {"storage_class": "STANDARD_IA"} if operation == "set-storage-class" else {"checksum_algorithm": "CRC32"}
    options = {"multipart_threshold": 8 * MiB, "part_size": 8 * MiB}
    j = parse_job(
        json.dumps(
            {"operation": operation, "source": {"bucket": "src-b", "prefix": "in/s", "raw_prefix": True}, **fields, "options": options}
        )
    )
    s = Engine(j, store, concurrency=2).run().summary()
    assert (s["succeeded"], s["failed"]) == (1, 0)
    secret = store.get("src-b", "in/secret")
    assert secret.encryption == own and secret.body == b"k" * size
    assert secret.storage_class == ("STANDARD_IA" if operation == "set-storage-class" else "STANDARD")
    assert secret.checksum.startswith("CRC32:") == (operation == "add-checksum")
    assert store.get("src-b", "in/plain").encryption == Encryption("AES256")  # not selected: untouched


@pytest.mark.parametrize("operation", ["set-storage-class", "add-checksum"])
@pytest.mark.parametrize("size", [1024, 12 * MiB], ids=["single-copy", "multipart"])
def test_an_in_place_copy_keeps_each_objects_grants_where_the_bucket_has_acls(store: MemoryStore, operation: str, size: int) -> None:
    """S3 copies no ACL: an object copied onto itself would come back private unless its grants are named again."""
    store.ownership["src-b"] = "ObjectWriter"  # ACLs enabled
    store.put_object("src-b", "in/shared", b"s" * size)
    store.put_acl("src-b", "in/shared", "public-read")
    store.put_object("src-b", "in/sealed", b"p" * size)  # private: nothing to carry
    before = {k: acl_doc(store.get_acl("src-b", f"in/{k}")) for k in ("shared", "sealed")}
    fields: dict[str, Any] = {"storage_class": "STANDARD_IA"} if operation == "set-storage-class" else {"checksum_algorithm": "CRC32"}
    options = {"multipart_threshold": 8 * MiB, "part_size": 8 * MiB}
    j = parse_job(
        json.dumps(
            {"operation": operation, "source": {"bucket": "src-b", "prefix": "in/s", "raw_prefix": True}, **fields, "options": options}
        )
    )
    calls = store.calls.copy()
    s = Engine(j, store, concurrency=2).run().summary()
    made = {op: n - calls.get(op, 0) for op, n in store.calls.items()}
    assert (s["succeeded"], s["failed"]) == (2, 0)
    assert (made["GetObjectAcl"], made["GetBucketOwnershipControls"]) == (2, 1)  # one per copy; one per run
    assert {k: acl_doc(store.get_acl("src-b", f"in/{k}")) for k in ("shared", "sealed")} == before
    assert any(g["Grantee"].get("URI", "").endswith("AllUsers") for g in before["shared"]["Grants"])


@pytest.mark.parametrize("size", [1024, 12 * MiB], ids=["single-copy", "multipart"])
def test_an_in_place_copy_keeps_the_objects_retention_and_legal_hold(store: MemoryStore, size: int) -> None:
    """S3 copies no Object Lock: the new version would be unprotected unless the copy names them again."""
    until = datetime(2031, 5, 1, tzinfo=UTC)
    store.put_object("src-b", "in/locked", b"l" * size)
    store.put_retention("src-b", "in/locked", "GOVERNANCE", until)
    store.put_legal_hold("src-b", "in/locked", "ON")
    options = {"multipart_threshold": 8 * MiB, "part_size": 8 * MiB}
    doc = {
        "operation": "set-storage-class",
        "source": {"bucket": "src-b", "prefix": "in/l", "raw_prefix": True},
        "storage_class": "GLACIER_IR",
    }
    s = Engine(parse_job(json.dumps({**doc, "options": options})), store, concurrency=2).run().summary()
    assert (s["succeeded"], s["failed"]) == (1, 0)
    locked = store.get("src-b", "in/locked")
    assert (locked.storage_class, locked.retention, locked.legal_hold) == ("GLACIER_IR", ("GOVERNANCE", until), "ON")


def test_a_multipart_class_change_keeps_the_objects_checksum_algorithm(store: MemoryStore) -> None:
    """A single CopyObject keeps the source's checksum algorithm; a multipart copy must ask for it."""
    body = bytes(range(256)) * (12 * MiB // 256)
    store.put_object("src-b", "in/summed", body, checksum="SHA256:whole-object-value")
    options = {"multipart_threshold": 8 * MiB, "part_size": 8 * MiB}
    doc = {
        "operation": "set-storage-class",
        "source": {"bucket": "src-b", "prefix": "in/s", "raw_prefix": True},
        "storage_class": "STANDARD_IA",
    }
    assert Engine(parse_job(json.dumps({**doc, "options": options})), store).run().summary()["succeeded"] == 1
    summed = store.get("src-b", "in/summed")
    assert summed.checksum.startswith("SHA256:") and summed.checksum.endswith("-2") and summed.body == body


def test_an_in_place_copy_that_may_not_read_the_acl_fails_each_key_naming_both_permissions(store: MemoryStore) -> None:
    """Ownership unknown (denied) counts as ACLs enabled: a key fails loudly rather than lose its grants."""

    def deny(op: str, bucket: str, key: str) -> StoreError | None:
        return StoreError("AccessDenied", "Access Denied", 403) if op in {"GetBucketOwnershipControls", "GetObjectAcl"} else None

    store.faults.append(deny)
    report = Engine(job("set-storage-class", storage_class="GLACIER_IR"), store, concurrency=4).run()
    s, failures = report.summary(), list(report.tally.failures())
    assert (s["succeeded"], s["failed"], store.calls.get("CopyObject", 0)) == (0, N, 0)
    assert all("s3:GetObjectAcl" in f["message"] and "s3:GetBucketOwnershipControls" in f["message"] for f in failures)


def test_a_throttled_ownership_question_is_asked_again_but_a_denied_one_is_not(store: MemoryStore) -> None:
    answers = [StoreError("SlowDown", "Please reduce your request rate.", 503), None, None]

    def ownership(op: str, bucket: str, key: str) -> StoreError | None:
        return answers.pop(0) if op == "GetBucketOwnershipControls" else None

    store.faults.append(ownership)
    acls = AclsEnabled(store)
    assert (acls("src-b"), acls("src-b"), acls("src-b")) == (True, False, False)  # throttled: assume ACLs, ask again
    assert store.calls["GetBucketOwnershipControls"] == 2
    denied = AclsEnabled(store)
    answers[:] = [StoreError("AccessDenied", "Access Denied", 403)]
    assert (denied("src-b"), denied("src-b"), store.calls["GetBucketOwnershipControls"]) == (True, True, 3)


def test_an_in_place_copy_reads_no_acl_where_the_bucket_has_acls_disabled(store: MemoryStore) -> None:
    store.ownership["src-b"] = "BucketOwnerEnforced"
    s = Engine(job("set-storage-class", storage_class="GLACIER_IR"), store, concurrency=4).run().summary()
    assert (s["succeeded"], s["failed"]) == (N, 0)
    assert (store.calls.get("GetObjectAcl", 0), store.calls["GetBucketOwnershipControls"], store.calls["CopyObject"]) == (0, 1, N)


def test_restore_asks_only_for_archived_objects_and_a_rerun_starts_nothing(store: MemoryStore) -> None:
    store.put_object("src-b", "in/g", b"g", storage_class="GLACIER")
    store.put_object("src-b", "in/d", b"d", storage_class="DEEP_ARCHIVE")
    s, lines = run(store, job("restore", restore={"days": 3, "tier": "Bulk"}))
    assert (s["succeeded"], s["skipped"], s["failed"]) == (2, N, 0)
    assert store.calls["RestoreObject"] == 2
    assert store.get("src-b", "in/g").restore == (3, "Bulk") and store.get("src-b", "in/d").restore == (3, "Bulk")
    assert {line["key"] for line in lines if line["outcome"] == "succeeded"} == {"in/g", "in/d"}
    s, _ = run(store, job("restore", restore={"days": 3, "tier": "Bulk"}))
    assert (s["succeeded"], s["skipped"]) == (0, N + 2)


def test_verify_finds_corrupted_missing_and_resized_copies(store: MemoryStore) -> None:
    copy = parse_job(json.dumps({"operation": "copy", "source": {"bucket": "src-b", "prefix": "in/"}, "destination": {"bucket": "dst-b"}}))
    assert Engine(copy, store, concurrency=8).run().summary()["succeeded"] == N
    store.put_object("dst-b", "003", b"BODY 3")  # same size, other bytes
    store.put_object("dst-b", "004", b"body 4 and more")
    store.delete_objects("dst-b", ["005"])
    writes = {op: store.calls.get(op, 0) for op in ("CopyObject", "PutObjectTagging", "DeleteObjects", "UploadPartCopy")}
    s, lines = run(store, job("verify", destination={"bucket": "dst-b"}))
    assert (s["status"], s["succeeded"], s["failed"]) == ("failed", N - 3, 3)
    failed = {line["key"]: line["error"] for line in lines if line["outcome"] == "failed"}
    assert failed == {"in/003": "ContentMismatch", "in/004": "SizeMismatch", "in/005": "MissingDestination"}
    ok = next(line for line in lines if line["key"] == "in/000")
    assert ok["src_checksum"] == ok["dst_checksum"] and ok["src_checksum"].startswith("MD5:")
    assert writes == {op: store.calls.get(op, 0) for op in writes}  # verify wrote nothing


def test_verify_hashes_bodies_when_etags_cannot_be_compared(store: MemoryStore) -> None:
    body = bytes(range(256)) * (12 * MiB // 256)
    store.put_object("src-b", "in/big", body)
    copy = {
        "operation": "copy",
        "source": {"bucket": "src-b", "prefix": "in/b", "raw_prefix": True},
        "destination": {"bucket": "dst-b", "prefix": "x/"},
    }
    Engine(parse_job(json.dumps({**copy, "options": {"multipart_threshold": 5 * MiB, "part_size": 5 * MiB}})), store).run()
    assert "-" in store.get("dst-b", "x/ig").etag  # multipart ETag: not an MD5 of the content
    s, lines = run(
        store,
        job("verify", source={"bucket": "src-b", "prefix": "in/b", "raw_prefix": True}, destination={"bucket": "dst-b", "prefix": "x/"}),
    )
    assert s["succeeded"] == 1
    assert lines[0]["src_checksum"].startswith("SHA256:") and lines[0]["src_checksum"] == lines[0]["dst_checksum"]
    corrupted = bytearray(body)
    corrupted[7 * MiB] ^= 1
    store.put_object("dst-b", "x/ig", bytes(corrupted))
    store._buckets["dst-b"]["x/ig"].etag = '"0123-3"'  # as a multipart upload would have: not comparable
    s, lines = run(
        store,
        job("verify", source={"bucket": "src-b", "prefix": "in/b", "raw_prefix": True}, destination={"bucket": "dst-b", "prefix": "x/"}),
    )
    assert (s["failed"], lines[0]["error"]) == (1, "ContentMismatch")


def test_the_key_log_has_one_line_per_object_with_its_facts(store: MemoryStore) -> None:
    store.put_object("dst-b", "out/001", b"exists")
    j = parse_job(
        json.dumps(
            {
                "operation": "move",
                "source": {"bucket": "src-b", "prefix": "in/"},
                "destination": {"bucket": "dst-b", "prefix": "out/"},
                "options": {"if_exists": "skip", "batch_size": 16},
            }
        )
    )
    s, lines = run(store, j)
    assert (s["succeeded"], s["skipped"]) == (N - 1, 1)
    by_key = {line["key"]: line for line in lines}
    assert len(lines) == len(by_key) == N
    moved = by_key["in/007"]
    assert moved["outcome"] == "succeeded" and moved["dst_key"] == "out/007" and moved["operation"] == "move"
    assert moved["size"] == len(b"body 7") and moved["src_etag"] == moved["dst_etag"] != ""
    assert moved["attempts"] == 1 and moved["error"] == "" and moved["at"].endswith("Z") and moved["v"] == 1
    assert by_key["in/001"]["outcome"] == "skipped"


def test_a_dry_run_writes_no_key_log_lines(store: MemoryStore) -> None:
    _, lines = run(store, job("tag", tagging={"tags": {"a": "b"}}, options={"dry_run": True}))
    assert lines == []
    assert "PutObjectTagging" not in store.calls


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"operation": "tag"}, "job.tagging"),
        ({"operation": "copy", "destination": {"bucket": "dst-b"}, "tagging": {"tags": {"a": "b"}}}, "job.tagging"),
        ({"operation": "tag", "tagging": {"tags": {f"k{i}": "v" for i in range(11)}}}, "job.tagging.tags"),
        ({"operation": "tag", "tagging": {"tags": {"aws:x": "v"}}}, "job.tagging.tags"),
        ({"operation": "set-storage-class"}, "job.storage_class"),
        ({"operation": "restore", "destination": {"bucket": "dst-b"}}, "job.destination"),
        ({"operation": "restore", "restore": {"days": 0}}, "job.restore.days"),
        ({"operation": "verify"}, "job.destination"),
        ({"operation": "verify", "destination": {"bucket": "dst-b"}, "options": {"if_exists": "skip"}}, "job.options.if_exists"),
    ],
)
def test_operation_fields_are_checked_with_a_one_line_error(doc: dict[str, Any], field: str) -> None:
    with pytest.raises(JobError) as err:
        parse_job(json.dumps({"source": {"bucket": "src-b", "prefix": "in/"}, **doc}))
    message = str(err.value)
    assert message.startswith(field + ":") and "\n" not in message, message


def test_in_place_operations_need_a_scope() -> None:
    with pytest.raises(JobError, match=r"^job.source.prefix: .*would tag the whole bucket"):
        parse_job(json.dumps({"operation": "tag", "source": {"bucket": "src-b"}, "tagging": {"tags": {"a": "b"}}}))


def test_allow_list_needs_write_on_the_source_to_tag_and_only_read_on_the_destination_to_verify() -> None:
    allow = AllowList(read=frozenset({"src-b", "dst-b"}), write=frozenset(), delete=frozenset())
    with pytest.raises(JobError, match="write allow-list"):
        allow.check(job("tag", tagging={"tags": {"a": "b"}}))
    allow.check(job("verify", destination={"bucket": "dst-b"}))
