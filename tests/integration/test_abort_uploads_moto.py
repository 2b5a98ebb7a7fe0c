"""abort-uploads on moto server through `s3bulk run`: only uploads initiated before the cutoff are aborted (moto's
ListMultipartUploads answered as S3's, tests/integration/moto_uploads.py; the cutoff taken from the real clock)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from s3bulk.job import parse_job
from s3bulk.local.engine import Engine
from s3bulk.ops.items import Item
from s3bulk.s3.stores import S3Store
from tests.integration.conftest import client_for, run_job_cli
from tests.integration.moto_uploads import faithful_uploads

pytestmark = pytest.mark.moto

KEYS = [f"in/{i:02d} ü+%" for i in range(12)]


@pytest.fixture(autouse=True)
def _uploads_as_s3_lists_them() -> Iterator[None]:
    with faithful_uploads():
        yield


def open_uploads(client: Any, bucket: str) -> set[tuple[str, str]]:
    found, kwargs = set(), {"Bucket": bucket}
    while True:
        r = client.list_multipart_uploads(**kwargs)
        found |= {(u["Key"], u["UploadId"]) for u in r.get("Uploads", ())}
        if not r.get("IsTruncated"):
            return found
        kwargs = {"Bucket": bucket, "KeyMarker": r["NextKeyMarker"], "UploadIdMarker": r["NextUploadIdMarker"]}


def seed(client: Any, bucket: str) -> tuple[set[tuple[str, str]], set[tuple[str, str]], str]:
    """Old uploads (two per key for a third of the keys, a part each), a cutoff, then new ones; objects under some keys."""
    old: set[tuple[str, str]] = set()
    for i, key in enumerate(KEYS):
        for _ in range(2 if i % 3 == 0 else 1):
            upload = client.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
            client.upload_part(Bucket=bucket, Key=key, UploadId=upload, PartNumber=1, Body=b"x" * 1024)
            old.add((key, upload))
        if i % 4 == 0:
            client.put_object(Bucket=bucket, Key=key, Body=key.encode())
    old.add((u := "out/elsewhere", client.create_multipart_upload(Bucket=bucket, Key=u)["UploadId"]))
    time.sleep(1.1)
    cutoff = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    time.sleep(1.1)
    new = {(key, client.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]) for key in KEYS[::2]}
    return old, new, cutoff


def job(bucket: str, cutoff: str, **options: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"operation": "abort-uploads", "source": {"bucket": bucket, "prefix": "in/", "modified_before": cutoff}}
    return {**doc, "options": options} if options else doc


def test_only_uploads_initiated_before_the_cutoff_are_aborted(
    moto_endpoint: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    client = client_for(moto_endpoint)
    bucket = bucket_factory(client, "src")
    old, new, cutoff = seed(client, bucket)
    aborted = {u for u in old if u[0].startswith("in/")}

    code, report, _, err = run_job_cli(moto_endpoint, tmp_path, "dry", job(bucket, cutoff, dry_run=True))
    assert code == 0, err
    assert (report["status"], report["listed"], report["succeeded"]) == ("dry-run", len(aborted), 0)
    assert open_uploads(client, bucket) == old | new  # a dry run aborts nothing

    code, report, lines, err = run_job_cli(moto_endpoint, tmp_path, "abort", job(bucket, cutoff))
    assert code == 0, err
    assert (report["listed"], report["succeeded"], report["failed"]) == (len(aborted), len(aborted), 0)
    assert {(line["key"], line["upload_id"]) for line in lines} == aborted
    assert open_uploads(client, bucket) == new | (old - aborted)  # the new ones and the one outside the prefix remain
    objects = {o["Key"]: o["Size"] for o in client.list_objects_v2(Bucket=bucket).get("Contents", ())}
    assert objects == {key: len(key.encode()) for key in KEYS[::4]}  # objects under the same keys untouched


def test_paged_listing_and_a_redelivered_abort_stay_exact(moto_endpoint: str, bucket_factory: Callable[[Any, str], str]) -> None:
    """Pages of three uploads (cut at key boundaries), and a second run over uploads the first aborted: NoSuchUpload is done."""
    client = client_for(moto_endpoint)
    bucket = bucket_factory(client, "src")
    old, new, cutoff = seed(client, bucket)
    aborted = {u for u in old if u[0].startswith("in/")}
    spec = parse_job(json.dumps(job(bucket, cutoff, list_workers=1)))
    store = S3Store(client, max_keys=3)
    listed = list(Engine(spec, store, concurrency=4).items())
    report = Engine(spec, store, concurrency=4).run()
    snap = report.tally.snapshot()
    assert (snap.listed, snap.succeeded, snap.failed) == (len(aborted), len(aborted), 0)
    assert open_uploads(client, bucket) == new | (old - aborted)
    # The same uploads again, as a redelivered batch would have them: each is already gone, and counts as done.
    again = Engine(spec, store, concurrency=4)
    again.items = lambda: iter([Item(o.obj) for o in listed])  # type: ignore[method-assign]
    snap = again.run().tally.snapshot()
    assert (snap.succeeded, snap.failed) == (len(aborted), 0)
