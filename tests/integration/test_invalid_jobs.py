"""Every invalid job: exit 2, one line naming the field, and not one object touched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from s3bulk.cli import main
from tests.integration.conftest import cli_env, client_for, run_cli
from tests.integration.helpers import seed_small, snapshot

SRC, DST = "inv-src", "inv-dst"

INVALID: list[tuple[str, dict[str, Any], str]] = [
    (
        "unknown field",
        {"operation": "copy", "source": {"bucket": SRC, "prefx": "a/"}, "destination": {"bucket": DST}},
        "job.source.prefx: unknown field",
    ),
    ("bad bucket", {"operation": "copy", "source": {"bucket": "Inv_Src"}, "destination": {"bucket": DST}}, "job.source.bucket:"),
    (
        "long prefix",
        {"operation": "delete", "source": {"bucket": SRC, "prefix": "p" * 1025}},
        "job.source.prefix: prefix is 1025 UTF-8 bytes",
    ),
    (
        "overlap",
        {"operation": "move", "source": {"bucket": SRC, "prefix": "in/"}, "destination": {"bucket": SRC, "prefix": "in/moved/"}},
        "job.destination.prefix:",
    ),
    ("delete everything", {"operation": "delete", "source": {"bucket": SRC}}, "job.source.prefix:"),
    (
        "delete with destination",
        {"operation": "delete", "source": {"bucket": SRC, "prefix": "in/"}, "destination": {"bucket": DST}},
        "job.destination:",
    ),
    ("copy without destination", {"operation": "copy", "source": {"bucket": SRC}}, "job.destination: destination is required"),
    ("bad operation", {"operation": "sync", "source": {"bucket": SRC}}, "job.operation:"),
    (
        "naive timestamp",
        {"operation": "delete", "source": {"bucket": SRC, "prefix": "in/", "modified_before": "2024-01-01"}},
        "job.source.modified_before:",
    ),
]


@pytest.fixture(scope="module")
def seeded(seaweed: str) -> Any:
    client = client_for(seaweed)
    for b in (SRC, DST):
        client.create_bucket(Bucket=b)
        seed_small(client, b, "in/", 40)
    return client


@pytest.mark.parametrize(("name", "doc", "expected"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_job_exits_2_names_the_field_and_touches_nothing(
    name: str,
    doc: dict[str, Any],
    expected: str,
    seaweed: str,
    seeded: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for k, v in cli_env(tmp_path).items():
        monkeypatch.setenv(k, v)
    before = {b: snapshot(seeded, b) for b in (SRC, DST)}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(doc))
    assert main(["run", str(path), "--endpoint-url", seaweed]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: " + expected), err
    assert len(err.splitlines()) == 1
    assert {b: snapshot(seeded, b) for b in (SRC, DST)} == before


def test_cli_validate_reports_ok_or_the_error_with_exit_codes(tmp_path: Path) -> None:
    good = run_cli("validate", "events/copy-prefix.json")
    assert (good.returncode, good.stdout.strip()) == (0, "ok: copy s3://src-bucket/logs/2024/ -> s3://dst-bucket/archive/2024/")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(INVALID[0][1]))
    proc = run_cli("validate", str(bad))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: job.source.prefx: unknown field")


def test_run_without_credentials_exits_2_before_touching_anything(tmp_path: Path) -> None:
    env = {k: v for k, v in cli_env(tmp_path).items() if k not in {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}}
    proc = run_cli("run", "events/copy-prefix.json", env=env)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: no AWS credentials found")


def test_missing_job_file_exits_2(tmp_path: Path) -> None:
    proc = run_cli("validate", str(tmp_path / "nope.json"))
    assert proc.returncode == 2
    assert "No such file" in proc.stderr


def test_every_sample_event_is_valid() -> None:
    for path in sorted(Path("events").glob("*.json")):
        proc = run_cli("validate", str(path))
        assert proc.returncode == 0, (path, proc.stderr)
