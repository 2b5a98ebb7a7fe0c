"""-c bucket_owner at run time: the deployment's pins reach every request of its own store, whatever a job's view
asks, and a job expecting another owner for a pinned bucket is refused at Validate, naming the field and the fix."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from s3bulk.aws.allowlist import AllowList
from s3bulk.job import JobError, parse_job
from s3bulk.s3.stores import S3Store
from s3bulk.store import RequestOptions

MINE, PARTNER = "111122223333", "444455556666"


def allow() -> AllowList:
    env = {"S3BULK_READ_BUCKETS": "src,dst", "S3BULK_WRITE_BUCKETS": "dst", "S3BULK_BUCKET_OWNERS": f"src={MINE},dst={PARTNER}"}
    return AllowList.from_env(env)


def copy(**dst: object) -> str:
    import json

    return json.dumps({"operation": "copy", "source": {"bucket": "src"}, "destination": {"bucket": "dst", **dst}})


def test_the_pins_come_from_the_environment_per_bucket() -> None:
    assert allow().owner_of == {"src": MINE, "dst": PARTNER}


def test_a_job_expecting_the_pinned_owner_or_none_passes() -> None:
    allow().check(parse_job(copy()))
    allow().check(parse_job(copy(expected_owner=PARTNER)))


def test_a_job_expecting_another_owner_than_the_pin_is_refused_naming_the_field_and_the_fix() -> None:
    with pytest.raises(
        JobError,
        match=rf"^job\.destination\.expected_owner: '{MINE}', but this deployment pins 'dst' to account {PARTNER} .*-c bucket_owner=dst={MINE}",
    ):
        allow().check(parse_job(copy(expected_owner=MINE)))


def test_every_view_of_a_pinned_store_sends_the_owner_even_when_the_job_names_none() -> None:
    client = boto3.client("s3", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")
    store = S3Store(client)
    store.pin_owners(allow().owner_of)
    view = store.scoped(RequestOptions(requester_pays=True))  # a job's view: its own options, no owner named
    listing = {"Contents": [], "KeyCount": 0, "IsTruncated": False}
    with Stubber(client) as stub:
        for bucket, owner in (("src", MINE), ("dst", PARTNER)):
            wanted = {
                "Bucket": bucket,
                "Prefix": "",
                "MaxKeys": 1000,
                "ExpectedBucketOwner": owner,
                "RequestPayer": "requester",
                "EncodingType": "url",
            }
            stub.add_response("list_objects_v2", listing, wanted)
            view.list_page(bucket, "")
        stub.add_response(
            "list_objects_v2",
            listing,
            {"Bucket": "other", "Prefix": "", "MaxKeys": 1000, "RequestPayer": "requester", "EncodingType": "url"},
        )
        view.list_page("other", "")  # a bucket nobody pinned carries no owner
        stub.assert_no_pending_responses()
