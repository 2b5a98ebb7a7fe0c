"""Copy, move and sync between two servers (SeaweedFS to moto) that cannot copy server-side: the relay, through the CLI."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3

from bench.tools import run_with_peak_rss
from s3bulk.local.server import SeaweedServer
from s3bulk.s3.clients import ClientSettings, make_s3_client
from tests.integration.conftest import S3BULK, cli_env, client_for, run_cli
from tests.integration.helpers import list_keys, seed_small, write_job

MiB = 1024 * 1024
BIG = 256 * MiB  # the issue asks for at least 200 MiB; the margin keeps the memory check clear of noise


def run_measured(args: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], int]:
    """The CLI in a child process, and the peak RSS it reached."""
    return run_with_peak_rss([*S3BULK, *args], env, timeout=600)


def md5s(client: Any, bucket: str, prefix: str) -> dict[str, str]:
    out = {}
    for key in list_keys(client, bucket, prefix):
        h = hashlib.md5(usedforsecurity=False)
        for chunk in client.get_object(Bucket=bucket, Key=key)["Body"].iter_chunks(MiB):
            h.update(chunk)
        out[key[len(prefix) :]] = h.hexdigest()
    return out


def test_1000_objects_with_a_256_mib_one_relay_byte_exact_with_metadata_and_tags_in_bounded_memory_and_a_rerun_copies_nothing(
    seaweed: str, moto_endpoint: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    weed, moto = client_for(seaweed), client_for(moto_endpoint)
    src, dst = bucket_factory(weed, "legacy"), bucket_factory(moto, "new-home")
    seed_small(weed, src, "data/", 999)
    weed.put_object(
        Bucket=src,
        Key="data/big.bin",
        Body=os.urandom(BIG),
        ContentType="application/x-big",
        CacheControl="max-age=60",
        Metadata={"origin": "legacy", "owner": "data-team"},
        Tagging="tier=cold&team=data",
    )
    doc = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "data/"},
        "destination": {"bucket": dst, "prefix": "data/", "endpoint_url": moto_endpoint},
        "options": {"if_exists": "skip-unchanged"},
    }
    job = write_job(tmp_path / "relay.json", doc)
    args = ["run", str(job), "--endpoint-url", seaweed, "-q", "--no-ledger", "--report", str(tmp_path / "r1.json")]
    done, peak = run_measured(args, cli_env(tmp_path))
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r1.json").read_text())
    assert (report["succeeded"], report["failed"]) == (1000, 0)
    assert md5s(moto, dst, "data/") == md5s(weed, src, "data/")
    head = moto.head_object(Bucket=dst, Key="data/big.bin")
    assert (head["ContentType"], head["CacheControl"], head["Metadata"]) == (
        "application/x-big",
        "max-age=60",
        {"origin": "legacy", "owner": "data-team"},
    )
    tags = moto.get_object_tagging(Bucket=dst, Key="data/big.bin")["TagSet"]
    assert sorted((t["Key"], t["Value"]) for t in tags) == [("team", "data"), ("tier", "cold")]
    assert moto.list_multipart_uploads(Bucket=dst).get("Uploads", []) == []
    assert peak < BIG, f"peak RSS {peak / MiB:.0f} MiB: the relay held the object"

    args[-1] = str(tmp_path / "r2.json")
    again, _ = run_measured(args, cli_env(tmp_path))
    assert again.returncode == 0, again.stderr
    rerun = json.loads((tmp_path / "r2.json").read_text())
    assert (rerun["succeeded"], rerun["skipped"], rerun["failed"]) == (0, 1000, 0)


def test_a_relayed_move_empties_the_source_only_of_what_arrived(
    seaweed: str, moto_endpoint: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    weed, moto = client_for(seaweed), client_for(moto_endpoint)
    src, dst = bucket_factory(weed, "legacy"), bucket_factory(moto, "new-home")
    expected = seed_small(weed, src, "in/", 120)
    doc = {
        "operation": "move",
        "source": {"bucket": src, "prefix": "in/"},
        "destination": {"bucket": dst, "prefix": "moved/", "endpoint_url": moto_endpoint},
    }
    job = write_job(tmp_path / "move.json", doc)
    done, _ = run_measured(["run", str(job), "--endpoint-url", seaweed, "-q", "--no-ledger"], cli_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert list_keys(weed, src, "in/") == []
    assert md5s(moto, dst, "moved/") == {k[3:]: v for k, v in expected.items()}


def test_forcing_server_side_copy_across_endpoints_is_refused_naming_the_field(seaweed: str, moto_endpoint: str, tmp_path: Path) -> None:
    doc = {
        "operation": "copy",
        "source": {"bucket": "legacy-bucket"},
        "destination": {"bucket": "new-home", "endpoint_url": moto_endpoint},
        "options": {"transfer": "server-side"},
    }
    job = write_job(tmp_path / "bad.json", doc)
    done = subprocess.run(
        [*S3BULK, "run", str(job), "--endpoint-url", seaweed], env=cli_env(tmp_path), capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert done.stderr.strip().startswith("error: job.options.transfer: source and destination use different endpoints")


def test_verify_across_endpoints_compares_each_copy_with_its_source_and_names_the_one_that_differs(
    seaweed: str, moto_endpoint: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    weed, moto = client_for(seaweed), client_for(moto_endpoint)
    src, dst = bucket_factory(weed, "legacy"), bucket_factory(moto, "new-home")
    seed_small(weed, src, "in/", 60)
    weed.put_object(Bucket=src, Key="in/multi.bin", Body=os.urandom(12 * MiB))  # relayed in parts: its ETags differ
    copy = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "in/"},
        "destination": {"bucket": dst, "prefix": "in/", "endpoint_url": moto_endpoint},
    }
    job = write_job(tmp_path / "copy.json", copy)
    done, _ = run_measured(["run", str(job), "--endpoint-url", seaweed, "-q", "--no-ledger"], cli_env(tmp_path))
    assert done.returncode == 0, done.stderr
    victim = sorted(k for k in list_keys(moto, dst, "in/") if k != "in/multi.bin")[7]
    body = moto.get_object(Bucket=dst, Key=victim)["Body"].read()
    moto.put_object(Bucket=dst, Key=victim, Body=bytes([body[0] ^ 0xFF]) + body[1:] if body else b"x")
    job = write_job(tmp_path / "verify.json", {**copy, "operation": "verify"})
    report = tmp_path / "verify-report.json"
    done, _ = run_measured(["run", str(job), "--endpoint-url", seaweed, "-q", "--no-ledger", "--report", str(report)], cli_env(tmp_path))
    assert done.returncode == 1
    r = json.loads(report.read_text())
    assert (r["succeeded"], r["failed"]) == (60, 1)
    assert [(f["key"], f["error"]) for f in r["failures"]] == [(victim, "SizeMismatch" if not body else "ContentMismatch")]


def test_a_source_whose_keys_sit_in_a_secret_is_relayed_and_a_secret_without_keys_fails_naming_the_field(
    moto_endpoint: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    """The legacy server accepts only its own keys; the CLI reads them from Secrets Manager with its own credentials."""
    with SeaweedServer(keys={"legacy-ak": "legacy-sk"}) as legacy:
        theirs = make_s3_client(ClientSettings(endpoint_url=legacy.endpoint_url, access_key="legacy-ak", secret_key="legacy-sk"), 8)
        theirs.create_bucket(Bucket="legacy-keys")
        expected = seed_small(theirs, "legacy-keys", "data/", 60)
        moto = client_for(moto_endpoint)
        dst = bucket_factory(moto, "home")
        secrets = boto3.client(
            "secretsmanager", endpoint_url=moto_endpoint, region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b"
        )
        good = secrets.create_secret(
            Name=f"legacy-{dst}", SecretString=json.dumps({"aws_access_key_id": "legacy-ak", "aws_secret_access_key": "legacy-sk"})
        )["ARN"]
        keyless = secrets.create_secret(Name=f"keyless-{dst}", SecretString=json.dumps({"aws_secret_access_key": "legacy-sk"}))["ARN"]
        env = cli_env(tmp_path) | {"AWS_ENDPOINT_URL_SECRETS_MANAGER": moto_endpoint}

        def job(secret: str) -> dict[str, Any]:
            src = {"bucket": "legacy-keys", "prefix": "data/", "endpoint_url": legacy.endpoint_url, "credentials_secret": secret}
            return {"operation": "copy", "source": src, "destination": {"bucket": dst, "prefix": "in/"}}

        done = run_cli(
            "run", str(write_job(tmp_path / "good.json", job(good))), "--endpoint-url", moto_endpoint, "-q", "--no-ledger", env=env
        )
        assert done.returncode == 0, done.stderr
        assert md5s(moto, dst, "in/") == {k.removeprefix("data/"): v for k, v in expected.items()}

        refused = run_cli(
            "run", str(write_job(tmp_path / "keyless.json", job(keyless))), "--endpoint-url", moto_endpoint, "-q", "--no-ledger", env=env
        )
        assert refused.returncode == 2
        [line] = refused.stderr.strip().splitlines()
        assert "job.source.credentials_secret" in line and "aws_access_key_id" in line and "legacy-sk" not in line
