"""Copy jobs through the synthesized stack as it will run: its state machine on moto's interpreter, its handlers as the Lambdas,
its SQS event source emulated, and faults injected where AWS would produce them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from tests.integration.aws_harness import REGION
from tests.integration.helpers import md5
from tests.integration.stack_harness import DynamoConflicts, Execution, Faults, StackOnMoto, synthesize

SRC, DST = "src-bucket", "dst-bucket"
CONTEXT: dict[str, object] = {"read_buckets": f"{SRC},{DST}", "write_buckets": DST}
# Validate hands the functions' S3BULK_POLL_SECONDS to the state machine as $.poll_seconds (its wait period):
# 1 s instead of the deployed value, which deploy context may not lower.
ENV = {"S3BULK_POLL_SECONDS": "1"}
N = 3000
BATCH = 100  # keys per queue message: 30 messages, 6 worker invocations of 5
# Runs with faults must end before a batch left to its visibility timeout (3,600 s scaled by the harness's
# 1/100 to 36 s) could come back: a job that needs that wait does not end in time.
DEADLINE_S = 32.0


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return synthesize(CONTEXT)


def seed(n: int = N) -> dict[str, str]:
    """n small objects under nested prefixes of the source; returns key -> MD5 of its bytes."""
    s3 = boto3.client("s3", region_name=REGION)
    out = {}
    for i in range(n):
        key = f"in/{i % 3}/{i % 7}/{i % 11}/obj-{i:05d}"
        body = f"object {i} ".encode() * (1 + i % 4)
        s3.put_object(Bucket=SRC, Key=key, Body=body)
        out[key] = md5(body)
    return out


def copy_job(**options: Any) -> dict[str, Any]:
    return {
        "operation": "copy",
        "source": {"bucket": SRC, "prefix": "in/"},
        "destination": {"bucket": DST, "prefix": "out/"},
        "options": {"batch_size": BATCH, **options},
    }


def destination(stack: StackOnMoto) -> dict[str, str]:
    out = {}
    for page in stack.s3.get_paginator("list_objects_v2").paginate(Bucket=DST):
        for o in page.get("Contents", ()):
            out[o["Key"]] = md5(stack.s3.get_object(Bucket=DST, Key=o["Key"])["Body"].read())
    return out


def report(stack: StackOnMoto, execution_output: str | None) -> dict[str, Any]:
    """report.json of the job, found from the ledger item the execution names."""
    assert execution_output is not None
    out = json.loads(execution_output)
    job_id = out["job_id"]
    bucket = stack.bucket_of("Reports")
    body = stack.s3.get_object(Bucket=bucket, Key=f"jobs/{job_id}/report.json")["Body"].read()
    return dict(json.loads(body))


def assert_exact_copy(stack: StackOnMoto, expected: dict[str, str], ex: Execution) -> None:
    why = f"{ex.description.get('error')}: {str(ex.description.get('cause'))[:2000]}\nlast states {ex.entered()[-8:]}"
    assert ex.status == "SUCCEEDED", f"{ex.status} after {ex.seconds:.1f}s, {why}\n{stack.describe()}"
    r = report(stack, ex.description.get("output"))
    assert (r["listed"], r["succeeded"], r["failed"], r["failures"]) == (N, N, 0, [])
    assert destination(stack) == {"out/" + k[3:]: v for k, v in expected.items()}


def dead_lettered(stack: StackOnMoto) -> int:
    return sum(n for logical, n in stack.queue_depths().items() if logical.startswith("DeadLetters"))


@pytest.fixture
def clean(template: dict[str, Any]) -> Iterator[StackOnMoto]:
    with StackOnMoto(template, buckets=(SRC, DST), env=ENV) as stack:
        yield stack


def test_a_3000_object_copy_through_the_real_state_machine_succeeds_with_exact_counts_and_bytes(clean: StackOnMoto) -> None:
    expected = seed()
    ex = clean.run(copy_job(), timeout=90)
    assert_exact_copy(clean, expected, ex)
    names = ex.entered()
    assert names[:4] == ["Validate", "CreateLedgerEntry", "KeepIdsOnly", "PlanListing"] and names[-1] == "JobSucceeded"
    assert names.count("ListShard") >= 2  # several listing shards
    [source] = clean.sources
    assert (source.stats.crashed, source.stats.returned) == (0, 0)
    assert source.stats.deleted == N // BATCH
    assert dead_lettered(clean) == 0


# Seed 9 conflicts the lister's second checkpoint (UpdateItem #1) and three of the workers' batch
# transactions (TransactWriteItems #22, #26, #28) of the write pattern at the time of writing.
CONFLICT_SEED = 9


def test_transaction_conflicts_on_5_percent_of_dynamodb_writes_still_copy_everything_exactly_once(template: dict[str, Any]) -> None:
    conflicts = DynamoConflicts(rate=0.05, seed=CONFLICT_SEED)
    with StackOnMoto(template, buckets=(SRC, DST), env=ENV, faults=Faults(dynamo=conflicts)) as stack:
        expected = seed()
        ex = stack.run(copy_job(), timeout=DEADLINE_S)
        assert sum(conflicts.injected.values()) > 0, stack.describe()
        assert_exact_copy(stack, expected, ex)


def test_duplicate_deliveries_and_a_worker_out_of_time_mid_batch_still_copy_everything_exactly_once(template: dict[str, Any]) -> None:
    faults = Faults(kill_invocations=frozenset({1}), kill_after=20, duplicate_rate=0.3, seed=3)
    with StackOnMoto(template, buckets=(SRC, DST), env=ENV, faults=faults) as stack:
        expected = seed()
        ex = stack.run(copy_job(), timeout=DEADLINE_S)
        [source] = stack.sources
        assert source.stats.killed == 1 and source.stats.returned >= 1 and source.stats.duplicated > 0, stack.describe()
        assert_exact_copy(stack, expected, ex)
        assert dead_lettered(stack) == 0
