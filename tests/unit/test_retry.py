"""Retry's core: the failed objects from failures or a key log, as a manifest the manifest reader reads back; and the
operator's other safety nets on submit (the hold for confirmation)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from s3bulk.aws.allowlist import AllowList
from s3bulk.aws.validation import validate
from s3bulk.cli.remote import holds_for_confirmation
from s3bulk.job import JobError, Manifest, parse_job
from s3bulk.job.retry import Failed, failed_objects, manifest_rows, refused_rows, retry_job
from s3bulk.source.manifest import ManifestReader
from s3bulk.testing.memstore import MemoryStore


def test_report_failures_give_each_failed_object_once_with_its_version_and_leave_out_extraneous_deletes() -> None:
    lines = [
        {"key": "a", "error": "AccessDenied", "message": "Access Denied"},
        {"key": "b", "error": "NoSuchVersion", "message": "version 3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY: gone"},
        {"key": "a", "error": "AccessDenied", "message": "again"},
        {"key": "z", "error": "AccessDenied", "message": "extraneous destination object not deleted: Access Denied"},
    ]
    assert failed_objects(lines) == [Failed("a"), Failed("b", "3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY")]


def test_manifest_rows_the_job_refused_are_never_made_keys_of_its_bucket() -> None:
    # A row for another bucket names that bucket's key; an unreadable row's "key" is where the row is. Neither is an
    # object of the job's bucket, so a retry that listed them would act on objects nobody selected.
    lines = [
        {"key": "precious", "error": "ManifestBucketMismatch", "message": "row is for bucket 'other', but source.bucket is 'b'"},
        {"key": "list.csv#7", "error": "InvalidManifestRow", "message": "list.csv line 7: 4 fields"},
        {"key": "precious", "outcome": "failed", "error": "ManifestBucketMismatch"},
        {"key": "a", "error": "AccessDenied", "message": "Access Denied"},
    ]
    refused: Counter[str] = Counter()
    assert failed_objects(lines, refused) == [Failed("a")]
    assert refused == {"ManifestBucketMismatch": 2, "InvalidManifestRow": 1}
    assert refused_rows(refused).startswith("3 failures are manifest rows the job refused")
    assert refused_rows(Counter()) == ""


def test_a_key_log_counts_each_keys_latest_line_so_what_a_resume_finished_is_not_retried() -> None:
    lines = [
        {"key": "a", "outcome": "failed", "error": "SlowDown"},
        {"key": "b", "outcome": "succeeded"},
        {"key": "c", "outcome": "failed", "version_id": "v1"},
        {"key": "a", "outcome": "succeeded"},  # the resume did it
        {"key": "d", "outcome": "skipped"},
    ]
    assert failed_objects(lines) == [Failed("c", "v1")]


def test_the_manifest_names_every_key_as_the_reader_decodes_it() -> None:
    objs = [Failed("plain/a.txt"), Failed("sp ace/+plus,comma%/é"), Failed("v/k", "ver-1")]
    store = MemoryStore()
    store.create_bucket("rep")
    store.put_object("rep", "jobs/j-retry-1/retry-manifest.csv", "".join(manifest_rows("src-b", objs)).encode())
    job = parse_job(
        json.dumps(
            {
                "operation": "copy",
                "source": {"bucket": "src-b", "manifest": {"bucket": "rep", "key": "jobs/j-retry-1/retry-manifest.csv"}},
                "destination": {"bucket": "dst-b"},
            }
        )
    )
    rows = list(ManifestReader(store, job.source).rows())
    assert [(r.obj.key, r.obj.version_id) for r in rows if r.obj is not None] == [(o.key, o.version_id) for o in objs]


def test_the_retry_is_the_job_again_over_its_manifest_without_filters_or_a_syncs_deletes() -> None:
    job = parse_job(
        json.dumps(
            {
                "job_id": "j",
                "operation": "copy",
                "source": {"bucket": "src-b", "prefix": "in/", "include": ["*.jpg"], "min_size": 10},
                "destination": {"bucket": "dst-b", "prefix": "out/"},
                "options": {"delete_extraneous": True, "if_exists": "skip", "allow_empty_source": True},
            }
        )
    )
    again = retry_job(job, Manifest(bucket="rep", key="jobs/j-retry-1/retry-manifest.csv"), "j-retry-1")
    assert again.job_id == "j-retry-1" and again.source.manifest is not None and again.source.prefix == "in/"
    assert (again.source.include, again.source.min_size, again.options.delete_extraneous) == ([], 0, False)
    assert (again.destination, again.options.if_exists) == (job.destination, "skip")
    versions = parse_job(json.dumps({"operation": "delete", "source": {"bucket": "src-b", "versions": "all", "prefix": "p/"}}))
    with pytest.raises(JobError, match=r"job\.source\.versions"):
        retry_job(versions, Manifest(bucket="rep", key="k"), "x")


def test_a_manifest_is_a_local_path_or_a_bucket_and_key_and_the_stack_takes_only_the_second(tmp_path: Path) -> None:
    local = tmp_path / "m.csv"
    local.write_text("".join(manifest_rows("src-b", [Failed("a b"), Failed("c")])), encoding="utf-8")
    doc: dict[str, Any] = {
        "operation": "copy",
        "source": {"bucket": "src-b", "manifest": {"path": str(local)}},
        "destination": {"bucket": "dst-b"},
    }
    job = parse_job(json.dumps(doc))
    rows = list(ManifestReader(MemoryStore(), job.source).rows())  # read from the disk, not the store
    assert [r.obj.key for r in rows if r.obj is not None] == ["a b", "c"]
    for manifest, field in (({"path": str(local), "bucket": "rep", "key": "k"}, "path"), ({"bucket": "rep"}, "key"), ({}, "bucket")):
        with pytest.raises(JobError, match=rf"job\.source\.manifest\.{field}"):
            parse_job(json.dumps({**doc, "source": {"bucket": "src-b", "manifest": manifest}}))
    allow = AllowList(frozenset({"src-b", "rep"}), frozenset({"dst-b"}), frozenset())
    with pytest.raises(JobError, match=r"job\.source\.manifest\.path: a deployed job reads its manifest from S3"):
        validate(doc, allow)
    retried = {**doc, "source": {"bucket": "src-b", "manifest": {"bucket": "rep2", "key": "jobs/j-retry-1/retry-manifest.csv"}}}
    with pytest.raises(JobError, match=r"job\.source\.manifest\.bucket: 'rep2' is not in this deployment's read allow-list"):
        validate(retried, allow)
    assert validate(retried, AllowList(allow.read, allow.write, allow.delete, reports="rep2"))["job_id"]  # its own report bucket


def test_a_delete_move_or_sync_submitted_from_the_cli_is_held_for_confirmation_unless_it_says_otherwise() -> None:
    def job(op: str, **options: Any) -> Any:
        doc: dict[str, Any] = {"operation": op, "source": {"bucket": "src-b", "prefix": "p/"}, "options": options}
        if op in {"copy", "move"}:
            doc["destination"] = {"bucket": "dst-b"}
        return parse_job(json.dumps(doc))

    assert holds_for_confirmation(job("delete"), yes=False) and holds_for_confirmation(job("move"), yes=False)
    assert holds_for_confirmation(job("copy", delete_extraneous=True), yes=False)
    assert not holds_for_confirmation(job("delete"), yes=True)  # submit --yes
    assert not holds_for_confirmation(job("delete", confirm=False), yes=False)  # the job's own word
    assert not holds_for_confirmation(job("delete", dry_run=True), yes=False)
    assert not holds_for_confirmation(job("copy"), yes=False)
