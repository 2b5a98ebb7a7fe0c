"""`s3bulk serve`: the embedded SeaweedFS as a local S3 server of your own, until Ctrl-C.

The same server `s3bulk demo` runs, on 127.0.0.1 only: a free port unless `--port` names one, its data in a
temporary directory unless `--dir` names one (kept, so a later `serve --dir` has it again). It prints the endpoint
and the exports that point `s3bulk` (and the AWS CLI, boto3, s5cmd) at it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from s3bulk.local.interrupt import Interrupt
from s3bulk.local.preflight import UsageError
from s3bulk.local.server import ACCESS_KEY, SECRET_KEY, LocalServerError, SeaweedServer, WeedMissing, find_weed

REGION = "us-east-1"  # the server takes any Region; SDKs need one to sign


def exports(endpoint: str) -> list[str]:
    """The shell lines that point S3 clients at the server: its endpoint, and the keys to sign with (it takes any)."""
    return [
        f"export AWS_ENDPOINT_URL_S3={endpoint} AWS_REGION={REGION}",
        f"export AWS_ACCESS_KEY_ID={ACCESS_KEY} AWS_SECRET_ACCESS_KEY={SECRET_KEY}",
    ]


SEED_CHUNK = 1000  # objects put between two looks at Ctrl-C


def seed(endpoint: str, objects: int, stop: Callable[[], bool] | None = None) -> str:
    """The demo job's buckets, and its source filled as `s3bulk demo` fills it: what events/demo-copy.json then copies."""
    from s3bulk.job import load_job
    from s3bulk.local.demo import DEMO_JOB, demo_seeds, put_seeds
    from s3bulk.s3.clients import ClientSettings, make_s3_client

    job = load_job(DEMO_JOB)
    assert job.destination is not None
    client = make_s3_client(ClientSettings(endpoint_url=endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY), 32)
    for bucket in (job.source.bucket, job.destination.bucket):
        with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):  # a --dir kept from an earlier start
            client.create_bucket(Bucket=bucket)
    seeds = demo_seeds(objects, job.source.prefix)
    for start in range(0, len(seeds), SEED_CHUNK):  # Ctrl-C is heard between chunks
        if stop is not None and stop():
            return f"seeding stopped after {start:,} objects"
        put_seeds(client, job.source.bucket, seeds[start : start + SEED_CHUNK])
    return f"s3://{job.source.bucket}/{job.source.prefix} holds the {objects:,} demo objects (s3://{job.destination.bucket} is where it copies)"


def serve(*, port: int, data_dir: Path | None, console: Console, interrupt: Interrupt, objects: int = 0) -> int:
    """Start the server, say where it is, wait for Ctrl-C (or SIGTERM), stop it; 0 once stopped. `objects`: seed the
    demo job's source with that many first."""
    try:
        find_weed()
    except WeedMissing as exc:  # one line (exit 2), not a port question
        raise UsageError(f"serve runs SeaweedFS: {exc}") from None
    server = SeaweedServer(port=port, data_dir=data_dir)
    try:
        server.start()
    except LocalServerError as exc:
        first = str(exc).splitlines()[0]
        taken = f"; is port {port} in use? pick another with --port, or leave it out for a free one" if port else ""
        console.print(f"error: the local S3 server did not start: {first}{taken}", markup=False, soft_wrap=True)
        return 2
    try:
        where = f"data in {data_dir} (kept)" if data_dir is not None else "data in a temporary directory, removed on stop"
        console.print(f"S3 server on {server.endpoint_url}; {where}; Ctrl-C stops it", markup=False, soft_wrap=True)
        if objects:
            said = seed(server.endpoint_url, objects, interrupt.event.is_set)
            console.print(f"seeded for events/demo-copy.json: {said}", markup=False, soft_wrap=True)
        console.print("To use it from another shell:", markup=False)
        for line in exports(server.endpoint_url):
            console.print(f"  {line}", markup=False, soft_wrap=True)
        console.print(f"  s3bulk run JOB.json    (or: s3bulk run JOB.json --endpoint-url {server.endpoint_url})", markup=False)
        interrupt.event.wait()
    finally:
        server.stop()
    console.print("stopped", markup=False)
    return 0
