"""Bucket Regions: found once per bucket, cached across threads, and a wrong-Region answer resent once, never more."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.exceptions import ClientError
from urllib3 import HTTPHeaderDict

from s3bulk.s3.clients import ClientSettings, S3Clients
from s3bulk.s3.fastpath import FastS3
from s3bulk.s3.regions import BucketRegions, region_from_answer
from s3bulk.s3.stores import S3Store
from s3bulk.store import StoreError
from s3bulk.testing.faultproxy import signing_region

LIST_OK = b'<?xml version="1.0"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><IsTruncated>false</IsTruncated></ListBucketResult>'
COPY_OK = b'<?xml version="1.0"?><CopyObjectResult><ETag>"abc"</ETag></CopyObjectResult>'
REDIRECT = b"<Error><Code>PermanentRedirect</Code><Message>use the right endpoint</Message></Error>"


# -- fakes ---------------------------------------------------------------------------------------
class Events:
    def __init__(self) -> None:
        self.handlers: dict[str, list[Callable[..., Any]]] = {}

    def register(self, event: str, handler: Callable[..., Any], unique_id: str | None = None) -> None:
        self.handlers.setdefault(event, []).append(handler)


@dataclass
class FakeClient:
    """Just enough of a botocore S3 client: its Region, events, and a scripted HeadBucket."""

    region: str
    head: Callable[[str], dict[str, Any]] = lambda bucket: {"ResponseMetadata": {"HTTPHeaders": {}}}
    heads: int = 0
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.meta = type("Meta", (), {"region_name": self.region, "events": Events()})()

    def head_bucket(self, Bucket: str) -> dict[str, Any]:
        self.heads += 1
        return self.head(Bucket)

    def copy_object(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("copy_object", kwargs))
        return {"CopyObjectResult": {"ETag": '"e"'}, "ResponseMetadata": {}}


def headers(region: str | None) -> dict[str, Any]:
    return {"ResponseMetadata": {"HTTPHeaders": {"x-amz-bucket-region": region} if region else {}}}


def regions_with(table: dict[str, str], delay: float = 0.0) -> tuple[BucketRegions, FakeClient, dict[str, FakeClient]]:
    def head(bucket: str) -> dict[str, Any]:
        time.sleep(delay)
        return headers(table.get(bucket))

    home = FakeClient("us-east-1", head)
    built: dict[str, FakeClient] = {}

    def factory(region: str) -> FakeClient:
        built[region] = FakeClient(region)
        return built[region]

    return BucketRegions(home, factory), home, built


# -- the answer that names a Region ----------------------------------------------------------
def test_a_redirect_names_its_region_in_the_header_or_in_a_malformed_authorization_body() -> None:
    assert region_from_answer(301, {"x-amz-bucket-region": "eu-west-1"}, REDIRECT) == "eu-west-1"
    body = b"<Error><Code>AuthorizationHeaderMalformed</Code><Region>ap-southeast-2</Region></Error>"
    assert region_from_answer(400, {}, body) == "ap-southeast-2"
    assert region_from_answer(200, {"x-amz-bucket-region": "eu-west-1"}, b"") is None  # not a redirect
    assert region_from_answer(403, {"x-amz-bucket-region": "eu-west-1"}, b"") is None
    assert region_from_answer(301, {"x-amz-bucket-region": "bad/region"}, b"") is None


# -- the cache -------------------------------------------------------------------------------
def test_concurrent_first_requests_share_one_headbucket_and_then_read_the_cache() -> None:
    regions, home, _ = regions_with({"eu": "eu-west-1"}, delay=0.05)
    seen: list[str] = []
    threads = [threading.Thread(target=lambda: seen.append(regions.region_of("eu"))) for _ in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == ["eu-west-1"] * 32
    assert regions.region_of("eu") == "eu-west-1"
    assert home.heads == 1 and regions.lookups == 1


def test_the_region_is_read_from_a_headbucket_error_too() -> None:
    def forbidden(bucket: str) -> dict[str, Any]:
        answer: Any = {"Error": {"Code": "403"}, **headers("ap-southeast-2")}
        raise ClientError(answer, "HeadBucket")

    regions = BucketRegions(FakeClient("us-east-1", forbidden), lambda region: FakeClient(region))
    assert regions.region_of("theirs") == "ap-southeast-2"


def test_a_server_without_the_header_keeps_every_bucket_on_the_home_client() -> None:
    regions, home, built = regions_with({})
    assert regions.region_of("local") == "us-east-1"
    assert regions.client_for("local") is home
    assert built == {}  # no client was built for another Region
    assert home.heads == 1


def test_one_client_per_region_prepared_once_and_never_the_home_client_again() -> None:
    regions, home, built = regions_with({"a": "eu-west-1", "b": "eu-west-1", "c": "ap-southeast-2"})
    prepared: list[Any] = []
    regions.prepare_clients(prepared.append)
    clients = [regions.client_for(b) for b in ("a", "b", "c", "a")]
    assert clients[0] is clients[1] is clients[3] is built["eu-west-1"]
    assert clients[2] is built["ap-southeast-2"]
    assert prepared == [built["eu-west-1"], built["ap-southeast-2"]]
    assert home not in prepared


def test_a_redirect_botocore_follows_updates_the_shared_cache() -> None:
    regions, home, _ = regions_with({"moved": "us-east-1"})
    assert regions.region_of("moved") == "us-east-1"
    (hook,) = home.meta.events.handlers["needs-retry.s3"]
    http = type("R", (), {"status_code": 301})()
    request = {"context": {"s3_redirect": {"bucket": "moved"}}}
    op = type("Op", (), {"name": "ListObjectsV2"})()
    assert hook(request_dict=request, response=(type("R", (), {"status_code": 200})(), headers("eu-west-1")), operation=op) is None
    assert regions.region_of("moved") == "us-east-1"  # a 200 teaches nothing
    assert hook(request_dict=request, response=(http, headers("eu-west-1")), operation=op) is None  # botocore decides the resend
    assert regions.region_of("moved") == "eu-west-1"
    assert regions.learned == 1


def test_botocore_calls_go_through_the_destination_buckets_region_client() -> None:
    regions, home, built = regions_with({"src": "eu-west-1", "dst": "ap-southeast-2"})
    store = S3Store(home, regions=regions)
    store.copy_object("src", "k", "dst", "k2")
    assert home.calls == [] and built["ap-southeast-2"].calls[0][1]["CopySource"] == {"Bucket": "src", "Key": "k"}
    assert "eu-west-1" not in built  # the source's Region needs no client for a copy


# -- the fast path's resend-once rule ----------------------------------------------------------
@dataclass
class Answer:
    status: int
    data: bytes
    headers: HTTPHeaderDict


class ScriptedPool:
    """Stands in for urllib3's pools: records each request's signing Region, answers from a script."""

    def __init__(self, answers: list[tuple[int, bytes, dict[str, str]]]) -> None:
        self.answers = answers
        self.sent: list[tuple[str, str]] = []  # (signing Region, target)

    def connection_from_host(self, host: str, port: int | None = None, scheme: str = "http") -> ScriptedPool:
        return self

    def urlopen(self, method: str, target: str, *, headers: dict[str, str], **kwargs: Any) -> Answer:
        self.sent.append((signing_region({k.lower(): v for k, v in headers.items()}) or "", target))
        status, data, extra = self.answers.pop(0)
        return Answer(status, data, HTTPHeaderDict(extra))


SETTINGS = ClientSettings(endpoint_url="http://127.0.0.1:9", region="us-east-1", access_key="AK", secret_key="SK")


def fast_with(answers: list[tuple[int, bytes, dict[str, str]]], cached: dict[str, str] | None) -> tuple[FastS3, ScriptedPool]:
    clients = S3Clients(SETTINGS, 4)
    home = clients.client()
    regions = None
    if cached is not None:
        regions = BucketRegions(home, clients.client)
        for bucket, region in cached.items():
            regions.learn(bucket, region)  # as if discovered: no HeadBucket
    fast = FastS3(home, 4, regions=regions)
    pool = ScriptedPool(answers)
    fast.pool = pool  # type: ignore[assignment]
    return fast, pool


def test_a_stale_region_is_learned_from_the_redirect_and_the_request_resent_once() -> None:
    moved = (301, REDIRECT, {"x-amz-bucket-region": "eu-west-1"})
    fast, pool = fast_with([moved, (200, LIST_OK, {}), (200, LIST_OK, {})], {"b": "us-east-1"})
    fast.list_page("b", "", None, None, 1000)
    assert [r for r, _ in pool.sent] == ["us-east-1", "eu-west-1"]
    assert fast.regions is not None and fast.regions.known("b") == "eu-west-1"
    fast.list_page("b", "", None, None, 1000)  # the next request goes straight there
    assert [r for r, _ in pool.sent] == ["us-east-1", "eu-west-1", "eu-west-1"]
    assert (fast.redirects, fast.retries) == (1, 0)


def test_a_second_redirect_fails_the_request_instead_of_looping() -> None:
    answers = [(301, REDIRECT, {"x-amz-bucket-region": "eu-west-1"}), (301, REDIRECT, {"x-amz-bucket-region": "ap-southeast-2"})]
    fast, pool = fast_with([*answers, (200, LIST_OK, {})], {"b": "us-east-1"})
    with pytest.raises(StoreError) as err:
        fast.list_page("b", "", None, None, 1000)
    assert (err.value.code, err.value.status) == ("PermanentRedirect", 301)
    assert len(pool.sent) == 2


def test_a_malformed_authorization_400_naming_the_region_is_resent_there() -> None:
    body = b"<Error><Code>AuthorizationHeaderMalformed</Code><Message>wrong region</Message><Region>eu-west-1</Region></Error>"
    fast, pool = fast_with([(400, body, {}), (200, COPY_OK, {})], {"src": "us-east-1", "dst": "us-east-1"})
    assert fast.copy_object("src", "k", "dst", "k") == '"abc"'
    assert [r for r, _ in pool.sent] == ["us-east-1", "eu-west-1"]


def test_copy_object_is_signed_for_the_destination_buckets_region() -> None:
    fast, pool = fast_with([(200, COPY_OK, {})], {"src": "eu-west-1", "dst": "ap-southeast-2"})
    fast.copy_object("src", "k", "dst", "k")
    assert pool.sent == [("ap-southeast-2", "/dst/k")]


def test_without_regions_a_redirect_fails_at_once_as_before() -> None:
    fast, pool = fast_with([(301, REDIRECT, {"x-amz-bucket-region": "eu-west-1"})], None)
    with pytest.raises(StoreError) as err:
        fast.delete_objects("b", ["k"])
    assert err.value.code == "PermanentRedirect" and len(pool.sent) == 1
