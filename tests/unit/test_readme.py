"""README's promises that the code decides: the statuses a report may carry, and it fits in five minutes' reading."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from s3bulk.report import job_status

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_readme_is_at_most_250_lines() -> None:
    assert len(README.splitlines()) <= 250


def test_the_report_statuses_readme_lists_are_exactly_those_the_status_rule_gives() -> None:
    shown = re.search(r'"status": "([a-z-]+(?: \| [a-z-]+)+)"', README)  # the report's, listing every one
    assert shown is not None
    listed = {s.strip() for s in shown.group(1).split("|")}
    flags = ("dry_run", "stopped", "interrupted", "cancelled", "canary")
    given = {
        job_status(failed=failed, error=error, **dict(zip(flags, values, strict=True)))
        for values in itertools.product((False, True), repeat=len(flags))
        for failed in (0, 1)
        for error in (None, "listing failed")
    }
    assert listed == given


def test_every_document_readme_links_exists() -> None:
    for target in re.findall(r"\]\(((?:docs|events)/[^)#]*)", README):
        assert (ROOT / target).exists(), target


def test_docs_jobs_lists_every_field_of_the_schema_as_make_schema_writes_it() -> None:
    from s3bulk.job.fields import fields_table, with_table

    doc = (ROOT / "docs" / "jobs.md").read_text()
    assert with_table(doc) == doc, "regenerate with: make schema"
    table = fields_table()
    for path in ("source.manifest.format", "options.max_delete", "destination.expected_owner", "tagging.mode"):
        assert f"| `{path}` |" in table, path
