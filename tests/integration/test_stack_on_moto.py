"""Copy jobs through the synthesized stack as it will run: its state machine on moto's interpreter, its handlers as the Lambdas,
its SQS event source emulated, and faults injected where AWS would produce them."""

from __future__ import annotations

import contextlib
import gzip
import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import boto3
import pytest
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.s3.models import s3_backends

from s3bulk.aws.ledger import DynamoLedger
from s3bulk.local.server import ACCESS_KEY, SECRET_KEY, SeaweedServer
from s3bulk.s3.clients import ClientSettings, make_s3_client
from s3bulk.testing.faultproxy import FaultProxy
from s3bulk.testing.stack import DynamoConflicts, Execution, Faults, StackOnMoto, synthesize
from tests.integration.aws_harness import REGION
from tests.integration.conftest import client_for
from tests.integration.helpers import md5
from tests.integration.test_faults import port_of

SRC, DST = "src-bucket", "dst-bucket"
# The deployer's process code, bundled with the functions; in-process it is imported from where it lies.
PROCESS_CODE = Path(__file__).parent / "process_code"
BATCHOPS_ARN = f"arn:aws:lambda:{REGION}:{DEFAULT_ACCOUNT_ID}:function:UserBatchOps"
LEGACY = "legacy-data"  # a bucket on another endpoint (a SeaweedFS that checks signatures), relayed into DST
# A partial ARN (no random suffix), as a deployer who knows only the secret's name writes it.
LEGACY_SECRET = f"arn:aws:secretsmanager:{REGION}:{DEFAULT_ACCOUNT_ID}:secret:legacy-keys"
CONTEXT: dict[str, object] = {
    "read_buckets": f"{SRC},{DST},{LEGACY}",
    "write_buckets": DST,
    "process_code": str(PROCESS_CODE),
    "process_lambdas": BATCHOPS_ARN,
    "credentials_secrets": f"{LEGACY_SECRET}@source",  # its keys fetch from the legacy endpoint, never deliver to it
}
# Validate hands the functions' S3BULK_POLL_SECONDS to the state machine as $.poll_seconds (its wait period):
# 30 s instead of the deployed 600 s (which deploy context may not lower): the workers end the wait, this is its safety net.
ENV = {"S3BULK_POLL_SECONDS": "30", "S3BULK_PROCESS_CODE": str(PROCESS_CODE)}
N = 3000
BIG = 6_000  # the all-faults scenario: 20,000 took 165-220 s of the suite's budget, 10,000 up to 195 s; 6,000 keeps every fault
BATCH = 100  # keys per queue message: 30 messages, 6 worker invocations of 5


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return synthesize(CONTEXT)


def seed_keys(keys: list[str]) -> dict[str, str]:
    """Put each key with a small body, straight into moto's S3 backend (setup, not under test: 100x faster than
    PutObject through boto3); returns key -> MD5 of its bytes."""
    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    out = {}
    for i, key in enumerate(keys):
        body = f"object {i} ".encode() * (1 + i % 4)
        backend.put_object(SRC, key, body)
        out[key] = md5(body)
    return out


def seed(n: int = N) -> dict[str, str]:
    """n small objects under nested prefixes of the source; returns key -> MD5 of its bytes."""
    return seed_keys([f"in/{i % 3}/{i % 7}/{i % 11}/obj-{i:05d}" for i in range(n)])


def copy_job(**options: Any) -> dict[str, Any]:
    return {
        "operation": "copy",
        "source": {"bucket": SRC, "prefix": "in/"},
        "destination": {"bucket": DST, "prefix": "out/"},
        "options": {"batch_size": BATCH, **options},
    }


def destination(stack: StackOnMoto) -> dict[str, str]:
    """key -> MD5 of every destination object, from ListObjectsV2: a single-part ETag is the MD5 of the bytes moto holds."""
    out = {}
    for page in stack.s3.get_paginator("list_objects_v2").paginate(Bucket=DST):
        for o in page.get("Contents", ()):
            assert "-" not in o["ETag"], o  # a multipart ETag would not be an MD5
            out[o["Key"]] = o["ETag"].strip('"')
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
    assert names[:5] == ["ContinuedFrom?", "Validate", "CreateLedgerEntry", "KeepIdsOnly", "PlanListing"] and names[-1] == "JobSucceeded"
    [lister] = [f for name, f in clean.functions.items() if name.startswith("Lister")]
    assert lister.invocations >= 3  # the plan and at least two listing shards
    source = clean.worker_source
    assert (source.stats.crashed, source.stats.returned) == (0, 0)
    assert source.stats.deleted == N // BATCH
    assert dead_lettered(clean) == 0


# The n-th write of each kind conflicts or not by this seed, whatever the thread timing (the test asserts some did).
CONFLICT_SEED = 9


def test_1200_keys_of_300_cjk_characters_copy_exactly_in_sqs_calls_aws_accepts(clean: StackOnMoto) -> None:
    """900-byte keys fill a message at about 200 keys: ten such messages are far over SendMessageBatch's 1 MiB, which the
    harness enforces as SQS does (stack/limits.py), so the lister must cut its calls by bytes as well as count."""
    keys = [f"in/{i:04d}/" + "键" * 300 for i in range(1200)]
    expected = seed_keys(keys)
    ex = clean.run(copy_job(batch_size=1000), timeout=120)
    assert ex.status == "SUCCEEDED", f"{ex.description.get('error')}: {str(ex.description.get('cause'))[:1500]}\n{clean.describe()}"
    r = report(clean, ex.description.get("output"))
    assert (r["listed"], r["succeeded"], r["failed"]) == (1200, 1200, 0)
    assert destination(clean) == {"out/" + k[3:]: v for k, v in expected.items()}
    assert clean.limits.refused == []


def test_a_sync_whose_source_selects_nothing_fails_at_planlisting_and_deletes_nothing() -> None:
    """A typo in source.prefix: the listers would find every destination object extraneous and delete it page by page."""
    with StackOnMoto(synthesize({**CONTEXT, "delete_buckets": DST}), buckets=(SRC, DST), env=ENV) as stack:
        seed(20)  # the source holds objects, only none under the typo'd prefix
        for i in range(15):
            stack.s3.put_object(Bucket=DST, Key=f"sync/{i:02d}", Body=b"keep me")
        job = {
            "operation": "copy",
            "source": {"bucket": SRC, "prefix": "in/typo-prefix/"},
            "destination": {"bucket": DST, "prefix": "sync/"},
            "options": {"if_exists": "skip-unchanged", "delete_extraneous": True},
        }
        ex = stack.run(job, timeout=60)
        assert ex.status == "FAILED" and "PlanListing" in ex.entered()
        assert "selects no object" in str(ex.description.get("cause")) + json.dumps(ex.events, default=str)
        left = [o["Key"] for o in stack.s3.list_objects_v2(Bucket=DST, Prefix="sync/").get("Contents", [])]
        assert len(left) == 15


def test_6000_objects_nested_and_flat_under_every_fault_at_once_copy_exactly_once(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's scenario: sharded listing of nested and flat prefixes, 5% DynamoDB conflicts, duplicate
    deliveries, a worker out of time mid-batch and a lister killed mid-shard (after sending a page, before
    its checkpoint), all in one job. Counts, the report and every object's bytes are exact."""
    killed_lister = type("Lambda.Unknown", (RuntimeError,), {})  # what Step Functions sees when a Lambda dies
    real_checkpoint = DynamoLedger.checkpoint
    kills: list[tuple[int, int]] = []

    def dies_once(self: DynamoLedger, job_id: str, shard: int, page: int, *args: Any, **kwargs: Any) -> bool:
        # the first shard to send its second page (in its first step of pages), whichever the planner made it
        if page <= 1 < page + kwargs.get("pages", 1) and not kills:
            kills.append((shard, page))
            raise killed_lister("lister killed after sending its page, before the checkpoint")
        return real_checkpoint(self, job_id, shard, page, *args, **kwargs)

    monkeypatch.setattr(DynamoLedger, "checkpoint", dies_once)
    conflicts = DynamoConflicts(rate=0.05, seed=CONFLICT_SEED)
    faults = Faults(dynamo=conflicts, kill_first=1, kill_after=20, duplicate_rate=0.2, seed=3)
    # 75-key pages: 80 pages for the lister checkpoints to count, in shards plan_shards keeps ~10 pages long or more.
    with StackOnMoto(template, buckets=(SRC, DST), env={**ENV, "S3BULK_LIST_PAGE_SIZE": "75"}, faults=faults) as stack:
        expected = seed_keys(
            [f"in/n/{i % 5}/{i % 13}/obj-{i:05d}" for i in range(BIG // 2)] + [f"in/flat-{i:06d}" for i in range(BIG // 2)]
        )
        ex = stack.run(copy_job(), timeout=600)
        source = stack.worker_source
        assert len(kills) == 1 and sum(conflicts.injected.values()) > 0, stack.describe()
        # The worker whose time ran out mid-batch counted what it finished and handed the rest on as a child batch
        # (or, if it had started nothing, handed the batch back): either way nothing was lost or redone for nothing.
        table = next(v for k, v in stack.names.items() if k.startswith("Ledger") and "." not in k)
        children = sum("child" in i for i in stack.ddb.scan(TableName=table, ProjectionExpression="sk, child")["Items"])
        assert source.stats.killed == 1 and (children >= 1 or source.stats.returned >= 1), stack.describe()
        assert source.stats.duplicated > 0, stack.describe()
        assert ex.status == "SUCCEEDED", f"{ex.status}: {ex.description.get('error')} {str(ex.description.get('cause'))[:1500]}"
        r = report(stack, ex.description.get("output"))
        assert (r["listed"], r["succeeded"], r["failed"], r["failures"]) == (BIG, BIG, 0, [])
        assert destination(stack) == {"out/" + k[3:]: v for k, v in expected.items()}
        [lister] = [f for name, f in stack.functions.items() if name.startswith("Lister")]
        # The plan, then the shards, listed at once (Map iterations, whose events moto keeps out of the parent's history), one twice.
        assert lister.invocations >= 1 + 2 + 1 and lister.errors["Lambda.Unknown"] == 1, stack.describe()
        assert dead_lettered(stack) == 0


def test_an_inventory_manifest_lists_as_one_shard_per_data_file_and_copies_exactly(clean: StackOnMoto) -> None:
    """PlanListing splits an S3 Inventory by data file; the shards list at once, and every row is copied once."""
    keys = [f"in/inv/{i % 4}/obj-{i:04d}" for i in range(600)]
    expected = seed_keys(keys)
    files = []
    for part in range(4):
        rows = "".join(f'"{SRC}","{keys[i]}","{len(f"object {i} ") * (1 + i % 4)}"\n' for i in range(part, len(keys), 4))
        key = f"inventory/data/part-{part}.csv.gz"
        clean.s3.put_object(Bucket=SRC, Key=key, Body=gzip.compress(rows.encode()))
        files.append({"key": key, "size": len(rows), "MD5checksum": "x"})
    doc = {"sourceBucket": SRC, "destinationBucket": f"arn:aws:s3:::{SRC}", "fileFormat": "CSV", "fileSchema": "Bucket, Key, Size"}
    clean.s3.put_object(Bucket=SRC, Key="inventory/manifest.json", Body=json.dumps({**doc, "files": files}).encode())
    job = copy_job()
    job["source"]["manifest"] = {"bucket": SRC, "key": "inventory/manifest.json", "format": "inventory"}
    ex = clean.run(job, timeout=90)
    assert ex.status == "SUCCEEDED", f"{ex.status}: {ex.description.get('cause')}\n{clean.describe()}"
    plan = json.loads(ex.description["output"])["plan"]
    assert plan["shards"] == [0, 1, 2, 3]
    r = report(clean, ex.description.get("output"))
    assert (r["listed"], r["succeeded"], r["failed"]) == (600, 600, 0)
    assert r["bytes"] == sum(len(f"object {i} ") * (1 + i % 4) for i in range(600))
    assert destination(clean) == {"out/" + k[3:]: v for k, v in expected.items()}


def test_a_csv_manifest_lists_in_byte_range_shards_and_copies_exactly(template: dict[str, Any]) -> None:
    """PlanListing cuts a plain CSV into byte ranges (here of 2,000 bytes); each shard reads its lines by ranged GETs."""
    with StackOnMoto(template, buckets=(SRC, DST), env={**ENV, "S3BULK_CSV_SHARD_BYTES": "2000"}) as stack:
        keys = [f"in/csv/{i % 5}/obj {i:04d}+é" for i in range(500)]
        expected = seed_keys(keys)
        body = "".join(f"{SRC},{quote_plus(k, safe='/')}\n" for k in keys).encode()
        stack.s3.put_object(Bucket=SRC, Key="lists/keys.csv", Body=body)
        job = copy_job()
        job["source"]["manifest"] = {"bucket": SRC, "key": "lists/keys.csv", "format": "csv"}
        ex = stack.run(job, timeout=120)
        assert ex.status == "SUCCEEDED", f"{ex.status}: {ex.description.get('cause')}\n{stack.describe()}"
        shards = json.loads(ex.description["output"])["plan"]["shards"]
        assert len(shards) == len(body) // 2000 == 9  # ranges of at least 2,000 bytes, fewer than list_shards (16)
        r = report(stack, ex.description.get("output"))
        assert (r["listed"], r["succeeded"], r["failed"]) == (500, 500, 0)
        assert destination(stack) == {"out/" + k[3:]: v for k, v in expected.items()}


def test_a_process_job_gzips_every_object_through_the_stack_with_code_bundled_at_deploy(clean: StackOnMoto) -> None:
    assert clean.template_env("Worker")["S3BULK_PROCESS_CODE"] == "/var/task/process_code"  # where the asset puts -c process_code
    expected = seed(300)
    job = {
        "operation": "process",
        "source": {"bucket": SRC, "prefix": "in/"},
        "destination": {"bucket": DST, "prefix": "gz/"},
        "process": {"function": "stack_gzip:run", "arguments": {"level": 1}},
        "options": {"batch_size": 50},
    }
    ex = clean.run(job, timeout=90)
    assert ex.status == "SUCCEEDED", f"{ex.description.get('error')}: {str(ex.description.get('cause'))[:1500]}"
    r = report(clean, ex.description.get("output"))
    assert (r["listed"], r["succeeded"], r["failed"]) == (300, 300, 0)
    outputs = {}
    for page in clean.s3.get_paginator("list_objects_v2").paginate(Bucket=DST, Prefix="gz/"):
        for o in page.get("Contents", ()):
            outputs[o["Key"]] = md5(gzip.decompress(clean.s3.get_object(Bucket=DST, Key=o["Key"])["Body"].read()))
    assert outputs == {f"gz/{k}.gz": v for k, v in expected.items()}


def test_a_batch_operations_lambda_is_invoked_by_the_workers_and_its_results_reported(
    clean: StackOnMoto, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(PROCESS_CODE))  # the user's function runs in-process, as the harness runs every function
    seed_keys([f"in/obj {i}+é" for i in range(40)] + ["in/please-refuse"])
    arn = clean.deploy("UserBatchOps", "stack_batchops.lambda_handler")
    assert arn == BATCHOPS_ARN
    job = {
        "operation": "process",
        "source": {"bucket": SRC, "prefix": "in/"},
        "process": {"batchops_lambda": arn, "arguments": {"label": "sz"}, "tasks_per_invocation": 8},
        "options": {"batch_size": 20, "tolerated_failures": 1},
    }
    ex = clean.run(job, timeout=90)
    assert ex.status == "SUCCEEDED", f"{ex.description.get('error')}: {str(ex.description.get('cause'))[:1500]}"
    r = report(clean, ex.description.get("output"))
    assert (r["succeeded"], r["failed"]) == (40, 1)
    assert [(f["key"], f["error"], f["message"]) for f in r["failures"]] == [("in/please-refuse", "PermanentFailure", "refused")]
    # Up to 8 tasks per invocation: at least ceil(41 / 8); fewer than one each, however the listing shards cut the batches.
    assert 6 <= clean.functions["UserBatchOps"].invocations < 41


def test_a_batch_operations_lambda_outside_the_allow_list_fails_the_job_at_validate(clean: StackOnMoto) -> None:
    seed_keys(["in/a"])
    other = f"arn:aws:lambda:{REGION}:{DEFAULT_ACCOUNT_ID}:function:NotAllowed"
    job = {"operation": "process", "source": {"bucket": SRC, "prefix": "in/"}, "process": {"batchops_lambda": other}}
    ex = clean.run(job, timeout=30)
    assert ex.status == "FAILED" and ex.description.get("error") == "InvalidJob"
    cause = str(ex.description.get("cause"))
    assert "job.process.batchops_lambda" in cause and "-c process_lambdas=" in cause


def test_a_relay_job_streams_objects_from_another_endpoint_with_keys_from_an_allow_listed_secret(clean: StackOnMoto) -> None:
    """The source is another provider that only accepts its own keys; the functions read them from Secrets Manager."""
    keys = {"legacy-access": "legacy-secret-key"}
    with SeaweedServer(keys=keys) as legacy:
        theirs = make_s3_client(
            ClientSettings(endpoint_url=legacy.endpoint_url, access_key="legacy-access", secret_key="legacy-secret-key"), 8
        )
        theirs.create_bucket(Bucket=LEGACY)
        expected = {}
        for i in range(120):
            body = f"legacy {i} ".encode() * (1 + i % 50)
            theirs.put_object(Bucket=LEGACY, Key=f"data/{i % 4}/obj-{i:03d}", Body=body, ContentType="text/plain", Metadata={"n": str(i)})
            expected[f"from-legacy/{i % 4}/obj-{i:03d}"] = md5(body)
        big = bytes(range(256)) * (12 * 4096)  # 12 MiB: a multipart upload of 8 MiB parts at the destination
        theirs.put_object(Bucket=LEGACY, Key="data/big.bin", Body=big, Tagging="tier=cold")
        secrets = boto3.client("secretsmanager", region_name=REGION)
        secrets.create_secret(
            Name="legacy-keys",
            SecretString=json.dumps({"aws_access_key_id": "legacy-access", "aws_secret_access_key": "legacy-secret-key"}),
        )
        clean.pair_endpoint(LEGACY_SECRET, legacy.endpoint_url)  # -c credentials_secrets=ARN=URL@source, as its deployer would
        job = {
            "operation": "copy",
            "source": {"bucket": LEGACY, "prefix": "data/", "endpoint_url": legacy.endpoint_url, "credentials_secret": LEGACY_SECRET},
            "destination": {"bucket": DST, "prefix": "from-legacy/"},
            "options": {"batch_size": 25},
        }
        ex = clean.run(job, timeout=120)
        assert ex.status == "SUCCEEDED", f"{ex.description.get('error')}: {str(ex.description.get('cause'))[:1500]}"
        r = report(clean, ex.description.get("output"))
        assert (r["listed"], r["succeeded"], r["failed"], r["bytes"]) == (
            121,
            121,
            0,
            sum(len(f"legacy {i} ".encode()) * (1 + i % 50) for i in range(120)) + len(big),
        )
    got = {}
    for page in clean.s3.get_paginator("list_objects_v2").paginate(Bucket=DST, Prefix="from-legacy/"):
        for o in page.get("Contents", ()):
            got[o["Key"]] = o["ETag"].strip('"')
    big_etag = got.pop("from-legacy/big.bin")
    assert got == expected  # every small object byte-exact (single-part ETag = MD5)
    assert big_etag.endswith("-2")  # relayed as a 2-part upload
    assert clean.s3.get_object(Bucket=DST, Key="from-legacy/big.bin")["Body"].read() == big
    head = clean.s3.head_object(Bucket=DST, Key="from-legacy/1/obj-005")
    assert (head["ContentType"], head["Metadata"]) == ("text/plain", {"n": "5"})
    assert clean.s3.get_object_tagging(Bucket=DST, Key="from-legacy/big.bin")["TagSet"] == [{"Key": "tier", "Value": "cold"}]


@pytest.mark.parametrize(
    ("source", "field", "fix"),
    [
        ({"endpoint_url": "http://127.0.0.1:9"}, "job.source.endpoint_url", "credentials_secret"),
        # An allow-listed secret pointed at a host its deployer never named: refused before anything is fetched.
        ({"endpoint_url": "http://127.0.0.1:9", "credentials_secret": LEGACY_SECRET}, "job.source.endpoint_url", "-c credentials_secrets="),
        ({"profile": "legacy"}, "job.source.profile", "credentials_secret"),
        (
            {"credentials_secret": f"arn:aws:secretsmanager:{REGION}:{DEFAULT_ACCOUNT_ID}:secret:other"},
            "job.source.credentials_secret",
            "@source added to -c credentials_secrets",
        ),
    ],
)
def test_a_relay_job_the_deployment_cannot_reach_fails_at_validate_naming_the_field_and_the_fix(
    clean: StackOnMoto, source: dict[str, str], field: str, fix: str
) -> None:
    job = {"operation": "copy", "source": {"bucket": LEGACY, **source}, "destination": {"bucket": DST}}
    ex = clean.run(job, timeout=30)
    assert ex.status == "FAILED" and ex.description.get("error") == "InvalidJob"
    cause = str(ex.description.get("cause"))
    assert field in cause and fix in cause


def test_a_secret_deployed_to_pull_from_a_partner_cannot_push_a_readable_bucket_to_it(clean: StackOnMoto) -> None:
    """-c credentials_secrets=ARN@source: a job naming those keys on its destination side is refused at Validate."""
    far = {"bucket": DST, "endpoint_url": "http://127.0.0.1:9", "credentials_secret": LEGACY_SECRET}  # a write bucket's name there
    ex = clean.run({"operation": "copy", "source": {"bucket": SRC, "prefix": "in/"}, "destination": far}, timeout=30)
    assert ex.status == "FAILED" and ex.description.get("error") == "InvalidJob"
    cause = str(ex.description.get("cause"))
    assert "job.destination.credentials_secret" in cause and "serve the source side of a job, not the destination" in cause


def test_an_endpoint_outage_returns_batches_uncounted_and_the_job_completes_exactly_once_it_is_back(
    clean: StackOnMoto, seaweed: str
) -> None:
    """The source (a SeaweedFS behind a proxy) refuses every connection for longer than the job's outage window.

    Workers whose breaker trips hand their batch back whole (no failure recorded, nothing counted);
    the batches come back after their backoff, the endpoint is up again, and the job ends exact.
    """
    theirs = client_for(seaweed)
    with contextlib.suppress(theirs.exceptions.BucketAlreadyOwnedByYou, theirs.exceptions.BucketAlreadyExists):
        theirs.create_bucket(Bucket=LEGACY)
    expected = {}
    prefix = f"outage-{uuid.uuid4().hex[:8]}/"
    for i in range(200):
        body = f"outage {i} ".encode() * (1 + i % 7)
        theirs.put_object(Bucket=LEGACY, Key=f"{prefix}{i:04d}", Body=body)
        expected[f"after-outage/{i:04d}"] = md5(body)
    secrets = boto3.client("secretsmanager", region_name=REGION)
    secrets.create_secret(
        Name="legacy-keys", SecretString=json.dumps({"aws_access_key_id": ACCESS_KEY, "aws_secret_access_key": SECRET_KEY})
    )
    with FaultProxy(port_of(seaweed)) as proxy:
        clean.pair_endpoint(LEGACY_SECRET, proxy.endpoint_url)  # -c credentials_secrets=ARN=URL@source, as its deployer would
        job = {
            "operation": "copy",
            "source": {"bucket": LEGACY, "prefix": prefix, "endpoint_url": proxy.endpoint_url, "credentials_secret": LEGACY_SECRET},
            "destination": {"bucket": DST, "prefix": "after-outage/"},
            "options": {"batch_size": 5, "outage_seconds": 2},
        }
        cut: list[float] = []

        def outage() -> None:
            """Once the first copies land, refuse connections for 3 windows: every worker that needs the source trips."""
            watcher = boto3.client("s3", region_name=REGION)
            deadline = time.monotonic() + 60
            while not watcher.list_objects_v2(Bucket=DST, Prefix="after-outage/", MaxKeys=1).get("KeyCount"):
                if time.monotonic() > deadline:
                    return
                time.sleep(0.02)
            cut.append(time.monotonic())
            proxy.down_for(6).join()

        cutter = threading.Thread(target=outage, daemon=True)
        cutter.start()
        ex = clean.run(job, timeout=180)
        cutter.join()
    assert cut, "no object was copied within 60 s, so no outage was cut into the work"
    assert ex.status == "SUCCEEDED", f"{ex.description.get('error')}: {str(ex.description.get('cause'))[:1500]}"
    r = report(clean, ex.description.get("output"))
    assert (r["listed"], r["succeeded"], r["failed"], r["failures"]) == (200, 200, 0, [])
    got = {}
    for page in clean.s3.get_paginator("list_objects_v2").paginate(Bucket=DST, Prefix="after-outage/"):
        got.update({o["Key"]: o["ETag"].strip('"') for o in page.get("Contents", ())})
    assert got == expected
    source = clean.worker_source
    assert source.stats.returned >= 1  # the outage really cut into the work: at least one batch went back
    assert dead_lettered(clean) == 0


def test_an_outage_past_the_stacks_bound_stops_the_job_with_a_report_and_submitting_it_again_finishes_it_exactly(
    template: dict[str, Any], seaweed: str
) -> None:
    """Workers hand batches back while the endpoint is gone; past S3BULK_OUTAGE_STOP_S one stops the job (resumable).

    The execution ends JobStopped with a report that says stopped and counts no failure; the same job
    submitted again once the endpoint answers is reopened and finishes with exact counts.
    """
    env = {**ENV, "S3BULK_OUTAGE_STOP_S": "3"}
    theirs = client_for(seaweed)
    with contextlib.suppress(theirs.exceptions.BucketAlreadyOwnedByYou, theirs.exceptions.BucketAlreadyExists):
        theirs.create_bucket(Bucket=LEGACY)
    prefix = f"stopped-{uuid.uuid4().hex[:8]}/"
    expected = {}
    for i in range(300):
        body = f"stop {i} ".encode() * (1 + i % 5)
        theirs.put_object(Bucket=LEGACY, Key=f"{prefix}{i:04d}", Body=body)
        expected[f"resumed/{i:04d}"] = md5(body)
    with StackOnMoto(template, buckets=(SRC, DST), env=env) as stack, FaultProxy(port_of(seaweed)) as proxy:
        boto3.client("secretsmanager", region_name=REGION).create_secret(
            Name="legacy-keys", SecretString=json.dumps({"aws_access_key_id": ACCESS_KEY, "aws_secret_access_key": SECRET_KEY})
        )
        stack.pair_endpoint(LEGACY_SECRET, proxy.endpoint_url)  # -c credentials_secrets=ARN=URL@source, as its deployer would
        job = {
            "job_id": "legacy-migration",
            "operation": "copy",
            "source": {"bucket": LEGACY, "prefix": prefix, "endpoint_url": proxy.endpoint_url, "credentials_secret": LEGACY_SECRET},
            "destination": {"bucket": DST, "prefix": "resumed/"},
            "options": {"batch_size": 10, "outage_seconds": 1},
        }
        watcher = boto3.client("s3", region_name=REGION)

        def cut_when_copying() -> None:
            deadline = time.monotonic() + 60
            while not watcher.list_objects_v2(Bucket=DST, Prefix="resumed/", MaxKeys=1).get("KeyCount"):
                if time.monotonic() > deadline:
                    return
                time.sleep(0.02)
            proxy.go_down()  # and it stays down until the job has stopped

        cutter = threading.Thread(target=cut_when_copying, daemon=True)
        cutter.start()
        first = stack.run(job, timeout=120)
        cutter.join()
        assert first.status == "FAILED" and first.description.get("error") == "JobStopped", first.description
        stopped = report(stack, json.dumps({"job_id": "legacy-migration"}))
        assert (stopped["status"], stopped["failed"], stopped["failures"]) == ("stopped", 0, [])
        # Batches in flight at the cut went back whole, so what is counted done is whatever finished before it (maybe none).
        assert stopped["succeeded"] < 300 and "gave no answer" in str(stopped.get("error"))
        assert DynamoLedger(stack.ddb, stack.bucket_of("Ledger")).status("legacy-migration") == "STOPPED"  # the table, by logical id

        proxy.go_up()
        second = stack.run(job, timeout=120)
        assert second.status == "SUCCEEDED", f"{second.description.get('error')}: {str(second.description.get('cause'))[:1500]}"
        r = report(stack, second.description.get("output"))
        assert (r["status"], r["succeeded"], r["failed"]) == ("succeeded", 300, 0)
        got = {}
        for page in stack.s3.get_paginator("list_objects_v2").paginate(Bucket=DST, Prefix="resumed/"):
            got.update({o["Key"]: o["ETag"].strip('"') for o in page.get("Contents", ())})
        assert got == expected


def test_a_listing_whose_endpoint_gives_no_answer_stops_the_job_instead_of_failing_or_spinning(clean: StackOnMoto) -> None:
    with FaultProxy(port_of("http://127.0.0.1:9")) as proxy:  # nothing behind it, and it is down from the start
        proxy.go_down()
        boto3.client("secretsmanager", region_name=REGION).create_secret(
            Name="legacy-keys", SecretString=json.dumps({"aws_access_key_id": ACCESS_KEY, "aws_secret_access_key": SECRET_KEY})
        )
        clean.pair_endpoint(LEGACY_SECRET, proxy.endpoint_url)  # -c credentials_secrets=ARN=URL@source, as its deployer would
        job = {
            "job_id": "listing-down",
            "operation": "copy",
            "source": {"bucket": LEGACY, "prefix": "x/", "endpoint_url": proxy.endpoint_url, "credentials_secret": LEGACY_SECRET},
            "destination": {"bucket": DST, "prefix": "never/"},
            "options": {"outage_seconds": 1},
        }
        ex = clean.run(job, timeout=60)
    assert ex.status == "FAILED" and ex.description.get("error") == "JobStopped", ex.description
    assert "ListShards" not in ex.entered()  # stopped at PlanListing, the first request to the source
    r = report(clean, json.dumps({"job_id": "listing-down"}))
    assert (r["status"], r["listed"], r["failed"]) == ("stopped", 0, 0)
    assert "EndpointUnreachable" in str(r.get("error"))
