"""Planned listing shards on SeaweedFS: a nested source is listed exactly once by its shards.

SeaweedFS reads start-after="src/p03" as the folder "src/p03/" and skips its keys, where S3 lists
them; the planner's boundaries sit just below real keys, so they name no folder on either.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from s3bulk.local.demo import Seed, put_seeds
from s3bulk.s3.faststore import FastS3Store
from s3bulk.s3.stores import S3Store
from s3bulk.source.listing import iter_objects
from s3bulk.source.shards import Shard, list_shard_page, plan_ranges
from s3bulk.store import StoreError
from tests.integration.conftest import client_for

pytestmark = pytest.mark.seaweed


def _list_shard(store: S3Store, bucket: str, prefix: str, shard: Shard) -> list[str]:
    out: list[str] = []
    token: str | None = None
    while True:
        page = list_shard_page(store, bucket, prefix, shard, token)
        out += [o.key for o in page.objects]
        if page.done:
            return out
        token = page.next_token


@pytest.mark.parametrize("path", ["fast", "botocore"])
def test_planned_shards_of_a_nested_source_list_every_key_once(seaweed: str, bucket_factory: Callable[[Any, str], str], path: str) -> None:
    client = client_for(seaweed)
    bucket = bucket_factory(client, "src")
    # src/p05~top beside the folder src/p05/: '~' sorts after '/', so SeaweedFS's folder-first order is S3's here.
    keys = {f"src/p{d:02d}/f{i:03d}" for d in range(12) for i in range(40)} | {"src/p05~top"}
    put_seeds(client, bucket, [Seed(k, 0) for k in keys])
    # 20-key pages: the probes cut at folders (src/p03, src/p04, ...), 481 keys in 4 ranges.
    store = FastS3Store(client, 8, max_keys=20) if path == "fast" else S3Store(client, max_keys=20)
    serial = [o.key for o in iter_objects(store, bucket, "src/")]
    assert sorted(serial) == sorted(keys)
    shards = plan_ranges(store, bucket, "src/", 4, threads=4)
    assert len(shards) == 4
    listed = [_list_shard(store, bucket, "src/", s) for s in shards]
    assert [key for part in listed for key in part] == serial
    assert all(part for part in listed)  # no range was planned empty


@pytest.mark.parametrize("path", ["fast", "botocore"])
def test_a_server_listing_a_folder_before_a_sibling_that_sorts_first_is_refused_not_sharded(
    seaweed: str, bucket_factory: Callable[[Any, str], str], path: str
) -> None:
    # S3 lists src/p05-top before src/p05/f000 ('-' sorts before '/'); SeaweedFS lists the folder first. Shards, resume
    # points and a sync's merge join all read S3's order, so the listing stops with an error instead of a wrong answer.
    client = client_for(seaweed)
    bucket = bucket_factory(client, "src")
    put_seeds(client, bucket, [Seed(k, 0) for k in ("src/p05/f000", "src/p05/f001", "src/p05-top", "src/p06")])
    store = FastS3Store(client, 8, max_keys=20) if path == "fast" else S3Store(client, max_keys=20)
    with pytest.raises(StoreError) as raised:
        list(iter_objects(store, bucket, "src/"))
    assert raised.value.code == "ListingOutOfOrder" and "'src/p05-top' after 'src/p05/f001'" in raised.value.message
