"""The plan's arithmetic, checked by hand, and its counts on the fake store."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from s3bulk.job import Job, MiB, parse_job
from s3bulk.local.engine import Engine
from s3bulk.local.plan import Plan, cost, from_count, load_prices, make_plan, size_bucket
from s3bulk.store import Encryption
from s3bulk.testing.memstore import MemoryStore

PRICES = load_prices()


def test_prices_live_in_a_dated_regional_data_file() -> None:
    assert (PRICES["region"], PRICES["as_of"]) == ("us-east-1", "2026-11-21")


def test_cost_matches_a_hand_computed_example() -> None:
    plan = Plan("copy", objects=1000)
    plan.requests = {
        "CopyObject": 1000,
        "ListObjectsV2": 2,
        "HeadObject": 10,
        "GetObjectTagging": 10,
        "CreateMultipartUpload": 10,
        "UploadPartCopy": 40,
        "CompleteMultipartUpload": 10,
    }
    c = cost(plan, PRICES)
    # Class A (PUT/COPY/POST/LIST): 1000 + 2 + 10 + 40 + 10 = 1,062 at $0.005 per 1,000 = $0.00531;
    # class B (GET/HEAD): 20 at $0.0004 per 1,000 = $0.000008.
    assert c["s3_requests"] == pytest.approx(0.005318)
    # One message, one invocation; 1,000 objects at 64 request threads / 30 ms = 0.46875 s x 1 GB x $0.0000133334 +
    # $0.0000002 (a copy holds no bodies); a relay streams on the 32 streaming threads: twice the seconds.
    assert c["lambda"] == pytest.approx(0.46875 * 0.0000133334 + 0.2e-6)
    streaming = Plan("copy", objects=1000, streams=True)
    assert cost(streaming, PRICES)["lambda"] == pytest.approx(0.9375 * 0.0000133334 + 0.2e-6)
    assert c["sqs"] == pytest.approx(5 * 0.4e-6)  # send + receive + delete, a ~100 KB message is 2 units each
    assert c["dynamodb"] == pytest.approx(4 * 0.625e-6)
    assert c["step_functions"] == pytest.approx(40 * 0.025 / 1000)
    assert c["stack_total"] == pytest.approx(0.005318 + 0.46875 * 0.0000133334 + 0.2e-6 + 2e-6 + 2.5e-6 + 0.001)
    assert c["batch_operations_total"] == pytest.approx(0.005318 + 0.25 + 0.001)


@pytest.mark.parametrize(("size", "label"), [(0, "0 B"), (1, "< 128 KiB"), (128 * 1024, "< 1 MiB"), (5 * 1024**3, ">= 5 GiB")])
def test_size_buckets_have_exclusive_upper_bounds(size: int, label: str) -> None:
    assert size_bucket(size) == label


def test_plan_counts_what_the_run_would_touch_and_changes_nothing() -> None:
    store = MemoryStore(page_size=30)
    for b in ("src-b", "dst-b"):
        store.create_bucket(b)
    for i in range(100):
        store.put_object("src-b", f"in/{i:03d}", b"x" * i, storage_class="STANDARD_IA" if i % 4 == 0 else "STANDARD")
    store.put_object("src-b", "in/big", b"b" * (12 * MiB))
    store.put_object("dst-b", "out/005", b"x" * 5)  # unchanged: skipped
    job = parse_job(
        json.dumps(
            {
                "operation": "copy",
                "source": {"bucket": "src-b", "prefix": "in/"},
                "destination": {"bucket": "dst-b", "prefix": "out/"},
                "options": {"if_exists": "skip-unchanged", "multipart_threshold": 8 * MiB, "part_size": 5 * MiB},
            }
        )
    )
    calls_before = dict(store.calls)
    plan = make_plan(job, store)
    reads = {"ListObjectsV2", "GetBucketEncryption"}  # the listing, and each bucket's default encryption (KMS requests)
    assert {k: v for k, v in store.calls.items() if k not in reads} == {k: v for k, v in calls_before.items() if k not in reads}
    assert store.keys("dst-b") == ["out/005"]
    assert (plan.scanned, plan.objects, plan.skipped) == (101, 100, 1)
    assert plan.by_class["STANDARD_IA"][0] == 25
    assert plan.requests["CopyObject"] == 99 and plan.requests["UploadPartCopy"] == 3
    assert plan.requests["ListObjectsV2"] == store.calls["ListObjectsV2"] - calls_before.get("ListObjectsV2", 0)


def test_plan_counts_the_requests_of_tag_restore_and_verify_as_the_run_makes_them() -> None:
    store = MemoryStore()
    store.create_bucket("src-b")
    store.create_bucket("dst-b")
    for i in range(10):
        store.put_object("src-b", f"in/{i}", b"x", storage_class="GLACIER" if i < 3 else "STANDARD")
    scope = {"bucket": "src-b", "prefix": "in/"}
    docs = {
        "tag": {"operation": "tag", "source": scope, "tagging": {"mode": "merge", "tags": {"a": "b"}}},
        "restore": {"operation": "restore", "source": scope},
        "verify": {"operation": "verify", "source": scope, "destination": {"bucket": "dst-b"}},
    }
    plans = {name: make_plan(parse_job(json.dumps(doc)), store).requests for name, doc in docs.items()}
    for requests in plans.values():
        requests.pop("ListObjectsV2", None)
    assert plans == {
        "tag": {"GetObjectTagging": 10, "PutObjectTagging": 10},
        "restore": {"RestoreObject": 3},
        "verify": {"HeadObject": 20},
    }
    done = store.calls.copy()
    Engine(parse_job(json.dumps(docs["tag"])), store).run()
    Engine(parse_job(json.dumps(docs["restore"])), store).run()
    assert store.calls["GetObjectTagging"] - done.get("GetObjectTagging", 0) == 10
    assert store.calls["PutObjectTagging"] - done.get("PutObjectTagging", 0) == 10
    assert store.calls["RestoreObject"] - done.get("RestoreObject", 0) == 3


def test_restore_retrieval_fees_match_a_hand_computed_example() -> None:
    plan = Plan("restore", objects=3000, restore_tier="Bulk")
    plan.by_class = {"GLACIER": [2000, 200 * 1024**3], "DEEP_ARCHIVE": [1000, 100 * 1024**3], "STANDARD": [5, 10]}
    plan.requests = {"ListObjectsV2": 4, "RestoreObject": 3000}
    c = cost(plan, PRICES)
    # Bulk: GLACIER 2 x $0.025 per 1,000 requests + 200 GB x $0 = $0.05;
    # DEEP_ARCHIVE 1 x $0.025 + 100 GB x $0.0025 = $0.275; STANDARD objects are not restored.
    assert c["restore_retrieval"] == pytest.approx(0.05 + 0.275)
    # RestoreObject is priced by tier, not as a PUT: class A is the 4 LISTs only.
    assert c["s3_requests"] == pytest.approx(4 * 0.005 / 1000)
    assert c["batch_operations_total"] == pytest.approx(c["s3_requests"] + 0.325 + 0.25 + 3000 / 1e6 * 1.0)
    standard = cost(Plan("restore", objects=3000, restore_tier="Standard", by_class=plan.by_class, requests=plan.requests), PRICES)
    # Standard: GLACIER 2 x $0.05 + 200 x $0.01 = $2.10; DEEP_ARCHIVE 1 x $0.10 + 100 x $0.02 = $2.10.
    assert standard["restore_retrieval"] == pytest.approx(4.20)


def test_plan_of_a_restore_job_prices_its_tier() -> None:
    store = MemoryStore()
    store.create_bucket("src-b")
    for i in range(4):
        store.put_object("src-b", f"old/{i}", b"z" * 1024, storage_class="GLACIER" if i else "STANDARD")
    job = parse_job(json.dumps({"operation": "restore", "source": {"bucket": "src-b", "prefix": "old/"}, "restore": {"tier": "Expedited"}}))
    plan = make_plan(job, store)
    assert plan.restore_tier == "Expedited" and plan.requests["RestoreObject"] == 3
    assert cost(plan, PRICES)["restore_retrieval"] == pytest.approx(3 / 1000 * 10.0 + 3 * 1024 / 1024**3 * 0.03)


def test_plan_of_a_process_function_counts_its_ranged_gets_and_outputs_as_the_run_makes_them() -> None:
    from s3bulk.ops.process import ProcessCode

    store = MemoryStore()
    store.create_bucket("src-b")
    store.create_bucket("dst-b")
    for i in range(10):
        store.put_object("src-b", f"in/{i}", b"x" * 100)
    store.put_object("src-b", "in/big", size=20 * MiB)  # three 8 MiB ranges
    doc = {
        "operation": "process",
        "source": {"bucket": "src-b", "prefix": "in/"},
        "destination": {"bucket": "dst-b", "prefix": "out/"},
        "process": {"function": "m:run"},
    }
    job = parse_job(json.dumps(doc))
    plan = make_plan(job, store)
    plan.requests.pop("ListObjectsV2")
    assert plan.requests == {"GetObject": 13, "PutObject": 11}
    before = store.calls.copy()
    code = ProcessCode(function=lambda obj: obj.write(obj.key, obj.open().read()[:10]))
    assert Engine(job, store, code=code).run().exit_code == 0
    assert {k: store.calls[k] - before.get(k, 0) for k in ("GetObject", "PutObject")} == plan.requests


def test_a_batch_operations_lambda_costs_one_invocation_per_tasks_per_invocation_objects_against_one_per_object() -> None:
    plan = Plan("process", objects=1_000_000, tasks_per_invocation=100)
    c = cost(plan, PRICES)
    assert c["process_invocations"] == pytest.approx(10_000 * 0.2e-6)
    assert c["batch_operations_invocations"] == pytest.approx(1_000_000 * 0.2e-6)
    assert c["batch_operations_total"] == pytest.approx(c["s3_requests"] + 0.25 + 1.0 + 0.2)


@pytest.mark.parametrize(
    "fields",
    [{"operation": "set-storage-class", "storage_class": "STANDARD_IA"}, {"operation": "add-checksum", "checksum_algorithm": "SHA1"}],
)
@pytest.mark.parametrize("ownership", ["BucketOwnerEnforced", "ObjectWriter"])
def test_plan_of_an_in_place_copy_counts_exactly_the_requests_the_run_makes(fields: dict[str, str], ownership: str) -> None:
    store = MemoryStore(page_size=7)
    store.create_bucket("src-b")
    store.ownership["src-b"] = ownership  # with ACLs enabled, each in-place copy reads its object's grants first
    for i in range(20):
        store.put_object("src-b", f"in/{i:02d}", b"x" * i, storage_class="STANDARD_IA" if i % 5 == 0 else "STANDARD")
    store.put_object("src-b", "in/big", b"b" * (12 * MiB))
    doc = {"source": {"bucket": "src-b", "prefix": "in/"}, "options": {"multipart_threshold": 5 * MiB, "part_size": 5 * MiB}, **fields}
    planned = make_plan(parse_job(json.dumps(doc)), store).requests
    before = store.calls.copy()
    assert Engine(parse_job(json.dumps(doc)), store).run().summary()["failed"] == 0
    made = {op: n - before.get(op, 0) for op, n in store.calls.items() if n != before.get(op, 0)}
    assert planned == made
    assert planned["HeadObject"] == (17 if fields["operation"] == "set-storage-class" else 21)  # one per object copied in place
    assert planned.get("GetObjectAcl", 0) == (planned["HeadObject"] if ownership == "ObjectWriter" else 0)


@pytest.mark.parametrize(
    "fields",
    [
        {"operation": "tag", "tagging": {"mode": "replace", "tags": {"a": "b"}}},
        {"operation": "set-legal-hold", "legal_hold": "ON"},
        {"operation": "set-acl", "acl": "bucket-owner-full-control"},
        {"operation": "set-retention", "retention": {"mode": "GOVERNANCE", "until": "2099-01-01T00:00:00Z"}},
    ],
    ids=lambda f: f["operation"],
)
def test_the_undo_journals_reads_are_planned_apart_and_priced_for_the_stack_alone(fields: dict[str, object]) -> None:
    """Without a key log the run makes exactly `requests`; with one (as the stack always keeps), `journal` on top."""

    def seeded() -> MemoryStore:
        store = MemoryStore(page_size=4)
        store.create_bucket("src-b")
        for i in range(9):
            store.put_object("src-b", f"in/{i}", b"x")
        return store

    doc = json.dumps({"source": {"bucket": "src-b", "prefix": "in/"}, **fields})
    plan = make_plan(parse_job(doc), seeded())
    for key_log in (None, io.StringIO()):
        store = seeded()
        assert Engine(parse_job(doc), store, key_log=key_log).run().summary()["failed"] == 0
        made = {op: n for op, n in store.calls.items() if op != "ListObjectsV2"}
        expected = {k: n for k, n in plan.requests.items() if k != "ListObjectsV2"}
        for op, n in plan.journal.items() if key_log else ():
            expected[op] = expected.get(op, 0) + n
        assert made == expected
    assert sum(plan.journal.values()) == 9 * (2 if fields["operation"] == "set-acl" else 1)
    c = cost(plan, PRICES)
    assert c["undo_journal"] == pytest.approx(sum(plan.journal.values()) / 1000 * PRICES["s3_get_head_per_1000"])
    assert c["stack_total"] - c["batch_operations_total"] == pytest.approx(
        c["undo_journal"]
        + c["lambda"]
        + c["sqs"]
        + c["dynamodb"]
        + c["step_functions"]
        - PRICES["batch_operations_job"]
        - 9 / 1e6 * PRICES["batch_operations_per_million_objects"]
    )


@pytest.mark.parametrize("operation", ["copy", "delete", "tag"])
def test_a_plan_from_a_count_prices_objects_of_one_size_as_the_plan_of_their_listing(operation: str) -> None:
    """What a job held for confirmation shows (the stack's count: objects and bytes) costs what `s3bulk plan` says of
    the same selection when its objects are of one size."""
    store = MemoryStore(page_size=1000)
    for b in ("src-b", "dst-b"):
        store.create_bucket(b)
    for i in range(2500):
        store.put_object("src-b", f"in/{i:05d}", b"x" * 100)
    doc: dict[str, object] = {"operation": operation, "source": {"bucket": "src-b", "prefix": "in/"}}
    if operation == "copy":
        doc["destination"] = {"bucket": "dst-b", "prefix": "out/"}
    if operation == "tag":
        doc["tagging"] = {"tags": {"team": "data"}}
    job = parse_job(json.dumps(doc))
    listed, counted = make_plan(job, store), from_count(job, 2500, 2500 * 100)
    lists = "ListObjectsV2"  # the listing's own pages and probes, a few requests either way
    assert {k: n for k, n in counted.requests.items() if k != lists} == {k: n for k, n in listed.requests.items() if k != lists}
    assert counted.journal == listed.journal and abs(counted.requests[lists] - listed.requests[lists]) <= 3
    prices = load_prices()
    assert cost(counted, prices)["stack_total"] == pytest.approx(cost(listed, prices)["stack_total"], rel=0.01)


def _kms_copy(**destination: object) -> Job:
    return parse_job(json.dumps({"operation": "copy", "source": {"bucket": "src-b"}, "destination": {"bucket": "dst-b", **destination}}))


def test_plan_counts_the_kms_requests_s3_makes_for_sse_kms_buckets_without_bucket_keys() -> None:
    store = MemoryStore()
    for b in ("src-b", "dst-b"):
        store.create_bucket(b)
    for i in range(10):
        store.put_object("src-b", f"k{i}", b"x")
    key = "arn:aws:kms:us-east-1:111122223333:key/1"
    assert make_plan(_kms_copy(), store).kms == {}  # no SSE-KMS anywhere: no KMS request
    store.bucket_encryption["src-b"] = Encryption("aws:kms", key)
    plan = make_plan(_kms_copy(sse="aws:kms", kms_key_id=key), store)
    assert plan.kms == {"Decrypt": 10, "GenerateDataKey": 10}  # one read and one write per CopyObject
    dollars = cost(plan, PRICES)
    assert dollars["kms_requests"] == pytest.approx(20 * PRICES["kms_request_per_10000"] / 10_000)
    store.bucket_encryption["src-b"] = Encryption("aws:kms", key, bucket_key=True)
    store.bucket_encryption["dst-b"] = Encryption("aws:kms", key, bucket_key=True)
    assert make_plan(_kms_copy(sse="aws:kms", kms_key_id=key), store).kms == {}  # Bucket Keys on both: not per object


def test_the_cost_a_confirmation_shows_counts_the_kms_requests_that_plan_counts() -> None:
    """A job held for `s3bulk confirm` is priced from its count (from_count): S3's KMS requests for SSE-KMS buckets
    without Bucket Keys are in it, as in `s3bulk plan`; without a store to ask, the job's own KMS choice still is."""
    store = MemoryStore()
    for b in ("src-b", "dst-b"):
        store.create_bucket(b)
    for i in range(10):
        store.put_object("src-b", f"k{i}", b"x" * 100)
    key = "arn:aws:kms:us-east-1:111122223333:key/1"
    store.bucket_encryption["src-b"] = Encryption("aws:kms", key)
    job = _kms_copy(sse="aws:kms", kms_key_id=key)
    listed, counted = make_plan(job, store), from_count(job, 10, 1000, store)
    assert counted.kms == listed.kms == {"Decrypt": 10, "GenerateDataKey": 10}
    assert cost(listed, PRICES)["kms_requests"] > 0
    assert cost(counted, PRICES)["kms_requests"] == pytest.approx(cost(listed, PRICES)["kms_requests"])
    assert from_count(job, 10, 1000).kms == {"GenerateDataKey": 10}  # the bucket's default unknown: the job's own key


def test_a_prices_file_naming_some_prices_keeps_the_shipped_others(tmp_path: Path) -> None:
    mine = tmp_path / "prices.json"
    mine.write_text(json.dumps({"region": "eu-west-1", "s3_get_head_per_1000": 0.00042}))
    prices = load_prices(mine)
    assert (prices["region"], prices["s3_get_head_per_1000"]) == ("eu-west-1", 0.00042)
    assert prices["kms_request_per_10000"] == PRICES["kms_request_per_10000"]


def test_a_prices_file_naming_one_restore_tier_keeps_the_other_tiers(tmp_path: Path) -> None:
    mine = tmp_path / "prices.json"
    mine.write_text(json.dumps({"restore_retrieval": {"GLACIER": {"Bulk": {"per_gb": 0.001, "per_1000_requests": 0.02}}}}))
    prices = load_prices(mine)
    assert prices["restore_retrieval"]["GLACIER"]["Bulk"]["per_gb"] == 0.001
    assert prices["restore_retrieval"]["GLACIER"]["Standard"] == PRICES["restore_retrieval"]["GLACIER"]["Standard"]
    assert prices["restore_retrieval"]["DEEP_ARCHIVE"] == PRICES["restore_retrieval"]["DEEP_ARCHIVE"]


def test_the_stacks_pace_names_what_binds_a_copy_a_delete_and_a_relay_on_the_shared_model() -> None:
    """One model (s3bulk/pace.py) for `s3bulk plan` and docs/cost-model.md: a copy into one new prefix is held to S3's
    3,500 PUTs a second; a delete (1,000 keys a DeleteObjects) by the 16 listers; a relay by its streaming workers."""
    from s3bulk import pace
    from s3bulk.local.plan import stack_pace

    copy = stack_pace(Plan("copy", objects=1_000_000, requests={"CopyObject": 1_000_000, "ListObjectsV2": 1_000}))
    assert (copy.bound, copy.per_s) == ("S3 request rate", pace.S3_PUT_PER_PREFIX)
    assert copy.seconds == pytest.approx(1_000_000 / 3500 + pace.LIST_PAGE_S)
    wide = stack_pace(Plan("copy", objects=1_000_000, requests={"CopyObject": 1_000_000}), prefixes=100, shards=40)
    assert wide.bound == "workers" and wide.per_s == pytest.approx(50 * pace.worker_rate(64))
    delete = stack_pace(Plan("delete", objects=1_000_000, requests={"DeleteObjects": 1_000, "ListObjectsV2": 1_000}))
    assert delete.bound == "listing" and delete.per_s == pytest.approx(16 * pace.lister_keys_per_s())
    relay = stack_pace(
        Plan("copy", objects=1_000_000, streams=True, requests={"GetObject": 1_000_000, "PutObject": 1_000_000}), prefixes=100, shards=40
    )
    assert relay.bound == "workers" and relay.per_s == pytest.approx(50 * pace.worker_rate(32))
    kms = stack_pace(
        Plan("copy", objects=10, requests={"CopyObject": 10}, kms={"kms:Decrypt": 10}), prefixes=1000, workers=1000, shards=100
    )
    assert kms.bound == "KMS, SSE-KMS without Bucket Keys" and kms.per_s == pace.KMS_RATE_LARGEST / 2


def test_plans_stack_defaults_are_the_deployments() -> None:
    from infra.config import DeployConfig
    from s3bulk.local.plan import STACK_LIST_SHARDS, STACK_REQUEST_THREADS, STACK_THREADS, STACK_WORKERS

    config = DeployConfig(read_buckets=("b",), write_buckets=(), delete_buckets=())
    assert (config.worker_max_concurrency, config.list_shards) == (STACK_WORKERS, STACK_LIST_SHARDS)
    assert (config.worker_threads, config.worker_request_threads) == (STACK_THREADS, STACK_REQUEST_THREADS)
