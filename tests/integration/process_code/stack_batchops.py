"""An S3 Batch Operations function (invocation schema 2.0): tags nothing, answers with each object's size."""

from __future__ import annotations

import urllib.parse
from typing import Any

import boto3


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    s3 = boto3.client("s3")  # the function's own Region
    results = []
    for task in event["tasks"]:
        key = urllib.parse.unquote_plus(task["s3Key"])
        if key.endswith("refuse"):
            results.append({"taskId": task["taskId"], "resultCode": "PermanentFailure", "resultString": "refused"})
            continue
        size = s3.head_object(Bucket=task["s3Bucket"], Key=key)["ContentLength"]
        label = event["job"]["userArguments"].get("label", "")
        results.append({"taskId": task["taskId"], "resultCode": "Succeeded", "resultString": f"{label}:{size}"})
    return {
        "invocationSchemaVersion": "2.0",
        "treatMissingKeysAs": "PermanentFailure",
        "invocationId": event["invocationId"],
        "results": results,
    }
