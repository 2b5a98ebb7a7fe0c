"""`s3bulk demo` is the README's first command: it must work end to end on its own."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

from tests.integration.conftest import S3BULK, cli_env, run_cli


def test_demo_runs_a_verified_copy_on_the_embedded_server(tmp_path: Path) -> None:
    proc = run_cli("demo", "--objects", "400", "--report", str(tmp_path / "r.json"), env=cli_env(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verified: 392 objects byte for byte" in proc.stdout
    assert "multipart copy kept Content-Type, metadata and tags" in proc.stdout
    assert '"status": "succeeded"' in (tmp_path / "r.json").read_text()


def test_demo_stack_runs_the_synthesized_pipeline_here_and_verifies_every_object_apart_from_s3bulk(tmp_path: Path) -> None:
    env = {k: v for k, v in cli_env(tmp_path).items() if not k.startswith("AWS_")}  # nothing to configure, no account
    proc = run_cli("demo", "--stack", env=env)  # as README shows it: 3,000 objects
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "state machine S3Bulk-jobs" in out and "$ s3bulk submit events/demo-copy.json" in out
    assert "succeeded  2,940/2,940" in out  # the watch's last line: every listed object done
    assert '"succeeded": 2940' in out and '"failed": 0' in out  # s3bulk report
    assert "verified: 2,940 objects byte for byte" in out and "On AWS" in out
    assert "Traceback" not in out and "Exception=" not in out


def test_demo_stack_without_node_says_what_to_install_in_one_line(tmp_path: Path) -> None:
    env = {**cli_env(tmp_path), "PATH": str(Path(S3BULK[0]).parent)}  # the venv's bin alone: no node
    proc = run_cli("demo", "--stack", env=env)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: demo --stack synthesizes the CDK app, which needs Node.js (20 or later) on PATH: install Node, then run it again"
    ]


def _serve(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], list[str]]:
    """`s3bulk serve` as a user starts it, and the lines it printed up to its exports."""
    env = {k: v for k, v in cli_env(tmp_path).items() if not k.startswith("AWS_ACCESS") and not k.startswith("AWS_SECRET")}
    proc = subprocess.Popen([*S3BULK, "serve", *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not any("AWS_ACCESS_KEY_ID" in line for line in lines):
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
    assert any("AWS_ACCESS_KEY_ID" in line for line in lines), lines
    return proc, lines


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)  # Ctrl-C
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    return out


def test_serve_runs_a_local_s3_server_its_exports_point_s3bulk_at_until_ctrl_c_and_a_named_dir_keeps_its_data(tmp_path: Path) -> None:
    """README's "Use" starts here: the printed exports alone let `s3bulk run` copy on it; Ctrl-C stops it in order;
    with --dir its data is there again on the next start, on the port asked for."""
    data = tmp_path / "data"
    proc, lines = _serve(tmp_path, "--dir", str(data))
    try:
        [endpoint] = {w.rstrip(";") for line in lines for w in line.split() if w.startswith("http://127.0.0.1:")}
        exported = dict(kv.split("=", 1) for line in lines if line.strip().startswith("export ") for kv in line.split()[1:] if "=" in kv)
        assert exported["AWS_ENDPOINT_URL_S3"] == endpoint
        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name=exported["AWS_REGION"],
            aws_access_key_id=exported["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=exported["AWS_SECRET_ACCESS_KEY"],
        )
        client.create_bucket(Bucket="src-b")
        client.create_bucket(Bucket="dst-b")
        for i in range(20):
            client.put_object(Bucket="src-b", Key=f"in/{i:02d}", Body=f"body {i}".encode())
        job = tmp_path / "job.json"
        job.write_text(
            json.dumps({"operation": "copy", "source": {"bucket": "src-b", "prefix": "in/"}, "destination": {"bucket": "dst-b"}})
        )
        env = {k: v for k, v in cli_env(tmp_path).items() if not k.startswith("AWS_ACCESS") and not k.startswith("AWS_SECRET")}
        copy = run_cli("run", str(job), "--progress", "off", env={**env, **exported})  # no --endpoint-url: the exports say where
        assert copy.returncode == 0, copy.stdout + copy.stderr
        assert sorted(o["Key"] for o in client.list_objects_v2(Bucket="dst-b")["Contents"]) == [f"{i:02d}" for i in range(20)]
    finally:
        out = _stop(proc)
    assert out.rstrip().endswith("stopped")
    with pytest.raises(Exception):  # noqa: B017 - refused or reset: nothing listens there any more
        boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="x",
            aws_secret_access_key="y",
            config=Config(retries={"max_attempts": 1}, connect_timeout=2),
        ).list_buckets()

    port = endpoint.rsplit(":", 1)[1]
    again, _ = _serve(tmp_path, "--dir", str(data), "--port", port)
    try:
        assert client.get_object(Bucket="dst-b", Key="07")["Body"].read() == b"body 7"  # same port, same data
    finally:
        _stop(again)
