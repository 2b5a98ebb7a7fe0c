"""Build the distributed services from environment variables (set by the CDK stack).

Called on a handler's first invocation, never at import time, so tests and
cold starts pay only for what they use.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from s3bulk.aws.allowlist import AllowList
from s3bulk.aws.completion import Completion
from s3bulk.aws.events import JobEvents
from s3bulk.aws.history import RENEW_AT, History
from s3bulk.aws.invoke import lambda_invoker
from s3bulk.aws.ledger import DynamoLedger
from s3bulk.aws.lister import DEFAULT_LIST_SHARDS, LIST_MARGIN_S
from s3bulk.aws.queue import QueueSender, Returns
from s3bulk.aws.reportbucket import ReportBucket
from s3bulk.aws.validation import DEFAULT_POLL_SECONDS
from s3bulk.aws.worker import HARD_MARGIN_S, OUTAGE_STOP_S, WORK_MARGIN_S, WorkerService
from s3bulk.bodies.malloc import pin_mmap_threshold
from s3bulk.bodies.memory import MiB, WorkerSize, body_budget_mb
from s3bulk.job import Destination, Process, Source
from s3bulk.ops.pools import DEFAULT_CONCURRENCY, connections_needed
from s3bulk.ops.process import ProcessCode, load_code
from s3bulk.s3.clients import ClientSettings, S3Clients, for_side, make_client, make_s3_client
from s3bulk.s3.faststore import open_store
from s3bulk.s3.stores import S3Store
from s3bulk.source.manifest import MIN_CSV_SHARD_BYTES


@dataclass(frozen=True, slots=True)
class AwsConfig:
    table: str
    queue_url: str
    report_bucket: str
    allow: AllowList
    concurrency: int = DEFAULT_CONCURRENCY  # a worker's threads for jobs that stream bodies (relay, process)
    request_concurrency: int | None = None  # ... and for every other job (S3 moves the bytes); None: `concurrency`

    @property
    def threads(self) -> int:
        """The most object threads a worker runs at once (either pool): every client's connections are sized to it."""
        return max(self.concurrency, self.request_concurrency or 0)

    max_receives: int = 5
    work_margin: float = WORK_MARGIN_S
    hard_margin: float = HARD_MARGIN_S  # with this much left, a worker stops waiting for objects in flight
    drain_s: float = 0.0  # a stopped job's report waits at most this long for work in flight (the stack sets it)
    list_margin: float = LIST_MARGIN_S  # a lister call stops paging with this much of its time left
    poll_seconds: int = DEFAULT_POLL_SECONDS
    list_page_size: int = 1000
    list_shards: int = DEFAULT_LIST_SHARDS  # listing shards a job is split into (the state machine lists them in parallel)
    csv_shard_bytes: int = MIN_CSV_SHARD_BYTES  # a plain CSV manifest splits into byte ranges of at least this much
    request_path: str = "fast"  # fast: CopyObject/DeleteObjects on the lighter path; botocore: everything via botocore
    process_code: str = ""  # the directory the deployer's process code was bundled into (-c process_code=DIR)
    memory_mb: int = 1024  # the function's memory (Lambda sets AWS_LAMBDA_FUNCTION_MEMORY_SIZE)
    worker_memory_mb: int = 1024  # the Worker function's memory (the stack sets S3BULK_WORKER_MEMORY_MB), for Validate
    outage_stop: float = OUTAGE_STOP_S  # how long batches are handed back for an unreachable endpoint before the job stops
    history_renew_at: int = RENEW_AT  # history events past which a job goes on in a new execution (aws/history.py)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AwsConfig:
        env = os.environ if env is None else env
        return cls(
            table=env.get("S3BULK_TABLE", ""),
            queue_url=env.get("S3BULK_QUEUE_URL", ""),
            report_bucket=env.get("S3BULK_REPORT_BUCKET", ""),
            allow=AllowList.from_env(env),
            concurrency=int(env.get("S3BULK_CONCURRENCY", DEFAULT_CONCURRENCY)),
            request_concurrency=int(env["S3BULK_REQUEST_CONCURRENCY"]) if env.get("S3BULK_REQUEST_CONCURRENCY") else None,
            max_receives=int(env.get("S3BULK_MAX_RECEIVES", 5)),
            work_margin=float(env.get("S3BULK_WORK_MARGIN_S", WORK_MARGIN_S)),
            hard_margin=float(env.get("S3BULK_HARD_MARGIN_S", HARD_MARGIN_S)),
            drain_s=float(env.get("S3BULK_DRAIN_S", 0)),
            list_margin=float(env.get("S3BULK_LIST_MARGIN_S", LIST_MARGIN_S)),
            poll_seconds=int(env.get("S3BULK_POLL_SECONDS", DEFAULT_POLL_SECONDS)),
            list_page_size=int(env.get("S3BULK_LIST_PAGE_SIZE", 1000)),
            list_shards=int(env.get("S3BULK_LIST_SHARDS", DEFAULT_LIST_SHARDS)),
            csv_shard_bytes=int(env.get("S3BULK_CSV_SHARD_BYTES", MIN_CSV_SHARD_BYTES)),
            request_path=env.get("S3BULK_REQUEST_PATH", "fast"),
            process_code=env.get("S3BULK_PROCESS_CODE", ""),
            memory_mb=int(env.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", 1024)),
            worker_memory_mb=int(env.get("S3BULK_WORKER_MEMORY_MB", 1024)),
            outage_stop=float(env.get("S3BULK_OUTAGE_STOP_S", OUTAGE_STOP_S)),
            history_renew_at=int(env.get("S3BULK_HISTORY_RENEW_AT", RENEW_AT)),
        )


SETTINGS = ClientSettings()


def ledger(cfg: AwsConfig) -> DynamoLedger:
    return DynamoLedger(make_client("dynamodb", SETTINGS), cfg.table)


def job_events() -> JobEvents:
    """Each finished job's event, on the account's default event bus."""
    return JobEvents(make_client("events", SETTINGS))


def lambda_client() -> Any:
    """For a function that continues its own work in another invocation of itself."""
    return make_client("lambda", SETTINGS)


def reports(cfg: AwsConfig) -> ReportBucket:
    return ReportBucket(make_s3_client(SETTINGS, 16), cfg.report_bucket, readers=12)


def store(cfg: AwsConfig) -> S3Store:
    """Each bucket's requests go to its own Region (s3bulk/s3/regions.py), so allow-listed buckets may live anywhere;
    each pinned bucket's carry its owner."""
    clients = S3Clients(SETTINGS, connections_needed(cfg.threads))
    home = open_store(clients, fast=cfg.request_path != "botocore", max_keys=cfg.list_page_size)
    home.pin_owners(cfg.allow.owner_of)  # -c bucket_owner: the deployment's own buckets only, not a foreign side's
    return home


class SideStores:
    """The store of a side that names another endpoint or a credentials secret, built once per container and side.

    Its keys come from the secret (read with the function's role, refreshed hourly);
    it shares the deployment store's rate control, so one job paces as one.
    """

    def __init__(self, cfg: AwsConfig, home: S3Store) -> None:
        self.cfg = cfg
        self.home = home
        self._stores: dict[tuple[str | None, str | None, str | None], S3Store] = {}
        self._lock = threading.Lock()

    def __call__(self, side: Source | Destination) -> S3Store:
        key = (side.endpoint_url, side.region, side.credentials_secret)
        with self._lock:
            if key not in self._stores:
                clients = S3Clients(for_side(SETTINGS, side), connections_needed(self.cfg.threads))
                self._stores[key] = open_store(
                    clients, fast=self.cfg.request_path != "botocore", max_keys=self.cfg.list_page_size, rate=self.home.rate
                )
            return self._stores[key]


def sender(cfg: AwsConfig) -> QueueSender:
    return QueueSender(make_client("sqs", SETTINGS), cfg.queue_url)


def returns(cfg: AwsConfig) -> Returns:
    return Returns(make_client("sqs", SETTINGS), cfg.queue_url)


def history(cfg: AwsConfig) -> History:
    return History(make_client("stepfunctions", SETTINGS), cfg.history_renew_at)


def completion() -> Completion:
    return Completion(make_client("stepfunctions", SETTINGS))


def code_loader(cfg: AwsConfig) -> Callable[[Process], ProcessCode]:
    """Loads a process job's code: from the bundled directory, or a connection to its allow-listed Lambda."""
    search = [Path(cfg.process_code)] if cfg.process_code else []
    connect = lambda_invoker(SETTINGS, connections_needed(cfg.threads))
    return lambda process: load_code(process, search, connect, confined=True)  # the deployer's code, nothing else


def worker_size(cfg: AwsConfig) -> WorkerSize:
    """The deployment's worker as Validate sees it: its memory and its threads (S3BULK_CONCURRENCY)."""
    return WorkerSize(cfg.worker_memory_mb, cfg.concurrency)


def worker_service(cfg: AwsConfig) -> WorkerService:
    pin_mmap_threshold()  # process and relay bodies go back to the OS when freed (bodies/malloc.py)
    s3 = store(cfg)
    return WorkerService(
        ledger=ledger(cfg),
        store=s3,
        reports=reports(cfg),
        allow=cfg.allow,
        concurrency=cfg.concurrency,
        request_concurrency=cfg.request_concurrency,
        margin=cfg.work_margin,
        hard_margin=cfg.hard_margin,
        rate=s3.rate,
        completion=completion(),
        returns=returns(cfg),
        max_receives=cfg.max_receives,
        load_code=code_loader(cfg),
        # What the function's memory leaves for object bodies after the runtime and each thread's own (bodies/memory.py).
        body_budget=body_budget_mb(cfg.memory_mb, cfg.concurrency) * MiB,
        open_side=SideStores(cfg, s3),
        outage_stop=cfg.outage_stop,
    )
