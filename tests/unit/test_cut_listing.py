"""A listing answer whose body was cut in transit parses to {} in botocore, which reads as the last page: it is asked
again, never taken as the end of the listing (a stalled connection through a proxy dropped 5 keys of 200 that way)."""

from __future__ import annotations

import io
from typing import Any

import pytest
from botocore.stub import Stubber

from s3bulk.s3.clients import ClientSettings, make_s3_client
from s3bulk.s3.storebase import LISTING_ATTEMPTS
from s3bulk.s3.stores import S3Store
from s3bulk.store import StoreError

VALID = {"IsTruncated": False, "Name": "b", "Prefix": "", "KeyCount": 1, "Contents": [{"Key": "k", "Size": 1, "ETag": '"e"'}]}


def store() -> tuple[S3Store, Stubber]:
    settings = ClientSettings(endpoint_url="http://127.0.0.1:9", region="us-east-1", access_key="a", secret_key="b", max_attempts=1)
    client: Any = make_s3_client(settings, 4)
    return S3Store(client), Stubber(client)


def test_an_empty_listing_answer_is_asked_again_and_the_keys_after_it_are_not_lost() -> None:
    s3, stub = store()
    stub.add_response("list_objects_v2", {})  # a 200 whose body was cut: botocore parses it to nothing
    stub.add_response("list_objects_v2", VALID)
    with stub:
        page = s3.list_page("b", "")
    assert [o.key for o in page.objects] == ["k"] and s3.retries == 1


def test_a_listing_that_keeps_coming_back_empty_fails_instead_of_ending_the_listing() -> None:
    s3, stub = store()
    for _ in range(LISTING_ATTEMPTS):
        stub.add_response("list_objects_v2", {})
    with stub, pytest.raises(StoreError) as err:
        s3.list_page("b", "")
    assert err.value.code == "IncompleteBody"


def test_a_real_empty_listing_is_an_empty_last_page() -> None:
    s3, stub = store()
    stub.add_response("list_objects_v2", {"IsTruncated": False, "Name": "b", "Prefix": "", "KeyCount": 0})
    with stub:
        page = s3.list_page("b", "")
    assert page.objects == [] and page.next_token is None and s3.retries == 0


@pytest.mark.parametrize("ranged", [False, True])
def test_a_body_closed_before_its_content_length_is_the_endpoint_failing_not_the_object(ranged: bool) -> None:
    """botocore's own length check raises IncompleteReadError for a GET body cut short (a proxy that went down mid-object):
    a ConnectionError the retries and the outage breaker take as no answer, never the object's own failure."""
    from botocore.response import StreamingBody

    from s3bulk.breakers.outage import unreachable

    s3, stub = store()
    stub.add_response("get_object", {"Body": StreamingBody(io.BytesIO(b"only 18 bytes here"), 100), "ContentLength": 100})
    with stub, pytest.raises(StoreError) as caught:
        if ranged:
            s3.read_range("b", "k", 0, 99)
        else:
            b"".join(s3.read_object("b", "k"))
    assert caught.value.code == "ConnectionError" and "expected is 100" in caught.value.message
    assert unreachable(caught.value)
