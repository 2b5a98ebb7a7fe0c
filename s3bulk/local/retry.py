"""`s3bulk run JOB --retry-failed REPORT.json|KEYS.jsonl`: the job again over exactly the objects a run of it failed.

The failed objects (s3bulk/job/retry.py) are written as a CSV manifest into the state directory, named by their content,
so the same report gives the same job again (and `--resume` of a retry finds its manifest); the job reads it as a local
manifest (`source.manifest.path`), nothing is listed again.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from s3bulk.job import Job, JobError, Manifest
from s3bulk.job.retry import failed_objects, manifest_rows, refused_rows, retry_job
from s3bulk.local.preflight import UsageError
from s3bulk.report import failures_file
from s3bulk.report.keylog import readable


def failure_lines(path: Path) -> Iterator[dict[str, Any]]:
    """A run's failures: a report.json's (or, when it lists only the first ones, its failures file's), or the lines of a
    JSONL file (a key log, or a failures file)."""
    try:
        with io.TextIOWrapper(readable(open(path, "rb")), encoding="utf-8") as f:  # a key log may be gzip'd
            head = f.read(1)
            f.seek(0)
            if head == "{":
                try:
                    doc = json.load(f)
                except ValueError:
                    doc = None
                if isinstance(doc, dict) and "failures" in doc:
                    if doc.get("failures_not_listed"):
                        yield from failure_lines(failures_file(path))
                    else:
                        yield from (dict(x) for x in doc["failures"] if isinstance(x, dict))
                    return
                f.seek(0)
            for n, line in enumerate(f, 1):
                if line.strip():
                    try:
                        yield dict(json.loads(line))
                    except (ValueError, TypeError):
                        raise UsageError(f"--retry-failed {path}: line {n} is not JSON; give a report.json or a key log") from None
    except (OSError, EOFError) as exc:  # EOFError: a gzip'd key log cut short
        why = getattr(exc, "strerror", None) or str(exc)
        raise UsageError(f"--retry-failed {path}: {why}; give the report or key log of a run of this job") from None


def retry_failed(job: Job, path: Path, state: Path) -> Job:
    """The job over a manifest of the objects the run behind `path` failed, kept in `state`/retries."""
    refused: Counter[str] = Counter()
    failed = failed_objects(failure_lines(path), refused)
    if not failed:
        raise UsageError(f"--retry-failed {path}: {refused_rows(refused) or 'it names no failed object'}; nothing to retry")
    if refused:
        print(f"--retry-failed: {refused_rows(refused)}", file=sys.stderr)
    folder = state / "retries"
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with tempfile.NamedTemporaryFile("wb", dir=folder, delete=False, suffix=".part") as out:
        for row in manifest_rows(job.source.bucket, failed):
            data = row.encode("utf-8", "surrogatepass")
            digest.update(data)
            out.write(data)
    name = digest.hexdigest()[:16]
    target = folder / f"{name}.csv"
    os.replace(out.name, target)
    job_id = f"{job.job_id[:60]}-retry-{name[:8]}" if job.job_id else None
    try:
        return retry_job(job, Manifest(path=str(target.resolve())), job_id)
    except JobError as exc:
        raise UsageError(f"--retry-failed: {exc}") from None
