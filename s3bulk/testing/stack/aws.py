"""What every part of the emulated stack shares: its Region, and the SQS event Lambda's event source hands a function."""

from __future__ import annotations

from typing import Any

REGION = "us-east-1"


def sqs_event(messages: list[dict[str, Any]], queue_arn: str) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": {
                    "ApproximateReceiveCount": m["Attributes"]["ApproximateReceiveCount"],
                    "SentTimestamp": m["Attributes"]["SentTimestamp"],
                    "SenderId": m["Attributes"].get("SenderId", "AIDAEXAMPLE"),
                    "ApproximateFirstReceiveTimestamp": m["Attributes"]["ApproximateFirstReceiveTimestamp"],
                },
                "messageAttributes": {},
                "md5OfBody": m["MD5OfBody"],
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": REGION,
            }
            for m in messages
        ]
    }
