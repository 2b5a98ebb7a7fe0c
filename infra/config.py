"""Deploy-time settings from CDK context (`cdk deploy -c read_buckets=a,b ...`), validated before synth."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from s3bulk.aws.allowlist import AllowList, paired, sides
from s3bulk.aws.doctor import LAMBDA_UNRESERVED_FLOOR
from s3bulk.aws.ledger import MAX_LIST_SHARDS
from s3bulk.aws.lister import DEFAULT_LIST_SHARDS
from s3bulk.bodies.memory import WorkerSize, check_worker_memory
from s3bulk.job import SECRET_ARN, JobError, parse_job

# Validate, Progress (the completion check), Finalize and ExecutionEnded: at most one each per job at a time.
OTHER_STEPS = 4
# A job's listing shards that run at once by default: a tenth of the default account quota, whatever list_shards is.
LIST_CONCURRENCY = 100

# Step Functions runs at most this many iterations of an inline Map at once, whatever its MaxConcurrency says: past it,
# the listing shards run on a Distributed Map (infra/state_machine.py).
MAX_INLINE_MAP = 40

ROOT = Path(__file__).resolve().parent.parent


# The sides of a job a relay secret's keys may serve (-c credentials_secrets=ARN[=URL]@SIDE).
SECRET_SIDES = ("source", "destination", "both")


def _with_side(item: str) -> tuple[str, str]:
    """`ARN[=URL]@SIDE` as (ARN[=URL], SIDE); SIDE "" when the item names none (a secret's name may hold "@" itself)."""
    head, at, side = item.rpartition("@")
    return (head, side) if at and side in SECRET_SIDES else (item, "")


@dataclass(frozen=True)
class Schedule:
    """One scheduled prefix migration: an EventBridge Scheduler expression and the job file it starts."""

    name: str
    expression: str
    job: dict[str, Any]
    timezone: str = "UTC"


@dataclass(frozen=True)
class DeployConfig:
    read_buckets: tuple[str, ...]
    write_buckets: tuple[str, ...]
    delete_buckets: tuple[str, ...]
    kms_keys: tuple[str, ...] = ()  # key ARNs workers may use for SSE-KMS sources and destinations
    worker_max_concurrency: int = 50
    worker_memory_mb: int = 1024
    worker_timeout_s: int = 600
    worker_batch_size: int = 5
    worker_threads: int = 32  # threads a worker streams bodies with (relay, process): its memory holds each one's buffers
    # Threads for every other job (S3 moves the bytes; the worker holds none): as many as keep the worker's CPU share
    # busy at S3's latency (bench/cost_model.py request_threads_for), twice what streaming fits in 1,024 MB.
    worker_request_threads: int = 64
    list_shards: int = DEFAULT_LIST_SHARDS  # listing shards per job
    # How many of a job's listing shards run at once (the Map's MaxConcurrency); 0: all of them, up to LIST_CONCURRENCY.
    list_concurrency: int = 0
    account_concurrency: int = 1000  # the account's Lambda concurrency quota in the Region, as the deployer states it
    # The Lister and the Worker reserve what they may run: a job never starves the account's other functions, nor they
    # it. A new account whose quota is under what that needs cannot reserve it: see docs/deploy.md.
    reserve_concurrency: bool = True
    poll_seconds: int = 600  # the completion wait's safety net (infra/state_machine.py)
    # The functions' bytecode compiled at synth by a Python 3.13 (refused in one line without one), or, off, their
    # sources shipped: either way the asset follows the settings, not what the deploying machine has.
    precompile: bool = True
    # The functions' processor: arm64 (Graviton, about 20% cheaper per GB-second for the same work) or x86_64 (for
    # process code with native dependencies built only for it). Wheels are vendored for the one chosen.
    architecture: str = "arm64"
    alarm_email: str | None = None  # subscribed to an SNS topic every alarm notifies
    # X-Ray tracing of every function and the state machine. Off by default: AWS ends support for the X-Ray SDK behind
    # Powertools' Tracer on 2027-02-25 and advises OpenTelemetry; traces also cost per invocation.
    tracing: bool = False
    notify_job_events: bool = False  # each finished job's event goes to that topic too (an EventBridge rule)
    schedules: tuple[Schedule, ...] = field(default_factory=tuple)
    process_code: Path | None = None  # a directory of the deployer's process functions, bundled with the worker
    process_lambdas: tuple[str, ...] = ()  # S3 Batch Operations functions process jobs may invoke
    credentials_secrets: tuple[str, ...] = ()  # Secrets Manager secrets a relay job's foreign side takes its keys from
    # (secret ARN, endpoint URL): the endpoint a secret's keys are for, the only one a side naming that secret may name
    secret_endpoints: tuple[tuple[str, str], ...] = ()
    # (secret ARN, side): the side of a job each secret's keys may serve (`ARN[=URL]@source`, `@destination` or
    # `@both`): keys paired to pull from a partner must not push every readable bucket to it. "" when not said (refused).
    secret_sides: tuple[tuple[str, str], ...] = ()
    allow_bypass_governance: bool = False  # set-retention jobs may shorten or lift GOVERNANCE retention
    # Least privilege by default: grants no copy, move, sync or tag job needs, and that cannot all be taken back.
    allow_object_lock: bool = False  # PutObjectRetention/PutObjectLegalHold on write buckets (COMPLIANCE binds even root)
    allow_acl: bool = False  # PutObjectAcl/PutObjectVersionAcl on write buckets (set-acl, destination.acl)
    allow_version_delete: bool = False  # DeleteObjectVersion on delete buckets (a version delete is permanent)
    # (bucket, account): the account that must own each allow-listed bucket (-c bucket_owner); "self" is the deploying
    # account. Every S3 statement on the bucket then names it (s3:ResourceAccount) and every request carries it.
    bucket_owners: tuple[tuple[str, str], ...] = ()
    keep_key_logs_days: int = 30  # per-key log parts in the report bucket expire after this many days
    destroy_data: bool = False  # cdk destroy deletes the ledger and the report and access-log buckets (emptied first) too

    @staticmethod
    def _buckets(value: Any) -> tuple[str, ...]:
        if value is None or value == "":
            return ()
        items = value if isinstance(value, list) else str(value).split(",")
        return tuple(sorted({str(b).strip() for b in items if str(b).strip()}))

    @classmethod
    def from_context(cls, get: Any) -> DeployConfig:
        """`get` is node.try_get_context; numbers may arrive as strings from -c."""
        # No schedule unless the user names a file: a first deploy must not start jobs on its own.
        schedules_file = get("schedules_file")
        secrets = [_with_side(item) for item in cls._buckets(get("credentials_secrets"))]
        cfg = cls(
            read_buckets=cls._buckets(get("read_buckets")),
            write_buckets=cls._buckets(get("write_buckets")),
            delete_buckets=cls._buckets(get("delete_buckets")),
            kms_keys=cls._buckets(get("kms_keys")),
            worker_max_concurrency=int(get("worker_max_concurrency") or 50),
            worker_memory_mb=int(get("worker_memory_mb") or 1024),
            worker_batch_size=int(get("worker_batch_size") or 5),
            worker_timeout_s=int(get("worker_timeout_s") or 600),
            worker_threads=int(get("worker_threads") or 32),
            worker_request_threads=int(get("worker_request_threads") or 64),
            list_shards=int(get("list_shards") or DEFAULT_LIST_SHARDS),
            list_concurrency=int(get("list_concurrency") or 0),
            account_concurrency=int(get("account_concurrency") or 1000),
            reserve_concurrency=str(get("reserve_concurrency")).strip().lower() != "false",  # on unless said off
            poll_seconds=int(get("poll_seconds") or 600),
            precompile=str(get("precompile")).strip().lower() != "false",  # on unless said off
            architecture=str(get("architecture") or "arm64").strip(),
            alarm_email=str(get("alarm_email") or "").strip() or None,
            notify_job_events=_flag(get("notify_job_events")),
            tracing=_flag(get("tracing")),
            schedules=load_schedules(ROOT / schedules_file) if schedules_file else (),
            process_code=(ROOT / str(get("process_code"))).resolve() if get("process_code") else None,
            process_lambdas=cls._buckets(get("process_lambdas")),
            credentials_secrets=tuple(sorted({item.partition("=")[0] for item, _ in secrets})),
            secret_endpoints=tuple((s, u) for s, _, u in (i.partition("=") for i, _ in secrets) if u),
            secret_sides=tuple(sorted({(item.partition("=")[0], side) for item, side in secrets})),
            allow_bypass_governance=_flag(get("allow_bypass_governance")),
            allow_object_lock=_flag(get("allow_object_lock")),
            allow_acl=_flag(get("allow_acl")),
            allow_version_delete=_flag(get("allow_version_delete")),
            keep_key_logs_days=int(get("keep_key_logs_days") or 30),
            bucket_owners=owners_of(get("bucket_owner"), get("read_buckets"), get("write_buckets"), get("delete_buckets")),
            destroy_data=_flag(get("destroy_data")),
        )
        cfg.check()
        return cfg

    def check(self) -> None:
        if not self.read_buckets:
            raise ValueError("context read_buckets: empty; pass -c read_buckets=bucket-a,bucket-b (the buckets jobs may read)")
        for key in self.kms_keys:
            if not key.startswith("arn:") or ":kms:" not in key:
                raise ValueError(f"context kms_keys: {key!r} is not a KMS key ARN; pass -c kms_keys=arn:aws:kms:REGION:ACCOUNT:key/ID")
        if self.alarm_email is not None and not re.fullmatch(r"[^@\s,]+@[^@\s,]+\.[^@\s,]+", self.alarm_email):
            raise ValueError(f"context alarm_email: {self.alarm_email!r} is not an email address; pass -c alarm_email=you@example.com")
        if not 1 <= self.list_shards <= MAX_LIST_SHARDS:
            raise ValueError(
                f"context list_shards: a job lists in 1-{MAX_LIST_SHARDS} shards at once (up to {MAX_INLINE_MAP} on an inline "
                f"Map, more on a Distributed Map); pass e.g. -c list_shards=16"
            )
        if not 1 <= self.keep_key_logs_days <= 3650:
            raise ValueError("context keep_key_logs_days: key-log parts are kept 1-3650 days; pass e.g. -c keep_key_logs_days=30")
        if not 60 <= self.poll_seconds <= 3600:
            raise ValueError(
                "context poll_seconds: the completion check's period must be 60-3600 s "
                "(shorter fills the execution's 25,000-event history sooner); pass e.g. -c poll_seconds=600"
            )
        if not 300 <= self.worker_timeout_s <= 900:
            raise ValueError(
                "context worker_timeout_s: a Worker runs 300-900 s (Lambda's limit is 900; it starts no object in its last "
                "150 s); pass e.g. -c worker_timeout_s=900"
            )
        for name in ("worker_threads", "worker_request_threads"):
            if not 1 <= getattr(self, name) <= 512:
                raise ValueError(f"context {name}: a worker runs 1-512 object threads (each holds a connection); pass e.g. -c {name}=64")
        if not 2 <= self.worker_max_concurrency <= 1000:
            raise ValueError("context worker_max_concurrency: SQS event sources allow 2-1000; pick a value in that range")
        if not 0 <= self.list_concurrency <= self.list_shards:
            raise ValueError(
                f"context list_concurrency: at most list_shards ({self.list_shards}) of a job's shards can run at once; "
                f"pass e.g. -c list_concurrency={min(self.list_shards, LIST_CONCURRENCY)}, or leave it out"
            )
        if self.account_concurrency < 10:
            raise ValueError("context account_concurrency: an account's Lambda concurrency is at least 10; pass the quota, e.g. 1000")
        # Reserved, a job's listers and workers must leave the 100 Lambda keeps unreserved; unreserved, the job must fit.
        margin = LAMBDA_UNRESERVED_FLOOR if self.reserve_concurrency else 0
        needed = concurrency_needed(self)
        if needed > self.account_concurrency - margin:
            less = f" less the {LAMBDA_UNRESERVED_FLOOR} Lambda keeps unreserved" if margin else ""
            raise ValueError(
                f"context account_concurrency: one job runs up to {needed:,} Lambdas at once ({self.listers} listers, "
                f"{self.worker_max_concurrency} workers, {OTHER_STEPS} steps), over the account's {self.account_concurrency:,}{less}; "
                "lower list_concurrency or worker_max_concurrency, or request a higher quota and pass it as -c account_concurrency=N"
            )

        if self.process_code is not None and not self.process_code.is_dir():
            raise ValueError(f"context process_code: {self.process_code} is not a directory; pass -c process_code=DIR holding your modules")
        for arn in self.process_lambdas:
            if not re.fullmatch(r"arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:\d{12}:function:[a-zA-Z0-9_-]+(:[a-zA-Z0-9_$-]+)?", arn):
                raise ValueError(
                    f"context process_lambdas: {arn!r} is not a Lambda function ARN; pass -c process_lambdas=arn:aws:lambda:REGION:ACCOUNT:function:NAME"
                )
        for arn in self.credentials_secrets:
            if not re.fullmatch(SECRET_ARN, arn):
                raise ValueError(
                    f"context credentials_secrets: {arn!r} is not a Secrets Manager secret ARN; "
                    "pass -c credentials_secrets=arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME"
                )
        if self.architecture not in ("arm64", "x86_64"):
            raise ValueError(
                f"context architecture: {self.architecture!r} is not a Lambda architecture; pass -c architecture=arm64 or x86_64"
            )
        for arn, side in self.secret_sides:
            if side not in SECRET_SIDES:
                raise ValueError(
                    f"context credentials_secrets: say which side of a job {arn!r}'s keys may serve: append @source (jobs may "
                    "read from, list and delete on that endpoint with them), @destination (write to it) or @both, e.g. "
                    f"-c credentials_secrets={arn}=https://HOST@source"
                )
        for arn, url in self.secret_endpoints:
            parts = urlsplit(url)
            if parts.scheme not in {"http", "https"} or not parts.netloc or parts.query or parts.fragment:
                raise ValueError(
                    f"context credentials_secrets: {url!r} is not an endpoint URL; pass -c credentials_secrets={arn}=https://HOST[:PORT] "
                    "(the endpoint that secret's keys are for)"
                )
        allow = AllowList(
            frozenset(self.read_buckets),
            frozenset(self.write_buckets),
            frozenset(self.delete_buckets),
            frozenset(self.process_lambdas),
            frozenset(self.credentials_secrets),
            self.allow_bypass_governance,
            object_lock=self.allow_object_lock,
            acl=self.allow_acl,
            version_delete=self.allow_version_delete,
            endpoints=paired(f"{s}={u}" for s, u in self.secret_endpoints),
            sides=sides(f"{s}={side}" for s, side in self.secret_sides),
        )
        worker = WorkerSize(self.worker_memory_mb, self.worker_threads)
        for s in self.schedules:
            try:  # the same rules Validate applies to every job at run time
                job = parse_job(json.dumps(s.job))
                allow.check(job)
                check_worker_memory(job, worker)
            except JobError as exc:
                raise ValueError(f"schedule {s.name}: {exc}") from None

    @property
    def listers(self) -> int:
        """A job's listing shards that run at once: list_concurrency, or all of them up to LIST_CONCURRENCY."""
        return self.list_concurrency or min(self.list_shards, LIST_CONCURRENCY)

    @property
    def reserved(self) -> dict[str, int]:
        """Each function's reserved concurrency (none unless reserve_concurrency)."""
        return {"Lister": self.listers, "Worker": self.worker_max_concurrency} if self.reserve_concurrency else {}


ACCOUNT = re.compile(r"\d{12}|self")


def owners_of(value: Any, *listed: Any) -> tuple[tuple[str, str], ...]:
    """-c bucket_owner's pins, one per allow-listed bucket: `ACCOUNT` (or `self`, the deploying account) for every
    bucket, `BUCKET=ACCOUNT` for one; the per-bucket form wins. A bucket left unpinned is named by no pair."""
    items = DeployConfig._buckets(value)
    buckets = sorted({b for group in listed for b in DeployConfig._buckets(group)})
    default = None
    pinned: dict[str, str] = {}
    fix = "pass -c bucket_owner=ACCOUNT (12 digits, or self for this account), or BUCKET=ACCOUNT per bucket"
    for item in items:
        bucket, eq, account = item.rpartition("=")
        if not ACCOUNT.fullmatch(account):
            raise ValueError(f"context bucket_owner: {item!r} names no account; {fix}")
        if not eq:
            if default is not None and default != account:
                raise ValueError(f"context bucket_owner: two accounts for every bucket ({default}, {account}); {fix}")
            default = account
        elif bucket not in buckets:
            raise ValueError(f"context bucket_owner: {bucket!r} is in no allow-list (read, write or delete buckets); {fix}")
        else:
            pinned[bucket] = account
    owners = ((b, pinned.get(b, default)) for b in buckets)
    return tuple((b, account) for b, account in owners if account is not None)


def concurrency_needed(config: DeployConfig) -> int:
    """The Lambda executions one job may hold at once: its listers, every worker, and the other steps."""
    return config.listers + config.worker_max_concurrency + OTHER_STEPS


def _flag(value: Any) -> bool:
    """A -c flag (or a deploy file's true): true only when said."""
    return str(value or "").strip().lower() == "true"


DEPLOY_FILE = "deploy.json"
# What a deploy file may hold besides the context keys DeployConfig reads.
_FILE_ONLY = {"region", "stack_name", "schedules_file"}
# Context keys read into a field of another name.
_RENAMED = {"bucket_owner"}


def read_deploy_file(path: Path) -> dict[str, Any]:
    """The deploy's settings, kept in a file so `cdk deploy`, `cdk diff` and `cdk destroy` need no -c flags and
    cannot disagree with each other (see config/deploy.example.json). Lists may be JSON arrays or comma lists."""
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"deploy file {path.name}: not JSON ({exc.msg} at line {exc.lineno}); fix it or compare with config/deploy.example.json"
        ) from None
    if not isinstance(doc, dict):
        raise ValueError(f"deploy file {path.name}: expected an object of settings, like config/deploy.example.json")
    known = {f for f in DeployConfig.__dataclass_fields__} | _FILE_ONLY | _RENAMED
    for key in doc:
        if key not in known and not key.startswith("_"):
            raise ValueError(
                f"deploy file {path.name}: unknown setting {key!r}; the settings are the context keys in docs/deploy.md's table"
            )
    return {k: ",".join(map(str, v)) if isinstance(v, list) else v for k, v in doc.items() if not k.startswith("_")}


def load_schedules(path: Path) -> tuple[Schedule, ...]:
    """A schedules file (see config/schedules.example.json): [{"name", "expression", "job": "events/x.json" or {...}, "timezone"?}]."""
    if not path.is_file():
        raise ValueError(f"context schedules_file: {path} does not exist; pass -c schedules_file=PATH to a schedules file, or leave it out")
    out = []
    for entry in json.loads(path.read_text()):
        job = entry["job"]
        if isinstance(job, str):
            job = json.loads((ROOT / job).read_text())
        try:
            parse_job(json.dumps(job))
        except JobError as exc:
            raise ValueError(f"schedule {entry['name']}: {exc}") from None
        out.append(Schedule(entry["name"], entry["expression"], job, entry.get("timezone", "UTC")))
    return tuple(out)
