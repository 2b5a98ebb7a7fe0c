"""The stack under Lambda's own limits: an invocation ended at its Timeout, and an account with little concurrency.

The harness (stack/lambdas.py) runs each invocation on a thread of its own and ends it at its
function's Timeout as Lambda does: the caller gets `Sandbox.Timedout`, the sandbox is thrown away,
and nothing the abandoned thread still asks of AWS reaches it (stack/iam.py refuses it and records
it). The account's concurrency is shared by every function: a synchronous Invoke beyond it is
refused with 429, and an event-source batch that cannot get an environment comes back later.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from infra.state_machine import LAMBDA_THROTTLED
from s3bulk.aws.ledger import DynamoLedger
from s3bulk.s3.faststore import FastS3Store
from s3bulk.testing.stack import StackOnMoto, synthesize
from s3bulk.testing.stack.lambdas import Concurrency
from tests.integration.aws_harness import REGION

pytestmark = pytest.mark.moto

SRC, DST = "src-bucket", "dst-bucket"
CONTEXT: dict[str, object] = {"read_buckets": f"{SRC},{DST}", "write_buckets": DST}
N = 90


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return synthesize(CONTEXT)


def seed() -> list[str]:
    s3 = boto3.client("s3", region_name=REGION)
    keys = [f"in/{'abcdef'[i % 6]}/obj-{i:04d}" for i in range(N)]
    for key in keys:
        s3.put_object(Bucket=SRC, Key=key, Body=key.encode())
    return keys


def copy_job(**options: Any) -> dict[str, Any]:
    return {
        "operation": "copy",
        "source": {"bucket": SRC, "prefix": "in/"},
        "destination": {"bucket": DST, "prefix": "out/"},
        "options": {"batch_size": 10, **options},
    }


def copied(stack: StackOnMoto) -> list[str]:
    return sorted(o["Key"] for o in stack.s3.list_objects_v2(Bucket=DST, MaxKeys=1000).get("Contents", []))


def report(stack: StackOnMoto, job_id: str) -> dict[str, Any]:
    body = stack.s3.get_object(Bucket=stack.bucket_of("Reports"), Key=f"jobs/{job_id}/report.json")["Body"].read()
    return dict(json.loads(body))


def failed_tasks(events: list[dict[str, Any]]) -> list[str]:
    return [e["lambdaFunctionFailedEventDetails"]["error"] for e in events if "lambdaFunctionFailedEventDetails" in e] + [
        e["taskFailedEventDetails"]["error"] for e in events if "taskFailedEventDetails" in e
    ]


def test_a_lister_ended_at_its_timeout_is_retried_and_nothing_it_did_afterwards_lands(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ListShard call outlives its Timeout once (a page that hangs): Step Functions sees Sandbox.Timedout and calls
    again, the checkpoint the dead call still tried never reaches DynamoDB, and the job ends with every key once."""
    real = DynamoLedger.checkpoint
    hung = threading.Event()

    def hangs_once(self: DynamoLedger, job_id: str, *args: Any, **kwargs: Any) -> bool:
        if job_id == "lister-times-out" and not hung.is_set():  # this job's lister only, not one an earlier test left
            hung.set()
            time.sleep(9)  # past the Lister's 6 s: Lambda has ended the invocation by the time this returns
        return real(self, job_id, *args, **kwargs)

    monkeypatch.setattr(DynamoLedger, "checkpoint", hangs_once)
    env = {"S3BULK_POLL_SECONDS": "30", "S3BULK_LIST_PAGE_SIZE": "20", "S3BULK_LIST_MARGIN_S": "1", "S3BULK_LIST_SHARDS": "1"}
    with StackOnMoto(template, buckets=(SRC, DST), env=env, timeouts={"Lister": 6}) as stack:
        keys = seed()
        ex = stack.run({**copy_job(), "job_id": "lister-times-out"}, timeout=90)
        assert ex.status == "SUCCEEDED", (ex.description, stack.describe())
        [lister] = [f for f in stack.functions.values() if f.name.startswith("Lister")]
        assert lister.timed_out == 1 and "Sandbox.Timedout" in failed_tasks(ex.events), (
            lister.timed_out,
            failed_tasks(ex.events),
            stack.describe(),
        )
        woke = time.monotonic() + 15
        while not stack.iam.after_kill and time.monotonic() < woke:  # the abandoned thread wakes and tries its checkpoint
            time.sleep(0.1)
        late = stack.iam.after_kill[0]
        assert late.startswith(f"{lister.name}: ") and late.endswith("after the invocation was ended at its timeout")
        job_id = json.loads(ex.description["output"])["job_id"]
        r = report(stack, job_id)
        assert (r["listed"], r["succeeded"], r["failed"]) == (N, N, 0)
        assert copied(stack) == sorted("out/" + k[3:] for k in keys)


def test_a_lister_call_refused_once_by_dynamodb_is_retried_by_step_functions_and_the_job_ends_exact(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ListShard call whose checkpoint DynamoDB refuses (500, past the SDK's retries) fails its task with ClientError:
    the state machine retries the task with backoff, as AWS advises for a task's errors, instead of stopping the job at
    the first one; the shard goes on from its checkpoint and every key is copied once."""
    real = DynamoLedger.checkpoint
    refused = threading.Event()

    def refused_once(self: DynamoLedger, job_id: str, *args: Any, **kwargs: Any) -> bool:
        if job_id == "lister-refused" and not refused.is_set():
            refused.set()
            raise ClientError({"Error": {"Code": "InternalServerError", "Message": "Internal server error"}}, "UpdateItem")
        return real(self, job_id, *args, **kwargs)

    monkeypatch.setattr(DynamoLedger, "checkpoint", refused_once)
    env = {"S3BULK_POLL_SECONDS": "30", "S3BULK_LIST_PAGE_SIZE": "20", "S3BULK_LIST_SHARDS": "1"}
    with StackOnMoto(template, buckets=(SRC, DST), env=env) as stack:
        keys = seed()
        ex = stack.run({**copy_job(), "job_id": "lister-refused"}, timeout=120)
        assert ex.status == "SUCCEEDED", (ex.description, stack.describe())
        assert refused.is_set() and "ClientError" in failed_tasks(ex.events), failed_tasks(ex.events)
        r = report(stack, "lister-refused")
        assert (r["listed"], r["succeeded"], r["failed"]) == (N, N, 0)
        assert copied(stack) == sorted("out/" + k[3:] for k in keys)


def test_an_account_with_little_concurrency_throttles_and_the_job_still_ends_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two concurrent executions in all (a new account may have 10): listers and workers are refused with 429 and
    retried (Step Functions' retry of Lambda.TooManyRequestsException; the queue's redelivery), and nothing is lost.
    Such an account cannot reserve concurrency (Lambda keeps 100 unreserved), so it deploys with reserve_concurrency
    false and account_concurrency stated; the default template's reservations are refused there, as Lambda refuses them."""
    account = Concurrency(2)
    with pytest.raises(ValueError, match=r"decreases account's UnreservedConcurrentExecution below its minimum value of \[100\]"):
        for name, fn in synthesize(CONTEXT)["Resources"].items():
            if "ReservedConcurrentExecutions" in fn.get("Properties", {}):
                account.reserve(name, int(fn["Properties"]["ReservedConcurrentExecutions"]))  # as StackOnMoto provisions it
    template = synthesize({**CONTEXT, "reserve_concurrency": "false"})
    real = DynamoLedger.checkpoint

    def slow_pages(self: DynamoLedger, *args: Any, **kwargs: Any) -> bool:
        time.sleep(0.1)  # each shard's lister runs a while, so the Map's shards and the workers overlap
        return real(self, *args, **kwargs)

    monkeypatch.setattr(DynamoLedger, "checkpoint", slow_pages)
    env = {"S3BULK_POLL_SECONDS": "30", "S3BULK_LIST_PAGE_SIZE": "10", "S3BULK_LIST_SHARDS": "6"}
    with StackOnMoto(template, buckets=(SRC, DST), env=env, account_concurrency=2, pollers=4, visibility_scale=1 / 1000) as stack:
        keys = seed()
        # Another workload of the account's holds both until Validate's Invoke has met a 429 (not for a fixed time: on a
        # loaded machine the execution's first Invoke came after a 3 s hold had ended, and nothing was throttled).
        for _ in range(2):
            stack.concurrency.acquire("another-workload", wait=True)

        def give_back() -> None:
            until = time.monotonic() + 60
            while not any(name.startswith("Validate") for name in stack.concurrency.throttled) and time.monotonic() < until:
                time.sleep(0.05)
            time.sleep(0.5)  # a retry or two more meets the limit too
            for _ in range(2):
                stack.concurrency.release("another-workload")

        threading.Thread(target=give_back, daemon=True).start()
        ex = stack.run(copy_job(), timeout=180)
        assert ex.status == "SUCCEEDED", (failed_tasks(ex.events), ex.description.get("cause"), ex.entered()[-5:], stack.describe())
        assert stack.concurrency.peak <= 2
        throttled = {name.rstrip("0123456789ABCDEF"): n for name, n in stack.concurrency.throttled.items()}

        # Both paths reached the limit, or the test proves nothing: Step Functions' Invoke (its retrier took the 429)
        # and the queue's event source (whose batches came back).
        assert LAMBDA_THROTTLED in failed_tasks(ex.events) and throttled.get("Worker", 0) > 0, throttled
        job_id = json.loads(ex.description["output"])["job_id"]
        r = report(stack, job_id)
        assert (r["listed"], r["succeeded"], r["failed"]) == (N, N, 0), stack.describe()
        assert copied(stack) == sorted("out/" + k[3:] for k in keys)


def test_with_reserved_concurrency_another_workload_holding_the_rest_of_the_account_never_throttles_the_listers_or_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Lister and the Worker reserve what one job runs (listers: list_concurrency; workers: the event source's
    maximum), so the account's other functions cannot starve them, nor they the others: with every unreserved execution
    held by another workload, the job's steps outside the reservations wait their turn (Step Functions retries the 429)
    while no listing shard and no batch is ever refused."""
    template = synthesize({**CONTEXT, "account_concurrency": 200, "list_concurrency": 3, "worker_max_concurrency": 4})
    reserved = {
        k: v["Properties"].get("ReservedConcurrentExecutions")
        for k, v in template["Resources"].items()
        if v["Type"] == "AWS::Lambda::Function"
    }
    assert sorted(n for n in reserved.values() if n) == [3, 4]  # the Lister and the Worker, nothing else
    env = {"S3BULK_POLL_SECONDS": "30", "S3BULK_LIST_PAGE_SIZE": "10", "S3BULK_LIST_SHARDS": "6"}
    with StackOnMoto(template, buckets=(SRC, DST), env=env, account_concurrency=200, pollers=4, visibility_scale=1 / 1000) as stack:
        keys = seed()
        others = 200 - 3 - 4
        for _ in range(others):  # another workload of the account's takes every unreserved execution
            stack.concurrency.acquire("another-workload", wait=True)

        def give_back() -> None:
            until = time.monotonic() + 60
            while not any(name.startswith("Validate") for name in stack.concurrency.throttled) and time.monotonic() < until:
                time.sleep(0.05)
            time.sleep(0.5)
            for _ in range(others):
                stack.concurrency.release("another-workload")

        threading.Thread(target=give_back, daemon=True).start()
        ex = stack.run(copy_job(), timeout=180)
        assert ex.status == "SUCCEEDED", (failed_tasks(ex.events), ex.description.get("cause"), stack.describe())
        throttled = {name.rstrip("0123456789ABCDEF"): n for name, n in stack.concurrency.throttled.items()}
        assert throttled.get("Validate", 0) > 0, throttled  # the workload did hold the unreserved rest
        assert not throttled.get("Lister") and not throttled.get("Worker"), throttled
        job_id = json.loads(ex.description["output"])["job_id"]
        r = report(stack, job_id)
        assert (r["listed"], r["succeeded"], r["failed"]) == (N, N, 0), stack.describe()
        assert copied(stack) == sorted("out/" + k[3:] for k in keys)


def test_a_batch_that_needs_three_invocations_counts_what_each_finished_and_copies_every_object_once(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 9 s worker with two threads, 30 objects of 1 s each in one batch (15 s of work, 5.5 s a window): each invocation
    counts what it finished and hands the rest on as a batch of its own (a child), so nothing is redone and every object
    is copied once. The margins (3.5 s, and 1.75 s to count and hand on) leave room for a loaded CI machine."""
    real = FastS3Store.copy_object

    def slow_copy(self: FastS3Store, *args: Any, **kwargs: Any) -> str:
        time.sleep(1.0)
        return str(real(self, *args, **kwargs))

    monkeypatch.setattr(FastS3Store, "copy_object", slow_copy)
    env = {"S3BULK_POLL_SECONDS": "30", "S3BULK_WORK_MARGIN_S": "3.5", "S3BULK_CONCURRENCY": "2", "S3BULK_REQUEST_CONCURRENCY": "2"}
    with StackOnMoto(template, buckets=(SRC, DST), env=env, timeouts={"Worker": 9}, pollers=1) as stack:
        keys = seed()[:30]
        for key in seed()[30:]:
            stack.s3.delete_object(Bucket=SRC, Key=key)
        ex = stack.run({**copy_job(batch_size=30), "job_id": "split-batch"}, timeout=120)
        assert ex.status == "SUCCEEDED", (ex.description.get("cause"), stack.describe())
        [worker] = [f for f in stack.functions.values() if f.name.startswith("Worker")]
        assert worker.invocations >= 3 and worker.timed_out == 0, stack.describe()  # it ended each itself, in time
        copies = [r for r in stack.fast_requests if r.startswith("CopyObject ")]
        assert len(copies) == 30, f"{len(copies)} COPY requests for 30 objects"
        r = report(stack, "split-batch")
        assert (r["listed"], r["succeeded"], r["failed"]) == (30, 30, 0)
        assert copied(stack) == sorted("out/" + k[3:] for k in keys)
        markers = [
            i
            for i in stack.ddb.scan(TableName=stack.names[next(k for k in stack.names if k.startswith("Ledger") and "." not in k)])["Items"]
            if i["sk"]["S"] == "batch"
        ]
        children = [m for m in markers if "child" in m]
        assert len(markers) >= 3 and len(children) == len(markers) - 1  # a chain: each split once, the last one whole


def _one_copy_hangs(monkeypatch: pytest.MonkeyPatch) -> None:
    real = FastS3Store.copy_object

    def one_hangs(self: FastS3Store, src_bucket: str, src_key: str, *args: Any, **kwargs: Any) -> str:
        if src_key.endswith("obj-0007"):
            time.sleep(STRIKES_WORKER_S + 2)  # past the worker's Timeout: whatever asks this later never reaches S3
        return str(real(self, src_bucket, src_key, *args, **kwargs))

    monkeypatch.setattr(FastS3Store, "copy_object", one_hangs)


# One record per invocation (Lambda ends an invocation whole, so a batch delivered with the hung one would die with it),
# and an 8 s worker that stops starting objects 3 s before its end: a cold environment builds its clients inside its
# first invocation's time, as on AWS, which on a loaded machine took over 4 s. The queue's visibility follows the
# worker's Timeout (the stack sets 6x; just over 1x here, to keep the test short).
DIES_ENV = {
    "S3BULK_POLL_SECONDS": "30",
    "S3BULK_WORK_MARGIN_S": "3",
    "S3BULK_HARD_MARGIN_S": "1.5",
    "S3BULK_CONCURRENCY": "2",
    "S3BULK_REQUEST_CONCURRENCY": "2",
}
# The strike tests' worker: 12 s, so its window stays well over an ordinary copy's time on a loaded machine. At 8 s, with
# the other test worker copying 100,000 objects beside it, a cold environment's first copy (its clients built inside
# it) outlasted half the window at two freezes and an ordinary object beside the hung one failed WorkerTimedOut.
STRIKES_WORKER_S = 12
# The dead-lettered delete's worker: 12 s too. At 8 s, four cold environments starting at once take 3-4.5 s of it here
# (their clients built inside the first invocation); with the other test worker busy beside them, an ordinary batch's
# cold invocation outlasted 8 s, its environment was thrown away, and each of its next four cold tries did the same
# (the abandoned threads still burning the CPU), so two ordinary batches were dead-lettered beside the hung one.
DIES_WORKER_S = 12


def test_an_object_that_outlasts_every_invocation_fails_alone_and_the_rest_of_its_batch_is_counted_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One object's copy outlasts the worker's 12 s on every delivery. 1.5 s before its end the worker stops waiting
    for it: it counts what its batch finished and hands the hung object on with a strike; at the second strike the
    object fails WorkerTimedOut, saying what to change. No invocation need be ended by Lambda, nothing is dead-lettered,
    and every other object is counted once (before, the whole batch was redone five times and reported WorkerDied)."""
    _one_copy_hangs(monkeypatch)
    template = synthesize({**CONTEXT, "worker_batch_size": 1})
    with StackOnMoto(
        template, buckets=(SRC, DST), env=DIES_ENV, timeouts={"Worker": STRIKES_WORKER_S}, visibility_scale=(STRIKES_WORKER_S + 1) / 3600
    ) as stack:
        keys = seed()
        began = time.monotonic()
        ex = stack.run({**copy_job(batch_size=5), "job_id": "object-outlasts"}, timeout=180)
        assert ex.description.get("error") == "TooManyFailures", (ex.description.get("cause"), stack.describe())
        r = report(stack, "object-outlasts")
        assert (r["listed"], r["succeeded"], r["failed"]) == (N, N - 1, 1), (r["failures"][:2], stack.describe())
        [failure] = r["failures"]
        assert (failure["key"], failure["error"]) == ("in/b/obj-0007", "WorkerTimedOut")
        assert "still in flight when 2 worker invocations had to end" in failure["message"] and "worker_timeout_s" in failure["message"]
        # Every other object once. The hung copy itself may land later, from the thread the worker stopped waiting
        # for (as on AWS, where a frozen environment's thread goes on in its next invocation): it is reported failed.
        assert sorted(set(copied(stack)) - {"out/b/obj-0007"}) == sorted("out/" + k[3:] for k in keys if not k.endswith("obj-0007"))
        [counter] = [s for s in stack.sources if s.fn.name.startswith("DeadLetterCounter")]
        assert counter.stats.records == 0, stack.describe()  # the batch ended counted, not dead-lettered
        assert stack.queue_depths() == {q: 0 for q in stack.queue_depths()}
        print(f"ended in {time.monotonic() - began:.0f} s")


def test_a_move_batch_with_an_object_that_outlasts_every_invocation_moves_the_rest_once_and_keeps_that_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A move is handed on in part as a copy is: near the worker's end, the copies it confirmed have their sources
    deleted and are counted, and the hung object goes on with a strike until it fails WorkerTimedOut alone, its
    source kept. Nothing is dead-lettered (before, the whole batch was redone five times and reported WorkerDied)."""
    _one_copy_hangs(monkeypatch)
    template = synthesize({**CONTEXT, "worker_batch_size": 1, "delete_buckets": SRC})
    with StackOnMoto(
        template, buckets=(SRC, DST), env=DIES_ENV, timeouts={"Worker": STRIKES_WORKER_S}, visibility_scale=(STRIKES_WORKER_S + 1) / 3600
    ) as stack:
        keys = seed()
        began = time.monotonic()
        ex = stack.run({**copy_job(batch_size=5), "operation": "move", "job_id": "move-outlasts"}, timeout=180)
        assert ex.description.get("error") == "TooManyFailures", (ex.description.get("cause"), stack.describe())
        r = report(stack, "move-outlasts")
        assert (r["listed"], r["succeeded"], r["failed"]) == (N, N - 1, 1), (r["failures"][:2], stack.describe())
        [failure] = r["failures"]
        assert (failure["key"], failure["error"]) == ("in/b/obj-0007", "WorkerTimedOut")
        left = sorted(o["Key"] for o in stack.s3.list_objects_v2(Bucket=SRC).get("Contents", []))
        assert left == ["in/b/obj-0007"]  # every object counted moved is gone from the source; the failed one is kept
        assert set(copied(stack)) >= {"out/" + k[3:] for k in keys if k != "in/b/obj-0007"}
        [counter] = [s for s in stack.sources if s.fn.name.startswith("DeadLetterCounter")]
        assert counter.stats.records == 0, stack.describe()  # the batch ended counted, not dead-lettered
        assert stack.queue_depths() == {q: 0 for q in stack.queue_depths()}
        print(f"ended in {time.monotonic() - began:.0f} s")


def test_a_delete_batch_whose_worker_is_ended_at_its_timeout_on_every_delivery_is_counted_and_the_job_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A delete's batch is one DeleteObjects request and cannot be split: when that request hangs past the worker's
    Timeout on every delivery, Lambda ends each invocation; after five receives SQS dead-letters the batch, the
    dead-letter counter counts its objects failed (WorkerDied, saying what to change), and the job ends with an exact
    report instead of waiting for a batch that never comes back."""
    real = FastS3Store.delete_objects

    def hangs(self: FastS3Store, bucket: str, keys: Any, *args: Any, **kwargs: Any) -> Any:
        if any(str(k).endswith("obj-0007") for k in keys):
            time.sleep(DIES_WORKER_S + 2)  # past the worker's Timeout: whatever asks this later never reaches S3
        return real(self, bucket, keys, *args, **kwargs)

    monkeypatch.setattr(FastS3Store, "delete_objects", hangs)
    template = synthesize({**CONTEXT, "worker_batch_size": 1, "delete_buckets": SRC})
    with StackOnMoto(
        template, buckets=(SRC, DST), env=DIES_ENV, timeouts={"Worker": DIES_WORKER_S}, visibility_scale=(DIES_WORKER_S + 1) / 3600
    ) as stack:
        seed()
        began = time.monotonic()
        job = {"operation": "delete", "source": {"bucket": SRC, "prefix": "in/"}, "options": {"batch_size": 5}, "job_id": "worker-dies"}
        ex = stack.run(job, timeout=180)
        assert ex.description.get("error") == "TooManyFailures", (ex.description.get("cause"), stack.describe())
        [worker] = [f for f in stack.functions.values() if f.name.startswith("Worker")]
        # Lambda ended the hung batch's invocations; on a loaded machine a delivery may also hand it back unstarted
        # (too little time left to start it), so not every one of its five receives ends in a kill.
        assert worker.timed_out >= 1, stack.describe()
        [counter] = [s for s in stack.sources if s.fn.name.startswith("DeadLetterCounter")]
        assert counter.stats.records >= 1, stack.describe()  # the hung batch reached the dead-letter queue and was counted there
        r = report(stack, "worker-dies")
        assert (r["listed"], r["failed"], r["succeeded"]) == (N, 5, N - 5), (r["failures"][:2], stack.describe())
        assert {f["error"] for f in r["failures"]} == {"WorkerDied"} and any(f["key"].endswith("obj-0007") for f in r["failures"])
        assert "raise worker_timeout_s or worker_memory_mb" in r["failures"][0]["message"]
        left = sorted(o["Key"] for o in stack.s3.list_objects_v2(Bucket=SRC).get("Contents", []))
        assert left == sorted(f["key"] for f in r["failures"])  # every object counted deleted is gone; the dead batch's are all there
        assert stack.queue_depths() == {q: 0 for q in stack.queue_depths()}  # nothing left in the dead-letter queue either
        print(f"ended in {time.monotonic() - began:.0f} s")


def test_an_object_whose_multipart_copy_outlasts_an_invocation_goes_on_in_the_next_and_lands_byte_exact(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 61 MiB object in 5 MiB parts (13), each part copy slowed to 3 s, through a 12 s worker that starts nothing with
    under 10 s left: the first invocation copies one pool's worth of parts (8) and must pause, whatever its cold start. Each pauses the copy before its deadline (the parts started land), counts nothing for it and hands
    it on in a child batch with its open upload; the next one lists the parts the upload holds and copies the rest."""
    real = FastS3Store.upload_part_copy
    copies: list[int] = []

    def slow(self: FastS3Store, *args: Any, **kwargs: Any) -> Any:
        time.sleep(3)
        copies.append(args[5])  # the part number
        return real(self, *args, **kwargs)

    monkeypatch.setattr(FastS3Store, "upload_part_copy", slow)
    env = {"S3BULK_POLL_SECONDS": "30", "S3BULK_WORK_MARGIN_S": "10", "S3BULK_CONCURRENCY": "2", "S3BULK_REQUEST_CONCURRENCY": "2"}
    with StackOnMoto(template, buckets=(SRC, DST), env=env, timeouts={"Worker": 12}, visibility_scale=13 / 3600) as stack:
        body = bytes(range(256)) * (61 * 1024 * 1024 // 256)
        stack.s3.put_object(Bucket=SRC, Key="in/big", Body=body, Metadata={"m": "1"})
        stack.s3.put_object(Bucket=SRC, Key="in/small", Body=b"small")
        options = {"multipart_threshold": 5 * 1024 * 1024, "part_size": 5 * 1024 * 1024}
        ex = stack.run({**copy_job(**options), "job_id": "big-copy"}, timeout=240)
        assert ex.status == "SUCCEEDED", (ex.description.get("cause"), stack.describe())
        r = report(stack, "big-copy")
        assert (r["listed"], r["succeeded"], r["failed"], r["bytes"]) == (2, 2, 0, len(body) + 5), r["failures"][:2]
        got = stack.s3.get_object(Bucket=DST, Key="out/big")
        assert got["Body"].read() == body and got["Metadata"] == {"m": "1"}
        assert sorted(copies) == list(range(1, 14))  # each part copied once, over several invocations
        [worker] = [f for f in stack.functions.values() if f.name.startswith("Worker")]
        assert worker.invocations >= 2 and worker.timed_out == 0, stack.describe()  # paused in time, never killed
        assert stack.s3.list_multipart_uploads(Bucket=DST).get("Uploads", []) == []


def test_a_relayed_object_that_outlasts_an_invocation_pauses_and_goes_on_from_its_upload_byte_exact(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relay (GET then PUT through the worker) of 136 MiB in 8 MiB parts (17), each part's upload slowed to 3 s, 4 on
    the wire: a 24 s worker that starts nothing with under 14 s left sends about 13 parts, then pauses (the parts on the
    wire land, the upload stays open) and hands the object on; the next invocation asks ListParts what the upload holds,
    reads the source from the first byte it lacks and sends the rest. Each part once; the object's CRC-32 checked whole."""
    real = FastS3Store.upload_part
    parts: list[int] = []

    def slow(self: FastS3Store, bucket: str, key: str, upload_id: str, number: int, *args: Any, **kwargs: Any) -> str:
        time.sleep(3)
        parts.append(number)
        return str(real(self, bucket, key, upload_id, number, *args, **kwargs))

    monkeypatch.setattr(FastS3Store, "upload_part", slow)
    env = {"S3BULK_POLL_SECONDS": "30", "S3BULK_WORK_MARGIN_S": "14", "S3BULK_CONCURRENCY": "2", "S3BULK_REQUEST_CONCURRENCY": "2"}
    with StackOnMoto(template, buckets=(SRC, DST), env=env, timeouts={"Worker": 24}, visibility_scale=25 / 3600) as stack:
        body = bytes(range(256)) * (136 * 1024 * 1024 // 256)
        stack.s3.put_object(Bucket=SRC, Key="in/big", Body=body, Metadata={"m": "1"})
        ex = stack.run({**copy_job(transfer="relay"), "job_id": "big-relay"}, timeout=240)
        assert ex.status == "SUCCEEDED", (ex.description.get("cause"), stack.describe())
        r = report(stack, "big-relay")
        assert (r["listed"], r["succeeded"], r["failed"], r["bytes"]) == (1, 1, 0, len(body)), r["failures"][:2]
        got = stack.s3.get_object(Bucket=DST, Key="out/big")
        assert got["Body"].read() == body and got["Metadata"] == {"m": "1"}
        assert sorted(parts) == list(range(1, 18))  # each part sent once, over several invocations
        [worker] = [f for f in stack.functions.values() if f.name.startswith("Worker")]
        assert worker.invocations >= 2 and worker.timed_out == 0, stack.describe()  # paused in time, never killed
        assert stack.s3.list_multipart_uploads(Bucket=DST).get("Uploads", []) == []


class _SlowFunction:
    """A function whose invocation outlasts its queue's scaled visibility timeout (but not its own Timeout)."""

    name = "Slow"
    timeout_s = 6.0
    recursive_loop = "Terminate"

    def __init__(self) -> None:
        self.bodies: list[str] = []
        self.lock = threading.Lock()

    def invoke(self, event: dict[str, Any], dies_after: int | None = None, **kwargs: Any) -> dict[str, Any]:
        with self.lock:
            self.bodies += [r["body"] for r in event["Records"]]
        time.sleep(2.5)
        return {"batchItemFailures": []}


def test_a_record_is_never_delivered_again_while_its_invocation_still_runs() -> None:
    """On AWS a queue's visibility timeout is at least six times its function's Timeout (the stack sets it so), so no
    second poller receives a record its invocation still works. The harness scales visibility timeouts down for test
    time (here to 1 s) yet runs functions on their own Timeouts: it holds each record it delivers for its function's
    Timeout. Without the hold, a 2.5 s invocation's record came back to the second poller at 1 s (the same batch
    worked twice at once), and the first invocation's delete, holding a stale receipt handle, left it queued."""
    from moto import mock_aws

    from s3bulk.testing.stack.event_source import SqsEventSource
    from s3bulk.testing.stack.faults import Faults

    with mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="work", Attributes={"VisibilityTimeout": "1"})["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        fn = _SlowFunction()
        source = SqsEventSource(sqs, url, arn, fn, {"BatchSize": 1}, Faults(), pollers=2)  # type: ignore[arg-type]
        for i in range(3):
            sqs.send_message(QueueUrl=url, MessageBody=f"batch-{i}")
        source.start()
        try:
            deadline = time.monotonic() + 30
            while source.stats.deleted < 3 and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(1.5)  # past the scaled visibility: a record not deleted would be received again by now
        finally:
            source.stop()
        assert sorted(fn.bodies) == ["batch-0", "batch-1", "batch-2"], fn.bodies
        assert (source.stats.records, source.stats.deleted) == (3, 3)
        attrs = sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        )
        assert attrs["Attributes"] == {"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0"}
