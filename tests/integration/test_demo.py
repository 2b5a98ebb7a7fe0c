"""`s3bulk demo` is the README's first command: it must work end to end on its own."""

from __future__ import annotations

from pathlib import Path

from tests.integration.conftest import cli_env, run_cli


def test_demo_runs_a_verified_copy_on_the_embedded_server(tmp_path: Path) -> None:
    proc = run_cli("demo", "--objects", "400", "--report", str(tmp_path / "r.json"), env=cli_env(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verified: 392 objects byte for byte" in proc.stdout
    assert "multipart copy kept Content-Type, metadata and tags" in proc.stdout
    assert '"status": "succeeded"' in (tmp_path / "r.json").read_text()
