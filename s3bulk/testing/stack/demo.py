"""`s3bulk demo --stack`: the serverless pipeline on this machine, nothing to configure and no AWS account.

The CDK app is synthesized as `cdk deploy` would (without building the Lambda assets), and the stack emulator the
whole-stack tests use runs it: the state machine on moto's ASL interpreter, SQS with its event source, DynamoDB,
and each Lambda task on the real handler in an environment of its own, under its IAM role and the AWS limits the
emulator enforces. S3 is the embedded SeaweedFS. A copy job is submitted with `s3bulk submit`, followed with
`s3bulk watch`, its report read with `s3bulk report`, and every object it copied is checked byte for byte.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from unittest import mock

from rich.console import Console

from s3bulk.aws.remote import Deployment
from s3bulk.local.demo import DEMO_JOB, demo_seeds, put_seeds, verify_demo
from s3bulk.local.server import SeaweedServer, WeedMissing, find_weed
from s3bulk.s3.clients import ClientSettings, make_s3_client

ROOT = Path(__file__).resolve().parents[3]
SHOWN_ON_AWS = (
    "On AWS the same state machine, handlers and IAM policies run as Lambda functions, with S3 in place of SeaweedFS "
    "(S3 requests are not IAM-checked here), real concurrency limits and cold starts; `cdk deploy` also builds the "
    "functions' arm64 assets, which this demo skips."
)


def missing() -> str | None:
    """What this machine lacks for the demo, as one line naming what to install; None when nothing."""
    if not (ROOT / "app.py").is_file() or not (ROOT / "infra").is_dir():
        return "demo --stack synthesizes the CDK app (app.py, infra/): run it from a clone of the repository"
    if shutil.which("node") is None:
        return "demo --stack synthesizes the CDK app, which needs Node.js (20 or later) on PATH: install Node, then run it again"
    try:
        find_weed()
    except WeedMissing as exc:  # one line before anything starts, not a traceback from inside the run
        return f"demo --stack runs an embedded S3 server: {exc}"
    return None


def run_stack_demo(*, objects: int, console: Console, cli_main: Callable[[list[str]], int]) -> int:
    """Seed, submit, watch, report and verify; stop everything. The exit code is the job's, or 1 if a check failed.
    `cli_main` runs an s3bulk command: the same ones a user types against a deployed stack."""
    problem = missing()
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    job = json.loads(DEMO_JOB.read_text())
    job["options"] = {**job.get("options", {}), "batch_size": 100}  # several batches in flight, so the watch shows them
    logging.getLogger("moto").setLevel(logging.CRITICAL)  # its interpreter logs each Choice on an absent field
    warnings.filterwarnings("ignore", message="No application metrics to publish")  # a Lambda's Metrics, emitted nowhere here
    src, dst = job["source"], job["destination"]
    outdir = tempfile.mkdtemp(prefix="s3bulk-demo-stack-")
    started = time.monotonic()
    try:
        console.print("[bold]s3bulk demo --stack[/]: starting an embedded S3 server (SeaweedFS) on 127.0.0.1 ...")
        with SeaweedServer() as server, mock.patch.dict(os.environ, {"CDK_OUTDIR": outdir}):
            from s3bulk.testing.stack import StackOnMoto, cli_flags, resources_of, synthesize

            console.print("synthesizing the CDK app (app.py) as cdk deploy would, without building the Lambda assets ...")
            context = {"read_buckets": f"{src['bucket']},{dst['bucket']}", "write_buckets": dst["bucket"], "aws:cdk:bundling-stacks": []}
            template = synthesize(context)
            functions = sum(1 for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function")
            s3_env = {"AWS_ENDPOINT_URL_S3": server.endpoint_url}
            with StackOnMoto(template, env={"S3BULK_POLL_SECONDS": "2"}, runtime_env=s3_env, staged_assets=False) as stack:
                console.print(
                    f"the stack is up: {len(template['Resources'])} resources, {functions} functions, "
                    f"state machine {stack.state_machine_arn.rsplit(':', 1)[-1]}"
                )
                settings = ClientSettings(endpoint_url=server.endpoint_url)
                s3 = make_s3_client(settings, 32)
                for bucket in (src["bucket"], dst["bucket"]):
                    s3.create_bucket(Bucket=bucket)
                seeds = demo_seeds(objects, src["prefix"])
                console.print(f"seeding {len(seeds):,} objects into s3://{src['bucket']}/{src['prefix']}")
                md5s = put_seeds(s3, src["bucket"], seeds)
                [table] = resources_of(template, "AWS::DynamoDB::Table")  # provisioned under its logical id
                deployment = Deployment(stack.state_machine_arn, table, stack.bucket_of("Reports"))
                flags = cli_flags(deployment)
                job_file = Path(outdir) / "demo-stack.json"
                job_id = f"demo-stack-{int(time.time())}"
                job_file.write_text(json.dumps({**job, "job_id": job_id}))
                console.print(f"$ s3bulk submit {DEMO_JOB.relative_to(ROOT)}", markup=False)
                if cli_main(["submit", str(job_file), *flags]) != 0:
                    return 1
                console.print(f"$ s3bulk watch {job_id}", markup=False)
                cli_main(["watch", job_id, *flags])
                console.print(f"$ s3bulk report {job_id}", markup=False)
                code = cli_main(["report", job_id, *flags])
                expected = {dst["prefix"] + k[len(src["prefix"]) :]: m for k, m in md5s.items() if "/_tmp/" not in k}
                problems = verify_demo(s3, dst["bucket"], dst["prefix"], expected)
                if problems:
                    console.print(f"[red]verification failed:[/] {'; '.join(problems)}")
                    return 1
                console.print(
                    f"[green]verified[/]: {len(expected):,} objects byte for byte (MD5 of every GET), by boto3, apart from s3bulk"
                )
                console.print(SHOWN_ON_AWS, markup=False)
                console.print(f"stopping the stack and the server ... ({time.monotonic() - started:,.0f} s in all)", markup=False)
        return code
    finally:
        shutil.rmtree(outdir, ignore_errors=True)
