"""botocore's path refuses a 200 that is not the write's result, as the fast path does: a DeleteObjects answered with
an HTML page or another call's XML once read as "no errors", every key counted deleted."""

from __future__ import annotations

import pytest

from s3bulk.s3.results import root_name
from s3bulk.s3.stores import S3Store
from s3bulk.store import StoreError
from tests.unit.test_fastpath_xml import botocore_answering, fast_answering

S3 = ' xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'
NOT_RESULTS = {
    "html": "<html><body>Service Unavailable</body></html>",
    "listing": f"<ListBucketResult{S3}><IsTruncated>false</IsTruncated></ListBucketResult>",
    "empty": "",
}


@pytest.mark.parametrize("what", sorted(NOT_RESULTS))
def test_a_delete_answered_with_something_else_fails_its_keys_on_both_paths_never_reads_as_deleted(
    monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    body = NOT_RESULTS[what]
    with pytest.raises(StoreError) as boto:
        S3Store(botocore_answering(*[body] * 10)).delete_objects("b", ["k1", "k2"])
    with pytest.raises(StoreError) as fast:
        fast_answering(monkeypatch, *[body] * 10).delete_objects("b", ["k1", "k2"])
    assert boto.value.code == "UnrecognisedAnswer"
    assert fast.value.code == ("IncompleteResponse" if what == "empty" else "UnrecognisedAnswer")  # a body cut to nothing


def test_a_copy_answered_with_something_else_is_an_error_on_botocores_path() -> None:
    with pytest.raises(StoreError) as raised:
        S3Store(botocore_answering(*[NOT_RESULTS["listing"]] * 10)).copy_object("s", "k", "d", "k")
    assert raised.value.code == "UnrecognisedAnswer" and "CopyObject" in raised.value.message


@pytest.mark.parametrize("ns", ["", S3, ' xmlns="urn:example:other"'])
def test_the_writes_own_results_in_any_namespace_pass(ns: str) -> None:
    assert S3Store(botocore_answering(f"<DeleteResult{ns}></DeleteResult>")).delete_objects("b", ["k"]) == []
    copied = f"<?xml version='1.0'?>\n<!-- hi --><CopyObjectResult{ns}><ETag>&quot;abc&quot;</ETag></CopyObjectResult>"
    assert S3Store(botocore_answering(copied)).copy_object("s", "k", "d", "k") == '"abc"'


@pytest.mark.parametrize(
    ("body", "name"),
    [(b"<?xml version='1.0'?><a:DeleteResult xmlns:a='x'/>", "DeleteResult"), (b"  \n<Error/>", "Error"), (b"plain text", None)],
)
def test_root_name_reads_the_first_elements_local_name(body: bytes, name: str | None) -> None:
    assert root_name(body) == name
