"""Retry: a new job over exactly the objects a job failed, read from its failures or its key log, nothing listed again.

The failed objects become a CSV manifest (S3 Batch Operations' format: bucket, URL-encoded key, version id), and the
new job is the old one reading that manifest: the same operation, destination and options, so it does to each failed
object what the first job tried to. Both runtimes use it: `s3bulk retry JOB_ID` on the stack writes the manifest to the
deployment's report bucket.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_plus

from s3bulk.job import Job, JobError, Manifest, parse_job

# A failure of a sync's extraneous delete names a destination key, not a source object: nothing a manifest could redo.
EXTRANEOUS = "extraneous destination object not deleted"
# A failure of one version names it at the head of its message (ops/batch.py `_of`).
_VERSION = re.compile(r"^version (\S+): ")
# Manifest rows the job refused before any request: not objects of its bucket (a row for another bucket, or a row with
# no usable key, whose "key" is where the row is), so a retry must never make them keys of the job's bucket.
NOT_OBJECTS = frozenset({"ManifestBucketMismatch", "InvalidManifestRow"})


@dataclass(frozen=True, slots=True)
class Failed:
    key: str
    version_id: str = ""


def failed_objects(lines: Iterable[Mapping[str, Any]], refused: Counter[str] | None = None) -> list[Failed]:
    """The objects to do again, each once, in the order they first failed.

    Takes failure entries (report.json's, failures.jsonl's: key, error, and a message that names a version as
    "version V: ...") or key-log lines (outcome, version_id; a key's latest line is the one that counts, so a key that
    failed and then succeeded on a resume is not retried). Holds only the failed keys, never every key of the log.
    Manifest rows the job refused (NOT_OBJECTS) are no object of its bucket: left out, counted by code in `refused`.
    """
    state: dict[tuple[str, str], bool] = {}
    for line in lines:
        key = line.get("key")
        if not isinstance(key, str) or not key:
            continue
        if line.get("error") in NOT_OBJECTS:
            if refused is not None:
                refused[str(line["error"])] += 1
            continue
        if "outcome" in line:
            version, failed = str(line.get("version_id") or ""), line.get("outcome") == "failed"
        else:
            named = version_failed(str(line.get("error") or ""), str(line.get("message") or ""))
            if named is None:
                continue
            version, failed = named, True
        if failed:
            state[(key, version)] = True
        elif (key, version) in state:
            state[(key, version)] = False
    return [Failed(key, version) for (key, version), failed in state.items() if failed]


def version_failed(error: str, message: str) -> str | None:
    """The version a failure entry is of ("" the current one), or None when it names no object to do again (a sync's
    extraneous delete, a manifest row the job refused)."""
    if error in NOT_OBJECTS or message.startswith(EXTRANEOUS):
        return None
    found = _VERSION.match(message)
    return found.group(1) if found else ""


def manifest_rows(bucket: str, objects: Iterable[Failed]) -> Iterator[str]:
    """CSV rows as S3 Batch Operations reads them (manifest.py): bucket, the key URL-encoded, and the version id if any."""
    for obj in objects:
        key = quote_plus(obj.key, safe="/", encoding="utf-8", errors="surrogatepass")
        yield f"{bucket},{key},{obj.version_id}\n" if obj.version_id else f"{bucket},{key}\n"


def retry_job(job: Job, manifest: Manifest, job_id: str | None) -> Job:
    """The job again over a manifest of its failed objects: same operation, destination and options. The source keeps
    its prefix (a copy's destination keys are made relative to it); its filters go, since every row was selected once."""
    if job.source.versions != "current":
        raise JobError(
            f"job.source.versions: a retry of a job over {job.source.versions!r} versions is not supported; run the job again "
            "with options.if_exists skip"
        )
    if manifest.path is None and (job.source.endpoint_url or job.source.credentials_secret):
        raise JobError(
            "job.source.endpoint_url: the retry's manifest is kept in the deployment's report bucket, which a source on "
            "another endpoint or account cannot read; run the job again with options.if_exists skip"
        )
    source = job.source.model_copy(
        update={
            "manifest": manifest,
            "include": [],
            "exclude": [],
            "min_size": 0,
            "max_size": None,
            "modified_after": None,
            "modified_before": None,
        }
    )
    options = job.options.model_copy(update={"delete_extraneous": False, "allow_empty_source": False, "canary": None})
    doc = job.model_copy(update={"source": source, "options": options, "job_id": job_id}).model_dump(mode="json", exclude_none=True)
    return parse_job(json.dumps(doc))  # validated as a new job: every rule holds for the retry too


def refused_rows(refused: Counter[str]) -> str:
    """What a retry leaves out and why, for its user: "" when it leaves nothing out."""
    if not refused:
        return ""
    codes = ", ".join(f"{code}: {n}" for code, n in sorted(refused.items()))
    return (
        f"{sum(refused.values())} failures are manifest rows the job refused before any request ({codes}), not objects "
        "of its bucket; a retry cannot redo them: fix those rows (split a manifest by bucket) and run them as a job"
    )
