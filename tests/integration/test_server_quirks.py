"""What the foreign servers (versitygw 1.8.0, unpatched moto 5.2.5) do differently from S3, each shown with plain boto3.

The differential tests (test_cli_on_foreign_servers.py, test_selection_property.py) leave out what a server cannot
hold and name the test here that proves it. Each test asserts what the server was seen to do, so it fails the day
the server changes, and the exclusions it justifies can then be revisited.
"""

from __future__ import annotations

import base64
import hashlib
import re
import uuid
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.integration.helpers import plain_client

BODY = b"hello checksum"
CRC32 = base64.b64encode(zlib.crc32(BODY).to_bytes(4, "big")).decode()
SHA256 = base64.b64encode(hashlib.sha256(BODY).digest()).decode()


@pytest.fixture
def vgw(versitygw: str) -> tuple[Any, str]:
    client = plain_client(versitygw)
    bucket = f"quirks-{uuid.uuid4().hex[:10]}"
    client.create_bucket(Bucket=bucket)
    return client, bucket


def keys_of(client: Any, bucket: str, prefix: str = "") -> list[str]:
    return [o["Key"] for o in client.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", ())]


def raw_call(client: Any, operation: str, call: Callable[[], Any]) -> tuple[str, bytes]:
    """The URL boto3 sent and the body the server answered, for one call."""
    seen: dict[str, Any] = {}

    def before_send(request: Any, **_: Any) -> None:
        seen["url"] = request.url

    def after_call(http_response: Any, **_: Any) -> None:
        seen["body"] = http_response.content

    client.meta.events.register(f"before-send.s3.{operation}", before_send)
    client.meta.events.register(f"after-call.s3.{operation}", after_call)
    try:
        call()
    finally:
        client.meta.events.unregister(f"before-send.s3.{operation}", before_send)
        client.meta.events.unregister(f"after-call.s3.{operation}", after_call)
    return str(seen["url"]), bytes(seen["body"])


def test_versitygw_collapses_double_slashes_in_keys(vgw: tuple[Any, str]) -> None:
    client, bucket = vgw
    client.put_object(Bucket=bucket, Key="q/a//b", Body=b"double")
    assert keys_of(client, bucket, "q/") == ["q/a/b"]
    assert client.get_object(Bucket=bucket, Key="q/a/b")["Body"].read() == b"double"
    assert client.get_object(Bucket=bucket, Key="q/a//b")["Body"].read() == b"double"  # one object under both names


def test_versitygw_cleans_dot_segments_and_a_leading_slash_as_paths(vgw: tuple[Any, str]) -> None:
    client, bucket = vgw
    for key in ("/lead", "x/./y", "x/../z"):
        client.put_object(Bucket=bucket, Key=key, Body=key.encode())
    assert sorted(keys_of(client, bucket)) == ["lead", "x/y", "z"]
    assert client.get_object(Bucket=bucket, Key="z")["Body"].read() == b"x/../z"


def test_versitygw_cannot_hold_a_body_at_a_key_ending_in_slash(vgw: tuple[Any, str]) -> None:
    client, bucket = vgw
    with pytest.raises(ClientError) as refused:
        client.put_object(Bucket=bucket, Key="dir/", Body=b"data")
    assert refused.value.response["Error"]["Code"] == "DirectoryObjectContainsData"
    client.put_object(Bucket=bucket, Key="dir/", Body=b"")  # an empty folder marker is kept
    assert keys_of(client, bucket) == ["dir/"]
    assert client.head_object(Bucket=bucket, Key="dir/")["ContentLength"] == 0


def test_versitygw_cannot_hold_a_key_and_keys_under_it_as_a_folder(vgw: tuple[Any, str]) -> None:
    client, bucket = vgw
    client.put_object(Bucket=bucket, Key="f", Body=b"file")
    client.put_object(Bucket=bucket, Key="g/x", Body=b"under")
    codes = []
    for key in ("f/x", "g"):
        with pytest.raises(ClientError) as refused:
            client.put_object(Bucket=bucket, Key=key, Body=b"x")
        codes.append(refused.value.response["Error"]["Code"])
    assert codes == ["ObjectParentIsFile", "ExistingObjectIsDirectory"]
    assert sorted(keys_of(client, bucket)) == ["f", "g/x"]


def test_versitygw_refuses_a_key_segment_over_255_bytes(vgw: tuple[Any, str]) -> None:
    client, bucket = vgw
    client.put_object(Bucket=bucket, Key="s/" + "é" * 127, Body=b"254 bytes")
    with pytest.raises(ClientError) as refused:
        client.put_object(Bucket=bucket, Key="s/" + "é" * 128, Body=b"256 bytes")
    assert refused.value.response["Error"]["Code"] == "KeyTooLongError"
    assert keys_of(client, bucket) == ["s/" + "é" * 127]


def test_versitygw_keeps_the_checksums_a_put_object_sends(vgw: tuple[Any, str]) -> None:
    """Reported as "stores all-zero checksums": not for PutObject, which keeps (and verifies) what it is sent."""
    client, bucket = vgw
    client.put_object(Bucket=bucket, Key="crc32", Body=BODY, ChecksumCRC32=CRC32)
    client.put_object(Bucket=bucket, Key="sha256", Body=BODY, ChecksumSHA256=SHA256)
    crc = client.head_object(Bucket=bucket, Key="crc32", ChecksumMode="ENABLED")
    sha = client.head_object(Bucket=bucket, Key="sha256", ChecksumMode="ENABLED")
    assert (crc["ChecksumCRC32"], crc["ChecksumType"]) == (CRC32, "FULL_OBJECT")
    assert (sha["ChecksumSHA256"], sha["ChecksumType"]) == (SHA256, "FULL_OBJECT")
    with pytest.raises(ClientError) as refused:
        client.put_object(Bucket=bucket, Key="wrong", Body=BODY, ChecksumCRC32="AAAAAA==")
    assert refused.value.response["Error"]["Code"] == "BadDigest"


def test_versitygw_copy_onto_itself_with_a_new_checksum_algorithm_stores_the_checksum_of_no_bytes(vgw: tuple[Any, str]) -> None:
    """The all-zero checksum of the report: a CopyObject of an object onto itself naming a new ChecksumAlgorithm (what
    `add-checksum` sends) stores the checksum of zero bytes; a CRC of nothing is 0, hence AAAAAA==. A copy to another
    key stores the right one; the body is kept either way."""
    client, bucket = vgw
    empty_sha256 = base64.b64encode(hashlib.sha256(b"").digest()).decode()
    for key in ("self-crc32", "self-sha256", "source"):
        client.put_object(Bucket=bucket, Key=key, Body=BODY)
    for key, algorithm in (("self-crc32", "CRC32"), ("self-sha256", "SHA256")):
        source = {"Bucket": bucket, "Key": key}
        client.copy_object(Bucket=bucket, Key=key, CopySource=source, ChecksumAlgorithm=algorithm, MetadataDirective="REPLACE")
    client.copy_object(Bucket=bucket, Key="other", CopySource={"Bucket": bucket, "Key": "source"}, ChecksumAlgorithm="SHA256")
    assert client.head_object(Bucket=bucket, Key="self-crc32", ChecksumMode="ENABLED")["ChecksumCRC32"] == "AAAAAA=="
    assert client.head_object(Bucket=bucket, Key="self-sha256", ChecksumMode="ENABLED")["ChecksumSHA256"] == empty_sha256
    assert client.head_object(Bucket=bucket, Key="other", ChecksumMode="ENABLED")["ChecksumSHA256"] == SHA256
    assert {client.get_object(Bucket=bucket, Key=k)["Body"].read() for k in ("self-crc32", "self-sha256", "other")} == {BODY}


def test_versitygw_ignores_encoding_type_url_and_lists_raw_keys(vgw: tuple[Any, str]) -> None:
    client, bucket = vgw
    names = ["a+b", "a b", "%41", "A", "x~y=z", "ü"]
    for name in names:
        client.put_object(Bucket=bucket, Key="enc/" + name, Body=b"x")
    url, raw = raw_call(client, "ListObjectsV2", lambda: client.list_objects_v2(Bucket=bucket, Prefix="enc/", EncodingType="url"))
    assert "encoding-type=url" in url
    text = raw.decode()
    assert sorted(re.findall(r"<Key>([^<]*)</Key>", text)) == sorted("enc/" + n for n in names)  # raw, not %2B / %25 / %C3%BC
    assert re.findall(r"<EncodingType>([^<]*)</EncodingType>", text) == [""]  # S3 answers <EncodingType>url</EncodingType>


def test_plain_moto_lists_all_versions_before_all_delete_markers_with_whole_second_times(moto_plain: str) -> None:
    """S3 lists each key's versions and delete markers interleaved, newest first; moto writes every Version element,
    then every DeleteMarker, whatever their keys, and its LastModified has no fraction of a second.
    (tests/integration/moto_s3.py fixes the order in the session's in-process moto; this one is unpatched.)"""
    client = plain_client(moto_plain)
    bucket = f"quirks-{uuid.uuid4().hex[:10]}"
    client.create_bucket(Bucket=bucket)
    client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    client.put_object(Bucket=bucket, Key="a", Body=b"a1")
    client.delete_object(Bucket=bucket, Key="a")
    client.put_object(Bucket=bucket, Key="a", Body=b"a2")
    client.put_object(Bucket=bucket, Key="b", Body=b"b1")
    client.delete_object(Bucket=bucket, Key="b")
    client.put_object(Bucket=bucket, Key="c", Body=b"c1")
    _, raw = raw_call(client, "ListObjectVersions", lambda: client.list_object_versions(Bucket=bucket))
    text = raw.decode()
    entries = [(kind, key) for kind, key in re.findall(r"<(Version|DeleteMarker)>.*?<Key>([^<]*)</Key>", text)]
    assert entries == [
        ("Version", "a"),
        ("Version", "a"),
        ("Version", "b"),
        ("Version", "c"),
        ("DeleteMarker", "a"),  # S3: between a's two versions
        ("DeleteMarker", "b"),  # S3: before b's version, as the newest
    ]
    stamps = re.findall(r"<LastModified>([^<]*)</LastModified>", text)
    assert len(stamps) == 6
    assert all(s.endswith(".000Z") for s in stamps), stamps
