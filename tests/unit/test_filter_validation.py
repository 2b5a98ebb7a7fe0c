"""source.tags and source.content_type: each bad filter is refused in one line naming the field and the fix."""

from __future__ import annotations

import json
from typing import Any

import pytest

from s3bulk.job import JobError, parse_job

COPY: dict[str, Any] = {
    "operation": "copy",
    "source": {"bucket": "src-bucket", "prefix": "logs/"},
    "destination": {"bucket": "dst-bucket", "prefix": "archive/"},
}


def job(operation: str = "copy", **source: Any) -> str:
    doc = json.loads(json.dumps(COPY))
    doc["operation"] = operation
    doc["source"].update(source)
    if operation in {"delete", "tag"}:
        doc.pop("destination")
    if operation == "tag":
        doc["tagging"] = {"mode": "merge", "tags": {"a": "b"}}
    return json.dumps(doc)


def refused(text: str) -> str:
    with pytest.raises(JobError) as info:
        parse_job(text)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_a_tag_filter_and_a_content_type_family_are_accepted_as_given() -> None:
    parsed = parse_job(job(tags={"team": "data", "env": "*"}, content_type="image/*"))
    assert parsed.source.tags == {"team": "data", "env": "*"}
    assert parsed.source.content_type == "image/*"


def test_a_list_of_content_types_is_accepted() -> None:
    assert parse_job(job(content_type=["image/*", "video/mp4"])).source.content_type == ["image/*", "video/mp4"]


def test_an_empty_tag_filter_is_refused_as_matching_everything() -> None:
    message = refused(job(tags={}))
    assert message.startswith("job.source.tags: an empty tag filter would match every object")
    assert "drop tags" in message


def test_more_tags_than_s3_allows_on_an_object_are_refused() -> None:
    message = refused(job(tags={f"k{i}": "v" for i in range(11)}))
    assert message.startswith("job.source.tags: 11 tags; S3 objects carry at most 10")


def test_an_empty_tag_key_is_refused() -> None:
    assert refused(job(tags={"": "v"})).startswith("job.source.tags: tag key '' must be 1-128 characters")


def test_a_tag_value_longer_than_s3_allows_is_refused() -> None:
    assert refused(job(tags={"a": "x" * 257})).startswith("job.source.tags: tag 'a' has a 257-character value")


def test_a_tag_value_that_is_not_a_string_is_refused() -> None:
    assert refused(job(tags={"a": 1})).startswith("job.source.tags.a: Input should be a valid string")


@pytest.mark.parametrize("pattern", ["image", "*/*", "*/png", "image/", "text/html; charset=utf-8", "image/png*", " image/png"])
def test_a_malformed_content_type_pattern_is_refused_with_the_forms_it_takes(pattern: str) -> None:
    message = refused(job(content_type=pattern))
    assert message.startswith("job.source.content_type: ")
    assert 'like "image/png" or "image/*"' in message


def test_an_empty_content_type_list_is_refused() -> None:
    assert refused(job(content_type=[])).startswith("job.source.content_type: an empty list would match no object")


def test_a_bad_pattern_inside_a_list_is_named() -> None:
    assert "'bad'" in refused(job(content_type=["image/*", "bad"]))


def test_a_filter_on_delete_markers_is_refused() -> None:
    message = refused(job("delete", versions="delete-markers", tags={"a": "b"}))
    assert message.startswith("job.source.tags: a delete marker has no tags or content type")


def test_a_filter_on_a_copy_of_all_versions_is_refused() -> None:
    message = refused(job(versions="all", content_type="image/*"))
    assert message.startswith("job.source.content_type: a copy of all versions")


def test_a_filter_on_abort_uploads_is_refused() -> None:
    doc = {
        "operation": "abort-uploads",
        "source": {"bucket": "src-bucket", "prefix": "in/", "modified_before": "2026-01-01T00:00:00Z", "tags": {"a": "b"}},
    }
    assert refused(json.dumps(doc)).startswith("job.source.tags: an open upload has no tags or content type")


def test_a_filter_on_the_versions_of_a_delete_is_accepted() -> None:
    assert parse_job(job("delete", versions="all", tags={"a": "b"})).source.tags == {"a": "b"}
