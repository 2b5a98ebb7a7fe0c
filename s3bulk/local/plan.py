"""`s3bulk plan`: what a job would do and cost, from a listing alone; nothing is changed.

Prices come from one data file (s3bulk/data/prices.json, with its region and date), never
from code, so a user can check or replace them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, cast

from s3bulk.bodies.memory import streams_bodies
from s3bulk.bodies.reader import RANGE_SIZE
from s3bulk.bodies.writer import MAX_PARTS
from s3bulk.bodies.writer import PART_SIZE as WRITE_PART
from s3bulk.bodies.writer import THRESHOLD as WRITE_THRESHOLD
from s3bulk.job import ARCHIVED, Job, Restore, relays
from s3bulk.local.engine import Engine
from s3bulk.ops.acl import AclsEnabled
from s3bulk.ops.copies import part_ranges
from s3bulk.ops.items import NEEDS_HEAD, heads_anyway, needs_nothing
from s3bulk.pace import Pace, pace, s3_objects_per_s
from s3bulk.source.selection import as_it_was, hides
from s3bulk.store import UNKNOWN_SIZE, Encryption, ListPage, ObjectInfo, ObjectStore, RequestOptions, StoreError

KiB, MiB, GiB = 1024, 1024**2, 1024**3
SIZE_BUCKETS = [(0, "0 B"), (128 * KiB, "< 128 KiB"), (MiB, "< 1 MiB"), (128 * MiB, "< 128 MiB"), (5 * GiB, "< 5 GiB")]
LIST_PAGE = 1000
DELETE_BATCH = 1000

# Throughput for the ETA, measured (docs/benchmarks.md, docs/cost-model.md): one request per
# object takes ~30 ms on S3, and one process tops out near 1,700 copies/s of client CPU.
REQUEST_LATENCY_S = 0.030
PROCESS_CEILING = 1700.0
# The deployed stack's sizing (infra/config.py defaults) and per-invocation shape.
STACK_WORKERS = 50
STACK_LIST_SHARDS = 16  # -c list_shards
STACK_THREADS = 32  # a worker's streaming threads (relay, process: worker_threads)
STACK_REQUEST_THREADS = 64  # ... and every other job's (S3 moves the bytes: worker_request_threads)
WORKER_MEMORY_GB = 1.0
KEYS_PER_MESSAGE = 1000
MESSAGES_PER_INVOCATION = 5
MESSAGE_SQS_UNITS = 2  # ~100 KB of keys per message, billed per 64 KB
STATE_TRANSITIONS = 40  # validate, list loop and progress polls of a typical job


def size_bucket(size: int) -> str:
    if size == UNKNOWN_SIZE:
        return "unknown (CSV manifest)"
    if size == 0:
        return "0 B"
    return next((label for limit, label in SIZE_BUCKETS[1:] if size < limit), ">= 5 GiB")


@dataclass
class Plan:
    operation: str
    scanned: int = 0
    objects: int = 0
    bytes: int = 0
    skipped: int = 0
    extraneous: int = 0  # sync: destination objects the run would delete
    markers: int = 0  # rewind: keys it would hide under a delete marker (what options.max_delete counts)
    invalid_rows: int = 0  # manifest rows the run would report as failed
    mappings: list[tuple[str, str]] = field(default_factory=list)  # the first source -> destination keys
    restore_tier: str | None = None  # operation restore: the tier its retrieval fees are priced at
    tasks_per_invocation: int | None = None  # process with a Batch Operations Lambda: objects per invocation
    rekeys_in_place: bool = False  # set-encryption by UpdateObjectEncryption (AWS, to a key ARN), not by copies
    by_class: dict[str, list[int]] = field(default_factory=dict)  # class -> [objects, bytes]
    by_size: dict[str, list[int]] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)
    # The reads the undo journal adds (what a change replaces, for `s3bulk undo`): always on the stack, whose key log
    # is always kept; here only with --key-log.
    journal: dict[str, int] = field(default_factory=dict)
    acls_enabled: bool = False  # an in-place copy's bucket may hold ACLs, so each such copy reads its object's first
    # source.tags / content_type: `objects` (and every request after the filter's) is an upper bound, since which
    # objects match is known only by reading each; these are the filter's own reads, included in `requests`.
    filter_requests: dict[str, int] = field(default_factory=dict)
    # The KMS requests S3 makes for SSE-KMS objects without S3 Bucket Keys (count_kms); priced apart, the same for both runners.
    kms: dict[str, int] = field(default_factory=dict)
    streams: bool = False  # relay and process jobs stream bodies through the worker: the stack's streaming threads

    @property
    def stack_threads(self) -> int:
        """The threads a stack worker runs this job's objects on (aws/worker.py pool_for)."""
        return STACK_THREADS if self.streams else STACK_REQUEST_THREADS

    def add(self, size: int, storage_class: str | None) -> None:
        self.objects += 1
        self.bytes += max(size, 0)
        for table, name in ((self.by_class, storage_class or "STANDARD"), (self.by_size, size_bucket(size))):
            row = table.setdefault(name, [0, 0])
            row[0] += 1
            row[1] += max(size, 0)

    def count(self, request: str, n: int = 1, *, journal: bool = False) -> None:
        table = self.journal if journal else self.requests
        if n:
            table[request] = table.get(request, 0) + n


def load_prices(path: str | Path | None = None) -> dict[str, Any]:
    """The shipped list prices, with a --prices file's over them (a file naming only some prices keeps the rest)."""
    prices: dict[str, Any] = json.loads(resources.files("s3bulk").joinpath("data/prices.json").read_text())
    if path:
        _merge(prices, json.loads(Path(path).read_text()))
    return prices


def _merge(into: dict[str, Any], over: dict[str, Any]) -> None:
    """`over`'s prices laid over `into`'s, table by table (a file naming one restore tier keeps the others)."""
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


# In-place operations that are one PUT-class call per object, and the reads their undo journal adds (ops/batch.py).
IN_PLACE_CALL = {"set-retention": "PutObjectRetention", "set-legal-hold": "PutObjectLegalHold", "set-acl": "PutObjectAcl"}
IN_PLACE_COPIES = frozenset({"set-storage-class", "add-checksum", "set-encryption", "rewind"})
JOURNAL_READS = {"set-retention": ("HeadObject", 1), "set-legal-hold": ("GetObjectLegalHold", 1), "set-acl": ("GetObjectAcl", 2)}


def count_object(job: Job, plan: Plan, obj: ObjectInfo) -> None:
    """The S3 requests one object needs, by API call, as the engine makes them (upper bounds where it depends on the object)."""
    op, size = job.operation, obj.size
    count_filters(job, plan, obj)
    if op == "delete":
        if job.source.versions == "delete-markers":
            plan.count("HeadObject", journal=True)  # an undelete's journal: the version the removed marker hid
        return
    if op == "process":
        _count_process(job, plan, size)
        return
    if op == "copy" and job.source.versions == "all":
        plan.count("ListObjectVersions", 2)  # the key's versions on each side (the copies are counted per version, in make_plan)
        return
    if size == UNKNOWN_SIZE and op in NEEDS_HEAD:
        plan.count("HeadObject")  # a CSV manifest row has no size or class: the worker asks (sizes below assume one CopyObject)
    if op in {"copy", "move"} and job.source.manifest is not None and job.options.if_exists != "overwrite":
        plan.count("HeadObject")  # is the destination there (and unchanged)?
    if op == "tag":
        merges = job.tagging is not None and job.tagging.mode in {"merge", "remove"}
        plan.count("GetObjectTagging", journal=not merges)  # a replace reads the tags only for the journal
        plan.count("PutObjectTagging")  # a merge or remove that changes nothing skips it
        return
    if op == "rewind":
        if as_it_was(obj):
            return  # nothing to do
        if hides(obj):
            plan.count("DeleteObject")  # absent then: a delete marker
            plan.markers += 1
            return
        plan.count("HeadObject")  # the version's own class, encryption and Object Lock, named again on its copy
        if plan.acls_enabled:
            plan.count("GetObjectAcl")
        if size <= job.options.multipart_threshold:
            plan.count("CopyObject")
            return
        plan.count("GetObjectTagging")
        plan.count("CreateMultipartUpload")
        plan.count("UploadPartCopy", len(part_ranges(size, job.options.part_size)))
        plan.count("CompleteMultipartUpload")
        return
    if op == "set-encryption" and plan.rekeys_in_place:
        # One HEAD reads the encryption (an object already as asked costs nothing more), then S3 re-keys it in place. An
        # object under Object Lock, or from an encryption S3 cannot update, is copied instead: not counted here.
        plan.count("HeadObject")
        plan.count("UpdateObjectEncryption")
        return
    if op in {"add-checksum", "set-encryption"} or (op == "set-storage-class" and (obj.storage_class or "STANDARD") != job.storage_class):
        # One HEAD reads the object's encryption, which its in-place copy keeps (and, for add-checksum, whether it has
        # the checksum already: then nothing more); a multipart copy carries the same HEAD's headers over.
        plan.count("HeadObject")
        if plan.acls_enabled:
            plan.count("GetObjectAcl")  # grants beyond the owner's are named again on the copy
        if size <= job.options.multipart_threshold:
            plan.count("CopyObject")
            return
        plan.count("GetObjectTagging")
        plan.count("CreateMultipartUpload")
        plan.count("UploadPartCopy", len(part_ranges(size, job.options.part_size)))
        plan.count("CompleteMultipartUpload")
        return
    if op in IN_PLACE_CALL:
        plan.count(IN_PLACE_CALL[op])
        plan.count(*JOURNAL_READS[op], journal=True)
        return
    if op == "restore":
        if size == UNKNOWN_SIZE or (obj.storage_class or "STANDARD") in ARCHIVED:
            plan.count("RestoreObject")
        return
    if op == "verify":
        plan.count("HeadObject", 2)
        if "-" in obj.etag:  # a multipart ETag: unless both carry the same checksum, both bodies are read
            plan.count("GetObject", 2)
        return
    if op == "set-storage-class" and (obj.storage_class or "STANDARD") == job.storage_class:
        return
    if relays(job):
        _count_relay(plan, size)
        return
    if size <= job.options.multipart_threshold:
        plan.count("CopyObject")
        return
    plan.count("HeadObject", 2)  # the source's, and the copy's: a multipart copy is confirmed by HEAD (ops/identity.py)
    plan.count("GetObjectTagging")
    plan.count("CreateMultipartUpload")
    plan.count("UploadPartCopy", len(part_ranges(size, job.options.part_size)))
    plan.count("CompleteMultipartUpload")


def count_filters(job: Job, plan: Plan, obj: ObjectInfo) -> None:
    """What the worker reads to judge an object by source.tags / content_type (ops/filters.py): one GetObjectTagging,
    one HEAD unless the operation HEADs the object anyway (it then reuses the filter's); both when both are given, an
    upper bound, as the second is not made once the first leaves the object out."""
    src = job.source
    if (src.tags is None and src.content_type is None) or obj.delete_marker or needs_nothing(job, obj):
        return
    calls = (["GetObjectTagging"] if src.tags is not None else []) + (
        ["HeadObject"] if src.content_type is not None and not heads_anyway(job, obj) else []
    )
    for call in calls:
        plan.count(call)
        plan.filter_requests[call] = plan.filter_requests.get(call, 0) + 1


# ListParts returns at most this many parts a page.
PARTS_PAGE = 1000


def count_upload(store: ObjectStore, bucket: str, plan: Plan, upload: ObjectInfo) -> None:
    """An open upload's parts' bytes, which listing uploads does not give: one ListParts (a page per 1,000 parts), the
    plan's own request, counted and priced with the run's one AbortMultipartUpload. An upload gone since it was listed
    holds nothing."""
    try:
        parts = store.list_parts(bucket, upload.key, upload.upload_id)
    except StoreError as exc:
        if exc.code != "NoSuchUpload":
            raise
        parts = []
    plan.count("ListParts", max(1, math.ceil(len(parts) / PARTS_PAGE)))
    plan.add(sum(p.size for p in parts), upload.storage_class)
    plan.count("AbortMultipartUpload")


def storage_saved(plan: Plan, prices: dict[str, Any]) -> float | None:
    """What an abort-uploads run saves a month: its STANDARD uploads' parts at prices.json's S3 Standard storage price
    (parts are billed as stored objects of their class); None when the file has no such price."""
    price = prices.get("s3_standard_gb_month")
    if plan.operation != "abort-uploads" or price is None:
        return None
    return plan.by_class.get("STANDARD", [0, 0])[1] / GiB * float(price)


def _count_relay(plan: Plan, size: int) -> None:
    """A relay reads the source (HEAD, tags, ranged GETs) and writes the destination (one PUT, or a multipart upload)."""
    size = max(size, 0)
    plan.count("HeadObject")
    plan.count("GetObjectTagging")
    plan.count("GetObject", math.ceil(size / RANGE_SIZE))
    if size <= WRITE_THRESHOLD:
        plan.count("PutObject")
        return
    plan.count("CreateMultipartUpload")
    plan.count("UploadPart", math.ceil(size / max(WRITE_PART, math.ceil(size / MAX_PARTS / MiB) * MiB)))
    plan.count("CompleteMultipartUpload")


def _count_process(job: Job, plan: Plan, size: int) -> None:
    """A function reads its object once (ranged GETs) and writes one output when there is a destination;
    a Batch Operations function's own requests are its business (its invocations are priced in `cost`)."""
    assert job.process is not None
    if job.process.function is None:
        return
    if size == UNKNOWN_SIZE:
        plan.count("HeadObject")  # obj.open() needs the size and ETag a CSV row does not give
        size = 1
    plan.count("GetObject", math.ceil(size / RANGE_SIZE))
    if job.destination is not None:
        plan.count("PutObject")


def cost(plan: Plan, prices: dict[str, Any]) -> dict[str, float]:
    """Dollars on the deployed stack and with S3 Batch Operations: the same S3 requests, but for the stack's undo journal."""
    s3 = s3_cost(plan.requests, prices)
    journal = s3_cost(plan.journal, prices)
    messages = math.ceil(plan.objects / KEYS_PER_MESSAGE)
    invocations = math.ceil(messages / MESSAGES_PER_INVOCATION)
    worker_seconds = plan.objects / (plan.stack_threads / REQUEST_LATENCY_S)
    lam = worker_seconds * WORKER_MEMORY_GB * prices["lambda_gb_second"] + invocations * prices["lambda_request_per_million"] / 1e6
    sqs = messages * (1 + 2 * MESSAGE_SQS_UNITS) * prices["sqs_request_per_million"] / 1e6  # send, receive, delete
    ddb = messages * 4 * prices["dynamodb_write_unit_per_million"] / 1e6  # one transactional batch write: 2 items x 2 units
    sfn = STATE_TRANSITIONS * prices["step_functions_transition_per_1000"] / 1000
    batch_ops = prices["batch_operations_job"] + plan.objects / 1e6 * prices["batch_operations_per_million_objects"]
    retrieval = restore_fees(plan, prices)
    # process with a deployed function: its invocation requests; Batch Operations invokes it once per object.
    # (Its run time is the same work under either runner, so it is left out of both.)
    invoke_price = prices["lambda_request_per_million"] / 1e6
    stack_invokes = math.ceil(plan.objects / plan.tasks_per_invocation) * invoke_price if plan.tasks_per_invocation else 0.0
    batch_invokes = plan.objects * invoke_price if plan.tasks_per_invocation else 0.0
    kms = sum(plan.kms.values()) * prices["kms_request_per_10000"] / 10_000
    stack = s3 + journal + retrieval + lam + sqs + ddb + sfn + stack_invokes + kms
    return {
        "undo_journal": journal,
        "process_invocations": stack_invokes,
        "batch_operations_invocations": batch_invokes,
        "restore_retrieval": retrieval,
        "s3_requests": s3,
        "kms_requests": kms,
        "lambda": lam,
        "sqs": sqs,
        "dynamodb": ddb,
        "step_functions": sfn,
        "stack_total": stack,
        "batch_operations_total": s3 + retrieval + batch_ops + batch_invokes + kms,
    }


GET_CLASS = frozenset(
    {
        "HeadObject",
        "GetObject",
        "GetObjectTagging",
        "GetObjectAcl",
        "GetObjectLegalHold",
        "GetObjectRetention",
        "GetBucketOwnershipControls",
    }
)


# DELETE and CANCEL requests, priced apart (S3 lists them free); an AbortMultipartUpload is a DELETE.
DELETE_CLASS = frozenset({"DeleteObjects", "DeleteObject", "AbortMultipartUpload"})


def s3_cost(requests: dict[str, int], prices: dict[str, Any]) -> float:
    """S3's request charges: GET-class reads, DELETE-class at their own price, the rest PUT-class (RestoreObject: per tier)."""
    gets = sum(n for k, n in requests.items() if k in GET_CLASS)
    class_a = sum(n for k, n in requests.items() if k not in GET_CLASS | DELETE_CLASS | {"RestoreObject"})
    dollars = class_a / 1000 * float(prices["s3_put_copy_post_list_per_1000"]) + gets / 1000 * float(prices["s3_get_head_per_1000"])
    deletes = sum(n for k, n in requests.items() if k in DELETE_CLASS)
    return dollars + deletes / 1000 * float(prices["s3_delete_per_1000"])


def restore_fees(plan: Plan, prices: dict[str, Any]) -> float:
    """RestoreObject requests and GB retrieved, at the job's tier, per archived class; the same with either runner."""
    if plan.restore_tier is None:
        return 0.0
    table = prices.get("restore_retrieval", {})
    dollars = 0.0
    for storage_class, (objects, size) in plan.by_class.items():
        rate = table.get(storage_class, {}).get(plan.restore_tier)
        if rate is None:
            continue  # not archived (nothing restored), or a tier the class does not offer (the run fails those)
        dollars += objects / 1000 * rate["per_1000_requests"] + size / GiB * rate["per_gb"]
    return dollars


def stack_pace(plan: Plan, *, workers: int = STACK_WORKERS, shards: int = STACK_LIST_SHARDS, prefixes: int = 1) -> Pace:
    """The job's pace on a stack deployed with the defaults (s3bulk/pace.py, the model docs/cost-model.md prices 1 B
    objects with): listing, workers, S3's request rate on `prefixes` partitioned prefixes of the destination (one for a
    new prefix), and the DynamoDB, SQS and KMS ceilings; the lowest binds."""
    objects = plan.objects or 1
    listed = {"ListObjectsV2", "ListObjectVersions", "ListMultipartUploads", "ListParts"}
    gets = sum(n for k, n in plan.requests.items() if k in GET_CLASS) / objects
    puts = sum(n for k, n in plan.requests.items() if k not in GET_CLASS | listed) / objects
    s3 = s3_objects_per_s(puts, gets, prefixes)
    return pace(plan.objects, shards=shards, concurrency=workers, threads=plan.stack_threads, s3_per_s=s3, kms=bool(plan.kms))


def eta_seconds(plan: Plan, concurrency: int, workers: int = 1) -> float:
    """From the measured per-request latency and process ceiling, for `workers` processes of `concurrency` threads."""
    per_process = min(concurrency / REQUEST_LATENCY_S, PROCESS_CEILING)
    units = sum(plan.requests.values()) or plan.objects
    return units / (per_process * workers) if units else 0.0


class _CountingLists:
    """Passes calls to the store and counts the listings, which are the run's own (same code path)."""

    def __init__(self, store: ObjectStore, plan: Plan) -> None:
        self._store, self._plan = store, plan

    def list_page(self, *args: Any, **kwargs: Any) -> ListPage:
        self._plan.count("ListObjectsV2")
        return self._store.list_page(*args, **kwargs)

    def list_versions_page(self, *args: Any, **kwargs: Any) -> ListPage:
        self._plan.count("ListObjectVersions")
        return self._store.list_versions_page(*args, **kwargs)

    def list_uploads_page(self, *args: Any, **kwargs: Any) -> ListPage:
        self._plan.count("ListMultipartUploads")
        return self._store.list_uploads_page(*args, **kwargs)

    def bucket_versioning(self, bucket: str) -> str:
        self._plan.count("GetBucketVersioning")
        return self._store.bucket_versioning(bucket)

    def read_object(self, bucket: str, key: str, start: int = 0, *, version_id: str = "") -> Iterator[bytes]:
        self._plan.count("GetObject")  # a manifest (or one of its data files)
        return self._store.read_object(bucket, key, start, version_id=version_id)

    def scoped(self, options: RequestOptions) -> _CountingLists:
        return _CountingLists(self._store.scoped(options), self._plan)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def from_count(job: Job, objects: int, size: int, store: ObjectStore | None = None) -> Plan:
    """The plan of a selection known by its count alone (objects, bytes: the stack's count before a confirmation), each
    object taken at the average size: exact for the per-object requests, an estimate where parts depend on sizes.
    `store`: asked for the buckets' default encryption, so the KMS requests S3 makes are priced as `plan` prices them
    (without it, only the encryption the job itself names)."""
    plan = Plan(job.operation, streams=streams_bodies(job))
    if objects <= 0:
        return plan
    one = Plan(job.operation)
    count_object(job, one, ObjectInfo("", size // objects))
    plan.objects, plan.bytes = objects, size
    plan.requests = {k: n * objects for k, n in one.requests.items()}
    plan.journal = {k: n * objects for k, n in one.journal.items()}
    plan.count("ListObjectsV2", math.ceil(objects / LIST_PAGE))  # at least: the count saw the selected objects only
    if job.operation in {"delete", "move"}:
        plan.count("DeleteObjects", math.ceil(objects / DELETE_BATCH))
    defaults = store if store is not None else cast(ObjectStore, _NoDefaults())
    count_kms(job, plan, defaults, defaults)
    return plan


class _NoDefaults:
    """A store that knows no bucket's default encryption: from_count without one prices the job's own KMS choice only."""

    def default_encryption(self, bucket: str) -> None:
        return None


def make_plan(job: Job, store: ObjectStore, dst_store: ObjectStore | None = None) -> Plan:
    """List exactly as the run would (the engine's own item stream, in a dry run) and add up what it would do.

    Memory stays bounded: objects are counted as they stream past, never kept.
    """
    dry = job.model_copy(update={"options": job.options.model_copy(update={"dry_run": True})})
    restore_tier = (job.restore or Restore()).tier if job.operation == "restore" else None
    plan = Plan(job.operation, restore_tier=restore_tier, streams=streams_bodies(job))
    if job.process is not None and job.process.batchops_lambda is not None:
        plan.tasks_per_invocation = job.process.tasks_per_invocation
    if job.operation in IN_PLACE_COPIES:
        plan.acls_enabled = AclsEnabled(store)(job.source.bucket)
    enc = job.encryption
    if enc is not None and enc.sse == "aws:kms" and (enc.kms_key_id or "").startswith("arn:"):
        plan.rekeys_in_place = store.updates_encryption(job.source.bucket)
    counted_dst = cast(ObjectStore, _CountingLists(dst_store, plan)) if dst_store is not None else None
    engine = Engine(dry, cast(ObjectStore, _CountingLists(store, plan)), concurrency=1, dst_store=counted_dst)
    engine.check_destination()
    for item in engine.items():
        if item.problem is not None:
            plan.invalid_rows += 1
            continue
        if item.exists:
            plan.skipped += 1
            continue
        if job.operation == "abort-uploads":
            count_upload(engine.store, job.source.bucket, plan, item.obj)
            continue
        plan.add(item.obj.size, item.obj.storage_class)
        if item.recheck is not None:
            plan.count("HeadObject", 2)  # multipart ETags: the worker compares both objects' checksums first
        count_object(job, plan, item.obj)
    engine.flush_extraneous()
    if job.operation in {"delete", "move"}:
        plan.count("DeleteObjects", math.ceil(plan.objects / DELETE_BATCH))
    plan.scanned = engine.tally.snapshot().scanned
    if job.operation == "copy" and job.source.versions == "all":
        # Every listed version is one request at most (a CopyObject, or a DeleteObject for a delete marker), when the
        # destination has none yet; the listing's filters picked whole keys, so this counts the versions of all keys.
        plan.count("CopyObject", plan.scanned)
    if job.operation in IN_PLACE_COPIES and (plan.requests.get("CopyObject") or plan.requests.get("CreateMultipartUpload")):
        plan.count("GetBucketOwnershipControls")  # asked once, at the first in-place copy
    plan.extraneous = engine.tally.extraneous_deleted
    plan.mappings = engine.mappings
    plan.count("DeleteObjects", math.ceil(plan.extraneous / DELETE_BATCH))
    count_kms(job, plan, store, dst_store or store)
    return plan


def _per_object_kms(enc: Encryption | None) -> bool:
    """Whether S3 calls KMS for each object under this encryption: SSE-KMS without an S3 Bucket Key (with one, S3
    reuses a bucket-level key for a while, and the calls fall by up to 99%)."""
    return enc is not None and enc.sse.startswith("aws:kms") and not enc.bucket_key


def count_kms(job: Job, plan: Plan, store: ObjectStore, dst_store: ObjectStore) -> None:
    """The KMS requests S3 makes for the job's caller, by the buckets' default encryption (objects encrypted otherwise
    than their bucket's default are not seen by a listing): a read of an SSE-KMS object's data decrypts its data key,
    a write generates one, and each part of an SSE-KMS multipart upload decrypts the upload's (as stack/kms.py rules)."""
    r = plan.requests
    dst_bucket = job.destination.bucket if job.destination is not None else job.source.bucket
    if _per_object_kms(store.default_encryption(job.source.bucket)):
        plan.kms["Decrypt"] = plan.kms.get("Decrypt", 0) + r.get("CopyObject", 0) + r.get("UploadPartCopy", 0) + r.get("GetObject", 0)
    written = dst_store.default_encryption(dst_bucket)
    if job.encryption is not None:  # set-encryption: what the job names is what objects are written under
        written = Encryption(job.encryption.sse, job.encryption.kms_key_id or "", job.encryption.bucket_key)
    elif job.destination is not None and job.destination.sse is not None:
        written = Encryption(job.destination.sse, job.destination.kms_key_id or "", written.bucket_key if written else False)
    if _per_object_kms(written):
        plan.kms["GenerateDataKey"] = r.get("CopyObject", 0) + r.get("PutObject", 0) + r.get("CreateMultipartUpload", 0)
        parts = r.get("UploadPart", 0) + r.get("UploadPartCopy", 0) + r.get("CreateMultipartUpload", 0)
        plan.kms["Decrypt"] = plan.kms.get("Decrypt", 0) + parts
        plan.kms["ReEncrypt"] = r.get("UpdateObjectEncryption", 0)
    plan.kms = {k: v for k, v in plan.kms.items() if v}
