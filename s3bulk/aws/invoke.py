"""Invoke a deployed S3 Batch Operations function: the Lambda side of operation 'process' (ops/process.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from s3bulk.ops.process import Invoke
from s3bulk.s3.clients import ClientSettings, make_client
from s3bulk.store import StoreError

# A synchronous invocation waits for the function, which may run for its whole 15 minutes.
INVOKE_READ_TIMEOUT = 910.0


class FunctionFailed(Exception):
    """The function raised (Lambda's FunctionError); every task of the invocation failed with it."""


def invoke_with(client: Any, arn: str) -> Invoke:
    """RequestResponse invocations of `arn` on `client`; throttles and 5xx surface as retryable StoreErrors."""

    def invoke(event: dict[str, Any]) -> Any:
        try:
            r = client.invoke(FunctionName=arn, InvocationType="RequestResponse", Payload=json.dumps(event).encode())
        except ClientError as exc:
            err, meta = exc.response.get("Error", {}), exc.response.get("ResponseMetadata", {})
            raise StoreError(str(err.get("Code") or "ClientError"), str(err.get("Message", "")), meta.get("HTTPStatusCode")) from exc
        except BotoCoreError as exc:
            raise StoreError("ConnectionError", str(exc)) from exc
        payload = json.loads(r["Payload"].read() or b"null")
        if r.get("FunctionError"):
            detail = payload if isinstance(payload, dict) else {}
            raise FunctionFailed(f"{detail.get('errorType', r['FunctionError'])}: {detail.get('errorMessage', '')}".strip(": "))
        return payload

    return invoke


def lambda_invoker(settings: ClientSettings, max_connections: int) -> Callable[[str], Invoke]:
    """Connect to a function by ARN, in the ARN's own Region, with the job's credentials (never the S3 endpoint override)."""

    def connect(arn: str) -> Invoke:
        region = arn.split(":")[3]
        client = make_client(
            "lambda", replace(settings, endpoint_url=None, region=region, read_timeout=INVOKE_READ_TIMEOUT), max_connections
        )
        return invoke_with(client, arn)

    return connect
