"""One test per validation rule: each bad job is refused with a line naming the field and the fix."""

from __future__ import annotations

import json
from typing import Any

import pytest

from s3bulk.job import JobError, json_schema, parse_job

COPY: dict[str, Any] = {
    "operation": "copy",
    "source": {"bucket": "src-bucket", "prefix": "logs/"},
    "destination": {"bucket": "dst-bucket", "prefix": "archive/"},
}


def job(**changes: Any) -> str:
    doc = json.loads(json.dumps(COPY))
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        node = doc
        for p in parents:
            node = node.setdefault(p, {})
        if value is ...:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    return json.dumps(doc)


def refused(text: str) -> str:
    with pytest.raises(JobError) as info:
        parse_job(text)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_minimal_copy_job_is_accepted_with_defaults() -> None:
    parsed = parse_job(job())
    assert parsed.options.if_exists == "overwrite"
    assert parsed.options.dry_run is False
    assert parsed.source.include == []


def test_the_documented_example_job_is_accepted() -> None:
    with open("events/copy-prefix.json", "rb") as fh:
        parsed = parse_job(fh.read())
    assert parsed.source.modified_after is not None
    assert parsed.source.modified_after.year == 2024


def test_unknown_top_level_field_is_named() -> None:
    assert refused(job(opts={"x": 1})).startswith("job.opts: unknown field")


def test_unknown_nested_field_is_named_with_its_path() -> None:
    assert refused(job(source__bukcet="x")).startswith("job.source.bukcet: unknown field")


def test_bad_bucket_name_is_refused_with_the_naming_rule() -> None:
    msg = refused(job(source__bucket="My_Bucket"))
    assert msg.startswith("job.source.bucket:")
    assert "lowercase" in msg


@pytest.mark.parametrize("name", ["ab", "a" * 64, "bucket..name", "192.168.1.1", "-leading", "xn--reserved", "name-s3alias"])
def test_each_bucket_naming_violation_is_refused(name: str) -> None:
    assert refused(job(destination__bucket=name)).startswith("job.destination.bucket:")


def test_prefix_over_1024_utf8_bytes_is_refused() -> None:
    msg = refused(job(source__prefix="é" * 513))  # 1,026 bytes in 513 characters
    assert msg.startswith("job.source.prefix:")
    assert "1026" in msg


def test_prefix_of_exactly_1024_bytes_is_accepted() -> None:
    assert parse_job(job(source__prefix="a" * 1024)).source.prefix == "a" * 1024


def test_destination_inside_source_range_is_refused() -> None:
    msg = refused(job(destination__bucket="src-bucket", destination__prefix="logs/copy/"))
    assert msg.startswith("job.destination.prefix:")
    assert "overlaps" in msg


def test_source_inside_destination_range_is_refused() -> None:
    assert "overlaps" in refused(job(destination__bucket="src-bucket", destination__prefix="lo"))


def test_copy_onto_itself_is_refused() -> None:
    assert "overlaps" in refused(job(destination__bucket="src-bucket", destination__prefix="logs/"))


def test_same_bucket_disjoint_prefixes_are_accepted() -> None:
    assert parse_job(job(destination__bucket="src-bucket", destination__prefix="archive/")).destination is not None


def test_delete_without_prefix_is_refused() -> None:
    text = json.dumps({"operation": "delete", "source": {"bucket": "src-bucket"}})
    msg = refused(text)
    assert msg.startswith("job.source.prefix:")
    assert '"all": true' in msg


def test_delete_of_whole_bucket_needs_all_true() -> None:
    parsed = parse_job(json.dumps({"operation": "delete", "source": {"bucket": "src-bucket", "all": True}}))
    assert parsed.source.all is True


def test_all_true_with_a_prefix_is_contradictory() -> None:
    text = json.dumps({"operation": "delete", "source": {"bucket": "src-bucket", "prefix": "x/", "all": True}})
    assert refused(text).startswith("job.source.all:")


def test_delete_with_destination_is_refused() -> None:
    text = json.dumps({"operation": "delete", "source": {"bucket": "src-bucket", "prefix": "x/"}, "destination": {"bucket": "dst-bucket"}})
    assert refused(text).startswith("job.destination: destination is not allowed")


def test_copy_without_destination_is_refused() -> None:
    assert refused(job(destination=...)).startswith("job.destination: destination is required")


def test_unknown_operation_is_refused_listing_the_choices() -> None:
    msg = refused(job(operation="sync"))
    assert msg.startswith("job.operation:")
    assert "'copy'" in msg


def test_missing_source_bucket_is_refused() -> None:
    assert refused(job(source__bucket=...)).startswith("job.source.bucket: required field is missing")


def test_wrong_type_is_refused_showing_the_value() -> None:
    msg = refused(job(source__min_size="10"))
    assert msg.startswith("job.source.min_size:")
    assert '"10"' in msg


def test_negative_size_is_refused() -> None:
    assert refused(job(source__min_size=-1)).startswith("job.source.min_size:")


def test_max_size_below_min_size_is_refused() -> None:
    assert refused(job(source__min_size=10, source__max_size=5)).startswith("job.source.max_size:")


def test_timestamp_without_timezone_is_refused() -> None:
    msg = refused(job(source__modified_after="2024-01-01T00:00:00"))
    assert msg.startswith("job.source.modified_after:")
    assert "timezone" in msg


def test_unparseable_timestamp_is_refused() -> None:
    assert refused(job(source__modified_after="yesterday")).startswith("job.source.modified_after:")


def test_empty_time_window_is_refused() -> None:
    msg = refused(job(source__modified_after="2024-02-01T00:00:00Z", source__modified_before="2024-01-01T00:00:00Z"))
    assert msg.startswith("job.source.modified_after:")


def test_unknown_storage_class_is_refused() -> None:
    assert refused(job(destination__storage_class="COLD")).startswith("job.destination.storage_class:")


def test_unknown_if_exists_policy_is_refused() -> None:
    assert refused(job(options__if_exists="replace")).startswith("job.options.if_exists:")


def test_zero_concurrency_is_refused() -> None:
    assert refused(job(options__concurrency=0)).startswith("job.options.concurrency:")


def test_multipart_threshold_above_copy_object_limit_is_refused() -> None:
    assert refused(job(options__multipart_threshold=6 * 1024**3)).startswith("job.options.multipart_threshold:")


def test_part_size_below_s3_minimum_is_refused() -> None:
    assert refused(job(options__part_size=1024)).startswith("job.options.part_size:")


def test_batch_size_over_delete_objects_limit_is_refused() -> None:
    assert refused(job(options__batch_size=1001)).startswith("job.options.batch_size:")


def test_invalid_json_reports_line_and_column() -> None:
    msg = refused('{"operation": "copy",\n "source": }')
    assert msg.startswith("job: not valid JSON at line 2")


def test_non_object_document_is_refused() -> None:
    assert refused("[1, 2]").startswith("job: the file must hold a JSON object")


def test_several_problems_report_the_first_and_count_the_rest() -> None:
    msg = refused(job(source__bucket="BAD", destination__bucket="ALSO_BAD"))
    assert "(and 1 more problem)" in msg


def test_schema_is_generated_from_the_model_and_forbids_unknown_fields() -> None:
    schema = json_schema()
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == {
        "operation",
        "source",
        "destination",
        "options",
        "job_id",
        "tagging",
        "storage_class",
        "checksum_algorithm",
        "restore",
        "process",
        "retention",
        "legal_hold",
        "acl",
    }


def test_published_schema_matches_the_model() -> None:
    with open("docs/job.schema.json", encoding="utf-8") as fh:
        published = json.load(fh)
    assert published == json_schema(), "regenerate with: s3bulk schema > docs/job.schema.json"


def test_expected_owner_must_be_a_12_digit_account() -> None:
    message = refused(job(source__expected_owner="12345"))
    assert message.startswith("job.source.expected_owner:")


def test_kms_key_without_kms_encryption_is_refused() -> None:
    message = refused(job(destination__kms_key_id="alias/archive"))
    assert message.startswith("job.destination.kms_key_id:") and 'sse "aws:kms"' in message


def test_request_options_carry_owners_payer_and_encryption() -> None:
    from s3bulk.job import request_options

    parsed = parse_job(
        job(
            source__expected_owner="111111111111",
            destination__expected_owner="222222222222",
            destination__sse="aws:kms",
            destination__kms_key_id="alias/archive",
            options__requester_pays=True,
        )
    )
    opts = request_options(parsed)
    assert opts.owner("src-bucket") == "111111111111" and opts.owner("dst-bucket") == "222222222222"
    assert (opts.requester_pays, opts.sse, opts.kms_key_id) == (True, "aws:kms", "alias/archive")
