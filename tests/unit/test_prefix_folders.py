"""A prefix is a folder unless the job says otherwise: `logs` under `backup/` once mapped `logs/a` to `backup//a`,
pulled in `logs-old/`, and a sync deleted the backup's real `backup/a` as extraneous (issue 50, case 1)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from s3bulk.job import JobError, parse_job
from s3bulk.local.plan import make_plan
from s3bulk.source.selection import key_mapper
from s3bulk.testing.memstore import MemoryStore


def copy(src: dict[str, Any], dst: dict[str, Any], **options: Any) -> str:
    return json.dumps(
        {"operation": "copy", "source": {"bucket": "src-b", **src}, "destination": {"bucket": "dst-b", **dst}, "options": options}
    )


def refusal(text: str) -> str:
    with pytest.raises(JobError) as info:
        parse_job(text)
    return str(info.value)


def test_a_source_prefix_without_its_slash_is_refused_in_one_line_naming_both_fixes() -> None:
    msg = refusal(copy({"prefix": "logs"}, {"prefix": "backup/"}))
    assert msg.startswith("job.source.prefix:") and "\n" not in msg
    assert "'logs/'" in msg and "source.raw_prefix: true" in msg


def test_a_destination_prefix_without_its_slash_is_refused_in_one_line_naming_both_fixes() -> None:
    msg = refusal(copy({"prefix": "logs/"}, {"prefix": "backup"}))
    assert msg.startswith("job.destination.prefix:") and "\n" not in msg
    assert "'backup/'" in msg and "destination.raw_prefix: true" in msg


@pytest.mark.parametrize("operation", ["delete", "tag", "set-storage-class"])
def test_an_in_place_operation_refuses_a_slashless_prefix_too(operation: str) -> None:
    doc = {"operation": operation, "source": {"bucket": "src-b", "prefix": "logs"}}
    assert refusal(json.dumps(doc)).startswith("job.source.prefix:")


def test_raw_prefix_says_the_string_is_meant_and_selects_every_key_starting_with_it() -> None:
    job = parse_job(copy({"prefix": "logs", "raw_prefix": True}, {"prefix": "backup-", "raw_prefix": True}))
    mapper = key_mapper(job)
    assert mapper is not None
    assert mapper("logs/000001.dat") == "backup-/000001.dat"
    assert mapper("logs2024.txt") == "backup-2024.txt"


def test_an_empty_prefix_and_a_folder_need_no_raw_prefix() -> None:
    job = parse_job(copy({"prefix": ""}, {"prefix": "backup/"}))
    assert (job.source.prefix, job.destination is not None and job.destination.prefix) == ("", "backup/")


def test_a_stored_job_of_an_earlier_release_still_reads_so_its_resume_runs_as_it_started() -> None:
    job = parse_job(json.dumps({"operation": "delete", "source": {"bucket": "src-b", "prefix": "logs"}}), stored=True)
    assert job.source.prefix == "logs" and not job.source.raw_prefix


_SEGMENT = st.text(alphabet="ab-./%+ é", min_size=1, max_size=6).filter(lambda s: "//" not in s and not s.startswith("/"))


@given(
    src=st.lists(_SEGMENT, min_size=0, max_size=2),
    dst=st.lists(_SEGMENT, min_size=0, max_size=2),
    rel=st.lists(_SEGMENT, min_size=1, max_size=3),
)
def test_a_mapped_key_gains_no_double_slash_its_source_key_lacks(src: list[str], dst: list[str], rel: list[str]) -> None:
    """With folder prefixes, `//` reaches a destination key only from its source key."""
    src_prefix = "".join(s.rstrip("/") + "/" for s in src)
    dst_prefix = "".join(s.rstrip("/") + "/" for s in dst)
    key = src_prefix + "/".join(r.strip("/") or "x" for r in rel)
    mapper = key_mapper(parse_job(copy({"prefix": src_prefix}, {"prefix": dst_prefix})))
    assert mapper is not None
    relative = key[len(src_prefix) :]
    assert mapper(key) == dst_prefix + relative
    assert mapper(key).count("//") == relative.count("//")  # none at the join, none from the prefixes


def test_the_plan_names_the_first_source_to_destination_keys_before_anything_is_written() -> None:
    store = MemoryStore()
    for b in ("src-b", "dst-b"):
        store.create_bucket(b)
    for i in range(8):
        store.put_object("src-b", f"logs/{i:06d}.dat", b"x")
    plan = make_plan(parse_job(copy({"prefix": "logs/"}, {"prefix": "backup/"})), store)
    assert plan.mappings == [(f"logs/{i:06d}.dat", f"backup/{i:06d}.dat") for i in range(5)]
    assert store.keys("dst-b") == []
