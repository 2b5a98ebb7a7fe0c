"""Keys from a Secrets Manager secret: parsed, refreshed, and never shown in an error."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from s3bulk.job import JobError
from s3bulk.s3.credentials import SecretCredentials, read_keys, secret_region

ARN = "arn:aws:secretsmanager:ap-south-2:123456789012:secret:legacy-keys"


class FakeSecrets:
    """get_secret_value from a list of values, one per call; a string starting with '!' is that error code."""

    def __init__(self, *values: str) -> None:
        self.values = list(values)
        self.calls = 0

    def get_secret_value(self, SecretId: str) -> dict[str, Any]:
        assert SecretId == ARN
        value = self.values[min(self.calls, len(self.values) - 1)]
        self.calls += 1
        if value.startswith("!"):
            raise ClientError({"Error": {"Code": value[1:], "Message": "no"}}, "GetSecretValue")
        return {"SecretString": value}


def keys(ak: str, sk: str, **more: str) -> str:
    return json.dumps({"aws_access_key_id": ak, "aws_secret_access_key": sk, **more})


def test_the_keys_and_an_optional_session_token_are_read_from_the_secret_json() -> None:
    assert read_keys(FakeSecrets(keys("AK", "SK")), ARN) == {"access_key": "AK", "secret_key": "SK", "token": None}
    assert read_keys(FakeSecrets(keys("AK", "SK", aws_session_token="T")), ARN)["token"] == "T"
    assert secret_region(ARN) == "ap-south-2"


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (json.dumps({"aws_secret_access_key": "very-secret"}), "lacks aws_access_key_id"),
        (json.dumps({"aws_access_key_id": "AK", "aws_secret_access_key": ""}), "lacks aws_secret_access_key"),
        ("very-secret plain text", "is not a JSON object"),
        ("!AccessDeniedException", "AccessDeniedException; grant secretsmanager:GetSecretValue"),
        ("!ResourceNotFoundException", "cannot read secret"),
    ],
)
def test_an_unusable_secret_names_the_field_and_the_fix_and_never_its_value(value: str, says: str) -> None:
    with pytest.raises(JobError) as info:
        read_keys(FakeSecrets(value), ARN, "source.credentials_secret")
    message = str(info.value)
    assert message.startswith("job.source.credentials_secret: ") and ARN in message and says in message
    assert "very-secret" not in message and "\n" not in message


def test_rotated_keys_are_picked_up_when_the_hour_is_nearly_up() -> None:
    clock = [datetime(2026, 1, 1, tzinfo=UTC)]
    fake = FakeSecrets(keys("OLD", "S1"), keys("NEW", "S2"))
    creds = SecretCredentials(lambda: fake, ARN, "source.credentials_secret", now=lambda: clock[0]).load()
    creds._time_fetcher = lambda: clock[0]  # type: ignore[attr-defined]  # botocore's refresh clock, moved with ours
    assert creds.get_frozen_credentials().access_key == "OLD"
    clock[0] += timedelta(minutes=30)
    assert creds.get_frozen_credentials().access_key == "OLD" and fake.calls == 1  # no read per request
    clock[0] += timedelta(minutes=20)  # within botocore's 15-minute advisory window of the 1-hour expiry
    assert creds.get_frozen_credentials().access_key == "NEW" and fake.calls == 2


def test_a_throttled_or_failing_read_is_a_retryable_store_error_not_a_bad_job() -> None:
    from s3bulk.errors import ErrorKind, classify
    from s3bulk.store import StoreError

    for code in ("!ThrottlingException", "!InternalServiceError"):
        with pytest.raises(StoreError) as info:
            read_keys(FakeSecrets(code), ARN)
        assert classify(info.value) is ErrorKind.RETRYABLE and "very-secret" not in str(info.value)
