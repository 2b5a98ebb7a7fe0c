"""A job's request options reach every request: the fake store refuses what S3 would refuse without them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from s3bulk.job import JobError, MiB, parse_job
from s3bulk.local.engine import Engine
from s3bulk.s3.params import request_headers
from s3bulk.store import RequestOptions
from s3bulk.testing.memstore import MemoryStore

SRC_ACCOUNT, DST_ACCOUNT = "111111111111", "222222222222"


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore(page_size=20)
    for bucket, account in (("src-b", SRC_ACCOUNT), ("dst-b", DST_ACCOUNT)):
        s.create_bucket(bucket)
        s.owners[bucket] = account
    for i in range(50):
        s.put_object("src-b", f"in/{i:03d}", f"body-{i}".encode())
    s.put_object("src-b", "in/big", b"b" * (6 * MiB))  # multipart: every part request must carry the options too
    return s


def run(store: MemoryStore, operation: str = "copy", **fields: Any) -> Any:
    doc: dict[str, Any] = {
        "operation": operation,
        "source": {"bucket": "src-b", "prefix": "in/"},
        "options": {"multipart_threshold": 5 * MiB},
    }
    if operation != "delete":
        doc["destination"] = {"bucket": "dst-b"}
    for path, value in fields.items():
        part, name = path.split("__")
        doc[part][name] = value
    return Engine(parse_job(json.dumps(doc)), store, concurrency=4).run()


def test_matching_owners_copy_everything_including_multipart(store: MemoryStore) -> None:
    report = run(store, "move", source__expected_owner=SRC_ACCOUNT, destination__expected_owner=DST_ACCOUNT)
    assert (report.summary()["succeeded"], report.summary()["failed"]) == (51, 0)
    assert store.keys("src-b") == []


def test_wrong_source_owner_stops_the_job_before_anything_is_written(store: MemoryStore) -> None:
    report = run(store, source__expected_owner=DST_ACCOUNT)
    assert report.exit_code == 1 and "AccessDenied" in (report.error or "")
    assert store.keys("dst-b") == []


def test_wrong_destination_owner_stops_the_job_at_the_destination_check(store: MemoryStore) -> None:
    report = run(store, "move", destination__expected_owner=SRC_ACCOUNT)
    assert report.error is not None and report.error.startswith("destination s3://dst-b/ is not usable: AccessDenied")
    assert store.keys("dst-b") == [] and len(store.keys("src-b")) == 51
    assert store.calls.get("CopyObject", 0) == 0


def test_requester_pays_bucket_needs_the_option(store: MemoryStore) -> None:
    store.requester_pays.add("src-b")
    refused = run(store)
    assert "requester-pays" in (refused.error or "")
    paid = run(store, options__requester_pays=True)
    assert (paid.summary()["succeeded"], paid.error) == (51, None)


def test_headers_name_each_bucket_owner_and_encrypt_only_writes() -> None:
    opts = RequestOptions(owners={"src-b": SRC_ACCOUNT, "dst-b": DST_ACCOUNT}, requester_pays=True, sse="aws:kms", kms_key_id="k-1")
    copy = request_headers(opts, "dst-b", source="src-b", write=True)
    assert copy == {
        "x-amz-expected-bucket-owner": DST_ACCOUNT,
        "x-amz-source-expected-bucket-owner": SRC_ACCOUNT,
        "x-amz-request-payer": "requester",
        "x-amz-server-side-encryption": "aws:kms",
        "x-amz-server-side-encryption-aws-kms-key-id": "k-1",
    }
    assert request_headers(opts, "src-b") == {"x-amz-expected-bucket-owner": SRC_ACCOUNT, "x-amz-request-payer": "requester"}
    assert request_headers(RequestOptions(), "src-b", source="dst-b", write=True) == {}


def test_destination_acl_goes_on_writes_only_and_every_copy_gets_it_or_none_of_the_sources(store: MemoryStore) -> None:
    opts = RequestOptions(acl="bucket-owner-full-control")
    assert request_headers(opts, "dst-b", source="src-b", write=True) == {"x-amz-acl": "bucket-owner-full-control"}
    assert request_headers(opts, "src-b") == {}  # reads and deletes carry no ACL
    store.put_acl("src-b", "in/007", "public-read")
    report = run(store, "copy", destination__prefix="granted/", destination__acl="bucket-owner-full-control")
    assert report.summary()["succeeded"] == 51
    assert {store.get("dst-b", f"granted/{k}").acl for k in ("007", "008", "big")} == {"bucket-owner-full-control"}
    assert run(store, "copy", destination__prefix="plain/").summary()["succeeded"] == 51
    assert {store.get("dst-b", f"plain/{k}").acl for k in ("007", "big")} == {"private"}  # S3 never copies an ACL


def test_an_unknown_destination_acl_is_refused_naming_the_field() -> None:
    doc = {"operation": "copy", "source": {"bucket": "src-b", "prefix": "in/"}, "destination": {"bucket": "dst-b", "acl": "owner-only"}}
    with pytest.raises(JobError) as err:
        parse_job(json.dumps(doc))
    assert str(err.value).startswith("job.destination.acl:") and "bucket-owner-full-control" in str(err.value)
