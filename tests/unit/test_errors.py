"""Every error lands in exactly one class: retried by the client, or permanent and reported."""

from __future__ import annotations

import pytest

from s3bulk.errors import ErrorKind, classify, error_code, error_message
from s3bulk.store import StoreError


@pytest.mark.parametrize(
    "code", ["SlowDown", "InternalError", "ServiceUnavailable", "RequestTimeout", "ThrottlingException", "ReadTimeout"]
)
def test_throttling_server_faults_and_timeouts_are_retryable(code: str) -> None:
    assert classify(StoreError(code)) is ErrorKind.RETRYABLE


@pytest.mark.parametrize("status", [500, 502, 503, 504, 429])
def test_unknown_codes_with_5xx_or_429_are_retryable(status: int) -> None:
    assert classify(StoreError("Weird", status=status)) is ErrorKind.RETRYABLE


@pytest.mark.parametrize(
    "code",
    [
        "AccessDenied",
        "NoSuchKey",
        "NoSuchBucket",
        "InvalidObjectState",
        "ObjectNotInActiveTierError",
        "PreconditionFailed",
        "KeyTooLongError",
    ],
)
def test_client_errors_are_permanent(code: str) -> None:
    assert classify(StoreError(code, status=400)) is ErrorKind.PERMANENT


def test_socket_level_errors_are_retryable_and_others_permanent() -> None:
    assert classify(ConnectionResetError()) is ErrorKind.RETRYABLE
    assert classify(TimeoutError()) is ErrorKind.RETRYABLE
    assert classify(ValueError("bug")) is ErrorKind.PERMANENT


def test_archived_object_message_says_restore_needed() -> None:
    exc = StoreError("InvalidObjectState", "The operation is not valid for the object's storage class", 403)
    assert error_code(exc) == "InvalidObjectState"
    assert "restore needed" in error_message(exc)


def test_exhausted_retries_are_explained() -> None:
    assert "bounded retries" in error_message(StoreError("SlowDown", "Please reduce your request rate.", 503))


def test_non_store_errors_keep_their_type_as_code() -> None:
    assert error_code(KeyError("x")) == "KeyError"


@pytest.mark.parametrize("code", ["KMS.ThrottlingException", "ThrottlingException", "SlowDown"])
def test_kms_and_s3_throttling_are_retried_even_with_a_4xx_status(code: str) -> None:
    assert classify(StoreError(code, "rate exceeded", 400)) is ErrorKind.RETRYABLE


@pytest.mark.parametrize("code", ["ObjectNotInActiveTierError", "InvalidObjectState"])
def test_archived_sources_are_permanent_and_say_restore_needed(code: str) -> None:
    exc = StoreError(code, "The operation is not valid for the object's storage class", 403)
    assert classify(exc) is ErrorKind.PERMANENT
    assert "restore needed" in error_message(exc)


def test_a_501_is_permanent_and_says_the_server_lacks_the_call_not_to_rerun_later() -> None:
    exc = StoreError("NotImplemented", "GetObjectTagging: A header you provided implies functionality that is not implemented", 501)
    assert classify(exc) is ErrorKind.PERMANENT
    message = error_message(exc)
    assert "GetObjectTagging" in message and "does not implement" in message and "rerun later" not in message


def test_listing_out_of_order_blames_the_server_it_came_from_and_names_seaweedfs_only_for_its_folder_order() -> None:
    from s3bulk.s3.keyorder import out_of_order

    folder_first = out_of_order("b", "d/a-b", b"d/a/b").message
    assert "folder's keys before its siblings'" in folder_first
    shuffled = out_of_order("b", "k/apple", b"k/zebra").message
    assert "SeaweedFS" not in shuffled and "does not list in S3's order" in shuffled


def test_an_acl_a_copy_cannot_carry_is_named_grant_by_grant_with_a_way_forward() -> None:
    from s3bulk.s3.params import acl_params

    policy = {"Owner": {"ID": "o"}, "Grants": [{"Grantee": {"Type": "Group"}, "Permission": "READ"}]}
    with pytest.raises(StoreError) as info:
        acl_params(policy)
    assert info.value.code == "AclNotCarried"
    assert "READ to Group" in info.value.message and "set-acl" in info.value.message and "{" not in info.value.message
