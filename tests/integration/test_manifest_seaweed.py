"""Manifest jobs through the CLI on SeaweedFS: CSV with special-character keys, S3 Inventory with gzip parts, bad rows."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pytest

from tests.integration.conftest import cli_env, client_for, run_cli
from tests.integration.helpers import md5, snapshot, write_job

pytestmark = pytest.mark.seaweed

# Keys only a URL-encoded CSV carries intact (SeaweedFS keeps all of these exactly).
KEYS = [
    "in/plain.txt",
    "in/with space.txt",
    "in/a+b=c&d.txt",
    "in/100% sure.txt",
    "in/comma,semicolon;.txt",
    "in/\"quoted\" 'single'.txt",
    "in/ünïcødé/日本語/файл.txt",
    "in/emoji-🎉.txt",
    "in/tab\there.txt",
    "in/hash#question?.txt",
]


def seed(client: Any, bucket: str) -> dict[str, str]:
    out = {}
    for i, key in enumerate(KEYS):
        body = f"object {i} ".encode() * (i + 1)
        client.put_object(Bucket=bucket, Key=key, Body=body)
        out[key] = md5(body)
    return out


def run(endpoint: str, tmp_path: Path, name: str, doc: dict[str, Any], *extra: str) -> tuple[int, dict[str, Any], list[dict[str, Any]]]:
    job = write_job(tmp_path / f"{name}.json", doc)
    report, keys = tmp_path / f"{name}-report.json", tmp_path / f"{name}-keys.jsonl"
    done = run_cli(
        "run", str(job), "--endpoint-url", endpoint, "-q", "--report", str(report), "--key-log", str(keys), *extra, env=cli_env(tmp_path)
    )
    assert report.exists(), done.stdout + done.stderr
    return done.returncode, json.loads(report.read_text()), [json.loads(line) for line in keys.read_text().splitlines()]


def bodies(client: Any, bucket: str) -> dict[str, str]:
    return {k: md5(client.get_object(Bucket=bucket, Key=k)["Body"].read()) for k in snapshot(client, bucket)}


def test_csv_manifest_with_special_keys_copies_exactly_them_and_plan_predicts_it(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    direct = client_for(seaweed)
    src, dst, man = bucket_factory(direct, "src"), bucket_factory(direct, "dst"), bucket_factory(direct, "man")
    expected = seed(direct, src)
    direct.put_object(Bucket=src, Key="in/not-in-manifest.txt", Body=b"left alone")
    rows = "".join(f"{src},{quote_plus(k, safe='/')}\r\n" for k in reversed(KEYS))  # CRLF, any order
    direct.put_object(Bucket=man, Key="lists/today.csv", Body=rows.encode())
    doc = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "in/", "manifest": {"bucket": man, "key": "lists/today.csv"}},
        "destination": {"bucket": dst, "prefix": "copied/"},
    }
    before = (snapshot(direct, src), snapshot(direct, dst))
    planned = run_cli("plan", str(write_job(tmp_path / "plan.json", doc)), "--endpoint-url", seaweed, "--json", env=cli_env(tmp_path))
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert (snapshot(direct, src), snapshot(direct, dst)) == before  # the plan changed nothing

    code, report, lines = run(seaweed, tmp_path, "copy", doc)
    assert code == 0, report
    assert bodies(direct, dst) == {"copied/" + k[3:]: v for k, v in expected.items()}
    assert (plan["objects"], plan["requests"]["HeadObject"], plan["requests"]["CopyObject"]) == (report["succeeded"], len(KEYS), len(KEYS))
    assert sorted(line["key"] for line in lines) == sorted(KEYS)
    assert all(line["size"] == len(f"object {KEYS.index(line['key'])} ") * (KEYS.index(line["key"]) + 1) for line in lines)


def test_inventory_manifest_with_gzip_parts_and_bad_rows(seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path) -> None:
    direct = client_for(seaweed)
    src, dst, inv = bucket_factory(direct, "src"), bucket_factory(direct, "dst"), bucket_factory(direct, "inv")
    expected = seed(direct, src)
    # An inventory as S3 writes it: quoted CSV fields, URL-encoded keys, gzip parts, listed by manifest.json.
    listing = direct.list_objects_v2(Bucket=src)["Contents"]
    rows = [
        [
            src,
            quote_plus(o["Key"], safe="/"),
            str(o["Size"]),
            o["LastModified"].strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            o["ETag"].strip('"'),
            "STANDARD",
        ]
        for o in listing
    ]
    rows.insert(3, [src, "in%2Fbad", "not-a-size", "2026-01-01T00:00:00.000Z", "x", "STANDARD"])
    parts = [rows[:5], rows[5:]]
    files = []
    for n, part in enumerate(parts):
        key = f"inventory/{src}/daily/data/{n:02d}.csv.gz"
        text = "".join(",".join(f'"{v}"' for v in row) + "\n" for row in part)
        direct.put_object(Bucket=inv, Key=key, Body=gzip.compress(text.encode()))
        files.append({"key": key, "size": 0, "MD5checksum": ""})
    manifest = {
        "sourceBucket": src,
        "destinationBucket": f"arn:aws:s3:::{inv}",
        "version": "2016-11-30",
        "fileFormat": "CSV",
        "fileSchema": "Bucket, Key, Size, LastModifiedDate, ETag, StorageClass",
        "files": files,
    }
    direct.put_object(Bucket=inv, Key=f"inventory/{src}/daily/2026-11-20T01-00Z/manifest.json", Body=json.dumps(manifest).encode())
    doc = {
        "operation": "copy",
        "source": {
            "bucket": src,
            "manifest": {"bucket": inv, "key": f"inventory/{src}/daily/2026-11-20T01-00Z/manifest.json", "format": "inventory"},
        },
        "destination": {"bucket": dst},
    }
    code, report, lines = run(seaweed, tmp_path, "inventory", doc)
    assert code == 1  # the bad row fails the job, after every good row is copied
    assert (report["succeeded"], report["failed"]) == (len(KEYS), 1)
    [failure] = report["failures"]
    assert failure["error"] == "InvalidManifestRow" and "00.csv.gz line 4" in failure["message"] and "Size" in failure["message"]
    assert bodies(direct, dst) == expected
    assert sum(1 for line in lines if line["outcome"] == "succeeded") == len(KEYS)

    # A rerun with skip-unchanged asks the destination per object and copies nothing.
    again = {**doc, "options": {"if_exists": "skip-unchanged"}}
    code, report, _ = run(seaweed, tmp_path, "again", again)
    assert (report["succeeded"], report["skipped"], report["failed"]) == (0, len(KEYS), 1)
