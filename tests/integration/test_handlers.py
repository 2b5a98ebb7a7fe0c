"""Lister -> queue -> worker -> ledger -> finalize through the real handlers, on moto's S3, SQS and DynamoDB."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import boto3
import pytest
from botocore.awsrequest import AWSResponse, HTTPHeaders
from moto import mock_aws

from functions.batches import SqsBatchRecord
from functions.finalize import handler as finalize_handler
from functions.lister import handler as lister_handler
from functions.validate import handler as validate_handler
from functions.worker import handler as worker_handler
from s3bulk.aws import lister as lister_module
from s3bulk.aws.ledger import RISE_SPACING_S, DynamoLedger
from s3bulk.aws.lister import PAGES_PER_STEP
from s3bulk.aws.reportbucket import ReportBucket
from s3bulk.job import JobError, parse_job
from s3bulk.local.engine import Engine
from s3bulk.s3 import storebase
from s3bulk.s3 import stores as s3store
from s3bulk.s3.ratecontrol import RateControl
from s3bulk.source.shards import list_shard_page
from tests.integration.aws_harness import REGION, Context, create_queues, create_table, pump, receive, sqs_event
from tests.integration.helpers import md5

SRC, DST, REPORTS, TABLE = "src-bucket", "dst-bucket", "report-bucket", "s3bulk-ledger"
N = 2100
PAGE = 250
MAX_RECEIVES = 5


@dataclass
class Aws:
    s3: Any
    sqs: Any
    ddb: Any
    queue_url: str
    queue_arn: str
    dlq_url: str
    ledger: DynamoLedger


def clear_caches() -> None:
    validate_handler.config.cache_clear()
    lister_handler.deps.cache_clear()
    worker_handler.service.cache_clear()
    finalize_handler.deps.cache_clear()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    for k, v in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_EC2_METADATA_DISABLED": "true",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "S3Bulk",
        "POWERTOOLS_SERVICE_NAME": "s3bulk",
    }.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        sqs = boto3.client("sqs", region_name=REGION)
        ddb = boto3.client("dynamodb", region_name=REGION)
        for b in (SRC, DST, REPORTS):
            s3.create_bucket(Bucket=b)
        create_table(ddb, TABLE)
        url, arn, dlq = create_queues(sqs, MAX_RECEIVES)
        env = {
            "S3BULK_TABLE": TABLE,
            "S3BULK_QUEUE_URL": url,
            "S3BULK_REPORT_BUCKET": REPORTS,
            "S3BULK_READ_BUCKETS": f"{SRC},{DST}",
            "S3BULK_WRITE_BUCKETS": DST,
            "S3BULK_DELETE_BUCKETS": SRC,
            "S3BULK_CONCURRENCY": "8",
            "S3BULK_MAX_RECEIVES": str(MAX_RECEIVES),
            "S3BULK_LIST_PAGE_SIZE": str(PAGE),
            # One listing shard: these tests count pages as serial paging does; sharded listing has its own tests.
            "S3BULK_LIST_SHARDS": "1",
            # In-process moto intercepts botocore, not raw sockets; the fast path is tested over real HTTP
            # (moto server and SeaweedFS) in test_keys_moto.py and test_bulk.py.
            "S3BULK_REQUEST_PATH": "botocore",
        }
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        clear_caches()
        yield Aws(s3, sqs, ddb, url, arn, dlq, DynamoLedger(ddb, TABLE))
        clear_caches()


def seed(aws: Aws, n: int = N) -> dict[str, str]:
    out = {}
    for i, key in enumerate(seed_keys(n)):
        body = f"object {i}".encode() * (i % 5)
        aws.s3.put_object(Bucket=SRC, Key=key, Body=body)
        out[key] = md5(body)
    return out


def seed_keys(n: int) -> list[str]:
    return [f"in/{i % 7}/obj-{i:05d}" + (" ü+%" if i % 100 == 0 else "") for i in range(n)]


def start(aws: Aws, operation: str = "copy", **options: Any) -> str:
    """What the state machine does first: Validate, then put the ledger item Validate returned."""
    event: dict[str, Any] = {"operation": operation, "source": {"bucket": SRC, "prefix": "in/"}, "options": options}
    if operation != "delete":
        event["destination"] = {"bucket": DST, "prefix": "out/"}
    out = validate_handler.handler({"job": event}, Context())
    aws.ddb.put_item(TableName=TABLE, Item=out["item"], ConditionExpression="attribute_not_exists(pk)")
    return str(out["job_id"])


def list_all(job_id: str, pages_per_call: int = 2) -> list[dict[str, Any]]:
    """What the state machine does: plan the shards, then invoke the lister on each until it is done,
    each call with time for `pages_per_call` pages."""
    results = []
    for shard in lister_handler.handler({"job_id": job_id}, Context())["shards"]:
        for _ in range(100):
            ctx = Context([600.0] * pages_per_call + [5.0])
            results.append(lister_handler.handler({"job_id": job_id, "shard": shard}, ctx))
            if results[-1]["done"]:
                break
        else:
            raise AssertionError(f"shard {shard} never finished listing")
    return results


def work_all(aws: Aws, remaining: list[float] | None = None) -> list[Any]:
    return list(pump(aws.sqs, aws.queue_url, aws.queue_arn, worker_handler.handler, lambda: Context(list(remaining or [600.0]))))


def dest_bodies(aws: Aws) -> dict[str, str]:
    out = {}
    for page in aws.s3.get_paginator("list_objects_v2").paginate(Bucket=DST, Prefix="out/"):
        for o in page.get("Contents", ()):
            out[o["Key"]] = md5(aws.s3.get_object(Bucket=DST, Key=o["Key"])["Body"].read())
    return out


def test_a_2100_object_copy_runs_end_to_end_with_exact_counts_and_bytes(aws: Aws) -> None:
    expected = seed(aws)
    job_id = start(aws)
    listing = list_all(job_id)
    assert len(listing) > 1  # the lister resumed from its checkpoint across invocations
    assert sum(r["pages"] for r in listing) == -(-N // PAGE)
    deliveries = work_all(aws)
    assert all(not d.failed_ids for d in deliveries)
    rec = aws.ledger.load(job_id)
    assert rec.listing_done
    assert {k: rec.counters[k] for k in ("listed", "succeeded", "failed", "pending")} == {
        "listed": N,
        "succeeded": N,
        "failed": 0,
        "pending": 0,
    }
    assert dest_bodies(aws) == {"out/" + k[3:]: v for k, v in expected.items()}
    result = finalize_handler.handler({"job_id": job_id}, Context())
    assert (result["status"], result["over_threshold"]) == ("succeeded", False)
    report = json.loads(aws.s3.get_object(Bucket=REPORTS, Key=f"jobs/{job_id}/report.json")["Body"].read())
    assert (report["listed"], report["succeeded"], report["failed"], report["failures"]) == (N, N, 0, [])


def test_a_lister_stores_one_intent_and_one_checkpoint_per_step_of_pages_not_per_page(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nine pages in one call: a step of PAGES_PER_STEP (8) and the last one, each one intent PUT and one checkpoint."""
    seed(aws)
    job_id = start(aws)
    calls: dict[str, list[int]] = {"intents": [], "checkpoints": []}
    put_intent, checkpoint = ReportBucket.put_intent, DynamoLedger.checkpoint

    def counted_intent(self: ReportBucket, job: str, intent: Any) -> None:
        calls["intents"].append(intent.pages)
        put_intent(self, job, intent)

    def counted_checkpoint(self: DynamoLedger, *args: Any, **kwargs: Any) -> bool:
        calls["checkpoints"].append(kwargs.get("pages", 1))
        return checkpoint(self, *args, **kwargs)

    monkeypatch.setattr(ReportBucket, "put_intent", counted_intent)
    monkeypatch.setattr(DynamoLedger, "checkpoint", counted_checkpoint)
    [result] = list_all(job_id, pages_per_call=20)
    assert (result["done"], result["pages"]) == (True, -(-N // PAGE))
    assert calls == {"intents": [PAGES_PER_STEP, 1], "checkpoints": [PAGES_PER_STEP, 1]}
    work_all(aws)
    rec = aws.ledger.load(job_id)
    assert (rec.counters["listed"], rec.counters["succeeded"], rec.counters["pending"], rec.counters["batches"]) == (N, N, 0, 9)


def test_a_lister_dead_inside_a_step_lists_its_unsent_pages_again_and_the_job_ends_exact(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lister dies listing the third page of its first step: nothing of the step was stored or sent, so the next call
    lists from the last checkpoint (the plan) and every key is copied once."""
    expected = seed(aws)
    job_id = start(aws)
    real, calls = list_shard_page, {"pages": 0}

    def dies_on_the_third_page(*args: Any, **kwargs: Any) -> Any:
        calls["pages"] += 1
        if calls["pages"] == 3:
            raise RuntimeError("lister killed while listing")
        return real(*args, **kwargs)

    monkeypatch.setattr(lister_module, "list_shard_page", dies_on_the_third_page)
    [shard] = lister_handler.handler({"job_id": job_id}, Context())["shards"]
    with pytest.raises(RuntimeError, match="killed while listing"):
        lister_handler.handler({"job_id": job_id, "shard": shard}, Context([600.0] * 20))
    assert receive(aws.sqs, aws.queue_url) == [] and aws.ledger.list_shard(job_id, shard).page == 0
    assert ReportBucket(aws.s3, REPORTS).intent(job_id, shard) is None
    assert lister_handler.handler({"job_id": job_id, "shard": shard}, Context([600.0] * 20))["done"]
    work_all(aws)
    rec = aws.ledger.load(job_id)
    assert (rec.counters["listed"], rec.counters["succeeded"], rec.counters["pending"], rec.counters["batches"]) == (N, N, 0, 9)
    assert dest_bodies(aws) == {"out/" + k[3:]: v for k, v in expected.items()}


def test_a_duplicate_delivery_is_counted_once(aws: Aws) -> None:
    seed(aws, 600)
    job_id = start(aws)
    list_all(job_id)
    [first] = receive(aws.sqs, aws.queue_url, 1)
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=first["Body"])  # SQS delivered it twice
    aws.sqs.change_message_visibility(QueueUrl=aws.queue_url, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=0)
    work_all(aws)
    rec = aws.ledger.load(job_id)
    assert (rec.counters["succeeded"], rec.counters["pending"]) == (600, 0)
    assert rec.counters["batches"] == 3


def test_a_move_worker_out_of_time_mid_batch_moves_what_it_confirmed_hands_on_the_rest_and_nothing_is_lost(aws: Aws) -> None:
    expected = seed(aws, 500)
    job_id = start(aws, "move", batch_size=250)
    list_all(job_id)
    # First poll: time for ~40 object submissions, then under the 150 s margin.
    first = Context([600.0] * 40 + [100.0])
    polls = iter([first])
    deliveries = list(pump(aws.sqs, aws.queue_url, aws.queue_arn, worker_handler.handler, lambda: next(polls, Context())))
    # The first record was counted for what it moved, its rest sent on as a child batch; the second never started.
    assert len(deliveries[0].message_ids) == 2 and len(deliveries[0].failed_ids) == 1
    rec = aws.ledger.load(job_id)
    assert (rec.counters["succeeded"], rec.counters["failed"], rec.counters["pending"]) == (500, 0, 0)
    assert dest_bodies(aws) == {"out/" + k[3:]: v for k, v in expected.items()}
    assert aws.s3.list_objects_v2(Bucket=SRC).get("KeyCount") == 0


def test_a_lister_crash_between_send_and_checkpoint_resends_without_double_counting(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    seed(aws, 700)
    job_id = start(aws)
    list_with_a_death_before_page_1s_checkpoint(job_id, monkeypatch)
    work_all(aws)
    rec = aws.ledger.load(job_id)
    assert (rec.counters["listed"], rec.counters["succeeded"], rec.counters["pending"]) == (700, 700, 0)
    assert rec.counters["batches"] == 3


def list_with_a_death_before_page_1s_checkpoint(
    job_id: str, monkeypatch: pytest.MonkeyPatch, meanwhile: Callable[[], None] = lambda: None
) -> None:
    """List the job, its lister dying once between sending the step of pages that holds page 1 and recording it
    (`meanwhile` runs then), then again."""
    real = DynamoLedger.checkpoint
    crashes = iter([True])

    def crash_once(self: DynamoLedger, *args: Any, **kwargs: Any) -> bool:
        first = args[2]  # (job_id, shard, page, ...): the step's first page, and kwargs["pages"] of them
        if first <= 1 < first + kwargs.get("pages", 1) and next(crashes, False):
            meanwhile()
            raise RuntimeError("lister killed after sending page 1")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(DynamoLedger, "checkpoint", crash_once)
    with pytest.raises(RuntimeError):
        list_all(job_id, pages_per_call=10)
    list_all(job_id, pages_per_call=10)


def test_a_lister_dead_before_its_checkpoint_on_a_live_prefix_redoes_the_page_it_sent_and_loses_no_key(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys added inside a page's range while its lister lay dead between sending the page and recording it: listing
    the page again would give some batch ids other keys than the ones already queued under them (the ledger counts an
    id once, so keys were dropped). The redo sends the stored page instead: every listed key is copied, counts exact."""
    expected = seed(aws, 700)
    job_id = start(aws, batch_size=60)

    def keys_added() -> None:
        for i in range(5):  # keys sorting inside page 1 (in/2/obj-00352 .. in/4/...), ahead of most of its batches
            aws.s3.put_object(Bucket=SRC, Key=f"in/3/new-{i}", Body=b"late")

    list_with_a_death_before_page_1s_checkpoint(job_id, monkeypatch, keys_added)
    work_all(aws)
    rec = aws.ledger.load(job_id)
    assert (rec.counters["listed"], rec.counters["succeeded"], rec.counters["failed"], rec.counters["pending"]) == (700, 700, 0, 0)
    # Every listed key was copied; the late keys sorted behind the listing's cursor, so this job never listed them.
    assert dest_bodies(aws) == {"out/" + k[3:]: v for k, v in expected.items()}


def test_a_poison_message_ends_in_the_dlq_and_in_the_report(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    seed(aws, 30)
    job_id = start(aws)
    list_all(job_id)
    # The allow-list was narrowed after the job started: every delivery of its batch fails.
    monkeypatch.setenv("S3BULK_WRITE_BUCKETS", "some-other-bucket")
    clear_caches()
    deliveries = work_all(aws)
    assert len(deliveries) == MAX_RECEIVES
    dead = receive(aws.sqs, aws.dlq_url)
    assert len(dead) == 1 and json.loads(dead[0]["Body"])["job_id"] == job_id
    rec = aws.ledger.load(job_id)
    assert (rec.counters["failed"], rec.counters["succeeded"], rec.counters["pending"]) == (30, 0, 0)
    result = finalize_handler.handler({"job_id": job_id}, Context())
    assert (result["status"], result["over_threshold"]) == ("failed", True)
    report = json.loads(aws.s3.get_object(Bucket=REPORTS, Key=f"jobs/{job_id}/report.json")["Body"].read())
    assert len(report["failures"]) == 30
    assert {f["error"] for f in report["failures"]} == {"JobError"}
    assert all(f["message"].startswith(f"dead-lettered after {MAX_RECEIVES} deliveries") for f in report["failures"])
    jsonl = aws.s3.get_object(Bucket=REPORTS, Key=f"jobs/{job_id}/failures.jsonl")["Body"].read().decode().splitlines()
    assert len(jsonl) == 30


def test_failures_within_the_tolerance_do_not_fail_the_job(aws: Aws) -> None:
    seed(aws, 40)
    job_id = start(aws, tolerated_failures=5)
    list_all(job_id)
    aws.s3.delete_object(Bucket=SRC, Key="in/3/obj-00003")  # vanishes after listing
    work_all(aws)
    result = finalize_handler.handler({"job_id": job_id}, Context())
    assert (result["status"], result["failed"], result["over_threshold"]) == ("failed", 1, False)
    assert aws.ledger.load(job_id).status == "SUCCEEDED"


def test_validate_refuses_a_bucket_outside_the_allow_list(aws: Aws) -> None:
    event = {"operation": "copy", "source": {"bucket": "not-allowed"}, "destination": {"bucket": DST}}
    with pytest.raises(JobError, match=r"^job.source.bucket: 'not-allowed' is not in this deployment's read allow-list"):
        validate_handler.handler({"job": event}, Context())


def test_a_dry_run_sends_no_messages_and_reports_what_would_be_done(aws: Aws) -> None:
    seed(aws, 300)
    job_id = start(aws, "delete", dry_run=True)
    list_all(job_id)
    assert receive(aws.sqs, aws.queue_url) == []
    result = finalize_handler.handler({"job_id": job_id}, Context())
    assert result["status"] == "dry-run"
    assert aws.s3.list_objects_v2(Bucket=SRC)["KeyCount"] == 300


def test_skip_mode_counts_existing_destination_objects_at_listing(aws: Aws) -> None:
    seed(aws, 300)
    for i in range(0, 300, 3):
        key = f"out/{i % 7}/obj-{i:05d}" + (" ü+%" if i % 100 == 0 else "")
        aws.s3.put_object(Bucket=DST, Key=key, Body=b"already")
    job_id = start(aws, if_exists="skip")
    list_all(job_id)
    work_all(aws)
    rec = aws.ledger.load(job_id)
    assert (rec.counters["skipped"], rec.counters["succeeded"], rec.counters["pending"]) == (100, 200, 0)
    assert aws.s3.get_object(Bucket=DST, Key="out/3/obj-00003")["Body"].read() == b"already"
    lines = key_lines(aws, job_id)  # the lister's skips have their lines too, though no worker saw them
    assert sorted(line["key"] for line in lines) == sorted(seed_keys(300))
    skipped = [line for line in lines if line["outcome"] == "skipped"]
    assert len(skipped) == 100 and all(line["attempts"] == 0 and line["dst_etag"] for line in skipped)


def test_sqs_event_shape_is_what_the_worker_parses(aws: Aws) -> None:
    seed(aws, 5)
    list_all(start(aws))
    event = sqs_event(receive(aws.sqs, aws.queue_url), aws.queue_arn)
    record = SqsBatchRecord.model_validate(event["Records"][0])
    assert record.body.items and record.body.items[0][0].startswith("in/")


def test_batches_delivered_in_reverse_order_and_twice_count_once_each(aws: Aws) -> None:
    expected = seed(aws, 700)
    job_id = start(aws, "move", batch_size=100)
    list_all(job_id)
    messages = []
    while batch := receive(aws.sqs, aws.queue_url, 10):
        messages += batch
    assert len(messages) == 8  # pages of 250 keys cut into batches of 100: 3 + 3 + 2
    backwards = list(reversed(messages))
    # Newest batch first, one record per delivery, then every batch again (as SQS may after a lost delete).
    for delivery in [[m] for m in backwards] + [backwards]:
        response = worker_handler.handler(sqs_event(delivery, aws.queue_arn), Context())
        assert response["batchItemFailures"] == []
    rec = aws.ledger.load(job_id)
    assert {k: rec.counters[k] for k in ("succeeded", "failed", "pending", "batches")} == {
        "succeeded": 700,
        "failed": 0,
        "pending": 0,
        "batches": 8,
    }
    assert dest_bodies(aws) == {"out/" + k[3:]: v for k, v in expected.items()}
    assert aws.s3.list_objects_v2(Bucket=SRC).get("KeyCount") == 0


def test_a_move_redelivered_after_its_sources_were_deleted_succeeds_only_where_the_copy_is_confirmed(aws: Aws) -> None:
    """The first delivery copied and deleted, then died before the ledger counted it; the redelivery finds no sources."""
    expected = seed(aws, 50)
    job_id = start(aws, "move", batch_size=50)
    list_all(job_id)
    [message] = receive(aws.sqs, aws.queue_url, 1)
    for key in expected:  # what the lost first delivery did: copy, confirm, delete
        aws.s3.copy_object(Bucket=DST, Key="out/" + key[3:], CopySource={"Bucket": SRC, "Key": key})
        aws.s3.delete_object(Bucket=SRC, Key=key)
    # ...except one copy that never landed: its source is gone too, but its destination is wrong.
    lost = sorted(expected)[7]
    aws.s3.put_object(Bucket=DST, Key="out/" + lost[3:], Body=b"a different object")
    response = worker_handler.handler(sqs_event([message], aws.queue_arn), Context())
    assert response["batchItemFailures"] == []
    rec = aws.ledger.load(job_id)
    assert (rec.counters["succeeded"], rec.counters["failed"]) == (49, 1)
    report = finalize_handler.handler({"job_id": job_id}, Context())
    failures = json.loads(aws.s3.get_object(Bucket=REPORTS, Key=f"jobs/{job_id}/report.json")["Body"].read())["failures"]
    assert [(f["key"], f["error"]) for f in failures] == [(lost, "NoSuchKey")]
    assert report["status"] == "failed"


def test_logs_and_metrics_carry_no_keys_bodies_or_secrets(aws: Aws, capsys: pytest.CaptureFixture[str]) -> None:
    for i in range(30):
        aws.s3.put_object(Bucket=SRC, Key=f"in/private-name-{i:02d}", Body=b"private-body-bytes")
    job_id = start(aws)
    list_all(job_id)
    aws.s3.delete_object(Bucket=SRC, Key="in/private-name-07")  # one failure, so the failure path logs too
    work_all(aws)
    finalize_handler.handler({"job_id": job_id}, Context())
    out = capsys.readouterr()
    logged = out.out + out.err
    assert "ObjectsSucceeded" in logged  # the metrics were emitted, so the check below saw them
    for secret in ("private-name", "private-body-bytes", "testing"):
        assert secret not in logged, secret
    for line in logged.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            for metric_set in json.loads(line)["_aws"]["CloudWatchMetrics"]:
                assert metric_set["Dimensions"] == [["service"]]
    # The failing key is reported where it belongs: the report, with its error code.
    report = json.loads(aws.s3.get_object(Bucket=REPORTS, Key=f"jobs/{job_id}/report.json")["Body"].read())
    assert [(f["key"], f["error"]) for f in report["failures"]] == [("in/private-name-07", "NoSuchKey")]


def test_the_worker_checks_the_allow_list_again_and_touches_nothing_outside_it(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job that got past Validate (or was written to the ledger by other means) still cannot reach other buckets."""
    seed(aws, 20)
    job_id = start(aws)
    list_all(job_id)
    monkeypatch.setenv("S3BULK_WRITE_BUCKETS", "some-other-bucket")
    clear_caches()
    [message] = receive(aws.sqs, aws.queue_url, 1)
    response = worker_handler.handler(sqs_event([message], aws.queue_arn), Context())
    assert [f["itemIdentifier"] for f in response["batchItemFailures"]] == [message["MessageId"]]
    assert aws.s3.list_objects_v2(Bucket=DST).get("KeyCount", 0) == 0


def test_skip_unchanged_on_the_stack_sends_only_changed_objects(aws: Aws) -> None:
    expected = seed(aws, 600)
    first = start(aws, if_exists="skip-unchanged")
    list_all(first)
    work_all(aws)
    assert aws.ledger.load(first).counters["succeeded"] == 600
    changed = sorted(expected)[:9]
    for key in changed:
        aws.s3.put_object(Bucket=SRC, Key=key, Body=b"changed: " + key.encode())
    second = start(aws, if_exists="skip-unchanged")
    list_all(second)
    work_all(aws)
    rec = aws.ledger.load(second)
    assert (rec.counters["succeeded"], rec.counters["skipped"], rec.counters["pending"]) == (9, 591, 0)
    for key in changed:
        assert aws.s3.get_object(Bucket=DST, Key="out/" + key[3:])["Body"].read() == b"changed: " + key.encode()


def test_a_sync_with_delete_extraneous_on_the_stack_copies_k_plus_m_and_removes_d(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(JobError, match=r"^job\.destination\.bucket: 'dst-bucket' is not in this deployment's delete allow-list"):
        start(aws, if_exists="skip-unchanged", delete_extraneous=True)
    monkeypatch.setenv("S3BULK_DELETE_BUCKETS", f"{SRC},{DST}")
    clear_caches()
    expected = seed(aws, 700)  # 3 listing pages of 250
    first = start(aws, if_exists="skip-unchanged", delete_extraneous=True)
    list_all(first)
    work_all(aws)
    assert aws.ledger.load(first).counters["succeeded"] == 700
    keys = sorted(expected)
    changed, removed = keys[10:17], keys[240:262] + keys[-3:]  # k=7; d=25 across a page boundary and at the end
    added = ["in/0/zz-new", "in/6/aa-new", "in/zzz-after-everything"]  # m=3
    strays = ["out/!before-everything", "out/3/obj-00003-orphan"]  # in the destination only, never in the source
    for key in changed:
        aws.s3.put_object(Bucket=SRC, Key=key, Body=b"changed: " + key.encode())
    for key in added:
        aws.s3.put_object(Bucket=SRC, Key=key, Body=b"new")
    for key in removed:
        aws.s3.delete_object(Bucket=SRC, Key=key)
    for key in strays:
        aws.s3.put_object(Bucket=DST, Key=key, Body=b"stray")
    aws.s3.put_object(Bucket=DST, Key="elsewhere/kept", Body=b"outside destination.prefix")

    second = start(aws, if_exists="skip-unchanged", delete_extraneous=True)
    list_all(second, pages_per_call=1)
    work_all(aws)
    rec = aws.ledger.load(second)
    c = rec.counters
    k, m, d = len(changed), len(added), len(removed) + len(strays)
    assert (c["succeeded"], c["skipped"], c["extraneous"], c["failed"], c["pending"]) == (k + m, 700 - len(removed) - k, d, 0, 0)
    now = {k: v for k, v in expected.items() if k not in removed}
    now.update({key: md5(b"changed: " + key.encode()) for key in changed})
    now.update({key: md5(b"new") for key in added})
    assert dest_bodies(aws) == {"out/" + key[3:]: v for key, v in now.items()}
    assert aws.s3.get_object(Bucket=DST, Key="elsewhere/kept")["Body"].read() == b"outside destination.prefix"
    result = finalize_handler.handler({"job_id": second}, Context())
    assert result["status"] == "succeeded"
    report = json.loads(aws.s3.get_object(Bucket=REPORTS, Key=f"jobs/{second}/report.json")["Body"].read())
    assert report["deleted_extraneous"] == d and report["succeeded"] == k + m
    lines = key_lines(aws, second)
    assert sorted(line["key"] for line in lines if line["outcome"] == "succeeded") == sorted(changed + added)

    third = start(aws, if_exists="skip-unchanged", delete_extraneous=True, dry_run=True)
    list_all(third)
    assert aws.ledger.load(third).counters["extraneous"] == 0  # nothing left to delete, nothing to copy
    assert aws.ledger.load(third).counters["skipped"] == len(now)


def test_the_ledger_keeps_the_lowest_cut_and_spaces_rises(aws: Aws) -> None:
    job_id = start(aws, adaptive_rate=True)
    assert aws.ledger.shared_rate(job_id) is None
    assert not aws.ledger.publish_rate(job_id, 500.0, cut=False, now=100.0)  # no rise before any throttle
    assert aws.ledger.publish_rate(job_id, 120.0, cut=True, now=100.0)
    assert not aws.ledger.publish_rate(job_id, 200.0, cut=True, now=100.5)  # a higher "cut" loses
    assert aws.ledger.publish_rate(job_id, 90.0, cut=True, now=101.0)
    assert not aws.ledger.publish_rate(job_id, 95.0, cut=False, now=101.0 + RISE_SPACING_S / 2)
    assert aws.ledger.publish_rate(job_id, 95.0, cut=False, now=101.0 + RISE_SPACING_S * 1.5)
    assert not aws.ledger.publish_rate(job_id, 93.0, cut=False, now=200.0)  # a "rise" below the rate loses
    assert aws.ledger.shared_rate(job_id) == 95.0
    assert not aws.ledger.publish_rate("no-such-job", 10.0, cut=True)


class _SteppingClock:
    """Each reading moves time on, so rate windows close without real waiting."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.01
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _throttle_every(n: int) -> Callable[..., Any]:
    """A before-send hook answering every n-th CopyObject with 503 SlowDown, ahead of moto."""
    calls = iter(range(10**9))

    class Raw:
        def stream(self, **_: Any) -> Iterator[bytes]:
            yield b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"

    def hook(request: Any, **_: Any) -> AWSResponse | None:
        return AWSResponse(request.url, 503, HTTPHeaders(), Raw()) if next(calls) % n == 0 else None

    return hook


def test_workers_share_one_adaptive_rate_through_the_ledger(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    """A throttled worker publishes its cut; the next worker starts at it instead of storming the prefix."""
    clock = _SteppingClock()
    monkeypatch.setattr(storebase, "RateControl", lambda: RateControl(clock=clock, sleep=clock.sleep))
    expected = seed(aws, 300)
    job_id = start(aws, adaptive_rate=True, batch_size=100)
    list_all(job_id)
    first = worker_handler.service()
    assert first.rate is not None
    first.store.client.meta.events.register("before-send.s3.CopyObject", _throttle_every(4))  # type: ignore[attr-defined]
    messages = receive(aws.sqs, aws.queue_url, 1)
    out = worker_handler.handler(sqs_event(messages, aws.queue_arn), Context())
    assert out == {"batchItemFailures": []}
    aws.sqs.delete_message(QueueUrl=aws.queue_url, ReceiptHandle=messages[0]["ReceiptHandle"])
    assert first.rate.cuts >= 1 and first.rate.throttles >= 25
    shared = aws.ledger.shared_rate(job_id)
    assert shared is not None and shared == pytest.approx(first.rate.send_rate, rel=1e-3)

    worker_handler.service.cache_clear()  # a fresh container, never throttled itself
    seeds: list[tuple[bool, float | None]] = []
    real_configure = RateControl.configure

    def recording(self: RateControl, enabled: bool, rate: float | None = None) -> None:
        seeds.append((enabled, rate))
        real_configure(self, enabled, rate)

    monkeypatch.setattr(RateControl, "configure", recording)
    work_all(aws)
    second = worker_handler.service()
    assert second is not first and second.rate is not None and second.rate.throttles == 0
    assert seeds[0] == (True, shared)
    assert second.rate.send_rate is not None  # paced from its first request, though S3 never throttled it
    rec = aws.ledger.load(job_id)
    assert (rec.counters["succeeded"], rec.counters["failed"], rec.counters["pending"]) == (300, 0, 0)
    assert dest_bodies(aws) == {"out/" + k[3:]: v for k, v in expected.items()}


def test_a_job_without_adaptive_rate_neither_paces_nor_shares(aws: Aws) -> None:
    seed(aws, 50)
    job_id = start(aws)
    list_all(job_id)
    work_all(aws)
    worker = worker_handler.service()
    assert worker.rate is not None and not worker.rate.enabled and worker.rate.send_rate is None
    assert aws.ledger.shared_rate(job_id) is None


def key_lines(aws: Aws, job_id: str) -> list[dict[str, Any]]:
    out = []
    for page in aws.s3.get_paginator("list_objects_v2").paginate(Bucket=REPORTS, Prefix=f"jobs/{job_id}/keys/"):
        for o in page.get("Contents", ()):
            body = aws.s3.get_object(Bucket=REPORTS, Key=o["Key"])["Body"].read()
            out += [json.loads(line) for line in gzip.decompress(body).splitlines() if line]  # the stack gzips its parts
    return out


def test_the_stack_writes_one_key_log_line_per_object_even_with_duplicate_deliveries(aws: Aws) -> None:
    expected = seed(aws, 500)
    job_id = start(aws, batch_size=100)
    list_all(job_id)
    [first] = receive(aws.sqs, aws.queue_url, 1)
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=first["Body"])  # delivered twice
    aws.sqs.change_message_visibility(QueueUrl=aws.queue_url, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=0)
    work_all(aws)
    lines = key_lines(aws, job_id)
    assert sorted(line["key"] for line in lines) == sorted(expected)
    assert {line["outcome"] for line in lines} == {"succeeded"}
    assert all(line["dst_key"] == "out/" + line["key"][3:] and line["dst_etag"] for line in lines)
    parts = [
        o for p in aws.s3.get_paginator("list_objects_v2").paginate(Bucket=REPORTS, Prefix=f"jobs/{job_id}/keys/") for o in p["Contents"]
    ]
    stored = sum(o["Size"] for o in parts) / len(expected)  # the duplicate's part was emptied: the counted parts alone
    print(f"\nstack key log: {stored:.1f} bytes an object stored, in parts of 100 lines")
    assert all(o["Key"].endswith(".jsonl.gz") for o in parts) and stored <= 60


def test_a_tag_job_runs_on_the_stack_and_needs_the_source_in_the_write_allow_list(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = seed(aws, 120)
    event = {"operation": "tag", "source": {"bucket": SRC, "prefix": "in/"}, "tagging": {"mode": "merge", "tags": {"team": "data"}}}
    with pytest.raises(JobError, match=r"job.source.bucket: .*write allow-list"):
        validate_handler.handler({"job": event}, Context())
    monkeypatch.setenv("S3BULK_WRITE_BUCKETS", f"{DST},{SRC}")
    clear_caches()
    out = validate_handler.handler({"job": event}, Context())
    aws.ddb.put_item(TableName=TABLE, Item=out["item"], ConditionExpression="attribute_not_exists(pk)")
    job_id = str(out["job_id"])
    list_all(job_id)
    work_all(aws)
    rec = aws.ledger.load(job_id)
    assert (rec.counters["succeeded"], rec.counters["failed"], rec.counters["pending"]) == (120, 0, 0)
    for key in expected:
        assert aws.s3.get_object_tagging(Bucket=SRC, Key=key)["TagSet"] == [{"Key": "team", "Value": "data"}]
    assert len(key_lines(aws, job_id)) == 120
    assert aws.s3.list_objects_v2(Bucket=DST).get("KeyCount", 0) == 0


def test_a_csv_manifest_job_runs_on_the_stack_and_reports_bad_rows_by_line(aws: Aws) -> None:
    expected = seed(aws, 1200)
    keys = sorted(expected, reverse=True)  # manifest order is not key order
    rows = [f"{SRC},{quote_plus(k, safe='/')}" for k in keys]
    rows.insert(500, f"{SRC}")  # line 501: one field
    rows.insert(1100, f"other-bucket,{quote_plus(keys[0])}")  # line 1101: another bucket
    aws.s3.put_object(Bucket=SRC, Key="manifests/m.csv", Body=("\n".join(rows) + "\n").encode())
    event = {
        "operation": "copy",
        "source": {"bucket": SRC, "prefix": "in/", "manifest": {"bucket": SRC, "key": "manifests/m.csv"}},
        "destination": {"bucket": DST, "prefix": "out/"},
    }
    out = validate_handler.handler({"job": event}, Context())
    aws.ddb.put_item(TableName=TABLE, Item=out["item"], ConditionExpression="attribute_not_exists(pk)")
    job_id = str(out["job_id"])
    listed = list_all(job_id, pages_per_call=1)  # each invocation reopens the manifest at its cursor
    assert len(listed) >= 2
    work_all(aws)
    rec = aws.ledger.load(job_id)
    assert (rec.counters["listed"], rec.counters["succeeded"], rec.counters["failed"], rec.counters["pending"]) == (1202, 1200, 2, 0)
    assert dest_bodies(aws) == {"out/" + k[3:]: v for k, v in expected.items()}
    result = finalize_handler.handler({"job_id": job_id}, Context())
    assert (result["status"], result["failed"]) == ("failed", 2)
    report = json.loads(aws.s3.get_object(Bucket=REPORTS, Key=f"jobs/{job_id}/report.json")["Body"].read())
    by_code = {f["error"]: f for f in report["failures"]}
    assert "line 501:" in by_code["InvalidManifestRow"]["message"]
    assert "line 1101:" in by_code["ManifestBucketMismatch"]["message"] and by_code["ManifestBucketMismatch"]["key"] == keys[0]
    failed_lines = [line for line in key_lines(aws, job_id) if line["outcome"] == "failed"]
    assert sorted(line["error"] for line in failed_lines) == ["InvalidManifestRow", "ManifestBucketMismatch"]


def test_the_stack_refuses_a_manifest_outside_the_read_allow_list(aws: Aws) -> None:
    event = {
        "operation": "copy",
        "source": {"bucket": SRC, "manifest": {"bucket": REPORTS, "key": "m.csv"}},
        "destination": {"bucket": DST},
    }
    with pytest.raises(JobError, match=r"^job.source.manifest.bucket: 'report-bucket' is not in this deployment's read allow-list"):
        validate_handler.handler({"job": event}, Context())


def test_the_stack_and_the_cli_write_reports_with_the_same_fields_from_one_builder(aws: Aws, tmp_path: Path) -> None:
    """The same job run by the handlers and by the local engine: report.json has the same fields and the same counts."""
    seed(aws, 300)
    aws.s3.put_object(Bucket=SRC, Key="in/zz-skip.tmp", Body=b"x")
    doc = {
        "operation": "copy",
        "source": {"bucket": SRC, "prefix": "in/", "exclude": ["*.tmp"]},
        "destination": {"bucket": DST, "prefix": "out/"},
    }
    out = validate_handler.handler({"job": doc}, Context())
    aws.ddb.put_item(TableName=TABLE, Item=out["item"], ConditionExpression="attribute_not_exists(pk)")
    job_id = str(out["job_id"])
    list_all(job_id)
    work_all(aws)
    finalize_handler.handler({"job_id": job_id}, Context())
    stack = json.loads(aws.s3.get_object(Bucket=REPORTS, Key=f"jobs/{job_id}/report.json")["Body"].read())

    local_report = Engine(parse_job(json.dumps(doc)), s3store.S3Store(aws.s3), concurrency=4).run()
    local_report.write(tmp_path / "report.json")
    local = json.loads((tmp_path / "report.json").read_text())

    assert sorted(stack) == sorted(local)
    counts = ("status", "listed", "succeeded", "skipped", "failed", "bytes", "scanned", "tolerated_failures")
    assert {k: stack[k] for k in counts} == {k: local[k] for k in counts}
    assert (stack["listed"], stack["scanned"]) == (300, 301)


def count_and_check(job_id: str) -> dict[str, Any]:
    """The delete guard's steps as the state machine runs them: plan, count every shard, check."""
    plan = lister_handler.handler({"job_id": job_id}, Context())
    assert plan["guard"] is True
    for shard in plan["shards"]:
        while not lister_handler.handler({"job_id": job_id, "shard": shard, "phase": "count"}, Context([600.0, 5.0]))["done"]:
            pass
    return dict(lister_handler.handler({"job_id": job_id, "phase": "check"}, Context()))


@pytest.mark.parametrize("room", [5, 0])
def test_objects_added_after_the_count_are_deleted_only_within_max_delete(aws: Aws, room: int) -> None:
    seed(aws, 300)
    job_id = start(aws, "delete", max_delete=300 + room)
    assert count_and_check(job_id)["would_delete"] == 300
    for i in range(3):  # uploaded between the count and the listing
        aws.s3.put_object(Bucket=SRC, Key=f"in/late-{i}", Body=b"x")
    if room:
        sent = sum(r["pages"] for r in list_all(job_id))
        assert sent > 0
        work_all(aws)
        assert aws.ledger.counters(job_id)["succeeded"] == 303  # the 3 late ones fit in max_delete's room
    else:
        with pytest.raises(JobError, match=r"^job\.options\.max_delete: the selection grew past max_delete 300 after it was counted"):
            list_all(job_id)
        work_all(aws)
        assert aws.ledger.counters(job_id)["succeeded"] <= 300  # never past the limit
