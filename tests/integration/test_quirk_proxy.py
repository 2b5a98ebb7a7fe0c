"""The quirk proxy (s3bulk/testing/quirkproxy.py) does what each quirk says, shown with plain boto3: through the proxy the
quirk happens, directly against the server behind it it does not. On moto server and on SeaweedFS (no identities):
both take the requests the proxy changed after they were signed, which the module docstring relies on."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import pytest
from botocore.exceptions import ClientError

from s3bulk.testing.quirkproxy import OTHER_NAMESPACE, S3_NAMESPACE, QuirkProxy, Quirks, refined_operation
from tests.integration.helpers import plain_client
from tests.integration.test_server_quirks import raw_call

pytestmark = pytest.mark.moto


@pytest.fixture(params=["moto_endpoint", "seaweed"])
def upstream(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(request.param))


@contextmanager
def proxied(upstream: str, quirks: Quirks) -> Iterator[tuple[Any, Any, QuirkProxy]]:
    """(boto3 through the proxy, boto3 direct, the proxy)."""
    with QuirkProxy(int(urlsplit(upstream).port or 0), quirks) as proxy:
        yield plain_client(proxy.endpoint_url), plain_client(upstream), proxy


def new_bucket(client: Any) -> str:
    name = f"quirk-{uuid.uuid4().hex[:10]}"
    client.create_bucket(Bucket=name)
    return name


def put(client: Any, bucket: str, objects: dict[str, bytes]) -> None:
    for key, body in objects.items():
        client.put_object(Bucket=bucket, Key=key, Body=body)


def listing(client: Any, bucket: str, **kwargs: Any) -> dict[str, Any]:
    answer: dict[str, Any] = client.list_objects_v2(Bucket=bucket, **kwargs)
    return answer


def keys(answer: dict[str, Any]) -> list[str]:
    return [o["Key"] for o in answer.get("Contents", ())]


def prefixes(answer: dict[str, Any]) -> list[str]:
    return [p["Prefix"] for p in answer.get("CommonPrefixes", ())]


def test_namespace_puts_answers_in_another_namespace_that_botocore_still_reads(upstream: str) -> None:
    with proxied(upstream, Quirks(namespace=True)) as (through, direct, proxy):
        bucket = new_bucket(direct)
        put(direct, bucket, {"n/a": b"a", "n/b": b"b"})
        _, quirky = raw_call(through, "ListObjectsV2", lambda: through.list_objects_v2(Bucket=bucket, Prefix="n/"))
        _, plain = raw_call(direct, "ListObjectsV2", lambda: direct.list_objects_v2(Bucket=bucket, Prefix="n/"))
        assert f'xmlns="{OTHER_NAMESPACE}"'.encode() in quirky and S3_NAMESPACE.encode() not in quirky
        assert f'xmlns="{S3_NAMESPACE}"'.encode() in plain
        assert keys(listing(through, bucket, Prefix="n/")) == ["n/a", "n/b"]  # botocore matches local names
        assert proxy.stats.applied["namespace"] >= 2


def test_raw_keys_claim_url_lists_raw_keys_under_an_encoding_claim(upstream: str) -> None:
    objects = {"fx/x%2Fy.bin": b"2" * 2048, "fx/x/y.bin": b"1" * 1024, "fx/a b.bin": b"s"}
    with proxied(upstream, Quirks(raw_keys_claim_url=True)) as (through, direct, proxy):
        bucket = new_bucket(direct)
        put(direct, bucket, objects)
        _, raw = raw_call(through, "ListObjectsV2", lambda: through.list_objects_v2(Bucket=bucket, Prefix="fx/", EncodingType="url"))
        _, honest = raw_call(direct, "ListObjectsV2", lambda: direct.list_objects_v2(Bucket=bucket, Prefix="fx/", EncodingType="url"))
        assert b"<EncodingType>url</EncodingType>" in raw and b"<Key>fx/x%2Fy.bin</Key>" in raw and b"<Key>fx/a b.bin</Key>" in raw
        assert b"<Key>fx/x%2Fy.bin</Key>" not in honest and b"<Key>fx/a b.bin</Key>" not in honest
        # boto3 decodes what it was told was encoded: two listings of one name, and the 2 KiB object's name lost
        fooled = {o["Key"]: o["Size"] for o in listing(through, bucket, Prefix="fx/").get("Contents", ())}
        assert sorted(keys(listing(through, bucket, Prefix="fx/"))) == ["fx/a b.bin", "fx/x/y.bin", "fx/x/y.bin"]
        assert "fx/x%2Fy.bin" not in fooled
        assert {o["Key"]: o["Size"] for o in listing(direct, bucket, Prefix="fx/")["Contents"]} == {k: len(b) for k, b in objects.items()}
        assert proxy.stats.applied["raw_keys_claim_url"] >= 2


def uploads_listing(client: Any, bucket: str) -> bytes:
    """The raw answer to ListMultipartUploads asked with encoding-type=url (boto3 asks, and decodes, only when told)."""
    asked = {"Bucket": bucket, "Prefix": "fx/", "EncodingType": "url"}
    return raw_call(client, "ListMultipartUploads", lambda: client.list_multipart_uploads(**asked))[1]


def test_raw_keys_claim_url_claims_over_raw_upload_keys_too(moto_endpoint: str) -> None:
    with proxied(moto_endpoint, Quirks(raw_keys_claim_url=True)) as (through, direct, proxy):
        bucket = new_bucket(direct)
        direct.create_multipart_upload(Bucket=bucket, Key="fx/u%2Fv")
        raw, honest = uploads_listing(through, bucket), uploads_listing(direct, bucket)
        assert b"<EncodingType>url</EncodingType>" in raw and b"<Key>fx/u%2Fv</Key>" in raw
        assert b"<EncodingType>" not in honest and b"<Key>fx/u%2Fv</Key>" in honest  # moto: raw keys, and says so
        assert proxy.stats.applied["raw_keys_claim_url"] == 1


def test_seaweedfs_claims_url_encoding_over_raw_keys_in_upload_listings(seaweed: str) -> None:
    """SeaweedFS has the quirk itself in ListMultipartUploads: `fx/u%2Fv` encoded would be `fx/u%252Fv`. A reader that
    believes the claim takes the upload for `fx/u/v`."""
    client = plain_client(seaweed)
    bucket = new_bucket(client)
    client.create_multipart_upload(Bucket=bucket, Key="fx/u%2Fv")
    raw = uploads_listing(client, bucket)
    assert b"<EncodingType>url</EncodingType>" in raw and b"<Key>fx/u%2Fv</Key>" in raw


DATED = {
    "dp/2024/01/01/x.log": b"x",
    "dp/2024/01/02/y.log": b"y",
    "dp/2024/02/01/z.log": b"z",
    "dp/2025/01/01/w.log": b"w",
    "dp/2026/direct.log": b"d",
    "dp/top.log": b"t",
}


def test_omit_prefixes_leaves_out_prefixes_that_hold_no_object_directly(upstream: str) -> None:
    with proxied(upstream, Quirks(omit_prefixes=True)) as (through, direct, proxy):
        bucket = new_bucket(direct)
        put(direct, bucket, DATED)
        assert prefixes(listing(direct, bucket, Prefix="dp/", Delimiter="/")) == ["dp/2024/", "dp/2025/", "dp/2026/"]
        top = listing(through, bucket, Prefix="dp/", Delimiter="/")
        assert (prefixes(top), keys(top)) == (["dp/2026/"], ["dp/top.log"])
        days = listing(through, bucket, Prefix="dp/2024/01/", Delimiter="/")  # each day holds its log directly
        assert prefixes(days) == ["dp/2024/01/01/", "dp/2024/01/02/"]
        assert sorted(keys(listing(through, bucket, Prefix="dp/"))) == sorted(DATED)  # no delimiter: nothing left out
        assert proxy.stats.applied["omit_prefixes"] == 1


def test_no_etags_strips_etags_from_listings_only(upstream: str) -> None:
    with proxied(upstream, Quirks(no_etags=True)) as (through, direct, proxy):
        bucket = new_bucket(direct)
        put(direct, bucket, {"e/a": b"a", "e/b": b"b"})
        assert [o.get("ETag") for o in listing(through, bucket, Prefix="e/")["Contents"]] == [None, None]
        assert all(o["ETag"] for o in listing(direct, bucket, Prefix="e/")["Contents"])
        assert through.head_object(Bucket=bucket, Key="e/a")["ETag"] == direct.head_object(Bucket=bucket, Key="e/a")["ETag"]
        assert proxy.stats.applied["no_etags"] == 1


def test_unsorted_shuffles_a_pages_keys_and_keeps_them_all(upstream: str) -> None:
    names = [f"u/{i:02d}" for i in range(20)]
    with proxied(upstream, Quirks(unsorted=True, seed=3)) as (through, direct, proxy):
        bucket = new_bucket(direct)
        put(direct, bucket, {k: k.encode() for k in names})
        assert keys(listing(direct, bucket, Prefix="u/")) == names
        shuffled = keys(listing(through, bucket, Prefix="u/"))
        assert shuffled != names and sorted(shuffled) == names
        page = keys(listing(through, bucket, Prefix="u/", MaxKeys=5))  # within a page: the same five keys
        assert page != names[:5] and sorted(page) == names[:5]
        assert proxy.stats.applied["unsorted"] == 2


def test_copy_neighbour_copies_the_mapped_key_on_copy_object_and_upload_part_copy(upstream: str) -> None:
    same_size = {"dc/a+b.bin": b"A" * 64, "dc/a%2Bb.bin": b"N" * 64}
    with proxied(upstream, Quirks(copy_neighbour={"dc/a+b.bin": "dc/a%2Bb.bin"})) as (through, direct, proxy):
        bucket = new_bucket(direct)
        put(direct, bucket, same_size)
        source = {"Bucket": bucket, "Key": "dc/a+b.bin"}
        through.copy_object(Bucket=bucket, Key="out/proxied", CopySource=source)
        direct.copy_object(Bucket=bucket, Key="out/direct", CopySource=source)
        assert direct.get_object(Bucket=bucket, Key="out/proxied")["Body"].read() == b"N" * 64
        assert direct.get_object(Bucket=bucket, Key="out/direct")["Body"].read() == b"A" * 64
        upload = through.create_multipart_upload(Bucket=bucket, Key="out/parts")["UploadId"]
        part = through.upload_part_copy(Bucket=bucket, Key="out/parts", UploadId=upload, PartNumber=1, CopySource=source)
        parts = {"Parts": [{"PartNumber": 1, "ETag": part["CopyPartResult"]["ETag"]}]}
        through.complete_multipart_upload(Bucket=bucket, Key="out/parts", UploadId=upload, MultipartUpload=parts)
        assert direct.get_object(Bucket=bucket, Key="out/parts")["Body"].read() == b"N" * 64
        assert proxy.stats.applied["copy_neighbour"] == 2


def test_page_keys_sends_shorter_pages_that_still_list_every_key(upstream: str) -> None:
    names = [f"p/{i}" for i in range(7)]
    with proxied(upstream, Quirks(page_keys=3)) as (through, direct, proxy):
        bucket = new_bucket(direct)
        put(direct, bucket, {k: b"p" for k in names})
        first = listing(through, bucket, Prefix="p/")
        assert (len(keys(first)), first["IsTruncated"]) == (3, True)
        assert (len(keys(listing(direct, bucket, Prefix="p/"))), listing(direct, bucket, Prefix="p/")["IsTruncated"]) == (7, False)
        pages = list(through.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="p/"))
        assert [len(keys(page)) for page in pages] == [3, 3, 1] and [k for page in pages for k in keys(page)] == names
        assert keys(listing(through, bucket, Prefix="p/", MaxKeys=2)) == names[:2]  # a smaller ask is kept
        assert proxy.stats.applied["page_keys"] == 4


OPTIONAL: dict[str, Callable[[Any, str], Any]] = {
    "GetObjectTagging": lambda c, b: c.get_object_tagging(Bucket=b, Key="o/k"),
    "PutObjectTagging": lambda c, b: c.put_object_tagging(Bucket=b, Key="o/k", Tagging={"TagSet": [{"Key": "t", "Value": "v"}]}),
    "GetObjectAcl": lambda c, b: c.get_object_acl(Bucket=b, Key="o/k"),
    "ConditionalWrite": lambda c, b: c.put_object(Bucket=b, Key="o/new", Body=b"n", IfNoneMatch="*"),
}


@pytest.mark.parametrize("call", sorted(OPTIONAL))
def test_not_implemented_answers_501_for_the_named_call_only(upstream: str, call: str) -> None:
    with proxied(upstream, Quirks(not_implemented=frozenset({call}))) as (through, direct, proxy):
        bucket = new_bucket(direct)
        put(direct, bucket, {"o/k": b"k"})
        with pytest.raises(ClientError) as refused:
            OPTIONAL[call](through, bucket)
        error = refused.value.response
        assert (error["Error"]["Code"], error["ResponseMetadata"]["HTTPStatusCode"]) == ("NotImplemented", 501)
        OPTIONAL[call](direct, bucket)  # the server behind it has the call
        assert through.get_object(Bucket=bucket, Key="o/k")["Body"].read() == b"k"  # other calls pass
        assert proxy.stats.applied["not_implemented"] >= 1 and proxy.stats.requests[call] >= 1


def test_refined_operation_names_subresources_and_conditional_writes() -> None:
    assert refined_operation("GET", "/b/k?acl", {}) == "GetObjectAcl"
    assert refined_operation("PUT", "/b/k?acl", {}) == "PutObjectAcl"
    assert refined_operation("GET", "/b/k?tagging", {}) == "GetObjectTagging"
    assert refined_operation("DELETE", "/b/k?tagging", {}) == "DeleteObjectTagging"
    assert refined_operation("PUT", "/b/k", {"if-none-match": "*"}) == "ConditionalWrite"
    assert refined_operation("GET", "/b?versions&prefix=p", {}) == "ListObjectVersions"
    assert refined_operation("GET", "/b?list-type=2&prefix=acl", {}) == "ListObjectsV2"
    assert refined_operation("PUT", "/b/k", {"x-amz-copy-source": "/b/j"}) == "CopyObject"


def test_all_quirks_off_is_a_transparent_proxy(moto_endpoint: str) -> None:
    with proxied(moto_endpoint, Quirks()) as (through, direct, proxy):
        bucket = new_bucket(direct)
        put(direct, bucket, DATED)
        for kwargs in ({"Prefix": "dp/"}, {"Prefix": "dp/", "Delimiter": "/"}):
            _, quirky = raw_call(through, "ListObjectsV2", lambda kw=kwargs: through.list_objects_v2(Bucket=bucket, **kw))  # type: ignore[misc]
            _, plain = raw_call(direct, "ListObjectsV2", lambda kw=kwargs: direct.list_objects_v2(Bucket=bucket, **kw))  # type: ignore[misc]
            assert quirky == plain
        assert sum(proxy.stats.applied.values()) == 0 and proxy.stats.requests["ListObjectsV2"] == 2
