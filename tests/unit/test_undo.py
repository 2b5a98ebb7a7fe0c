"""s3bulk undo on the fake store: the journal restores exactly what a job replaced, and never what changed since."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from s3bulk.job import JobError, parse_job
from s3bulk.local.engine import Engine
from s3bulk.local.undo import lines_backwards, undo_log
from s3bulk.report.keylog import KeyRecord
from s3bulk.store import Encryption
from s3bulk.testing.memstore import MemoryStore

N = 30


def store() -> MemoryStore:
    s = MemoryStore(page_size=8)
    s.create_bucket("src-b")
    for i in range(N):
        s.put_object("src-b", f"in/{i:03d}", b"x", tags={"owner": f"team-{i % 4}", "n": str(i)} if i % 3 else {})
    return s


def run(s: MemoryStore, log: io.StringIO, operation: str, **fields: Any) -> None:
    job = parse_job(json.dumps({"operation": operation, "source": {"bucket": "src-b", "prefix": "in/"}, **fields}))
    report = Engine(job, s, concurrency=4, key_log=log).run()
    assert report.summary()["failed"] == 0


def as_bytes(log: io.StringIO) -> io.BytesIO:
    return io.BytesIO(log.getvalue().encode())


def tags(s: MemoryStore) -> dict[str, dict[str, str]]:
    return {f"in/{i:03d}": s.get("src-b", f"in/{i:03d}").tags for i in range(N)}


def test_undo_after_a_tag_replace_restores_the_exact_tag_sets_and_skips_an_object_retagged_since() -> None:
    s, log = store(), io.StringIO()
    before = tags(s)
    run(s, log, "tag", tagging={"mode": "replace", "tags": {"owner": "migration"}})
    s.put_tags("src-b", "in/004", {"owner": "someone-else"})  # changed after the job: must survive the undo
    result = undo_log(as_bytes(log), s, concurrency=3)
    assert (result.restored, result.changed_since, result.failed) == (N - 1, 1, 0)
    assert tags(s) == {**before, "in/004": {"owner": "someone-else"}}
    assert result.examples == ['in/004: tags is {"owner": "someone-else"}, not what the job set; left alone']


def test_a_dry_run_counts_and_changes_nothing() -> None:
    s, log = store(), io.StringIO()
    run(s, log, "tag", tagging={"mode": "merge", "tags": {"cost": "1"}})
    after = tags(s)
    result = undo_log(as_bytes(log), s, dry_run=True)
    assert (result.restored, result.changed_since) == (N, 0) and tags(s) == after


def test_two_jobs_in_one_log_are_undone_latest_first_back_to_the_original() -> None:
    s, log = store(), io.StringIO()
    before = tags(s)
    run(s, log, "tag", tagging={"mode": "replace", "tags": {"step": "1"}})
    run(s, log, "tag", tagging={"mode": "remove", "keys": ["step"]})
    result = undo_log(as_bytes(log), s, concurrency=5)
    assert (result.restored, result.changed_since, result.failed) == (2 * N, 0, 0)
    assert tags(s) == before


def test_storage_class_and_legal_hold_changes_are_undone() -> None:
    s, log = store(), io.StringIO()
    run(s, log, "set-storage-class", storage_class="STANDARD_IA")
    run(s, log, "set-legal-hold", legal_hold="ON")
    assert {s.get("src-b", f"in/{i:03d}").storage_class for i in range(N)} == {"STANDARD_IA"}
    result = undo_log(as_bytes(log), s)
    assert (result.restored, result.failed) == (2 * N, 0)
    assert {(s.get("src-b", f"in/{i:03d}").storage_class, s.get("src-b", f"in/{i:03d}").legal_hold) for i in range(N)} == {
        ("STANDARD", "OFF")
    }
    assert tags(s) == tags(store())  # the in-place copy back kept every tag set


def test_a_storage_class_undone_keeps_each_objects_own_kms_key() -> None:
    s, log = store(), io.StringIO()
    s.bucket_encryption["src-b"] = Encryption("AES256")
    own = Encryption("aws:kms", "arn:aws:kms:eu-west-1:111122223333:key/undo-key")
    s.put_object("src-b", "in/007", b"x", encryption=own)
    run(s, log, "set-storage-class", storage_class="GLACIER_IR")
    assert undo_log(as_bytes(log), s).restored == N
    assert (s.get("src-b", "in/007").storage_class, s.get("src-b", "in/007").encryption) == ("STANDARD", own)


@given(st.lists(st.text(alphabet="ab\n", max_size=7), max_size=12), st.integers(min_value=1, max_value=9))
def test_lines_are_read_last_first_whatever_the_block_size(chunks: list[str], block: int) -> None:
    text = "".join(chunks)
    expected = [line for line in text.split("\n") if line.strip()][::-1]
    assert list(lines_backwards(io.BytesIO(text.encode()), block=block)) == expected


@pytest.mark.parametrize("outcome", ["skipped", "failed"])
def test_lines_that_changed_nothing_are_not_undone(outcome: str) -> None:
    line = {"key": "in/000", "outcome": outcome, "undo": {"bucket": "src-b", "what": "tags", "before": {}, "after": {"a": "b"}}}
    s = store()
    s.put_tags("src-b", "in/000", {"a": "b"})
    result = undo_log(io.BytesIO((json.dumps(line) + "\n").encode()), s)
    assert result.restored == 0 and s.get("src-b", "in/000").tags == {"a": "b"}


def test_a_line_cut_off_by_a_killed_run_is_skipped_and_counted_and_the_rest_is_undone() -> None:
    s, log = store(), io.StringIO()
    before = tags(s)
    run(s, log, "tag", tagging={"mode": "replace", "tags": {"owner": "migration"}})
    text = log.getvalue()
    cut = text + text.splitlines()[0][:37]  # a run killed mid-write leaves half a line at the end
    result = undo_log(io.BytesIO(("not json\n" + cut).encode()), s)
    assert (result.restored, result.unreadable, result.failed) == (N, 2, 0)
    assert tags(s) == before


def test_governance_retention_is_undone_back_to_none_or_to_the_earlier_date() -> None:
    from datetime import UTC, datetime

    s, log = store(), io.StringIO()
    earlier, later = datetime(2030, 1, 1, tzinfo=UTC), datetime(2032, 1, 1, tzinfo=UTC)
    s.put_retention("src-b", "in/001", "GOVERNANCE", earlier)
    run(s, log, "set-retention", retention={"mode": "GOVERNANCE", "until": "2031-06-01T00:00:00Z"})
    s.put_retention("src-b", "in/003", "GOVERNANCE", later)  # extended since the job: left alone
    result = undo_log(as_bytes(log), s)
    assert (result.restored, result.changed_since, result.failed) == (N - 1, 1, 0)
    assert s.get("src-b", "in/001").retention == ("GOVERNANCE", earlier)
    assert s.get("src-b", "in/003").retention == ("GOVERNANCE", later)
    assert {s.get("src-b", f"in/{i:03d}").retention for i in range(N) if i not in (1, 3)} == {None}


def test_compliance_retention_cannot_be_undone_and_each_key_says_so() -> None:
    s, log = store(), io.StringIO()
    run(s, log, "set-retention", retention={"mode": "COMPLIANCE", "until": "2031-06-01T00:00:00Z"})
    result = undo_log(as_bytes(log), s)
    assert (result.restored, result.failed) == (0, N)
    assert all("AccessDenied" in e for e in result.examples)
    assert {s.get("src-b", f"in/{i:03d}").retention[0] for i in range(N)} == {"COMPLIANCE"}  # type: ignore[index]


def test_an_acl_change_is_undone_back_to_the_grants_it_replaced_and_a_regranted_object_is_left_alone() -> None:
    s, log = store(), io.StringIO()
    s.put_acl("src-b", "in/002", "authenticated-read")
    run(s, log, "set-acl", acl="public-read")
    assert {s.get("src-b", f"in/{i:03d}").acl for i in range(N)} == {"public-read"}
    s.put_acl("src-b", "in/005", "public-read-write")  # changed since the job: must survive the undo
    result = undo_log(as_bytes(log), s)
    assert (result.restored, result.changed_since, result.failed) == (N - 1, 1, 0)
    grants = {f"in/{i:03d}": [g["Permission"] for g in s.get_acl("src-b", f"in/{i:03d}")["Grants"]] for i in range(N)}
    assert grants["in/002"] == ["FULL_CONTROL", "READ"]  # authenticated-read again (owner, and the group's READ)
    assert grants["in/005"] == ["FULL_CONTROL", "READ", "WRITE"]
    assert {k: v for k, v in grants.items() if k not in ("in/002", "in/005")} == {
        f"in/{i:03d}": ["FULL_CONTROL"] for i in range(N) if i not in (2, 5)
    }  # private, as they were


def test_an_acl_is_written_back_as_grant_headers_that_name_every_grantee() -> None:
    from s3bulk.s3.params import grant_headers

    owner = "a" * 64
    policy = {
        "Owner": {"ID": owner},
        "Grants": [
            {"Grantee": {"ID": owner, "Type": "CanonicalUser"}, "Permission": "FULL_CONTROL"},
            {"Grantee": {"URI": "http://acs.amazonaws.com/groups/global/AllUsers", "Type": "Group"}, "Permission": "READ"},
            {"Grantee": {"EmailAddress": "ops@example.com", "Type": "AmazonCustomerByEmail"}, "Permission": "READ"},
            {"Grantee": {"ID": "b" * 64, "Type": "CanonicalUser"}, "Permission": "WRITE_ACP"},
        ],
    }
    assert grant_headers(policy) == {
        "GrantFullControl": f'id="{owner}"',
        "GrantRead": 'uri="http://acs.amazonaws.com/groups/global/AllUsers", emailAddress="ops@example.com"',
        "GrantWriteACP": f'id="{"b" * 64}"',
    }
    assert grant_headers({"Grants": [{"Grantee": {"Type": "Odd"}, "Permission": "READ"}]}) == {}  # then the policy is sent whole


@pytest.mark.parametrize(
    "text",
    [
        "just some notes\nabout a job\n",
        json.dumps({"job_id": "j1", "status": "succeeded", "summary": {"succeeded": 30}}) + "\n",  # a report on one line
        json.dumps({"job_id": "j1", "status": "succeeded", "failures": [{"key": "in/000"}]}, indent=2) + "\n",  # or pretty
        '{"key": "in/000"}\n',  # a key without an outcome: not a key-log line
    ],
)
def test_a_file_that_is_not_a_key_log_is_refused_naming_it_and_nothing_is_undone(tmp_path: Path, text: str) -> None:
    s, log = store(), io.StringIO()
    run(s, log, "tag", tagging={"mode": "replace", "tags": {"owner": "migration"}})
    after = tags(s)
    path = tmp_path / "report.json"
    path.write_text(text)
    with path.open("rb") as f, pytest.raises(JobError) as info:
        undo_log(f, s)
    assert str(info.value) == (
        f'{path}: not a key log (no line has the "key" and "outcome" fields of one); pass the file written by s3bulk run --key-log'
    )
    assert tags(s) == after


def test_a_binary_file_is_refused_as_not_a_key_log_rather_than_crashing() -> None:
    with pytest.raises(JobError, match=r"^LOG: not a key log"):
        undo_log(io.BytesIO(b"\x1f\x8b\x08\x00\xff\xfe\n\x80\x81"), store())


def test_an_empty_log_has_nothing_to_undo_and_is_not_an_error() -> None:
    result = undo_log(io.BytesIO(b""), store())
    assert (result.restored, result.changed_since, result.failed, result.unreadable, result.records) == (0, 0, 0, 0, 0)


def test_a_key_log_without_undo_entries_has_nothing_to_undo_and_counts_no_line_unreadable() -> None:
    lines = [KeyRecord(f"in/{i:03d}", "succeeded", 1, dst_key=f"out/{i:03d}").line("j1", "copy") for i in range(3)]
    result = undo_log(io.BytesIO(("not json\n" + "".join(lines)).encode()), store())
    assert (result.restored, result.failed, result.records, result.unreadable) == (0, 0, 3, 1)


def test_the_cli_undo_of_a_file_that_is_not_a_key_log_exits_2_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from s3bulk.cli import main

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    path = tmp_path / "notes.txt"
    path.write_text("not a key log\n")
    # An endpoint nothing listens on: a request would fail differently, and slowly.
    assert main(["undo", str(path), "--endpoint-url", "http://127.0.0.1:9", "--region", "eu-west-1"]) == 2
    captured = capsys.readouterr()
    assert (
        captured.err.strip()
        == f'error: {path}: not a key log (no line has the "key" and "outcome" fields of one); pass the file written by s3bulk run --key-log'
    )
    assert captured.out == ""
