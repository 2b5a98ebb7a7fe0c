"""Deploy-time settings from CDK context (`cdk deploy -c read_buckets=a,b ...`), validated before synth."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from s3bulk.job import JobError, parse_job

ROOT = Path(__file__).resolve().parent.parent
POWERTOOLS_VERSION = "3.37.0"


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
    worker_threads: int = 32
    poll_seconds: int = 20
    schedules: tuple[Schedule, ...] = field(default_factory=tuple)

    @staticmethod
    def _buckets(value: Any) -> tuple[str, ...]:
        if value is None or value == "":
            return ()
        items = value if isinstance(value, list) else str(value).split(",")
        return tuple(sorted({str(b).strip() for b in items if str(b).strip()}))

    @classmethod
    def from_context(cls, get: Any) -> DeployConfig:
        """`get` is node.try_get_context; numbers may arrive as strings from -c."""
        schedules_file = get("schedules_file") or "config/schedules.json"
        cfg = cls(
            read_buckets=cls._buckets(get("read_buckets")),
            write_buckets=cls._buckets(get("write_buckets")),
            delete_buckets=cls._buckets(get("delete_buckets")),
            kms_keys=cls._buckets(get("kms_keys")),
            worker_max_concurrency=int(get("worker_max_concurrency") or 50),
            worker_memory_mb=int(get("worker_memory_mb") or 1024),
            worker_batch_size=int(get("worker_batch_size") or 5),
            worker_threads=int(get("worker_threads") or 32),
            poll_seconds=int(get("poll_seconds") or 20),
            schedules=load_schedules(ROOT / schedules_file),
        )
        cfg.check()
        return cfg

    def check(self) -> None:
        if not self.read_buckets:
            raise ValueError("context read_buckets: empty; pass -c read_buckets=bucket-a,bucket-b (the buckets jobs may read)")
        for key in self.kms_keys:
            if not key.startswith("arn:") or ":kms:" not in key:
                raise ValueError(f"context kms_keys: {key!r} is not a KMS key ARN; pass -c kms_keys=arn:aws:kms:REGION:ACCOUNT:key/ID")
        if not 2 <= self.worker_max_concurrency <= 1000:
            raise ValueError("context worker_max_concurrency: SQS event sources allow 2-1000; pick a value in that range")
        for s in self.schedules:
            job = parse_job(json.dumps(s.job))
            buckets = [(job.source.bucket, self.read_buckets, "read")]
            if job.destination:
                buckets.append((job.destination.bucket, self.write_buckets, "write"))
            if job.operation in {"move", "delete"}:
                buckets.append((job.source.bucket, self.delete_buckets, "delete"))
            for bucket, allowed, kind in buckets:
                if bucket not in allowed:
                    raise ValueError(f"schedule {s.name}: bucket {bucket!r} is not in {kind}_buckets; add it with -c {kind}_buckets=...")


def load_schedules(path: Path) -> tuple[Schedule, ...]:
    """config/schedules.json: [{"name", "expression", "job": "events/x.json" or {...}, "timezone"?}]."""
    if not path.exists():
        return ()
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
