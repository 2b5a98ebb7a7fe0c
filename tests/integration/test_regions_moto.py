"""Buckets in other Regions, on both request paths: moto behind a proxy that enforces bucket Regions as S3 does.

The job's client lives in us-east-1. Every request the proxy sees signed for the
wrong Region is answered 301 (or 400) and counted by bucket, so the tests prove both
where each request went and that a bucket costs at most one redirect (its discovery).
"""

from __future__ import annotations

import http.client
import json
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

import pytest

from s3bulk.job import MiB, parse_job
from s3bulk.local.engine import Engine
from s3bulk.local.server import ACCESS_KEY, SECRET_KEY
from s3bulk.s3.clients import ClientSettings, S3Clients, make_s3_client
from s3bulk.s3.faststore import FastS3Store, open_store
from s3bulk.s3.stores import S3Store
from s3bulk.store import StoreError
from s3bulk.testing.faultproxy import FaultPlan, FaultProxy
from tests.integration.helpers import assert_exact_copy, list_keys, md5, seed_small

pytestmark = pytest.mark.slow

HOME = "us-east-1"
N = 40
PATHS = ["fast", "botocore"]


def direct(endpoint: str, region: str = HOME) -> Any:
    return make_s3_client(ClientSettings(endpoint_url=endpoint, region=region, access_key=ACCESS_KEY, secret_key=SECRET_KEY), 16)


@dataclass
class World:
    moto: Any  # a client straight to moto (which ignores Regions), for seeding and checking
    buckets: dict[str, str]  # role -> bucket name
    proxy: FaultProxy

    def store(self, path: str) -> S3Store:
        """The store the CLI builds: a us-east-1 client, each bucket's requests sent to its own Region."""
        settings = ClientSettings(endpoint_url=self.proxy.endpoint_url, region=HOME, access_key=ACCESS_KEY, secret_key=SECRET_KEY)
        return open_store(S3Clients(settings, 16), fast=path == "fast")

    def redirects_by_bucket(self) -> Counter[str]:
        return Counter({b: n for (b, _), n in self.proxy.stats.redirected.items()})

    def redirected_ops(self) -> set[str]:
        return {op for (_, op) in self.proxy.stats.redirected}


REGIONS = {"eu": "eu-west-1", "us": HOME, "ap": "ap-southeast-2"}


@pytest.fixture
def world(moto_endpoint: str, request: pytest.FixtureRequest) -> Iterator[World]:
    wrong_region: Literal["redirect", "malformed"] = getattr(request, "param", "redirect")
    buckets = {role: f"{role}-{uuid.uuid4().hex[:10]}" for role in REGIONS}
    for role, region in REGIONS.items():
        config = {} if region == HOME else {"CreateBucketConfiguration": {"LocationConstraint": region}}
        direct(moto_endpoint, region).create_bucket(Bucket=buckets[role], **config)
    plan = FaultPlan(bucket_regions={buckets[r]: region for r, region in REGIONS.items()}, wrong_region=wrong_region)
    with FaultProxy(int(urlsplit(moto_endpoint).port or 0), plan) as proxy:
        yield World(direct(moto_endpoint), buckets, proxy)


def copy_job(src: str, dst: str, **options: Any) -> Any:
    doc = {"operation": "copy", "source": {"bucket": src, "prefix": "in/"}, "destination": {"bucket": dst, "prefix": "out/"}}
    return parse_job(json.dumps({**doc, "options": options}))


def run_copy(world: World, src_role: str, dst_role: str, path: str, n: int = N) -> tuple[dict[str, Any], dict[str, str]]:
    src, dst = world.buckets[src_role], world.buckets[dst_role]
    expected = seed_small(world.moto, src, "in/", n)
    report = Engine(copy_job(src, dst), world.store(path), concurrency=8).run()
    return report.summary(), {"out/" + k[3:]: v for k, v in expected.items()}


def assert_one_redirect_per_foreign_bucket(world: World, *foreign: str) -> None:
    """Only each foreign bucket's discovery (one HeadBucket) was redirected; every later request went straight."""
    assert world.redirected_ops() <= {"HeadBucket"}, world.proxy.stats.redirected
    assert world.redirects_by_bucket() == Counter({world.buckets[r]: 1 for r in foreign})


@pytest.mark.parametrize("path", PATHS)
def test_copy_from_a_source_in_eu_west_1_to_us_east_1_arrives_byte_exact(world: World, path: str) -> None:
    summary, expected = run_copy(world, "eu", "us", path)
    assert (summary["succeeded"], summary["failed"]) == (N, 0), summary
    assert_exact_copy(world.moto, world.buckets["us"], "out/", expected)
    assert world.proxy.stats.forwarded["ListObjectsV2"] >= 1
    assert_one_redirect_per_foreign_bucket(world, "eu")


@pytest.mark.parametrize("path", PATHS)
def test_copy_into_ap_southeast_2_sends_every_copyobject_to_the_destinations_region(world: World, path: str) -> None:
    summary, expected = run_copy(world, "us", "ap", path)
    assert (summary["succeeded"], summary["failed"]) == (N, 0), summary
    assert_exact_copy(world.moto, world.buckets["ap"], "out/", expected)
    # The proxy would answer a CopyObject signed for us-east-1 with 301: none was, and every one was served.
    assert world.proxy.stats.forwarded["CopyObject"] == N
    assert_one_redirect_per_foreign_bucket(world, "ap")


@pytest.mark.parametrize("path", PATHS)
def test_delete_in_a_bucket_in_another_region_removes_only_the_selected_keys(world: World, path: str) -> None:
    bucket = world.buckets["eu"]
    seed_small(world.moto, bucket, "in/", N)
    seed_small(world.moto, bucket, "keep/", 5)
    job = parse_job(json.dumps({"operation": "delete", "source": {"bucket": bucket, "prefix": "in/"}}))
    summary = Engine(job, world.store(path), concurrency=8).run().summary()
    assert (summary["succeeded"], summary["failed"]) == (N, 0), summary
    assert list_keys(world.moto, bucket, "in/") == []
    assert len(list_keys(world.moto, bucket, "keep/")) == 5
    assert world.proxy.stats.forwarded["DeleteObjects"] >= 1
    assert_one_redirect_per_foreign_bucket(world, "eu")


@pytest.mark.parametrize("path", PATHS)
def test_multipart_copy_from_eu_west_1_into_ap_southeast_2_arrives_byte_exact(world: World, path: str) -> None:
    src, dst = world.buckets["eu"], world.buckets["ap"]
    body = bytes(range(256)) * (13 * MiB // 256) + b"end"
    world.moto.put_object(Bucket=src, Key="in/big.bin", Body=body, Metadata={"origin": "eu"})
    job = copy_job(src, dst, multipart_threshold=8 * MiB, part_size=5 * MiB)
    report = Engine(job, world.store(path), concurrency=4).run()
    assert (report.status, list(report.tally.failures())) == ("succeeded", [])
    head = world.moto.head_object(Bucket=dst, Key="out/big.bin")
    assert head["ETag"].strip('"').endswith("-3")  # it really took the multipart path
    assert head["Metadata"] == {"origin": "eu"}
    assert md5(world.moto.get_object(Bucket=dst, Key="out/big.bin")["Body"].read()) == md5(body)
    stats = world.proxy.stats
    assert (stats.forwarded["CreateMultipartUpload"], stats.forwarded["UploadPartCopy"], stats.forwarded["CompleteMultipartUpload"]) == (
        1,
        3,
        1,
    )
    assert_one_redirect_per_foreign_bucket(world, "eu", "ap")


@pytest.mark.parametrize("world", ["redirect", "malformed"], indirect=True)
@pytest.mark.parametrize("path", PATHS)
def test_a_stale_cached_region_costs_one_redirect_then_requests_go_straight(world: World, path: str) -> None:
    src, dst = world.buckets["us"], world.buckets["eu"]
    world.moto.put_object(Bucket=src, Key="in/a", Body=b"a")
    store = world.store(path)
    assert store.regions is not None
    store.regions.learn(dst, HOME)  # as if the bucket had moved since it was cached
    for i in range(3):
        store.copy_object(src, "in/a", dst, f"out/{i}")
    assert store.regions.known(dst) == "eu-west-1"  # the redirect taught the shared cache (botocore's or ours)
    assert world.proxy.stats.redirected == Counter({(dst, "CopyObject"): 1})
    assert world.proxy.stats.forwarded["CopyObject"] == 3
    assert list_keys(world.moto, dst, "out/") == ["out/0", "out/1", "out/2"]


# -- negative controls: the proxy really enforces, so the tests above can fail -------------------
def test_without_region_routing_a_request_signed_for_the_wrong_region_is_answered_301(world: World) -> None:
    eu = world.buckets["eu"]
    store = FastS3Store(direct(world.proxy.endpoint_url), 8)  # a bare client: no BucketRegions
    with pytest.raises(StoreError) as err:
        store.list_page(eu, "in/")
    assert (err.value.code, err.value.status) == ("PermanentRedirect", 301)
    assert world.proxy.stats.redirected[(eu, "ListObjectsV2")] == 1
    assert world.proxy.stats.forwarded["ListObjectsV2"] == 0


def test_headbucket_signed_for_the_wrong_region_gets_301_with_the_region_header_and_no_body(world: World) -> None:
    eu = world.buckets["eu"]
    conn = http.client.HTTPConnection("127.0.0.1", world.proxy.port, timeout=10)
    scope = f"Credential=AK/20260101/{HOME}/s3/aws4_request, SignedHeaders=host, Signature=0"
    conn.request("HEAD", f"/{eu}", headers={"Authorization": f"AWS4-HMAC-SHA256 {scope}"})
    answer = conn.getresponse()
    assert (answer.status, answer.getheader("x-amz-bucket-region"), answer.read()) == (301, "eu-west-1", b"")
    conn.close()
