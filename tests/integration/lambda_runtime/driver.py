"""Runs one job through the four real handlers inside an emulated Lambda Python: no test code, no project venv.

Started by test_runtime_fidelity.py in a bare interpreter whose PYTHONPATH is
what Lambda's is (task dir, then layer, then the runtime's own packages), so every
import resolves as it would in the function. It plays the state machine (validate,
ledger entry, plan and list each shard until done, finalize) and the SQS event source (receive,
invoke the worker with an SQS event, delete what succeeded), then prints one JSON
line: the report and where botocore came from.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any


class Context:
    function_name = "s3bulk-runtime-fidelity"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:s3bulk-runtime-fidelity"
    aws_request_id = "00000000-0000-0000-0000-000000000000"

    def get_remaining_time_in_millis(self) -> int:
        return 600_000


# A copy of s3bulk/testing/stack/aws.py sqs_event, on purpose: this script may import nothing from the repository, or
# the project's own s3bulk would shadow the asset's and the test would prove nothing.
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
                    "SenderId": "AIDAEXAMPLE",
                    "ApproximateFirstReceiveTimestamp": m["Attributes"]["ApproximateFirstReceiveTimestamp"],
                },
                "messageAttributes": {},
                "md5OfBody": m["MD5OfBody"],
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": "us-east-1",
            }
            for m in messages
        ]
    }


def watch_memory(limit_mb: int) -> dict[str, float]:
    """Lambda ends an execution environment whose memory passes the function's MemorySize: this process's resident
    set, read every 10 ms, is held to the same limit (exit 137 with Runtime.OutOfMemory, as the runtime reports it)."""
    page = os.sysconf("SC_PAGE_SIZE")
    seen = {"peak_mb": 0.0}

    def watch() -> None:
        while True:
            with open("/proc/self/statm") as f:
                rss_mb = int(f.read().split()[1]) * page / 2**20
            seen["peak_mb"] = max(seen["peak_mb"], rss_mb)
            if rss_mb > limit_mb:
                print(json.dumps({"killed": "Runtime.OutOfMemory", "rss_mb": rss_mb, "limit_mb": limit_mb}), flush=True)
                os._exit(137)
            time.sleep(0.01)

    threading.Thread(target=watch, name="memory-watch", daemon=True).start()
    return seen


def main() -> None:
    cfg = json.loads(sys.argv[1])
    memory = watch_memory(int(cfg.get("memory_mb", Context.memory_limit_in_mb)))
    import boto3
    import botocore

    from functions.finalize import handler as finalize
    from functions.lister import handler as lister
    from functions.validate import handler as validate
    from functions.worker import handler as worker

    out = validate.handler({"job": cfg["job"], "execution": "fidelity"}, Context())
    # The harness's own clients name the endpoint: an old runtime SDK ignores AWS_ENDPOINT_URL (the handlers' must not).
    boto3.client("dynamodb", endpoint_url=cfg["endpoint"]).put_item(
        TableName=cfg["table"], Item=out["item"], ConditionExpression="attribute_not_exists(pk)"
    )
    job_id = out["job_id"]
    for shard in lister.handler({"job_id": job_id}, Context())["shards"]:  # plan, then list each shard until done
        for _ in range(100):
            if lister.handler({"job_id": job_id, "shard": shard}, Context())["done"]:
                break
    sqs = boto3.client("sqs", endpoint_url=cfg["endpoint"])
    for _ in range(1000):
        messages = sqs.receive_message(QueueUrl=cfg["queue_url"], MaxNumberOfMessages=5, AttributeNames=["All"]).get("Messages", [])
        if not messages:
            break
        response = worker.handler(sqs_event(messages, cfg["queue_arn"]), Context())
        failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
        for m in messages:
            if m["MessageId"] not in failed:
                sqs.delete_message(QueueUrl=cfg["queue_url"], ReceiptHandle=m["ReceiptHandle"])
    result = finalize.handler({"job_id": job_id}, Context())
    pyarrow = sys.modules.get("pyarrow")
    out = {
        "python": list(sys.version_info[:2]),
        "botocore": botocore.__version__,
        "botocore_file": botocore.__file__,
        "pyarrow_file": getattr(pyarrow, "__file__", None),
        "result": result,
        "peak_rss_mb": memory["peak_mb"],
    }
    print(json.dumps(out), flush=True)
    os._exit(0)  # pyarrow's threads can abort an interpreter's teardown; a Lambda never tears its own down


if __name__ == "__main__":
    main()
