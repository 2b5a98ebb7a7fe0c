"""A side's S3 keys from a Secrets Manager secret (`source.credentials_secret`), refreshed so rotation is picked up.

The secret is read with the runner's own credentials (the CLI's chain, or the
function's role on the stack) and is never logged or put into an error message:
errors name the secret's ARN and the fix only. botocore refreshes the keys an
hour after each read, so a rotated secret reaches a job that runs for days.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.credentials import CredentialProvider, RefreshableCredentials
from botocore.exceptions import BotoCoreError, ClientError

from s3bulk.job import JobError
from s3bulk.store import StoreError

# How long keys read from a secret are used before they are read again (botocore refreshes 15 minutes before this).
REFRESH_AFTER = timedelta(hours=1)
FIELDS = ("aws_access_key_id", "aws_secret_access_key")
SHAPE = '{"aws_access_key_id": "...", "aws_secret_access_key": "...", "aws_session_token": "..." (optional)}'


def secret_region(arn: str) -> str:
    """The Region a secret lives in, from its ARN (arn:PARTITION:secretsmanager:REGION:ACCOUNT:secret:NAME)."""
    return arn.split(":")[3]


def read_keys(client: Any, arn: str, field: str = "credentials_secret") -> dict[str, str]:
    """The secret's keys as botocore's credential metadata; JobError naming `field` (never the values) if it cannot be used."""
    try:
        raw = client.get_secret_value(SecretId=arn)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "Error")
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400))
        if status >= 500 or code in {"ThrottlingException", "InternalServiceError"}:
            # A refresh mid-job that meets a throttle or a fault: the object's request is retried, not failed for good.
            raise StoreError(code, f"Secrets Manager could not give the keys of {arn} just now", 503) from None
        raise JobError(
            f"job.{field}: cannot read secret {arn}: {code}; grant secretsmanager:GetSecretValue on it "
            "(on the stack: redeploy with -c credentials_secrets=ARN@SIDE, and its KMS key in -c kms_keys)"
        ) from None
    except BotoCoreError as exc:
        raise StoreError("ServiceUnavailable", f"cannot reach Secrets Manager for {arn}: {type(exc).__name__}", 503) from None
    try:
        doc = json.loads(raw.get("SecretString") or "")
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        raise JobError(f"job.{field}: secret {arn} is not a JSON object; store its value as {SHAPE}")
    missing = [k for k in FIELDS if not isinstance(doc.get(k), str) or not doc.get(k)]
    if missing:
        raise JobError(f"job.{field}: secret {arn} lacks {', '.join(missing)} (as non-empty strings); store its value as {SHAPE}")
    token = doc.get("aws_session_token")
    return {
        "access_key": doc["aws_access_key_id"],
        "secret_key": doc["aws_secret_access_key"],
        "token": token if isinstance(token, str) and token else None,
    }


class SecretCredentials(CredentialProvider):
    """A botocore credential provider that reads one secret; the first read happens when the session first asks."""

    METHOD = "secrets-manager"
    CANONICAL_NAME = "SecretsManager"

    def __init__(self, secrets_client: Callable[[], Any], arn: str, field: str, now: Callable[[], datetime] | None = None) -> None:
        super().__init__()
        self._client = secrets_client
        self._arn = arn
        self._field = field
        self._now = now or (lambda: datetime.now(UTC))

    def _metadata(self) -> dict[str, Any]:
        keys: dict[str, Any] = read_keys(self._client(), self._arn, self._field)
        keys["expiry_time"] = (self._now() + REFRESH_AFTER).isoformat()
        return keys

    def load(self) -> RefreshableCredentials:
        return RefreshableCredentials.create_from_metadata(self._metadata(), refresh_using=self._metadata, method=self.METHOD)
