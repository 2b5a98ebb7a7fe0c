"""One test per validation rule: each bad job is refused with a line naming the field and the fix."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from s3bulk.job import JobError, json_schema, load_job, parse_job

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
    assert parse_job(job(source__prefix="a" * 1023 + "/")).source.prefix == "a" * 1023 + "/"


def test_destination_inside_source_range_is_refused() -> None:
    msg = refused(job(destination__bucket="src-bucket", destination__prefix="logs/copy/"))
    assert msg.startswith("job.destination.prefix:")
    assert "overlaps" in msg


def test_source_inside_destination_range_is_refused() -> None:
    assert "overlaps" in refused(job(destination__bucket="src-bucket", destination__prefix="lo", destination__raw_prefix=True))


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
    msg = refused(job(operation="mirror"))
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
        "encryption",
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


RETENTION: dict[str, Any] = {
    "operation": "set-retention",
    "source": {"bucket": "src-bucket", "prefix": "locked/"},
    "retention": {"mode": "GOVERNANCE", "until": "2030-01-01T00:00:00Z"},
}


def test_a_new_job_file_with_a_retention_date_already_past_is_refused_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps({**RETENTION, "retention": {"mode": "GOVERNANCE", "until": "2020-01-01T00:00:00Z"}}))
    with pytest.raises(JobError) as info:
        load_job(path)  # the real clock: 2020 is past
    assert str(info.value) == (
        "job.retention.until: 2020-01-01T00:00:00Z has already passed; S3 takes only a future retain-until date, so give a later one"
    )


def test_a_retention_date_is_refused_from_the_moment_it_is_reached_and_accepted_just_before() -> None:
    until = datetime(2030, 1, 1, tzinfo=UTC)
    with pytest.raises(JobError, match=r"^job\.retention\.until: .*has already passed"):
        parse_job(json.dumps(RETENTION), now=until)
    assert parse_job(json.dumps(RETENTION), now=until - timedelta(seconds=1)).retention is not None


def test_a_stored_job_whose_retention_date_has_passed_since_still_parses_for_a_resume(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(RETENTION))
    started = load_job(path, now=datetime(2029, 6, 1, tzinfo=UTC))  # accepted when it started
    stored = started.model_dump_json()  # what a ledger keeps and a resume re-reads with parse_job
    resumed = parse_job(stored)  # now 2030 or later, on the real clock: the date has passed, the spec still parses
    assert resumed == started


def test_the_cli_validate_refuses_a_past_retention_date_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from s3bulk.cli import main

    path = tmp_path / "job.json"
    path.write_text(json.dumps({**RETENTION, "retention": {"mode": "COMPLIANCE", "until": "2021-03-04T05:06:07+00:00"}}))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: job.retention.until: 2021-03-04T05:06:07Z has already passed") and "\n" not in err


PROCESS: dict[str, Any] = {"operation": "process", "source": {"bucket": "src-bucket", "prefix": "in/"}}


@pytest.mark.parametrize("field", ["function", "batchops_handler"])
def test_a_callable_without_a_colon_is_refused_in_words_not_with_the_regex(field: str) -> None:
    message = refused(json.dumps({**PROCESS, "process": {field: "mytools.run"}}))
    assert message == f'job.process.{field}: got "mytools.run"; give module:callable, like my_tools:run'


@pytest.mark.parametrize(
    ("changes", "field", "fix"),
    [
        ({"source__expected_owner": "12345"}, "job.source.expected_owner", "12-digit AWS account id"),
        ({"source__endpoint_url": "minio:9000"}, "job.source.endpoint_url", "http:// or https:// URL"),
        ({"destination__region": "EU West"}, "job.destination.region", "like eu-west-1"),
        ({"source__credentials_secret": "my-secret"}, "job.source.credentials_secret", "Secrets Manager secret ARN"),
        ({"job_id": "my job"}, "job.job_id", "1-80 letters, digits"),
        ({"job_id": ".."}, "job.job_id", "not starting with a dot"),  # jobs/../report.json: another folder to path-normalising tools
        ({"job_id": ".hidden"}, "job.job_id", "not starting with a dot"),
    ],
)
def test_every_pattern_field_says_what_it_takes_instead_of_showing_its_regex(changes: dict[str, Any], field: str, fix: str) -> None:
    message = refused(job(**changes))
    assert message.startswith(f"{field}: got ") and fix in message
    assert "pattern" not in message and "^" not in message


def test_a_lambda_arn_that_is_not_one_is_refused_in_words() -> None:
    message = refused(json.dumps({**PROCESS, "process": {"batchops_lambda": "thumbnails"}}))
    assert (
        message
        == 'job.process.batchops_lambda: got "thumbnails"; give a Lambda function ARN, like arn:aws:lambda:eu-west-1:111122223333:function:NAME'
    )


def test_every_pattern_in_the_schema_has_words_for_its_error() -> None:
    from s3bulk.job import _PATTERN_FIXES

    def patterns(node: Any) -> set[str]:
        if isinstance(node, dict):
            own = {node["pattern"]} if isinstance(node.get("pattern"), str) else set()
            return own.union(*(patterns(v) for v in node.values()))
        if isinstance(node, list):
            return set().union(*(patterns(v) for v in node))
        return set()

    found = patterns(json_schema())
    assert found and found <= set(_PATTERN_FIXES)


@pytest.mark.parametrize(
    ("encryption", "field", "fix"),
    [
        ({"sse": "AES256", "kms_key_id": "1234abcd-12ab-34cd-56ef-1234567890ab"}, "job.encryption.kms_key_id", 'needs sse "aws:kms"'),
        ({"sse": "aws:kms", "kms_key_id": "alias/data"}, "job.encryption.kms_key_id", "give the key's ARN"),
        ({"sse": "aws:kms:dsse", "bucket_key": True}, "job.encryption.bucket_key", 'use "aws:kms"'),
        ({"sse": "aws:kms:x"}, "job.encryption.sse", ""),
    ],
)
def test_set_encryption_refuses_what_s3_could_not_do_or_check_naming_the_field(encryption: dict[str, object], field: str, fix: str) -> None:
    doc = {"operation": "set-encryption", "source": {"bucket": "enc-bucket", "prefix": "p/"}, "encryption": encryption}
    with pytest.raises(JobError) as err:
        parse_job(json.dumps(doc))
    line = str(err.value)
    assert line.startswith(field) and fix in line and "\n" not in line


def test_set_encryption_needs_its_encryption_and_acts_in_place() -> None:
    base = {"operation": "set-encryption", "source": {"bucket": "enc-bucket", "prefix": "p/"}}
    with pytest.raises(JobError, match=r"^job.encryption: operation 'set-encryption' needs encryption"):
        parse_job(json.dumps(base))
    with pytest.raises(JobError, match=r"^job.destination: destination is not allowed"):
        parse_job(json.dumps({**base, "encryption": {"sse": "AES256"}, "destination": {"bucket": "other-bucket"}}))
    arn = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    job = parse_job(json.dumps({**base, "encryption": {"sse": "aws:kms", "kms_key_id": arn, "bucket_key": True}}))
    assert job.encryption is not None and (job.encryption.kms_key_id, job.encryption.bucket_key) == (arn, True)


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ({"content_type": 5}, "job.source.content_type: should be a valid string, or a valid array; got 5"),
        ({"versions": "al"}, "job.source.versions: should be 'current', 'all', 'noncurrent' or 'delete-markers', or an object"),
        ({"versions": {"asof": "2026-11-20T00:00:00Z"}}, 'job.source.versions.asof: unknown field; did you mean "as_of"?'),
        ({"versions": {"as_of": "yesterday"}}, "job.source.versions.as_of: Input should be a valid datetime"),
        ({"tags": {"Env": 5}}, "job.source.tags.Env: Input should be a valid string; got 5"),  # a map's key, not a branch
    ],
)
def test_a_field_of_several_forms_is_named_once_by_its_own_path_never_by_a_type_branch(source: dict[str, Any], said: str) -> None:
    doc = {"operation": "copy", "source": {"bucket": "src-bb", **source}, "destination": {"bucket": "dst-bb"}}
    with pytest.raises(JobError) as err:
        parse_job(json.dumps(doc))
    message = str(err.value)
    assert message.startswith(said) and "\n" not in message, message
    assert "literal[" not in message and ".str" not in message and "AsOf" not in message
