"""The stack's handlers under DynamoDB conflicts, returned batches and batches that cannot start: counts stay exact.

Runs the real handlers on moto (the `aws` fixture of test_handlers.py). DynamoDB never
produces TransactionConflict on moto, so a botocore before-send hook injects it on the
handlers' own DynamoDB clients, before the write happens, as DynamoDB would.
"""

from __future__ import annotations

import io
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse

from functions.finalize import handler as finalize_handler
from functions.lister import handler as lister_handler
from functions.worker import handler as worker_handler
from s3bulk.aws.completion import Completion, await_step, notify_if_complete, progress_step
from s3bulk.aws.ledger import BatchCounts, DynamoLedger
from s3bulk.aws.messages import BatchMessage
from s3bulk.aws.reportbucket import ReportBucket
from tests.integration.aws_harness import Context, one_call_at_a_time, receive, sqs_event
from tests.integration.test_handlers import MAX_RECEIVES, REPORTS, TABLE, Aws, aws, dest_bodies, list_all, seed, start, work_all

__all__ = ["aws"]  # the fixture, imported for pytest

WRITES = ("UpdateItem", "PutItem", "TransactWriteItems")


class Conflicts:
    """Answers a share of DynamoDB writes with a conflict instead of making them (seeded, counted).

    The hook is on `before-call`, whose answer replaces the call: on `before-send` every
    handler runs, so in-process moto would make the write and the injected error would
    then hide it, which no real conflict does.
    """

    def __init__(self, share: float, seed: int = 7) -> None:
        self.share = share
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.injected: Counter[str] = Counter()
        self.passed: Counter[str] = Counter()

    def __call__(self, model: Any, **_: Any) -> tuple[Any, dict[str, Any]] | None:
        op = str(model.name)
        if op not in WRITES:
            return None
        with self.lock:
            hit = self.rng.random() < self.share
            (self.injected if hit else self.passed)[op] += 1
        if not hit:
            return None
        meta = {"HTTPStatusCode": 400, "RequestId": "conflict", "HTTPHeaders": {}, "RetryAttempts": 0}
        if op == "TransactWriteItems":
            parsed = {
                "Error": {"Code": "TransactionCanceledException", "Message": "reasons [None, TransactionConflict]"},
                "CancellationReasons": [{"Code": "None"}, {"Code": "TransactionConflict", "Message": "Transaction is ongoing"}],
            }
        else:
            parsed = {"Error": {"Code": "TransactionConflictException", "Message": "Transaction is ongoing for the item"}}
        return AWSResponse("https://dynamodb.invalid", 400, {}, None), {**parsed, "ResponseMetadata": meta}  # type: ignore[arg-type]

    def attach(self, ledger: DynamoLedger) -> None:
        ledger.client.meta.events.register("before-call.dynamodb", self)


def _ledgers() -> list[DynamoLedger]:
    worker = worker_handler.service()
    return [lister_handler.deps()["ledger"], worker.ledger, finalize_handler.deps()[0]]


def test_a_job_with_conflicts_on_a_fifth_of_dynamodb_writes_finishes_with_exact_counts(aws: Aws) -> None:
    expected = seed(aws, 700)
    job_id = start(aws)
    conflicts = Conflicts(0.2)
    for ledger in _ledgers():
        conflicts.attach(ledger)
    list_all(job_id)
    deliveries = work_all(aws)
    assert all(not d.failed_ids for d in deliveries)  # no conflict surfaced as a returned batch
    rec = aws.ledger.load(job_id)
    assert {k: rec.counters[k] for k in ("listed", "succeeded", "failed", "pending")} == {
        "listed": 700,
        "succeeded": 700,
        "failed": 0,
        "pending": 0,
    }
    result = finalize_handler.handler({"job_id": job_id}, Context())
    assert (result["status"], result["failed"]) == ("succeeded", 0)
    assert conflicts.injected["TransactWriteItems"] >= 1 and conflicts.injected["UpdateItem"] >= 1
    assert dest_bodies(aws) == {"out/" + k[3:]: v for k, v in expected.items()}


def test_concurrent_finishes_and_redeliveries_under_conflicts_count_each_batch_exactly_once(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    one_call_at_a_time(monkeypatch)
    job_id = start(aws)
    ledger = DynamoLedger(aws.ddb, TABLE, sleep=lambda s: time.sleep(min(s, 0.005)))
    conflicts = Conflicts(0.3, seed=11)
    conflicts.attach(ledger)
    aws.ledger.plan(job_id, [("", None)])  # one listing shard that sent 200 batches
    aws.ledger.checkpoint(job_id, 0, 0, None, True, scanned=1000, listed=1000, listed_bytes=0, skipped=0, batches=200)
    batches = [f"{i:09d}-000" for i in range(200)]
    work = batches + batches[::3]  # a third delivered twice
    random.Random(3).shuffle(work)
    with ThreadPoolExecutor(16) as pool:
        counted = list(pool.map(lambda b: ledger.finish_batch(job_id, b, BatchCounts(succeeded=5, bytes=50)), work))
    assert counted.count(True) == 200 and counted.count(False) == len(work) - 200
    c = aws.ledger.load(job_id).counters
    assert (c["succeeded"], c["bytes"], c["pending"]) == (1000, 10_000, 0)
    assert conflicts.injected["TransactWriteItems"] > 10
    keys = {i["pk"]["S"] for i in aws.ddb.scan(TableName=TABLE)["Items"]}
    counters = {k for k in keys if k.startswith(f"job#{job_id}#count#")}
    markers = {k for k in keys if k.startswith(f"job#{job_id}#batch#")}
    assert len(counters) > 16 and len(markers) == 200  # spread over partition keys of their own, not one hot key


def test_a_batch_that_raised_comes_back_in_seconds_not_after_the_visibility_timeout(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    seed(aws, 20)
    job_id = start(aws)
    list_all(job_id)
    [message] = receive(aws.sqs, aws.queue_url, 1)  # the harness's receive hides it for 30 s
    worker = worker_handler.service()
    monkeypatch.setattr(worker, "work", _raising(RuntimeError("transient")))
    out = worker_handler.handler(sqs_event([message], aws.queue_arn), Context())
    assert [f["itemIdentifier"] for f in out["batchItemFailures"]] == [message["MessageId"]]
    assert receive(aws.sqs, aws.queue_url, 1) == []
    time.sleep(10.5)  # RETURN_BASE_S for a first delivery
    [again] = receive(aws.sqs, aws.queue_url, 1)
    assert (again["MessageId"], again["Attributes"]["ApproximateReceiveCount"]) == (message["MessageId"], "2")


def test_a_batch_that_never_had_time_to_start_is_sent_again_instead_of_dead_lettered(aws: Aws) -> None:
    expected = seed(aws, 40)
    job_id = start(aws)
    list_all(job_id)
    # Out of time on every delivery: receive 1..MAX_RECEIVES, each handed back unstarted.
    for attempt in range(1, MAX_RECEIVES + 1):
        [message] = _receive_now(aws)
        assert message["Attributes"]["ApproximateReceiveCount"] == str(attempt)
        out = worker_handler.handler(sqs_event([message], aws.queue_arn), Context([1.0]))
        if attempt < MAX_RECEIVES:
            assert out["batchItemFailures"] == [{"itemIdentifier": message["MessageId"]}]
        else:
            assert out["batchItemFailures"] == []  # sent again as a new message, this one deleted
            aws.sqs.delete_message(QueueUrl=aws.queue_url, ReceiptHandle=message["ReceiptHandle"])
    assert receive(aws.sqs, aws.dlq_url) == []
    deliveries = work_all(aws)  # time enough now
    assert sum(len(d.message_ids) for d in deliveries) == 1
    rec = aws.ledger.load(job_id)
    assert (rec.counters["succeeded"], rec.counters["failed"], rec.counters["pending"]) == (40, 0, 0)
    assert dest_bodies(aws) == {"out/" + k[3:]: v for k, v in expected.items()}


class _Recorder(Completion):
    """A Completion that records the tokens it is asked to send instead of calling Step Functions."""

    def __init__(self, sent: list[str]) -> None:
        super().__init__(client=None)
        self.sent = sent

    def send(self, token: str, job_id: str) -> bool:
        self.sent.append(token)
        return True


def recording(sent: list[str]) -> Callable[[], Completion]:
    """A factory of Completions that each record into `sent`."""
    return lambda: _Recorder(sent)


def test_the_worker_counting_the_last_batch_resumes_the_waiting_execution_once(aws: Aws) -> None:
    seed(aws, 30)
    job_id = start(aws, batch_size=10)
    list_all(job_id)
    sent: list[str] = []
    recorder = recording(sent)

    worker = worker_handler.service()
    worker.completion = recorder()
    aws.ledger.await_completion(job_id, "token-1")
    assert notify_if_complete(job_id, aws.ledger, recorder()) is False  # three batches still pending
    work_all(aws)
    assert sent == ["token-1"]  # the last of three batches, not the first two
    assert aws.ledger.progress(job_id).complete


def test_a_job_the_breaker_stopped_before_its_execution_waited_is_reported_when_the_wait_begins_not_at_its_safety_net(
    aws: Aws,
) -> None:
    """The failure breaker trips while the listing runs: the worker that stops the job finds no token to send. The
    listing then ends, and AwaitCompletion stores its token: its own check sends it, since nothing else will before
    the wait's safety net (poll_seconds, 600 s by default), and the job's batches are held uncounted, never complete."""
    seed(aws, 30)
    job_id = start(aws, batch_size=10)
    list_all(job_id)
    assert aws.ledger.stop(job_id, "failure breaker: 1,000 of 1,000 failed (AccessDenied)", tripped=True)
    sent: list[str] = []
    recorder = recording(sent)

    assert not aws.ledger.progress(job_id).complete  # three batches still pending
    assert await_step(job_id, "token-2", ledger=aws.ledger, completion=recorder()) == {"job_id": job_id, "resumed": True}
    assert sent == ["token-2"]
    # A running job's wait is not ended by it.
    other = start(aws, batch_size=10)
    list_all(other)
    assert await_step(other, "token-3", ledger=aws.ledger, completion=recorder())["resumed"] is False and sent == ["token-2"]


def _raising(exc: BaseException) -> Callable[..., Any]:
    def work(*_: Any, **__: Any) -> Any:
        raise exc

    return work


def _receive_now(aws: Aws) -> list[dict[str, Any]]:
    """Receive, waiting out the short return delay (2 s for an unstarted batch)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        got = aws.sqs.receive_message(QueueUrl=aws.queue_url, MaxNumberOfMessages=1, AttributeNames=["All"], VisibilityTimeout=30)
        if got.get("Messages"):
            return list(got["Messages"])
        time.sleep(0.25)
    return []


def test_a_step_that_failed_for_good_after_listing_was_planned_stops_the_job_resumably_with_its_report(aws: Aws) -> None:
    """ReportFailure for a step that kept failing once batches may be queued: the report says stopped with the error and
    the counts so far, and the job is STOPPED (its queued batches held for s3bulk resume), not FAILED and cancelled."""
    seed(aws, 30)
    job_id = start(aws)
    list_all(job_id)
    work_all(aws)
    error = {"Error": "Lambda.Unknown", "Cause": json.dumps({"errorMessage": "the lister ran out of memory", "errorType": "Runtime"})}
    result = finalize_handler.handler({"job_id": job_id, "error": error}, Context())
    assert (result["status"], result["over_threshold"]) == ("stopped", False)
    report = json.loads(aws.s3.get_object(Bucket=REPORTS, Key=f"jobs/{job_id}/report.json")["Body"].read())
    assert (report["status"], report["succeeded"]) == ("stopped", 30)
    assert report["error"] == f"Lambda.Unknown: the lister ran out of memory; fix the cause, then s3bulk resume {job_id}"
    assert aws.ledger.load(job_id).status == "STOPPED"


def test_a_step_that_failed_before_listing_was_planned_fails_the_job(aws: Aws) -> None:
    job_id = start(aws)  # no PlanListing yet: nothing can be queued, nothing to resume past
    error = {"Error": "NoSuchBucket", "Cause": "The specified bucket does not exist"}
    result = finalize_handler.handler({"job_id": job_id, "error": error}, Context())
    assert (result["status"], result["over_threshold"]) == ("failed", True)
    assert aws.ledger.load(job_id).status == "FAILED"


def test_the_report_holds_only_the_failures_of_the_try_that_was_counted(aws: Aws) -> None:
    """Two tries of one batch can both finish (a duplicate delivery, a redo after a worker died before its count).
    A losing try's failures part must not reach the report: it empties its parts, and the report reads only the
    counted try's even when that cleanup never happened."""
    job_id = start(aws)
    reports = ReportBucket(aws.s3, REPORTS)
    ledger = aws.ledger
    spool = io.StringIO('{"key": "in/a", "outcome": "succeeded"}\n')
    # Batch 1: try A fails an object and loses the count to try B, which failed nothing.
    reports.put_failures(job_id, "b1", [{"key": "in/a", "error": "ValueError", "message": "lost"}], "tryA")
    reports.put_keys(job_id, "b1", spool, "tryA")
    reports.put_keys(job_id, "b1", spool, "tryB")
    assert ledger.finish_batch(job_id, "b1", BatchCounts(succeeded=1), attempt="tryB")
    assert not ledger.finish_batch(job_id, "b1", BatchCounts(failed=1), attempt="tryA")
    reports.discard(job_id, "b1", "tryA")
    # Batch 2: try C wrote a failure and died before counting or cleaning up; try D counted its own failure.
    reports.put_failures(job_id, "b2", [{"key": "in/b", "error": "Stale", "message": "never counted"}], "tryC")
    reports.put_failures(job_id, "b2", [{"key": "in/b", "error": "AccessDenied", "message": "counted"}], "tryD")
    assert ledger.finish_batch(job_id, "b2", BatchCounts(failed=1), attempt="tryD")
    # A lister's part (bad manifest rows) has no try: always read.
    reports.put_failures(job_id, "0000-rows", [{"key": "row 7", "error": "BadRow", "message": "no key"}])
    assert sorted(f["error"] for f in reports.iter_failures(job_id, ledger.counted_attempts)) == ["AccessDenied", "BadRow"]
    assert sorted(f["error"] for f in reports.iter_failures(job_id)) == ["AccessDenied", "BadRow", "Stale"]  # unfiltered
    parts = aws.s3.list_objects_v2(Bucket=REPORTS, Prefix=f"jobs/{job_id}/keys/")["Contents"]
    assert {o["Key"].rsplit("/", 1)[1]: o["Size"] > 0 for o in parts} == {"b1~tryA.jsonl.gz": False, "b1~tryB.jsonl.gz": True}
    assert reports.keys_part(job_id, "b1", "tryB").decode() == spool.getvalue()  # gzip'd, read back as written
    assert ledger.counted_attempts(job_id, ["b1", "b2", "b3"]) == {"b1": "tryB", "b2": "tryD"}


def test_a_worker_out_of_time_mid_batch_counts_what_it_did_and_a_redelivery_sends_the_rest_it_never_sent(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Time runs short after some objects: those are counted and the rest is handed on as a child batch. The worker
    then dies before it sends the child (after the count): the parent, delivered again, finds its marker and sends it."""
    expected = seed(aws, 40)
    job_id = start(aws, batch_size=40)
    list_all(job_id)
    [message] = _receive_now(aws)
    worker = worker_handler.service()
    sent = worker.returns.requeue if worker.returns is not None else None
    assert sent is not None
    monkeypatch.setattr(worker.returns, "requeue", _raising(RuntimeError("the invocation ended here")))
    # 600 s at the start, then under the 150 s margin after about a dozen objects' checks.
    out = worker_handler.handler(sqs_event([message], aws.queue_arn), Context([600.0] * 12 + [100.0]))
    assert out["batchItemFailures"] == [{"itemIdentifier": message["MessageId"]}]  # it raised after the count
    counted = aws.ledger.load(job_id).counters
    assert 0 < counted["succeeded"] < 40 and counted["pending"] == 1, counted  # the child is pending, not lost
    monkeypatch.setattr(worker.returns, "requeue", sent)
    aws.sqs.change_message_visibility(QueueUrl=aws.queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    work_all(aws)  # the parent again (already counted: it sends its child), then the child
    rec = aws.ledger.load(job_id)
    assert (rec.counters["succeeded"], rec.counters["failed"], rec.counters["pending"]) == (40, 0, 0), rec.counters
    assert dest_bodies(aws) == {"out/" + k[3:]: v for k, v in expected.items()}


def test_until_listing_is_done_a_completion_check_reads_the_job_item_alone_and_then_every_shard_by_its_own_key(aws: Aws) -> None:
    job_id = start(aws)
    calls: list[str] = []
    aws.ddb.meta.events.register("before-call.dynamodb", lambda model, **_: calls.append(model.name))
    aws.ledger.plan(job_id, [("", "m"), ("m", None)])
    aws.ledger.checkpoint(job_id, 0, 0, None, True, scanned=10, listed=10, listed_bytes=0, skipped=0, batches=2)
    aws.ledger.checkpoint(job_id, 1, 0, "c", False, scanned=10, listed=10, listed_bytes=0, skipped=0, batches=2)
    aws.ledger.finish_batch(job_id, "b1", BatchCounts(succeeded=5))
    calls.clear()
    p = aws.ledger.progress(job_id)
    assert (calls, p.listing_done, p.complete) == (["GetItem"], False, False)  # one item while a shard still lists
    aws.ledger.checkpoint(job_id, 1, 1, None, True, scanned=0, listed=0, listed_bytes=0, skipped=0, batches=0)
    assert not aws.ledger.checkpoint(job_id, 1, 1, None, True, scanned=0, listed=0, listed_bytes=0, skipped=0, batches=0)
    for b in ("b2", "b3", "b4"):
        aws.ledger.finish_batch(job_id, b, BatchCounts(succeeded=5))
    calls.clear()
    p = aws.ledger.progress(job_id)
    assert calls == ["GetItem", "Query", "BatchGetItem"]
    assert (p.listing_done, p.pending, p.complete, p.counters["succeeded"]) == (True, 0, True, 20)
    assert aws.ledger.load(job_id).listing_done  # a shard's last page recorded twice counts it done once


class _Reads:
    """The DynamoDB items a client's reads touch: GetItem 1, Query what it returns, BatchGetItem the keys it asks."""

    def __init__(self, client: Any) -> None:
        self.client, self.items = client, 0

    def __getattr__(self, name: str) -> Any:
        call = getattr(self.client, name)
        if name not in ("get_item", "query", "batch_get_item"):
            return call

        def counted(**kwargs: Any) -> Any:
            answer = call(**kwargs)
            if name == "get_item":
                self.items += 1
            elif name == "query":
                self.items += len(answer.get("Items", []))
            else:
                self.items += sum(len(v["Keys"]) for v in kwargs["RequestItems"].values())
            return answer

        return counted


def test_with_40_listing_shards_a_batchs_completion_check_reads_two_items_until_its_counter_shard_drains(aws: Aws) -> None:
    """Each counter shard's `pending` counts exactly its own batches (a page's checkpoint adds each on the shard that
    will count it; a child moves it to its own), so after each counted batch the worker reads the job item and its own
    counter shard, and every counter only when its shard drained: at most once per shard, whatever the listing shards.
    And the job is seen complete at its last batch, never before."""
    job_id = start(aws)
    reads = _Reads(aws.ddb)
    ledger = DynamoLedger(reads, TABLE)
    ranges: list[tuple[str, str | None]] = [(f"k{i:02d}" if i else "", f"k{i + 1:02d}" if i < 39 else None) for i in range(40)]
    assert ledger.plan(job_id, ranges) == 40
    batches = []
    for shard in range(40):
        for page in range(2):
            ids = [f"{shard:04d}-{page:09d}-{n:03d}" for n in range(3)]
            assert ledger.checkpoint(
                job_id,
                shard,
                page,
                None if page else "c",
                page == 1,
                scanned=30,
                listed=30,
                listed_bytes=0,
                skipped=0,
                batches=3,
                batch_ids=ids,
            )
            batches += ids
    rng = random.Random(5)
    rng.shuffle(batches)
    children = {b: f"{b}~{rng.getrandbits(32):08x}" for b in batches[::4]}  # a quarter hand their rest on
    work = [(b, children.get(b, "")) for b in batches] + [(c, "") for c in children.values()]
    rng.shuffle(work)
    work.sort(key=lambda w: w[0] in children.values())  # a child after its parent (any order among the rest)
    full, complete_at = 0, []
    for n, (batch_id, child) in enumerate(work):
        body = BatchMessage(job_id=job_id, batch_id=child, items=[("k", 1, "e")]).encode() if child else ""
        assert ledger.finish_batch(job_id, batch_id, BatchCounts(succeeded=1), child=body)
        reads.items = 0
        progress = ledger.progress(job_id, batch_id=batch_id)
        assert reads.items in (2, 2 + 40 + ledger.shards), reads.items  # job item + own shard, or + every shard item
        full += reads.items > 2
        if progress.complete:
            complete_at.append(n)
    assert complete_at == [len(work) - 1]  # complete at the last batch, never before
    # A full read each time a counter shard drains: once each, and once more for each child that lands on a drained one.
    assert full <= ledger.shards + len(children) < len(work) / 2
    print(f"{len(work)} batches over 40 listing shards: {full} full reads")
    assert ledger.load(job_id).counters["pending"] == 0


def test_objects_no_content_evidence_decided_are_counted_once_per_batch_and_reach_the_stacks_report_counts(aws: Aws) -> None:
    from s3bulk.report import NOTES, Counts

    job_id = start(aws)
    aws.ledger.plan(job_id, [("", None)])
    aws.ledger.checkpoint(job_id, 0, 0, None, True, scanned=30, listed=30, listed_bytes=0, skipped=0, batches=3)
    notes = (("confirmed_by_size_only", 2), ("unchanged_undecided_copied", 1))
    for batch in ("b0", "b1", "b1", "b2"):  # b1 delivered twice: counted once
        aws.ledger.finish_batch(job_id, batch, BatchCounts(succeeded=10, notes=notes if batch != "b2" else ()))
    counts = Counts.of_counters(aws.ledger.load(job_id).counters)
    assert {name: getattr(counts, name) for name in NOTES} == {
        "confirmed_by_size_only": 4,
        "unchanged_undecided_copied": 2,
        "unchanged_by_time_skipped": 0,
    }
    assert counts.succeeded == 30


def test_the_progress_check_sweeps_parked_batches_only_for_a_job_its_owner_ever_capped(aws: Aws) -> None:
    """The sweep reads the job's 32 lease shards: a poll of a job never capped (where nothing is ever parked for room)
    skips it; once capped, even after the cap is lifted (batches parked under it may still wait), every poll sweeps."""
    seed(aws, 30)
    job_id = start(aws, batch_size=10)
    list_all(job_id)
    swept: list[str] = []

    def sweep() -> int:
        swept.append(job_id)
        return 0

    assert not progress_step(job_id, ledger=aws.ledger, sweep=sweep)["complete"] and swept == []
    aws.ledger.set_cap(job_id, 2)
    progress_step(job_id, ledger=aws.ledger, sweep=sweep)
    aws.ledger.set_cap(job_id, None)
    progress_step(job_id, ledger=aws.ledger, sweep=sweep)
    assert swept == [job_id, job_id]
