"""A new user's likely slips in a job file are answered in one line that names the field and the fix: a misspelt field
(what it probably meant), a field at the wrong level, a YAML file, and a "sync" (which is a copy with two options)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from s3bulk.cli import main
from s3bulk.job import JobError, parse_job

BASE: dict[str, Any] = {"operation": "copy", "source": {"bucket": "src-bb", "prefix": "logs/"}, "destination": {"bucket": "dst-bb"}}


def refused(doc: dict[str, Any] | str) -> str:
    with pytest.raises(JobError) as err:
        parse_job(doc if isinstance(doc, str) else json.dumps(doc))
    message = str(err.value)
    assert "\n" not in message, message
    return message


@pytest.mark.parametrize(
    ("doc", "said"),
    [
        ({**BASE, "source": {"bucket": "src-bb", "prefx": "logs/"}}, 'job.source.prefx: unknown field; did you mean "prefix"?'),
        ({**BASE, "options": {"if_exist": "skip"}}, 'job.options.if_exist: unknown field; did you mean "if_exists"?'),
        ({**BASE, "destnation": {"bucket": "dst-bb"}}, 'job.destnation: unknown field; did you mean "destination"?'),
        (
            {**BASE, "source": {"bucket": "src-bb", "manifest": {"pth": "rows.csv"}}},
            'job.source.manifest.pth: unknown field; did you mean "path"?',
        ),
        (
            {**BASE, "source": {"bucket": "src-bb", "versions": {"asof": "2026-01-01T00:00:00Z"}}},
            'job.source.versions.asof: unknown field; did you mean "as_of"?',
        ),
    ],
)
def test_a_misspelt_field_is_answered_with_the_field_it_most_likely_meant_at_that_path(doc: dict[str, Any], said: str) -> None:
    assert refused(doc).startswith(said)


def test_a_misspelt_required_field_is_said_as_the_misspelling_not_as_the_field_missing() -> None:
    doc = {k: v for k, v in BASE.items() if k != "operation"} | {"operaton": "copy"}
    assert refused(doc).startswith('job.operaton: unknown field; did you mean "operation"?')


def test_a_field_at_the_wrong_level_is_told_where_it_belongs() -> None:
    assert refused({**BASE, "if_exists": "skip"}) == "job.if_exists: unknown field here; it belongs in options (job.options.if_exists)"


def test_a_field_like_none_of_the_job_files_keeps_the_plain_answer() -> None:
    said = refused({**BASE, "options": {"zzzqqq": 1}})
    assert said == "job.options.zzzqqq: unknown field; remove it or fix its spelling (see docs/job.schema.json)"


def test_a_misspelt_choice_is_answered_with_the_choice_it_most_likely_meant() -> None:
    said = refused({**BASE, "options": {"if_exists": "skip_unchanged"}})
    assert said.startswith("job.options.if_exists: ") and said.endswith('got "skip_unchanged"; did you mean "skip-unchanged"?')


@pytest.mark.parametrize("doc", [{**BASE, "operation": "sync"}, {**BASE, "options": {"if_exists": "sync"}}], ids=["operation", "if_exists"])
def test_a_sync_asked_for_is_told_it_is_a_copy_with_skip_unchanged_and_delete_extraneous(doc: dict[str, Any]) -> None:
    said = refused(doc)
    field = "job.operation" if doc["operation"] == "sync" else "job.options.if_exists"
    assert (
        said.startswith(f"{field}: ")
        and 'a sync is a copy with options.if_exists "skip-unchanged" and options.delete_extraneous true' in said
    )
    doc = {**BASE, "options": {"if_exists": "skip-unchanged", "delete_extraneous": True}}
    assert parse_job(json.dumps(doc)).options.delete_extraneous  # what it says is a job that parses


@pytest.mark.parametrize(
    "text",
    [
        "operation: copy\nsource:\n  bucket: src-bb\n",
        "# the nightly copy\n---\noperation: copy\n",
        '"operation": copy\n',
        "- operation: copy\n",
    ],
)
def test_a_yaml_job_file_is_told_job_files_are_json_and_how_to_convert_it(text: str) -> None:
    said = refused(text)
    assert said.startswith("job: this reads as YAML, and job files are JSON; convert it") and "yaml.safe_load" in said


@pytest.mark.parametrize("text", ['{"operation": "copy",}', "", "copy everything"])
def test_text_that_is_neither_json_nor_yaml_is_told_where_its_json_breaks(text: str) -> None:
    assert refused(text).startswith("job: not valid JSON at line 1")


def test_validate_says_a_misspelt_field_in_one_line_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps({**BASE, "options": {"if_exist": "skip"}}))
    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == ['error: job.options.if_exist: unknown field; did you mean "if_exists"?']
