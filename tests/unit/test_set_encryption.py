"""set-encryption: in place where S3 can re-wrap the data key, an in-place copy that keeps everything else otherwise,
nothing for an object already as asked, and `s3bulk undo` puts each object's previous encryption back."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from s3bulk.job import parse_job
from s3bulk.local.engine import Engine
from s3bulk.local.plan import make_plan
from s3bulk.local.undo import undo_log
from s3bulk.ops.encryption import already
from s3bulk.store import Encryption
from s3bulk.testing.memstore import MemoryStore

KEY = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
OTHER = "arn:aws:kms:eu-west-1:111122223333:key/99999999-12ab-34cd-56ef-1234567890ab"
N = 12


def store(*, aws: bool = True) -> MemoryStore:
    s = MemoryStore(page_size=5)
    s.aws = aws
    s.create_bucket("enc-b")
    for i in range(N):
        s.put_object(
            "enc-b",
            f"in/{i:02d}",
            f"body {i}".encode(),
            metadata={"owner": f"team-{i % 3}"},
            tags={"n": str(i)},
            storage_class="STANDARD_IA" if i % 2 else "STANDARD",
            content_type="text/plain",
            encryption=Encryption("AES256"),
        )
    return s


def run(s: MemoryStore, encryption: dict[str, Any], log: io.StringIO | None = None) -> dict[str, Any]:
    job = parse_job(json.dumps({"operation": "set-encryption", "source": {"bucket": "enc-b", "prefix": "in/"}, "encryption": encryption}))
    summary = Engine(job, s, concurrency=4, key_log=log).run().summary()
    assert summary["failed"] == 0, summary
    return summary


def snapshot(s: MemoryStore) -> dict[str, tuple[Any, ...]]:
    """Everything set-encryption must keep: body, metadata, tags, class, content type."""
    out = {}
    for i in range(N):
        o = s.get("enc-b", f"in/{i:02d}")
        out[f"in/{i:02d}"] = (o.body, dict(o.metadata), dict(o.tags), o.storage_class, o.content_type)
    return out


def test_on_aws_a_key_arn_target_is_set_in_place_with_no_data_moved_and_etags_kept() -> None:
    s = store()
    before, etags = snapshot(s), {f"in/{i:02d}": s.get("enc-b", f"in/{i:02d}").etag for i in range(N)}
    summary = run(s, {"sse": "aws:kms", "kms_key_id": KEY, "bucket_key": True})
    assert summary["succeeded"] == N
    assert s.calls.get("UpdateObjectEncryption") == N and not s.calls.get("CopyObject")
    for i in range(N):
        o = s.get("enc-b", f"in/{i:02d}")
        assert o.encryption == Encryption("aws:kms", KEY, True) and o.etag == etags[f"in/{i:02d}"]
    assert snapshot(s) == before


def test_elsewhere_or_to_sse_s3_an_in_place_copy_changes_the_encryption_and_keeps_body_metadata_tags_and_class() -> None:
    s = store(aws=False)  # an S3-compatible server: UpdateObjectEncryption is never sent there
    before = snapshot(s)
    assert run(s, {"sse": "aws:kms", "kms_key_id": KEY})["succeeded"] == N
    assert not s.calls.get("UpdateObjectEncryption") and s.calls.get("CopyObject") == N
    assert {s.get("enc-b", f"in/{i:02d}").encryption for i in range(N)} == {Encryption("aws:kms", KEY)}
    assert snapshot(s) == before
    assert run(s, {"sse": "AES256"})["succeeded"] == N  # back to SSE-S3: no in-place update can do that
    assert {s.get("enc-b", f"in/{i:02d}").encryption for i in range(N)} == {Encryption("AES256")}
    assert snapshot(s) == before


def test_objects_already_as_asked_are_skipped_with_one_head_each_and_nothing_written() -> None:
    s = store()
    run(s, {"sse": "aws:kms", "kms_key_id": KEY})
    s.calls.clear()
    summary = run(s, {"sse": "aws:kms", "kms_key_id": KEY.rsplit("/", 1)[1]})  # the same key by its id
    assert (summary["skipped"], summary["succeeded"]) == (N, 0)
    assert s.calls.get("HeadObject") == N and not (s.calls.get("UpdateObjectEncryption") or s.calls.get("CopyObject"))


def test_an_object_under_object_lock_gets_a_copy_under_the_new_key_that_keeps_its_hold_and_retention() -> None:
    s = store()
    until = datetime.now(UTC) + timedelta(days=3)
    s.put_retention("enc-b", "in/03", "GOVERNANCE", until)
    s.put_legal_hold("enc-b", "in/04", "ON")
    run(s, {"sse": "aws:kms", "kms_key_id": KEY})
    assert s.calls.get("UpdateObjectEncryption") == N - 2 and s.calls.get("CopyObject") == 2  # S3 refuses those two in place
    locked, held = s.get("enc-b", "in/03"), s.get("enc-b", "in/04")
    assert locked.encryption == held.encryption == Encryption("aws:kms", KEY)
    assert locked.retention is not None and locked.retention[1] == until and held.legal_hold == "ON"


@pytest.mark.parametrize("aws", [True, False])
def test_undo_puts_each_objects_previous_encryption_back_and_leaves_one_changed_since(aws: bool) -> None:
    s, log = store(aws=aws), io.StringIO()
    s.put_object("enc-b", "in/05", b"body 5", encryption=Encryption("aws:kms", OTHER))  # one under a key of its own
    run(s, {"sse": "aws:kms", "kms_key_id": KEY}, log)
    s.put_object("enc-b", "in/07", b"rewritten", encryption=Encryption("AES256"))  # changed again since the job
    result = undo_log(io.BytesIO(log.getvalue().encode()), s)
    assert (result.restored, result.changed_since, result.failed) == (N - 1, 1, 0)
    assert s.get("enc-b", "in/05").encryption == Encryption("aws:kms", OTHER)
    assert {s.get("enc-b", f"in/{i:02d}").encryption for i in range(N) if i not in {5, 7}} == {Encryption("AES256")}


def test_undo_puts_no_encryption_back_where_the_objects_had_none_keeping_everything_else() -> None:
    # A server without default encryption (SeaweedFS, versitygw): the objects had none. Undo copies each onto itself
    # naming no encryption, which S3 allows only with the metadata replaced (by its own): it failed every object.
    s, log = store(aws=False), io.StringIO()
    for i in range(N):
        o = s.get("enc-b", f"in/{i:02d}")
        s.put_object("enc-b", f"in/{i:02d}", o.body or b"", metadata=dict(o.metadata), tags=dict(o.tags), storage_class=o.storage_class,
                     content_type=o.content_type)  # fmt: skip
    before = snapshot(s)
    assert {s.get("enc-b", f"in/{i:02d}").encryption for i in range(N)} == {None}
    run(s, {"sse": "AES256"}, log)
    assert {s.get("enc-b", f"in/{i:02d}").encryption for i in range(N)} == {Encryption("AES256")}
    result = undo_log(io.BytesIO(log.getvalue().encode()), s)
    assert (result.restored, result.changed_since, result.failed) == (N, 0, 0)
    assert {s.get("enc-b", f"in/{i:02d}").encryption for i in range(N)} == {None}
    assert snapshot(s) == before


def test_a_key_named_by_id_matches_the_arn_s3_reports_and_no_key_named_matches_any_kms_key() -> None:
    assert already(Encryption("aws:kms", KEY), Encryption("aws:kms", KEY.rsplit("/", 1)[1]))
    assert not already(Encryption("aws:kms", OTHER), Encryption("aws:kms", KEY))
    assert already(Encryption("aws:kms", OTHER), Encryption("aws:kms", ""))
    assert not already(Encryption("aws:kms", KEY, False), Encryption("aws:kms", KEY, True))  # the Bucket Key differs
    assert not already(None, Encryption("AES256")) and already(Encryption("AES256"), Encryption("AES256"))


@pytest.mark.parametrize(("aws", "key", "in_place"), [(True, KEY, True), (False, KEY, False), (True, KEY.rsplit("/", 1)[1], False)])
def test_plan_prices_a_head_and_an_in_place_update_per_object_on_aws_else_the_copies(aws: bool, key: str, in_place: bool) -> None:
    job = parse_job(
        json.dumps(
            {
                "operation": "set-encryption",
                "source": {"bucket": "enc-b", "prefix": "in/"},
                "encryption": {"sse": "aws:kms", "kms_key_id": key},
            }
        )
    )
    plan = make_plan(job, store(aws=aws))
    assert plan.objects == N and plan.requests["HeadObject"] == N
    assert plan.requests.get("UpdateObjectEncryption", 0) == (N if in_place else 0)
    assert plan.requests.get("CopyObject", 0) == (0 if in_place else N)
