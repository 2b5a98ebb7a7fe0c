"""A point in time on the whole stack (moto, each function under its synthesized role): a versioned prefix with
overwrites, deletes and new keys after as_of is put back as it was then, keeping every version, after max_delete counted
its delete markers; a second rewind finds nothing to do; a copy as of then, and a verify of it as of then."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from s3bulk.testing.stack import StackOnMoto, synthesize
from tests.integration.aws_harness import REGION

pytestmark = pytest.mark.moto

BUCKET = "rewind-stack-bucket"
CONTEXT: dict[str, object] = {"read_buckets": BUCKET, "write_buckets": BUCKET, "delete_buckets": BUCKET}


def current(s3: Any) -> dict[str, bytes]:
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix="site/"):
        for o in page.get("Contents", []):
            out[o["Key"]] = s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read()
    return out


def keys(s3: Any, prefix: str) -> list[str]:
    return [
        o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix) for o in page.get("Contents", [])
    ]


def versions(s3: Any) -> int:
    r = s3.list_object_versions(Bucket=BUCKET, Prefix="site/")
    return len(r.get("Versions", [])) + len(r.get("DeleteMarkers", []))


@dataclass
class History:
    stack: StackOnMoto
    s3: Any
    as_of: datetime
    then: dict[str, bytes]  # the prefix's current objects at as_of


@pytest.fixture(scope="module")
def history() -> Iterator[History]:
    """A versioned prefix with overwrites, deletes, a new key and a key that came back after as_of."""
    with StackOnMoto(synthesize(CONTEXT), buckets=(), env={"S3BULK_POLL_SECONDS": "1"}) as stack:
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET)
        s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        for i in range(12):
            s3.put_object(Bucket=BUCKET, Key=f"site/page-{i:02d}", Body=f"page {i} as it was".encode())
        s3.put_object(Bucket=BUCKET, Key="site/removed-before", Body=b"x")
        s3.delete_object(Bucket=BUCKET, Key="site/removed-before")
        then = current(s3)
        time.sleep(1.1)  # LastModified has a second's resolution
        as_of = datetime.now(UTC).replace(microsecond=0)
        time.sleep(1.1)
        for i in range(0, 12, 3):
            s3.put_object(Bucket=BUCKET, Key=f"site/page-{i:02d}", Body=f"page {i} edited".encode())
        for i in (1, 4):
            s3.delete_object(Bucket=BUCKET, Key=f"site/page-{i:02d}")
        s3.put_object(Bucket=BUCKET, Key="site/new-page", Body=b"added later")
        s3.put_object(Bucket=BUCKET, Key="site/removed-before", Body=b"back later")
        yield History(stack, s3, as_of, then)


def report(stack: StackOnMoto, job_id: str) -> dict[str, Any]:
    return json.loads(stack.s3.get_object(Bucket=stack.bucket_of("Reports"), Key=f"jobs/{job_id}/report.json")["Body"].read())  # type: ignore[no-any-return]


def test_a_rewind_over_max_delete_is_counted_first_and_changes_nothing_then_at_it_rewinds_keeping_every_version(
    history: History,
) -> None:
    stack, s3 = history.stack, history.s3
    before, later = versions(s3), current(s3)
    job = {"operation": "rewind", "source": {"bucket": BUCKET, "prefix": "site/", "as_of": history.as_of.isoformat()}}
    # Two keys did not exist at as_of and exist now: two delete markers, the only deletes max_delete counts.
    over = stack.run({**job, "options": {"batch_size": 4, "max_delete": 1}, "job_id": "rewind-over"}, timeout=90)
    assert (over.status, over.description.get("error")) == ("FAILED", "JobFailed"), over.entered()[-6:]
    assert "CheckCount" in over.entered() and "ListShards" not in over.entered()
    cause = str(over.description.get("cause"))
    assert "the job would delete 2 keys (each hidden under a delete marker), over max_delete 1; nothing was deleted" in cause, cause
    assert (versions(s3), current(s3)) == (before, later)

    ex = stack.run({**job, "options": {"batch_size": 4, "max_delete": 2}, "job_id": "rewound"}, timeout=90)
    r = report(stack, "rewound")
    assert ex.status == "SUCCEEDED", (r.get("failures", [])[:3], stack.describe())
    # 4 edited pages restored, 2 deleted ones restored, 2 later keys given a delete marker; the other 6 as they were.
    assert (r["succeeded"], r["skipped"], r["failed"]) == (8, 6, 0), r
    assert current(s3) == history.then
    assert versions(s3) == before + 8  # a new version per change: none deleted

    again = stack.run({**job, "options": {"batch_size": 4}, "job_id": "rewound-again"}, timeout=90)
    r2 = report(stack, "rewound-again")
    assert again.status == "SUCCEEDED" and (r2["succeeded"], r2["skipped"]) == (0, 14), r2
    assert versions(s3) == before + 8


def test_a_copy_as_of_copies_each_key_as_it_was_and_verify_as_of_passes_it_and_fails_a_copy_of_today(history: History) -> None:
    stack, s3 = history.stack, history.s3
    src = {"bucket": BUCKET, "prefix": "site/", "as_of": history.as_of.isoformat()}
    copy = {"operation": "copy", "source": src, "destination": {"bucket": BUCKET, "prefix": "then/"}, "options": {"batch_size": 4}}
    ex = stack.run({**copy, "job_id": "copy-then"}, timeout=90)
    r = report(stack, "copy-then")
    assert ex.status == "SUCCEEDED" and (r["succeeded"], r["failed"]) == (len(history.then), 0), r
    copied = {k: s3.get_object(Bucket=BUCKET, Key=k)["Body"].read() for k in keys(s3, "then/")}
    assert copied == {"then/" + k[len("site/") :]: v for k, v in history.then.items()}

    ok = stack.run({**copy, "operation": "verify", "job_id": "verify-then"}, timeout=90)
    rv = report(stack, "verify-then")
    assert ok.status == "SUCCEEDED" and (rv["succeeded"], rv["failed"]) == (len(history.then), 0), rv
    s3.put_object(Bucket=BUCKET, Key="then/page-03", Body=b"page 3 edited")  # today's content where then's belongs
    bad = stack.run({**copy, "operation": "verify", "job_id": "verify-spoilt"}, timeout=90)
    rb = report(stack, "verify-spoilt")
    assert rb["failed"] == 1 and [f["key"] for f in rb["failures"]] == ["site/page-03"], (bad.status, rb)
