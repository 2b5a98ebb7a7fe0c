"""What a listing answer means, whatever server sent it: keys decoded only when the server says it encoded them, a
truncated page with no way on is an error, and versions in S3's order by time, not by the order a server sent them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from s3bulk.s3 import fastpath
from s3bulk.s3.clients import ClientSettings, make_s3_client
from s3bulk.s3.faststore import FastS3Store
from s3bulk.s3.keyorder import KeyOrder, check_marked
from s3bulk.s3.keytext import check_sent
from s3bulk.s3.versionorder import in_s3s_order, merge_versions
from s3bulk.source.listing import AsOfView, VersionsView
from s3bulk.store import ListPage, ObjectInfo, RequestOptions, StoreError, version_token

EP = "http://127.0.0.1:9"
NS = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'


class _Answer:
    def __init__(self, data: bytes) -> None:
        self.status, self.data = 200, data
        self.headers: dict[str, str] = {}


class _Pool:
    def __init__(self, bodies: list[bytes]) -> None:
        self.bodies = bodies
        self.targets: list[str] = []

    def urlopen(self, method: str, url: str, *args: Any, **kwargs: Any) -> _Answer:
        self.targets.append(url)
        return _Answer(self.bodies.pop(0))


def _fast(monkeypatch: pytest.MonkeyPatch, *bodies: str) -> tuple[fastpath.FastS3, _Pool]:
    settings = ClientSettings(endpoint_url=EP, region="us-east-1", access_key="a", secret_key="b", max_attempts=1)
    fast = fastpath.FastS3(make_s3_client(settings, 4), 4)
    pool = _Pool([b.encode() for b in bodies])
    monkeypatch.setattr(fast.pool, "connection_from_host", lambda *a, **k: pool)
    return fast, pool


def _contents(*keys: str) -> str:
    return "".join(f"<Contents><Key>{k}</Key><Size>1</Size><ETag>&quot;e&quot;</ETag></Contents>" for k in keys)


def test_a_server_that_ignores_encoding_type_has_its_keys_read_as_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    # versitygw answers encoding-type=url with raw keys and no EncodingType element: `a+b` is a plus, `%41` three characters.
    body = f"<ListBucketResult {NS}><IsTruncated>false</IsTruncated>{_contents('a+b.bin', '%41.bin')}"
    body += "<CommonPrefixes><Prefix>sub+dir/</Prefix></CommonPrefixes></ListBucketResult>"
    fast, _ = _fast(monkeypatch, body)
    page = fast.list_page("b", "", None, None, 1000, "/")
    assert [o.key for o in page.objects] == ["a+b.bin", "%41.bin"]
    assert page.prefixes == ["sub+dir/"]


def test_a_server_that_encodes_has_its_keys_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    body = f"<ListBucketResult {NS}><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>"
    body += (
        f"{_contents('a+b.bin', '%2541.bin', 'a%2Bb.bin')}<CommonPrefixes><Prefix>sub%2Bdir/</Prefix></CommonPrefixes></ListBucketResult>"
    )
    # The claim is checked once: the same page without encoding-type names the decoded keys.
    plain = f"<ListBucketResult {NS}><IsTruncated>false</IsTruncated>{_contents('a b.bin', '%41.bin', 'a+b.bin')}"
    plain += "<CommonPrefixes><Prefix>sub+dir/</Prefix></CommonPrefixes></ListBucketResult>"
    fast, pool = _fast(monkeypatch, body, plain, body)
    page = fast.list_page("b", "", None, None, 1000, "/")
    assert [o.key for o in page.objects] == ["a b.bin", "%41.bin", "a+b.bin"]
    assert page.prefixes == ["sub+dir/"]
    assert ["encoding-type=url" in t for t in pool.targets] == [True, False]
    assert [o.key for o in fast.list_page("b", "", None, None, 1000, "/").objects] == ["a b.bin", "%41.bin", "a+b.bin"]
    assert len(pool.targets) == 3  # checked once per bucket and call, not per page


def test_a_listing_without_the_s3_namespace_is_read_not_taken_for_an_empty_one(monkeypatch: pytest.MonkeyPatch) -> None:
    fast, _ = _fast(monkeypatch, f"<ListBucketResult><IsTruncated>false</IsTruncated>{_contents('k1', 'k2')}</ListBucketResult>")
    assert [o.key for o in fast.list_page("b", "", None, None, 1000).objects] == ["k1", "k2"]


def test_a_truncated_page_with_no_continuation_token_is_an_error_not_the_last_page(monkeypatch: pytest.MonkeyPatch) -> None:
    fast, _ = _fast(monkeypatch, f"<ListBucketResult {NS}><IsTruncated>true</IsTruncated>{_contents('k1')}</ListBucketResult>")
    with pytest.raises(StoreError) as raised:
        fast.list_page("b", "", None, None, 1)
    assert raised.value.code == "IncompleteListing"


T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _v(key: str, second: int, vid: str, *, marker: bool = False, latest: bool = False) -> ObjectInfo:
    return ObjectInfo(key, 0 if marker else 5, "" if marker else f'"{vid}"', T0 + timedelta(seconds=second), None, vid, latest, marker)


def _motos_order() -> list[ObjectInfo]:
    """Unpatched moto's page: every version (key order, newest first), then every delete marker."""
    return [
        _v("a", 1, "a1"),
        _v("b", 3, "b2"),
        _v("b", 1, "b1"),
        _v("a", 2, "am", marker=True, latest=True),
        _v("b", 4, "bm", marker=True, latest=True),
    ]


def test_versions_sent_all_versions_then_all_markers_are_put_in_key_and_time_order() -> None:
    assert [o.version_id for o in in_s3s_order(_motos_order())] == ["am", "a1", "bm", "b2", "b1"]


def test_botocores_two_lists_in_the_pages_order_are_still_put_in_time_order() -> None:
    page = _motos_order()
    versions, markers = [o for o in page if not o.delete_marker], [o for o in page if o.delete_marker]
    kinds = "".join("D" if o.delete_marker else "V" for o in page)
    assert [o.version_id for o in merge_versions(versions, markers, kinds)] == ["am", "a1", "bm", "b2", "b1"]


def test_within_one_second_the_latest_entry_is_newest_then_the_servers_order() -> None:
    page = [_v("k", 5, "v2"), _v("k", 5, "v1"), _v("k", 5, "m", marker=True, latest=True)]
    assert [o.version_id for o in in_s3s_order(page)] == ["m", "v2", "v1"]


class _PageStore:
    """list_versions_page answers from a script; records the markers it was asked with."""

    def __init__(self, pages: list[list[ObjectInfo]]) -> None:
        self.pages = pages
        self.asked: list[tuple[str | None, str | None]] = []

    def list_versions_page(self, bucket: str, prefix: str, token: str | None = None, key_marker: str | None = None,
                           delimiter: str | None = None, max_keys: int | None = None) -> ListPage:  # fmt: skip
        self.asked.append((token, key_marker))
        objs = in_s3s_order(self.pages.pop(0))
        return ListPage(objs, version_token(objs[-1].key, objs[-1].version_id) if self.pages else None, [])


def test_a_key_marker_answered_with_that_keys_entries_again_lists_them_once() -> None:
    # moto's KeyMarker-only page sends the marker key's older versions again; they were listed whole on the page before.
    store = _PageStore([[_v("a", 2, "a2", latest=True), _v("a", 1, "a1"), _v("b", 1, "b1", latest=True)],
                        [_v("a", 1, "a1"), _v("b", 1, "b1", latest=True), _v("c", 1, "c1", latest=True)]])  # fmt: skip
    view = VersionsView(store)  # type: ignore[arg-type]
    first = view.list_page("bk", "")
    assert [o.version_id for o in first.objects] == ["a2", "a1"]  # b may go on in the next page: listed from there
    second = view.list_page("bk", "", first.next_token)
    assert [o.version_id for o in second.objects] == ["b1", "c1"]


def test_as_of_picks_each_keys_newest_entry_at_or_before_then_by_time_not_page_order() -> None:
    store = _PageStore([_motos_order()])
    view = AsOfView(store, T0 + timedelta(seconds=1, milliseconds=500), every_key=False)  # type: ignore[arg-type]
    assert [(o.key, o.version_id) for o in view.list_page("bk", "").objects] == [("a", "a1"), ("b", "b1")]
    store = _PageStore([_motos_order()])
    view = AsOfView(store, T0 + timedelta(seconds=2, milliseconds=500), every_key=False)  # type: ignore[arg-type]
    assert [(o.key, o.version_id) for o in view.list_page("bk", "").objects] == [("b", "b1")]  # a was deleted at 2 s
    store = _PageStore([_motos_order()])
    view = AsOfView(store, T0 + timedelta(seconds=2, milliseconds=500), every_key=True)  # type: ignore[arg-type]
    rewound = {o.key: (o.version_id, o.replaces) for o in view.list_page("bk", "").objects}
    assert rewound == {"a": ("", ""), "b": ("b1", "")}  # a stays deleted; b gets b1 back over its marker


def test_a_server_listing_out_of_s3s_key_order_stops_the_listing_within_a_page(monkeypatch: pytest.MonkeyPatch) -> None:
    # SeaweedFS lists a folder's keys before its siblings': d/a/b before d/a-b ('-' sorts before '/').
    body = f"<ListBucketResult {NS}><IsTruncated>false</IsTruncated>{_contents('d/a/b', 'd/a-b')}</ListBucketResult>"
    fast, _ = _fast(monkeypatch, body)
    store = FastS3Store.__new__(FastS3Store)
    store.fast, store.opts, store.max_keys, store.key_order = fast, RequestOptions(), 1000, KeyOrder()
    with pytest.raises(StoreError) as raised:
        store.list_page("b", "d/")
    assert raised.value.code == "ListingOutOfOrder" and "'d/a-b' after 'd/a/b'" in raised.value.message


def test_a_server_listing_out_of_order_across_pages_is_caught_by_the_key_the_token_came_after() -> None:
    order = KeyOrder()
    first = ListPage([ObjectInfo("d/a/b", 1, "")], "opaque-1", [])
    order.checked("b", first, token=None, start_after=None)
    with pytest.raises(StoreError, match="'d/a-b' after 'd/a/b'"):
        order.checked("b", ListPage([ObjectInfo("d/a-b", 1, "")], None, []), token="opaque-1", start_after=None)
    # In order: after a page that ended with a common prefix, the next key sorts after everything under it.
    order.checked("b", ListPage([ObjectInfo("d/a", 1, "")], "opaque-2", ["d/a/"]), token=None, start_after=None)
    order.checked("b", ListPage([ObjectInfo("d/a0", 1, "")], None, []), token="opaque-2", start_after=None)
    with pytest.raises(StoreError):
        order.checked("b", ListPage([ObjectInfo("k", 1, "")], None, []), token=None, start_after="k")  # not after start_after


def test_a_version_page_that_goes_back_before_its_key_marker_is_out_of_order() -> None:
    page = ListPage([_v("a", 1, "a1")], None, [])
    assert check_marked("b", page, "a") is page  # the key may go on from the page before
    with pytest.raises(StoreError, match="'a' after 'b', out of S3's key order"):
        check_marked("b", page, "b")


def test_a_key_a_server_could_not_carry_in_xml_is_an_error_not_a_name_that_does_not_exist(monkeypatch: pytest.MonkeyPatch) -> None:
    # versitygw lists `p/\x0b` as `p/\ufffd` and ignores encoding-type=url: deleting that name would delete nothing, count one.
    lost = "p/\ufffd"
    body = f"<ListBucketResult {NS}><IsTruncated>false</IsTruncated>{_contents('p/a', lost)}</ListBucketResult>"
    fast, _ = _fast(monkeypatch, body)
    with pytest.raises(StoreError) as raised:
        fast.list_page("b", "p/", None, None, 1000)
    assert raised.value.code == "UnreadableKey" and "p/\\ufffd" in str(raised.value)
    with pytest.raises(StoreError):
        check_sent(None, "b", ["p/a", "p/\ufffd"])


def test_a_replacement_character_the_server_url_encoded_is_a_real_name(monkeypatch: pytest.MonkeyPatch) -> None:
    body = f"<ListBucketResult {NS}><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>"
    body += f"{_contents('p/%EF%BF%BD', 'p/%0B')}</ListBucketResult>"
    # Asked without encoding-type to check the claim, the server sends the raw control character XML cannot carry.
    raw = _contents("p/\ufffd", "p/\x0b")
    plain = f"<ListBucketResult {NS}><IsTruncated>false</IsTruncated>{raw}</ListBucketResult>"
    fast, _ = _fast(monkeypatch, body, plain)
    assert [o.key for o in fast.list_page("b", "p/", None, None, 1000).objects] == ["p/\ufffd", "p/\x0b"]
    check_sent("url", "b", ["p/\ufffd"])  # botocore decoded these already; an encoded answer lost nothing
