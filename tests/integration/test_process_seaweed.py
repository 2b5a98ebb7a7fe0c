"""Operation 'process' through the CLI on SeaweedFS: user functions and Batch Operations handlers, proven from the server."""

from __future__ import annotations

import gzip
import json
import os
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import client_for, run_job_cli
from tests.integration.helpers import list_keys, seed_small

pytestmark = pytest.mark.seaweed


def module(tmp_path: Path, name: str, source: str) -> None:
    """A user's module beside the job file, where the CLI looks first."""
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))


GZIP_IT = """
    import gzip, shutil

    def run(obj):
        with obj.open() as src, obj.writer(obj.key + ".gz", content_type="application/gzip", metadata={"source-etag": obj.etag.strip('"')}) as out:
            with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=obj.arguments["level"], mtime=0) as gz:
                shutil.copyfileobj(src, gz, 1024 * 1024)
        return f"{obj.size} bytes in"
"""


def test_a_gzip_function_over_500_objects_writes_outputs_that_decompress_to_the_sources(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    direct = client_for(seaweed)
    src, dst = bucket_factory(direct, "src"), bucket_factory(direct, "dst")
    seed_small(direct, src, "raw/", 499)
    big = os.urandom(20 * 1024 * 1024 + 3)  # read over several ranges, written as a multipart upload
    direct.put_object(Bucket=src, Key="raw/big.bin", Body=big)
    module(tmp_path, "gzip_it", GZIP_IT)
    doc = {
        "operation": "process",
        "source": {"bucket": src, "prefix": "raw/"},
        "destination": {"bucket": dst, "prefix": "gz/"},
        "process": {"function": "gzip_it:run", "arguments": {"level": 6}},
    }
    code, report, lines, err = run_job_cli(seaweed, tmp_path, "gzip", doc)
    assert code == 0, err
    assert (report["succeeded"], report["failed"]) == (500, 0)
    outputs = list_keys(direct, dst, "gz/")
    assert len(outputs) == 500
    for key in list_keys(direct, src, "raw/"):
        out = direct.get_object(Bucket=dst, Key="gz/" + key + ".gz")
        assert gzip.decompress(out["Body"].read()) == direct.get_object(Bucket=src, Key=key)["Body"].read()
        assert out["ContentType"] == "application/gzip"
        assert out["Metadata"]["source-etag"] == direct.head_object(Bucket=src, Key=key)["ETag"].strip('"')
    results = {line["key"]: line["result"] for line in lines}
    assert results["raw/big.bin"] == f"{len(big)} bytes in"
    assert all(line["outcome"] == "succeeded" and line["operation"] == "process" for line in lines)


FLAKY = """
    import collections
    from s3bulk import PermanentFailure, TemporaryFailure

    calls = collections.Counter()

    def run(obj):
        calls[obj.key] += 1
        if "bad" in obj.key:
            raise PermanentFailure("corrupt header in " + obj.key)
        if "oops" in obj.key:
            raise ValueError("cannot parse")
        if calls[obj.key] == 1:
            raise TemporaryFailure("upstream busy")
        return f"done on call {calls[obj.key]}"
"""


def test_temporary_failures_are_retried_and_permanent_ones_reported_with_key_and_code(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    direct = client_for(seaweed)
    src = bucket_factory(direct, "src")
    for key in ["in/a", "in/b", "in/bad-1", "in/c", "in/oops"]:
        direct.put_object(Bucket=src, Key=key, Body=key.encode())
    module(tmp_path, "flaky", FLAKY)
    doc = {"operation": "process", "source": {"bucket": src, "prefix": "in/"}, "process": {"function": "flaky:run"}}
    code, report, lines, _ = run_job_cli(seaweed, tmp_path, "flaky", doc)
    assert code == 1
    assert (report["succeeded"], report["failed"], report["object_retries"]) == (3, 2, 3)
    failures = {f["key"]: (f["error"], f["message"]) for f in report["failures"]}
    assert failures == {"in/bad-1": ("PermanentFailure", "corrupt header in in/bad-1"), "in/oops": ("ValueError", "cannot parse")}
    ok = {line["key"]: (line["attempts"], line["result"]) for line in lines if line["outcome"] == "succeeded"}
    assert ok == {k: (2, "done on call 2") for k in ("in/a", "in/b", "in/c")}


BATCHOPS = """
    import json, urllib.parse
    import boto3

    seen = set()

    def lambda_handler(event, context):
        assert event["invocationSchemaVersion"] == "2.0"
        args = event["job"]["userArguments"]
        s3 = boto3.client("s3", endpoint_url=args["endpoint"], region_name="us-east-1")
        with open(args["calls"], "a") as log:
            log.write(json.dumps([urllib.parse.unquote_plus(t["s3Key"]) for t in event["tasks"]]) + "\\n")
        results = []
        for task in event["tasks"]:
            key = urllib.parse.unquote_plus(task["s3Key"])
            size = s3.head_object(Bucket=task["s3Bucket"], Key=key)["ContentLength"]  # the decoded key names the object
            if key.endswith("perm"):
                code, text = "PermanentFailure", "refused " + key
            elif key.endswith("temp") and key not in seen:
                seen.add(key)
                code, text = "TemporaryFailure", "try again"
            else:
                code, text = "Succeeded", f"{size}:{args['tag']}"
            results.append({"taskId": task["taskId"], "resultCode": code, "resultString": text})
        return {"invocationSchemaVersion": "2.0", "treatMissingKeysAs": "PermanentFailure",
                "invocationId": event["invocationId"], "results": results}
"""


@pytest.mark.parametrize("per_invocation", [1, 4])
def test_a_batch_operations_handler_runs_in_process_with_schema_2_events_and_mixed_results(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path, per_invocation: int
) -> None:
    direct = client_for(seaweed)
    src = bucket_factory(direct, "src")
    keys = [f"in/file {i} é+&.txt" for i in range(10)] + ["in/x-perm", "in/y-temp"]
    for key in keys:
        direct.put_object(Bucket=src, Key=key, Body=key.encode())
    module(tmp_path, "bops", BATCHOPS)
    calls = tmp_path / "calls.jsonl"
    doc = {
        "operation": "process",
        "source": {"bucket": src, "prefix": "in/"},
        "process": {
            "batchops_handler": "bops:lambda_handler",
            "arguments": {"endpoint": seaweed, "calls": str(calls), "tag": "v1"},
            "tasks_per_invocation": per_invocation,
        },
    }
    code, report, lines, _ = run_job_cli(seaweed, tmp_path, f"bops-{per_invocation}", doc)
    assert code == 1
    assert (report["succeeded"], report["failed"]) == (11, 1)
    assert [(f["key"], f["error"], f["message"]) for f in report["failures"]] == [("in/x-perm", "PermanentFailure", "refused in/x-perm")]
    results = {line["key"]: line["result"] for line in lines if line["outcome"] == "succeeded"}
    assert results == {k: f"{len(k.encode())}:v1" for k in keys if not k.endswith("perm")}
    invocations = [json.loads(line) for line in calls.read_text().splitlines()]
    assert max(len(i) for i in invocations) == per_invocation
    assert sorted(k for i in invocations for k in i) == sorted([*keys, "in/y-temp"])  # y-temp twice: once refused, once done
    assert len(invocations) == (12 // per_invocation) + 1  # the one retried task goes alone in its next round
