"""events/demo-copy.json does what README says of it: run again, it skips every object already copied and copies only
what is new or changed."""

from __future__ import annotations

from pathlib import Path

from s3bulk.job import load_job
from s3bulk.local.engine import Engine
from s3bulk.testing.memstore import MemoryStore

DEMO = Path(__file__).resolve().parents[2] / "events" / "demo-copy.json"


def test_a_second_run_of_the_demo_job_skips_what_the_first_copied_and_copies_only_the_changed() -> None:
    job = load_job(DEMO)
    assert job.destination is not None
    store = MemoryStore(page_size=7)
    for bucket in (job.source.bucket, job.destination.bucket):
        store.create_bucket(bucket)
    for i in range(30):
        store.put_object(job.source.bucket, f"{job.source.prefix}{i:03d}.bin", f"v1-{i}".encode())
    store.put_object(job.source.bucket, f"{job.source.prefix}x/_tmp/left-out.bin", b"tmp")

    first = Engine(job, store, concurrency=4).run().summary()
    assert (first["succeeded"], first["skipped"]) == (30, 0)
    again = Engine(job, store, concurrency=4).run().summary()
    assert (again["succeeded"], again["skipped"], again["failed"]) == (0, 30, 0)  # README: every object already there is skipped

    store.put_object(job.source.bucket, f"{job.source.prefix}004.bin", b"v2-4")  # same size, new bytes
    third = Engine(job, store, concurrency=4).run().summary()
    assert (third["succeeded"], third["skipped"]) == (1, 29)
    assert store.get_body(job.destination.bucket, f"{job.destination.prefix}004.bin") == b"v2-4"


def test_readme_says_of_the_demo_jobs_rerun_what_its_if_exists_does() -> None:
    readme = (DEMO.parents[1] / "README.md").read_text()
    [line] = [line for line in readme.splitlines() if line.startswith(".venv/bin/s3bulk run events/demo-copy.json ") and "again" in line]
    assert load_job(DEMO).options.if_exists == "skip-unchanged" and "skipped" in line
