"""rewind on the whole stack (moto, each function under its synthesized role): a versioned prefix with overwrites,
deletes and new keys after a point in time is put back as it was then, keeping every version, and a second rewind
finds nothing to do."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from tests.integration.aws_harness import REGION
from tests.integration.stack_harness import StackOnMoto, synthesize

pytestmark = pytest.mark.moto

BUCKET = "rewind-stack-bucket"
CONTEXT: dict[str, object] = {"read_buckets": BUCKET, "write_buckets": BUCKET, "delete_buckets": BUCKET}


def current(s3: Any) -> dict[str, bytes]:
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix="site/"):
        for o in page.get("Contents", []):
            out[o["Key"]] = s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read()
    return out


def versions(s3: Any) -> int:
    r = s3.list_object_versions(Bucket=BUCKET, Prefix="site/")
    return len(r.get("Versions", [])) + len(r.get("DeleteMarkers", []))


def test_a_rewound_prefix_is_as_it_was_every_version_kept_and_a_second_rewind_changes_nothing() -> None:
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
        before = versions(s3)

        job = {
            "operation": "rewind",
            "source": {"bucket": BUCKET, "prefix": "site/", "as_of": as_of.isoformat()},
            "options": {"batch_size": 4},
        }
        ex = stack.run({**job, "job_id": "rewound"}, timeout=90)
        report = json.loads(stack.s3.get_object(Bucket=stack.bucket_of("Reports"), Key="jobs/rewound/report.json")["Body"].read())
        assert ex.status == "SUCCEEDED", (report.get("failures", [])[:3], stack.describe())
        # 4 edited pages restored, 2 deleted ones restored, 2 later keys given a delete marker; the other 6 as they were.
        assert (report["succeeded"], report["skipped"], report["failed"]) == (8, 6, 0), report
        assert current(s3) == then
        assert versions(s3) == before + 8  # a new version per change: none deleted

        again = stack.run({**job, "job_id": "rewound-again"}, timeout=90)
        r2 = json.loads(stack.s3.get_object(Bucket=stack.bucket_of("Reports"), Key="jobs/rewound-again/report.json")["Body"].read())
        assert again.status == "SUCCEEDED" and (r2["succeeded"], r2["skipped"]) == (0, 14), r2
        assert versions(s3) == before + 8
