"""The fast path reads S3's XML as botocore does: the same recorded bodies, fed to botocore's own parser (a real client
whose HTTP answer is stubbed) and to the fast path's reader, give the same keys, prefixes, tokens and errors, in S3's
namespace, in none and in another; and a body that is not the call's result is an error, never an empty page."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse, HTTPHeaders

from s3bulk.s3 import fastpath, fastxml
from s3bulk.s3.clients import ClientSettings, make_s3_client
from s3bulk.s3.stores import S3Store
from s3bulk.store import StoreError

EP = "http://127.0.0.1:9"
S3 = "http://s3.amazonaws.com/doc/2006-03-01/"
NAMESPACES = {"s3": f' xmlns="{S3}"', "none": "", "other": ' xmlns="urn:example:not-s3"'}


class _Raw:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, *args: Any, **kwargs: Any) -> Iterator[bytes]:
        return iter([self.data])


class _Answer:
    def __init__(self, data: bytes) -> None:
        self.status, self.data = 200, data
        self.headers: dict[str, str] = {}


class _Pool:
    def __init__(self, bodies: list[bytes]) -> None:
        self.bodies = bodies

    def urlopen(self, *args: Any, **kwargs: Any) -> _Answer:
        return _Answer(self.bodies.pop(0))


def _settings() -> ClientSettings:
    return ClientSettings(endpoint_url=EP, region="us-east-1", access_key="a", secret_key="b", max_attempts=1)


def botocore_answering(*bodies: str) -> Any:
    """A botocore client whose every request is answered 200 with the next body: botocore parses it as it would S3's."""
    client = make_s3_client(_settings(), 4)
    queue = [b.encode() for b in bodies]

    def answer(request: Any, **kwargs: Any) -> AWSResponse:
        return AWSResponse(request.url, 200, HTTPHeaders(), _Raw(queue.pop(0)))

    client.meta.events.register("before-send.s3", answer)
    return client


def fast_answering(monkeypatch: pytest.MonkeyPatch, *bodies: str) -> fastpath.FastS3:
    fast = fastpath.FastS3(make_s3_client(_settings(), 4), 4)
    fast.max_attempts = 1
    pool = _Pool([b.encode() for b in bodies])
    monkeypatch.setattr(fast.pool, "connection_from_host", lambda *a, **k: pool)
    return fast


def _contents(*keys: str) -> str:
    return "".join(
        f"<Contents><Key>{k}</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified><ETag>&quot;e{i}&quot;</ETag>"
        f"<Size>{i}</Size><StorageClass>STANDARD</StorageClass></Contents>"
        for i, k in enumerate(keys)
    )


def listing(ns: str, *, truncated: bool = False, encoded: bool = False) -> str:
    keys = ("fx/a%2Bb.bin", "fx/c+d.bin", "fx/%C3%BC.bin") if encoded else ("fx/a.bin", "fx/b&amp;c.bin", "fx/ü.bin")
    body = f"<ListBucketResult{NAMESPACES[ns]}><Name>b</Name><Prefix>fx/</Prefix><KeyCount>3</KeyCount><MaxKeys>3</MaxKeys>"
    body += "<EncodingType>url</EncodingType>" if encoded else ""
    body += f"<IsTruncated>{'true' if truncated else 'false'}</IsTruncated>"
    body += "<NextContinuationToken>opaque/token+1=</NextContinuationToken>" if truncated else ""
    body += _contents(*keys) + "<CommonPrefixes><Prefix>fx/sub/</Prefix></CommonPrefixes>"
    return body + "<CommonPrefixes><Prefix>fx/zz%2B/</Prefix></CommonPrefixes></ListBucketResult>"


LISTINGS = {
    f"{ns}{'-truncated' if truncated else ''}{'-url' if encoded else ''}": listing(ns, truncated=truncated, encoded=encoded)
    for ns in NAMESPACES
    for truncated in (False, True)
    for encoded in (False, True)
}
LISTINGS["prefixed-s3"] = (
    f'<s3:ListBucketResult xmlns:s3="{S3}"><s3:IsTruncated>false</s3:IsTruncated>'
    "<s3:Contents><s3:Key>p/k</s3:Key><s3:Size>5</s3:Size><s3:ETag>&quot;x&quot;</s3:ETag></s3:Contents></s3:ListBucketResult>"
)


@pytest.mark.parametrize("name", sorted(LISTINGS))
def test_a_listing_body_reads_the_same_on_the_fast_path_as_in_botocores_parser(name: str) -> None:
    body = LISTINGS[name]
    parsed = botocore_answering(body).list_objects_v2(Bucket="b", EncodingType="url")  # explicit: botocore decodes nothing
    answer = fastxml.read("ListObjectsV2", body.encode())
    assert answer.keys() == [o["Key"] for o in parsed.get("Contents", ())] + [p["Prefix"] for p in parsed.get("CommonPrefixes", ())]
    assert len(answer.keys()) >= 1
    assert [int(e["Size"] or 0) for _, e in answer.entries] == [o["Size"] for o in parsed.get("Contents", ())]
    assert [e["ETag"] for _, e in answer.entries] == [o["ETag"] for o in parsed.get("Contents", ())]
    assert (answer.top["IsTruncated"] == "true") == parsed["IsTruncated"]
    assert answer.top.get("NextContinuationToken") == parsed.get("NextContinuationToken")
    assert answer.top.get("EncodingType") == parsed.get("EncodingType")


@pytest.mark.parametrize("name", sorted(n for n in LISTINGS if "-url" not in n))
def test_both_request_paths_list_the_same_page_from_the_same_body(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    body = LISTINGS[name]
    boto = S3Store(botocore_answering(body)).list_page("b", "fx/", delimiter="/")
    fast = fast_answering(monkeypatch, body).list_page("b", "fx/", None, None, 1000, "/")
    assert fast == boto
    assert fast.objects and (fast.next_token is not None) == ("truncated" in name)


def versions(ns: str) -> str:
    v = "<Version><Key>{k}</Key><VersionId>{v}</VersionId><IsLatest>{latest}</IsLatest><LastModified>{t}</LastModified><ETag>&quot;e&quot;</ETag><Size>3</Size></Version>"
    m = "<DeleteMarker><Key>{k}</Key><VersionId>{v}</VersionId><IsLatest>{latest}</IsLatest><LastModified>{t}</LastModified></DeleteMarker>"
    entries = [
        m.format(k="a", v="am", latest="true", t="2026-01-01T00:00:03.000Z"),
        v.format(k="a", v="a1", latest="false", t="2026-01-01T00:00:01.000Z"),
        v.format(k="b+c", v="b1", latest="true", t="2026-01-01T00:00:02.000Z"),
    ]
    return (
        f"<ListVersionsResult{NAMESPACES[ns]}><Name>b</Name><IsTruncated>true</IsTruncated><NextKeyMarker>b+c</NextKeyMarker>"
        f"<NextVersionIdMarker>b1</NextVersionIdMarker>{''.join(entries)}</ListVersionsResult>"
    )


@pytest.mark.parametrize("ns", sorted(NAMESPACES))
def test_a_versions_page_reads_the_same_on_both_request_paths(monkeypatch: pytest.MonkeyPatch, ns: str) -> None:
    body = versions(ns)
    boto = S3Store(botocore_answering(body)).list_versions_page("b", "")
    fast = fast_answering(monkeypatch, body).list_versions_page("b", "", None, None, 1000)
    assert fast == boto
    assert [(o.key, o.version_id, o.delete_marker) for o in fast.objects] == [("a", "am", True), ("a", "a1", False), ("b+c", "b1", False)]
    assert fast.next_token is not None


def delete_result(ns: str) -> str:
    errors = (
        "<Error><Key>a+b</Key><Code>AccessDenied</Code><Message>no</Message></Error>"
        "<Error><Key>v</Key><VersionId>v1</VersionId><Code>InternalError</Code><Message>later</Message></Error>"
    )
    return f"<DeleteResult{NAMESPACES[ns]}><Deleted><Key>ok</Key></Deleted>{errors}</DeleteResult>"


@pytest.mark.parametrize("ns", sorted(NAMESPACES))
def test_delete_objects_errors_read_the_same_on_both_request_paths(monkeypatch: pytest.MonkeyPatch, ns: str) -> None:
    body = delete_result(ns)
    parsed = botocore_answering(body).delete_objects(Bucket="b", Delete={"Objects": [{"Key": "a+b"}, {"Key": "v"}, {"Key": "ok"}]})
    boto = S3Store(botocore_answering(body)).delete_objects("b", ["a+b", "v", "ok"])
    fast = fast_answering(monkeypatch, body).delete_objects("b", ["a+b", "v", "ok"])
    assert fast == boto
    assert [(f.key, f.code, f.message, f.version_id) for f in fast] == [
        (e["Key"], e["Code"], e["Message"], e.get("VersionId", "")) for e in parsed["Errors"]
    ]
    assert [f.code for f in fast] == ["AccessDenied", "InternalError"]


@pytest.mark.parametrize("ns", sorted(NAMESPACES))
def test_a_copy_result_and_an_error_in_any_namespace_read_as_botocore_reads_them(monkeypatch: pytest.MonkeyPatch, ns: str) -> None:
    copied = f"<CopyObjectResult{NAMESPACES[ns]}><ETag>&quot;abc&quot;</ETag></CopyObjectResult>"
    assert fast_answering(monkeypatch, copied).copy_object("s", "k", "d", "k") == '"abc"'
    assert (
        botocore_answering(copied).copy_object(Bucket="d", Key="k", CopySource={"Bucket": "s", "Key": "k"})["CopyObjectResult"]["ETag"]
        == '"abc"'
    )
    failed = f"<Error{NAMESPACES[ns]}><Code>SlowDown</Code><Message>later</Message></Error>"  # CopyObject's 200-with-error
    with pytest.raises(StoreError) as raised:
        fast_answering(monkeypatch, failed).copy_object("s", "k", "d", "k")
    assert (raised.value.code, raised.value.message) == ("SlowDown", "later")


UNRECOGNISED = {
    "html": "<html><body>Welcome to the captive portal</body></html>",
    "another call's result": f'<ListAllMyBucketsResult xmlns="{S3}"><Buckets/></ListAllMyBucketsResult>',
    "no IsTruncated": f'<ListBucketResult xmlns="{S3}"><Name>b</Name>{_contents("k")}</ListBucketResult>',
}


@pytest.mark.parametrize("what", sorted(UNRECOGNISED))
def test_a_listing_answer_that_is_not_the_calls_result_is_an_error_on_both_paths(monkeypatch: pytest.MonkeyPatch, what: str) -> None:
    body = UNRECOGNISED[what]
    with pytest.raises(StoreError) as fast:
        fast_answering(monkeypatch, body).list_page("b", "", None, None, 1000)
    assert fast.value.code == "UnrecognisedAnswer" and "ListObjectsV2" in fast.value.message
    assert fast.value.status is None  # it persisted through the attempts: stops the call, not a passing fault
    if what != "no IsTruncated":  # botocore reads that one as a page (its keys are there): only the fast path asks for more
        with pytest.raises(StoreError):
            S3Store(botocore_answering(*[body] * 4)).list_page("b", "")


def test_an_unrecognised_answer_is_asked_again_and_a_good_one_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = fast_answering(monkeypatch, UNRECOGNISED["html"], listing("other"))
    fast.max_attempts = 2
    fast.breaker.pause = lambda seconds: None  # type: ignore[method-assign]
    assert [o.key for o in fast.list_page("b", "", None, None, 1000).objects] == ["fx/a.bin", "fx/b&c.bin", "fx/ü.bin"]
    assert fast.retries == 1


@pytest.mark.parametrize(
    ("call", "body"),
    [
        ("versions", f'<ListBucketResult xmlns="{S3}"><IsTruncated>false</IsTruncated></ListBucketResult>'),
        ("delete", f'<ListBucketResult xmlns="{S3}"><IsTruncated>false</IsTruncated></ListBucketResult>'),
        ("delete", "<html><body>ok</body></html>"),
        ("copy", "<html><body>ok</body></html>"),
    ],
)
def test_versions_delete_and_copy_answers_that_are_not_their_result_are_errors(
    monkeypatch: pytest.MonkeyPatch, call: str, body: str
) -> None:
    fast = fast_answering(monkeypatch, body)
    with pytest.raises(StoreError) as raised:
        if call == "versions":
            fast.list_versions_page("b", "", None, None, 1000)
        elif call == "delete":
            fast.delete_objects("b", ["k"])  # never read as "no errors": every key deleted
        else:
            fast.copy_object("s", "k", "d", "k")
    assert raised.value.code == "UnrecognisedAnswer"
