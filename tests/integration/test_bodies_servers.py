"""ObjectReader and ObjectWriter against real servers: If-Match on ranged GETs, Content-MD5, and no orphaned upload."""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable
from typing import Any

import pytest

from s3bulk.bodies.reader import ObjectChanged, open_object
from s3bulk.bodies.writer import ObjectWriter, write_stream
from s3bulk.s3.stores import S3Store
from s3bulk.store import Body, ObjectHead, StoreError, crc32_header
from tests.integration.conftest import client_for

MiB = 1024 * 1024


@pytest.fixture(params=["seaweed", "moto"])
def endpoint(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue("seaweed" if request.param == "seaweed" else "moto_endpoint"))


def test_a_large_object_reads_back_byte_exact_with_prefetch_and_random_seeks(
    endpoint: str, bucket_factory: Callable[[Any, str], str]
) -> None:
    client = client_for(endpoint)
    bucket = bucket_factory(client, "bodies")
    body = os.urandom(13 * MiB + 5)
    client.put_object(Bucket=bucket, Key="big", Body=body)
    store = S3Store(client)
    with open_object(store, bucket, "big", range_size=MiB, prefetch=3) as f:
        assert f.read() == body
        f.seek(7 * MiB - 3)
        assert f.read(10) == body[7 * MiB - 3 : 7 * MiB + 7]
        f.seek(-4, os.SEEK_END)
        assert f.read() == body[-4:]


def test_an_overwrite_between_ranges_is_refused_by_the_server_and_named(endpoint: str, bucket_factory: Callable[[Any, str], str]) -> None:
    client = client_for(endpoint)
    bucket = bucket_factory(client, "bodies")
    client.put_object(Bucket=bucket, Key="k", Body=b"a" * (3 * MiB))
    with open_object(S3Store(client), bucket, "k", range_size=MiB, prefetch=0) as f:
        assert f.read(MiB) == b"a" * MiB
        client.put_object(Bucket=bucket, Key="k", Body=b"b" * (3 * MiB))
        with pytest.raises(ObjectChanged, match=f"s3://{bucket}/k changed while it was read"):
            f.read(MiB)


class _LosesPart(S3Store):
    """The third part never arrives: the writer must abort the whole upload."""

    def upload_part(self, bucket: str, key: str, upload_id: str, part_number: int, body: Body, *, crc32: int | None = None) -> str:
        if part_number == 3:
            raise StoreError("InternalError", "connection reset while sending part 3", 500)
        return super().upload_part(bucket, key, upload_id, part_number, body, crc32=crc32)


def test_a_failed_part_leaves_no_multipart_upload_and_no_object(endpoint: str, bucket_factory: Callable[[Any, str], str]) -> None:
    client = client_for(endpoint)
    bucket = bucket_factory(client, "bodies")
    writer = ObjectWriter(_LosesPart(client), bucket, "out", part_size=5 * MiB, threshold=5 * MiB)
    with pytest.raises(StoreError, match="part 3"):
        write_stream(writer, os.urandom(24 * MiB))
    assert client.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    assert client.list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0


def test_a_streamed_multipart_write_carries_type_metadata_and_tags(endpoint: str, bucket_factory: Callable[[Any, str], str]) -> None:
    client = client_for(endpoint)
    bucket = bucket_factory(client, "bodies")
    body = os.urandom(11 * MiB)
    head = ObjectHead(0, "", "application/x-ndjson", {"origin": "s3bulk"})
    etag = write_stream(
        ObjectWriter(S3Store(client), bucket, "out", head=head, tags={"team": "data"}, part_size=5 * MiB, threshold=5 * MiB), body
    )
    got = client.get_object(Bucket=bucket, Key="out")
    assert got["Body"].read() == body
    assert got["ETag"] == etag and etag.endswith('-3"')
    assert (got["ContentType"], got["Metadata"]) == ("application/x-ndjson", {"origin": "s3bulk"})
    assert client.get_object_tagging(Bucket=bucket, Key="out")["TagSet"] == [{"Key": "team", "Value": "data"}]


@pytest.mark.parametrize("size", [3 * MiB, 11 * MiB], ids=["put", "multipart"])
def test_a_written_object_carries_the_full_object_crc32_of_the_bytes_streamed(
    endpoint: str, bucket_factory: Callable[[Any, str], str], size: int
) -> None:
    client = client_for(endpoint)
    bucket = bucket_factory(client, "bodies")
    body = os.urandom(size)
    write_stream(ObjectWriter(S3Store(client), bucket, "out", part_size=5 * MiB, threshold=5 * MiB), body)
    head = client.head_object(Bucket=bucket, Key="out", ChecksumMode="ENABLED")
    assert head["ChecksumCRC32"] == crc32_header(zlib.crc32(body))
    assert head.get("ChecksumType", "FULL_OBJECT") == "FULL_OBJECT"  # one CRC of the whole object, not of its parts


class _WrongTotal(ObjectWriter):
    """Streams the right parts but declares another whole-object CRC32, as a byte lost between parts would."""

    def commit(self) -> str:
        self.crc32 ^= 1
        return super().commit()


def test_a_multipart_write_whose_whole_object_crc32_is_wrong_is_refused_and_leaves_nothing(
    seaweed: str, bucket_factory: Callable[[Any, str], str]
) -> None:
    """SeaweedFS checks the FULL_OBJECT checksum at completion as S3 does (moto stores its own and checks nothing)."""
    client = client_for(seaweed)
    bucket = bucket_factory(client, "bodies")
    with pytest.raises(StoreError, match="BadDigest"):
        write_stream(_WrongTotal(S3Store(client), bucket, "out", part_size=5 * MiB, threshold=5 * MiB), os.urandom(11 * MiB))
    assert client.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    assert client.list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0
