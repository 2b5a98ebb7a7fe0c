"""A local manifest (source.manifest.path) is the job file's neighbour: a relative path is read from the job file's
directory whatever directory the command runs in, the job carries it absolute (so a resume's spec hash matches from
anywhere), and `validate` checks the file is there and readable."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from s3bulk.cli import main
from s3bulk.job import load_job, parse_job
from s3bulk.job.retry import Failed, manifest_rows
from s3bulk.local.ledger import spec_hash
from s3bulk.source.manifest import ManifestReader
from s3bulk.testing.memstore import MemoryStore


def write_job(directory: Path, path: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    job = directory / "job.json"
    doc = {"operation": "copy", "source": {"bucket": "src-b", "manifest": {"path": path}}, "destination": {"bucket": "dst-b"}}
    job.write_text(json.dumps(doc))
    return job


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The command runs in a directory that is not the job file's (and holds a decoy manifest of the same name)."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "rows.csv").write_text("".join(manifest_rows("src-b", [Failed("decoy")])))
    monkeypatch.chdir(cwd)
    return cwd


def test_a_relative_manifest_path_is_read_from_the_job_files_directory_not_the_current_one(tmp_path: Path, elsewhere: Path) -> None:
    job_file = write_job(tmp_path / "jobs", "rows.csv")
    (tmp_path / "jobs" / "rows.csv").write_text("".join(manifest_rows("src-b", [Failed("a b"), Failed("c")])))
    job = load_job(os.path.relpath(job_file, elsewhere))
    assert job.source.manifest is not None and job.source.manifest.path == str(tmp_path / "jobs" / "rows.csv")
    rows = list(ManifestReader(MemoryStore(), job.source).rows())
    assert [r.obj.key for r in rows if r.obj is not None] == ["a b", "c"]  # not the decoy beside the current directory


def test_an_absolute_manifest_path_is_kept_as_written(tmp_path: Path, elsewhere: Path) -> None:
    written = f"{tmp_path}/data/./rows.csv"
    job = load_job(write_job(tmp_path / "jobs", written))
    assert job.source.manifest is not None and job.source.manifest.path == written


def test_a_job_parsed_from_text_alone_keeps_its_manifest_path_relative_to_the_current_directory() -> None:
    doc = {"operation": "copy", "source": {"bucket": "src-b", "manifest": {"path": "rows.csv"}}, "destination": {"bucket": "dst-b"}}
    job = parse_job(json.dumps(doc))
    assert job.source.manifest is not None and job.source.manifest.path == "rows.csv"


def test_the_resolved_path_survives_a_resume_from_another_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job_file = write_job(tmp_path / "jobs", "../lists/rows.csv")
    monkeypatch.chdir(tmp_path / "jobs")
    started = load_job("job.json")
    stored = parse_job(started.model_dump_json(), stored=True)  # what the ledger keeps and a resume reads back
    monkeypatch.chdir(tmp_path)
    again = load_job(job_file.relative_to(tmp_path))  # `--resume` given the same file, from elsewhere
    assert started.source.manifest is not None and started.source.manifest.path == str(tmp_path / "lists" / "rows.csv")
    assert spec_hash(started) == spec_hash(stored) == spec_hash(again)


def test_validate_refuses_a_manifest_that_is_not_there_in_one_line_exit_2(
    tmp_path: Path, elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job_file = write_job(tmp_path / "jobs", "rows.csv")  # only the current directory has a rows.csv
    assert main(["validate", str(job_file)]) == 2
    missing = tmp_path / "jobs" / "rows.csv"
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: job.source.manifest.path: {str(missing)!r}: No such file or directory; check the path "
        "(a relative one is read from the job file's directory)"
    ]


def test_validate_refuses_a_manifest_it_cannot_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job_file = write_job(tmp_path / "jobs", "rows")
    (tmp_path / "jobs" / "rows").mkdir()  # a directory where the file should be
    assert main(["validate", str(job_file)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: job.source.manifest.path: ") and "Is a directory" in err[0]


def test_validate_passes_a_readable_manifest_beside_the_job_file(
    tmp_path: Path, elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job_file = write_job(tmp_path / "jobs", "rows.csv")
    (tmp_path / "jobs" / "rows.csv").write_text("src-b,a\n")
    assert main(["validate", str(job_file)]) == 0
    assert capsys.readouterr().out.startswith("ok: copy s3://src-b/")
