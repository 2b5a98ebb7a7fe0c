"""A server's `EncodingType: url` is checked before s3bulk decodes by it, on both request paths: the first page whose keys
decoding would change is asked once more without encoding-type, and the keys the server sends then decide. A server
that claims url and sends raw keys has them used as sent (`fx/x%2Fy.bin` is never read as `fx/x/y.bin`, another object);
one whose answers match neither reading stops the listing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from botocore.awsrequest import AWSResponse, HTTPHeaders

from s3bulk.s3 import fastpath
from s3bulk.s3.clients import ClientSettings, make_s3_client
from s3bulk.s3.keytext import EncodingClaims
from s3bulk.s3.stores import S3Store
from s3bulk.store import ListPage, StoreError

EP = "http://127.0.0.1:9"
NS = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'
LIED = ["fx/x%2Fy.bin", "fx/x/y.bin"]  # what a server that claims url but sends raw keys lists for these two objects


class _Raw:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, *args: Any, **kwargs: Any) -> Iterator[bytes]:
        return iter([self.data])


class _Answer:
    def __init__(self, data: bytes) -> None:
        self.status, self.data = 200, data
        self.headers: dict[str, str] = {}


class Server:
    """Answers each request with the next recorded body; records whether it asked for encoding-type=url."""

    def __init__(self, bodies: list[str]) -> None:
        self.bodies = [b.encode() for b in bodies]
        self.encoded: list[bool] = []

    def answer(self, url: str) -> bytes:
        query = parse_qs(urlsplit(url).query, keep_blank_values=True)
        self.encoded.append(query.get("encoding-type") == ["url"])
        return self.bodies.pop(0)

    def urlopen(self, method: str, url: str, *args: Any, **kwargs: Any) -> _Answer:
        return _Answer(self.answer(url))


def _client() -> Any:
    return make_s3_client(ClientSettings(endpoint_url=EP, region="us-east-1", access_key="a", secret_key="b", max_attempts=1), 4)


class Paths:
    """The same calls on either request path, each answered by a Server from recorded bodies."""

    def __init__(self, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.path, self.monkeypatch = path, monkeypatch
        self.claims = EncodingClaims()

    def serve(self, *bodies: str) -> Server:
        self.server = Server(list(bodies))
        return self.server

    def _botocore(self) -> S3Store:
        client = _client()
        client.meta.events.register(
            "before-send.s3", lambda request, **_: AWSResponse(request.url, 200, HTTPHeaders(), _Raw(self.server.answer(request.url)))
        )
        store = S3Store(client)
        store.claims = self.claims  # one store's record across the pages of a test
        return store

    def list_page(self, bucket: str = "b", token: str | None = None) -> ListPage:
        if self.path == "botocore":
            return self._botocore().list_page(bucket, "fx/", token)
        fast = fastpath.FastS3(_client(), 4, claims=self.claims)
        fast.max_attempts = 1
        self.monkeypatch.setattr(fast.pool, "connection_from_host", lambda *a, **k: self.server)
        return fast.list_page(bucket, "fx/", token, None, 1000)

    def list_versions_page(self) -> ListPage:
        if self.path == "botocore":
            return self._botocore().list_versions_page("b", "fx/")
        fast = fastpath.FastS3(_client(), 4, claims=self.claims)
        fast.max_attempts = 1
        self.monkeypatch.setattr(fast.pool, "connection_from_host", lambda *a, **k: self.server)
        return fast.list_versions_page("b", "fx/", None, None, 1000)


@pytest.fixture(params=["fast", "botocore"])
def paths(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Paths:
    return Paths(str(request.param), monkeypatch)


def page(keys: list[str], *, url: bool, token: str = "") -> str:
    contents = "".join(
        f"<Contents><Key>{k}</Key><Size>{2097152 if '%' in k else 1024}</Size><ETag>&quot;e&quot;</ETag></Contents>" for k in keys
    )
    more = (
        f"<IsTruncated>true</IsTruncated><NextContinuationToken>{token}</NextContinuationToken>"
        if token
        else "<IsTruncated>false</IsTruncated>"
    )
    return f"<ListBucketResult {NS}><Name>b</Name>{'<EncodingType>url</EncodingType>' if url else ''}{more}{contents}</ListBucketResult>"


def test_a_server_claiming_url_but_sending_raw_keys_has_them_used_as_sent(paths: Paths) -> None:
    server = paths.serve(page(LIED, url=True, token="t1"), page(LIED, url=False, token="t1"), page(["fx/z+%41"], url=True))
    first = paths.list_page()
    assert [o.key for o in first.objects] == ["fx/x%2Fy.bin", "fx/x/y.bin"]  # not fx/x/y.bin twice: the 2 MiB one is its own
    assert [o.size for o in first.objects] == [2097152, 1024]
    assert [o.key for o in paths.list_page(token="t1").objects] == ["fx/z+%41"]  # and so on for the bucket's later pages
    assert server.encoded == [True, False, True]  # one extra request for the whole listing
    assert paths.claims.encodes("b", "ListObjectsV2") is False


def test_a_server_whose_claim_holds_has_its_keys_decoded_after_one_check(paths: Paths) -> None:
    server = paths.serve(page(["fx/a+b", "fx/x%252Fy.bin"], url=True, token="t"), page(["fx/a b", "fx/x%2Fy.bin"], url=False, token="t"),
                         page(["fx/%C3%BC"], url=True))  # fmt: skip
    assert [o.key for o in paths.list_page().objects] == ["fx/a b", "fx/x%2Fy.bin"]
    assert [o.key for o in paths.list_page(token="t").objects] == ["fx/ü"]
    assert server.encoded == [True, False, True]
    assert paths.claims.encodes("b", "ListObjectsV2") is True


def test_a_page_decoding_would_not_change_asks_nothing_more(paths: Paths) -> None:
    server = paths.serve(page(["fx/%zz", "fx/plain", "fx/ü"], url=True), page(["fx/a+b"], url=False))
    assert [o.key for o in paths.list_page().objects] == ["fx/%zz", "fx/plain", "fx/ü"]
    assert [o.key for o in paths.list_page().objects] == ["fx/a+b"]  # no claim (versitygw): read as sent, nothing to check
    assert server.encoded == [True, True] and paths.claims.encodes("b", "ListObjectsV2") is None


def test_answers_matching_neither_reading_stop_the_listing_naming_the_servers_behaviour(paths: Paths) -> None:
    claimed = page(["fx/a%2Bb"], url=True)
    paths.serve(claimed, page(["fx/other"], url=False), claimed, page(["fx/other"], url=False))
    with pytest.raises(StoreError) as raised:
        paths.list_page()
    assert raised.value.code == "InconsistentEncoding" and "EncodingType url" in raised.value.message
    assert "'fx/a%2Bb'" in raised.value.message and "\n" not in str(raised.value)


def test_a_page_that_changed_between_the_two_answers_is_checked_once_more(paths: Paths) -> None:
    claimed = page(["fx/a%2Bb"], url=True)
    server = paths.serve(
        claimed, page(["fx/a+b", "fx/new"], url=False), page(["fx/a%2Bb", "fx/new"], url=True), page(["fx/a+b", "fx/new"], url=False)
    )
    assert [o.key for o in paths.list_page().objects] == ["fx/a+b"]
    assert server.encoded == [True, False, True, False]


def test_each_bucket_is_checked_on_its_own(paths: Paths) -> None:
    server = paths.serve(page(LIED, url=True), page(LIED, url=False), page(["fx/a%2Bb"], url=True), page(["fx/a+b"], url=False))
    assert [o.key for o in paths.list_page("raw").objects] == LIED
    assert [o.key for o in paths.list_page("honest").objects] == ["fx/a+b"]
    assert (paths.claims.encodes("raw", "ListObjectsV2"), paths.claims.encodes("honest", "ListObjectsV2")) == (False, True)
    assert server.encoded == [True, False, True, False]


def test_a_control_character_the_unencoded_answer_cannot_carry_still_proves_the_claim(paths: Paths) -> None:
    raw = "<Contents><Key>fx/a\x0b</Key><Size>1</Size></Contents><Contents><Key>fx/b&#11;</Key><Size>1</Size></Contents>"
    plain = f"<ListBucketResult {NS}><IsTruncated>false</IsTruncated>{raw}<Contents><Key>fx/c+d</Key><Size>1</Size></Contents></ListBucketResult>"
    paths.serve(page(["fx/a%0B", "fx/b%0B", "fx/c%2Bd"], url=True), plain)
    assert [o.key for o in paths.list_page().objects] == ["fx/a\x0b", "fx/b\x0b", "fx/c+d"]


def versions(keys: list[str], *, url: bool) -> str:
    entries = "".join(
        f"<Version><Key>{k}</Key><VersionId>v{i}</VersionId><IsLatest>true</IsLatest><LastModified>2026-01-01T00:00:0{i}.000Z</LastModified>"
        f"<Size>1</Size></Version>"
        for i, k in enumerate(keys)
    )
    return f"<ListVersionsResult {NS}>{'<EncodingType>url</EncodingType>' if url else ''}<IsTruncated>false</IsTruncated>{entries}</ListVersionsResult>"


def test_a_versions_listing_claiming_url_with_raw_keys_is_read_as_sent(paths: Paths) -> None:
    server = paths.serve(versions(LIED, url=True), versions(LIED, url=False))
    assert [o.key for o in paths.list_versions_page().objects] == LIED
    assert server.encoded == [True, False] and paths.claims.encodes("b", "ListObjectVersions") is False


def test_multipart_uploads_claiming_url_with_raw_keys_are_read_as_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    def uploads(url: bool) -> str:
        entries = "".join(f"<Upload><Key>{k}</Key><UploadId>u{i}</UploadId></Upload>" for i, k in enumerate(LIED))
        return f"<ListMultipartUploadsResult {NS}>{'<EncodingType>url</EncodingType>' if url else ''}<IsTruncated>false</IsTruncated>{entries}</ListMultipartUploadsResult>"

    paths = Paths("botocore", monkeypatch)
    server = paths.serve(uploads(True), uploads(False))
    assert [o.key for o in paths._botocore().list_uploads_page("b", "fx/").objects] == LIED
    assert server.encoded == [True, False]


def test_an_unencoded_answer_that_never_parses_where_the_encoded_one_does_proves_the_claim(paths: Paths) -> None:
    """A server that does not escape `&` in a raw key: only its url encoding made the first answer readable XML."""
    claimed = page(["fx/a%2Bb", "fx/x%26y"], url=True)
    broken = f"<ListBucketResult {NS}><IsTruncated>false</IsTruncated><Contents><Key>fx/x&y</Key></Contents></ListBucketResult>"
    server = paths.serve(claimed, broken, claimed, broken)
    assert [o.key for o in paths.list_page().objects] == ["fx/a+b", "fx/x&y"]
    assert server.encoded == [True, False, True, False]  # asked twice: a body cut in transit does not repeat
    assert paths.claims.encodes("b", "ListObjectsV2") is True


def test_characters_xml_cannot_carry_unencoded_are_compared_as_lost_not_as_different(paths: Paths) -> None:
    plain = f"<ListBucketResult {NS}><IsTruncated>false</IsTruncated><Contents><Key>fx/a+\uffff</Key></Contents></ListBucketResult>"
    paths.serve(page(["fx/a%2B%EF%BF%BF"], url=True), plain)
    assert [o.key for o in paths.list_page().objects] == ["fx/a+\uffff"]
    assert paths.claims.encodes("b", "ListObjectsV2") is True
