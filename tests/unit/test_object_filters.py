"""source.tags and source.content_type on the fake store: what matches, which calls each object costs, and how the
objects left out are counted (skipped, the key log saying why), through the engine as a run makes them."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from s3bulk.job import MiB, parse_job
from s3bulk.local.engine import Engine
from s3bulk.local.plan import make_plan
from s3bulk.ops import batch
from s3bulk.ops.batch import BatchRunner
from s3bulk.ops.executor import BoundedExecutor
from s3bulk.ops.filters import tags_match, type_matches
from s3bulk.ops.items import Item
from s3bulk.report import Tally
from s3bulk.store import ObjectInfo, StoreError
from s3bulk.testing.memstore import MemoryStore

N = 60  # in/000..059: i % 3 == 0 team=data image/png; 1 team=ops text/plain with a charset; 2 no tags IMAGE/JPEG
DATA = [f"in/{i:03d}" for i in range(N) if i % 3 == 0]
IMAGES = [f"in/{i:03d}" for i in range(N) if i % 3 != 1]


def job(operation: str = "copy", options: dict[str, Any] | None = None, **source: Any) -> Any:
    doc: dict[str, Any] = {"operation": operation, "source": {"bucket": "src-b", "prefix": "in/", **source}, "options": options or {}}
    if operation in {"copy", "move"}:
        doc["destination"] = {"bucket": "dst-b", "prefix": "out/"}
    if operation == "tag":
        doc["tagging"] = {"mode": "merge", "tags": {"seen": "yes"}}
    return parse_job(json.dumps(doc))


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore(page_size=25)
    for b in ("src-b", "dst-b"):
        s.create_bucket(b)
    for i in range(N):
        kind = i % 3
        s.put_object(
            "src-b",
            f"in/{i:03d}",
            f"body {i}".encode(),
            tags=({"team": "data", "env": "prod"}, {"team": "ops"}, {})[kind],
            content_type=("image/png", "text/plain; charset=utf-8", "IMAGE/JPEG")[kind],
        )
    s.put_object("src-b", "elsewhere", b"not selected", tags={"team": "data"})
    return s


def run(store: MemoryStore, j: Any) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    out = io.StringIO()
    report = Engine(j, store, concurrency=8, key_log=out).run()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    return report.summary(), {line["key"]: line for line in lines}


@pytest.mark.parametrize(
    ("content_type", "patterns", "expected"),
    [
        ("image/png", ("image/png",), True),
        ("image/png", ("image/*",), True),
        ("IMAGE/PNG", ("image/png",), True),  # MIME types compare case-insensitively
        ("text/html; charset=utf-8", ("text/html",), True),  # parameters are not part of the match
        ("text/html;charset=utf-8", ("text/*",), True),
        ("image/png", ("image/jpeg",), False),
        ("imagery/png", ("image/*",), False),  # a family is the whole type, not a prefix of it
        ("image/pngx", ("image/png",), False),
        ("application/octet-stream", ("image/*", "video/*"), False),
        ("video/mp4", ("image/*", "video/*"), True),
        (None, ("image/*",), False),  # no Content-Type at all matches nothing
        ("", ("image/*",), False),
    ],
)
def test_content_type_matches_a_type_or_its_family_case_insensitively_without_parameters(
    content_type: str | None, patterns: tuple[str, ...], expected: bool
) -> None:
    assert type_matches(content_type, patterns) is expected


@pytest.mark.parametrize(
    ("tags", "wanted", "expected"),
    [
        ({"team": "data", "env": "prod"}, {"team": "data"}, True),
        ({"team": "data"}, {"team": "data", "env": "prod"}, False),  # every given tag must be there
        ({"team": "Data"}, {"team": "data"}, False),  # values are case-sensitive, as S3's
        ({"Team": "data"}, {"team": "data"}, False),  # and so are keys
        ({"team": "anything"}, {"team": "*"}, True),  # "*": the tag with any value
        ({"team": ""}, {"team": "*"}, True),
        ({}, {"team": "*"}, False),
        ({"team": ""}, {"team": ""}, True),  # an empty value is a value
    ],
)
def test_tags_match_only_every_given_key_with_exactly_its_value(tags: dict[str, str], wanted: dict[str, str], expected: bool) -> None:
    assert tags_match(tags, wanted) is expected


def test_a_copy_filtered_by_tags_copies_only_matches_with_one_tagging_read_per_object_and_no_head(store: MemoryStore) -> None:
    s, lines = run(store, job(tags={"team": "data"}))
    assert (s["listed"], s["succeeded"], s["skipped"], s["failed"]) == (N, len(DATA), N - len(DATA), 0)
    assert store.keys("dst-b") == [k.replace("in/", "out/") for k in DATA]
    assert s["bytes"] == sum(len(f"body {int(k[3:])}") for k in DATA)
    assert store.calls["GetObjectTagging"] == N
    assert store.calls["CopyObject"] == len(DATA)
    assert "HeadObject" not in store.calls
    assert lines["in/001"]["outcome"] == "skipped" and lines["in/001"]["result"] == "filtered out: tag 'team' is 'ops'"
    assert lines["in/002"]["result"] == "filtered out: tag 'team' is absent"
    assert lines["in/000"]["outcome"] == "succeeded"


def test_a_copy_filtered_by_content_type_costs_one_head_per_object_and_no_tagging_read(store: MemoryStore) -> None:
    s, lines = run(store, job(content_type="image/*"))
    assert (s["succeeded"], s["skipped"], s["failed"]) == (len(IMAGES), N - len(IMAGES), 0)
    assert store.keys("dst-b") == [k.replace("in/", "out/") for k in IMAGES]
    assert store.calls["HeadObject"] == N
    assert "GetObjectTagging" not in store.calls
    assert lines["in/001"]["result"] == "filtered out: content type text/plain"


def test_with_both_filters_an_object_the_tags_leave_out_costs_no_head(store: MemoryStore) -> None:
    s, _ = run(store, job(tags={"team": "*"}, content_type="image/png"))
    with_team = [k for i, k in enumerate(f"in/{i:03d}" for i in range(N)) if i % 3 != 2]
    assert s["succeeded"] == len(DATA) and s["skipped"] == N - len(DATA)
    assert store.calls["GetObjectTagging"] == N
    assert store.calls["HeadObject"] == len(with_team)  # only the objects that carry a team tag were HEADed


def test_a_multipart_copy_reuses_the_filters_head_and_reads_it_before_the_tags(store: MemoryStore) -> None:
    for name, ctype in (("big-a", "video/mp4"), ("big-b", "image/gif"), ("big-c", "video/webm")):
        store.put_object("src-b", f"in/{name}", b"v" * (6 * MiB), content_type=ctype, tags={"team": "data"})
    options = {"multipart_threshold": 5 * MiB, "part_size": 5 * MiB}
    s, _ = run(store, job(options=options, prefix="in/big", raw_prefix=True, content_type="video/*", tags={"team": "data"}))
    assert (s["succeeded"], s["skipped"]) == (2, 1)
    assert store.keys("dst-b") == ["out/-a", "out/-c"]  # destination keys are relative to the prefix "in/big"
    assert store.get_body("dst-b", "out/-a") == b"v" * (6 * MiB)
    assert store.get("dst-b", "out/-a").content_type == "video/mp4"
    # One HEAD per object, the filter's, which the multipart copy uses, and one of each copy, which confirms it (its
    # multipart ETag cannot be compared with the source's: ops/identity.py); the image's tags are never read by the
    # filter (its HEAD left it out first), so each copied object's tags are read twice: the filter's and the copy's.
    assert store.calls["HeadObject"] == 3 + 2
    assert store.calls["GetObjectTagging"] == 2 + 2


def test_a_delete_filtered_by_tags_deletes_only_matches_in_one_request_per_batch(store: MemoryStore) -> None:
    s, lines = run(store, job("delete", options={"batch_size": 1000}, tags={"team": "data", "env": "prod"}))
    assert (s["succeeded"], s["skipped"], s["failed"]) == (len(DATA), N - len(DATA), 0)
    assert set(store.keys("src-b")) == {f"in/{i:03d}" for i in range(N)} - set(DATA) | {"elsewhere"}
    assert store.calls["DeleteObjects"] == 1
    assert lines["in/003"]["outcome"] == "succeeded" and lines["in/004"]["outcome"] == "skipped"


def test_a_delete_filtered_by_content_type_leaves_every_other_object_untouched(store: MemoryStore) -> None:
    s, _ = run(store, job("delete", options={"batch_size": 7}, content_type="text/plain"))
    texts = [f"in/{i:03d}" for i in range(N) if i % 3 == 1]
    assert (s["succeeded"], s["skipped"]) == (len(texts), N - len(texts))
    assert not set(texts) & set(store.keys("src-b"))
    assert all(store.get("src-b", k).tags == {"team": "data", "env": "prod"} for k in DATA)
    assert store.calls["DeleteObjects"] <= -(-N // 7)  # one per batch that had a match, never one per object
    assert "DeleteObject" not in store.calls


def test_a_move_filtered_by_tags_moves_only_matches_and_keeps_the_others_sources(store: MemoryStore) -> None:
    s, _ = run(store, job("move", tags={"team": "ops"}))
    ops = [f"in/{i:03d}" for i in range(N) if i % 3 == 1]
    assert (s["succeeded"], s["skipped"]) == (len(ops), N - len(ops))
    assert store.keys("dst-b") == [k.replace("in/", "out/") for k in ops]
    assert not set(ops) & set(store.keys("src-b")) and set(DATA) <= set(store.keys("src-b"))


def test_a_denied_tagging_read_fails_that_object_by_key_and_code_and_never_skips_it(store: MemoryStore) -> None:
    def deny(op: str, bucket: str, key: str) -> StoreError | None:
        return StoreError("AccessDenied", "denied", 403) if op == "GetObjectTagging" and key == "in/003" else None

    store.faults.append(deny)
    out = io.StringIO()
    report = Engine(job("delete", tags={"team": "data"}), store, concurrency=4, key_log=out).run()
    s = report.summary()
    assert (s["status"], s["succeeded"], s["failed"], s["skipped"]) == ("failed", len(DATA) - 1, 1, N - len(DATA))
    assert [(f["key"], f["error"]) for f in report.tally.failures()] == [("in/003", "AccessDenied")]
    assert "in/003" in store.keys("src-b")  # a failed judgement deletes nothing
    assert store.calls["GetObjectTagging"] == N  # a permanent error is not retried


def test_a_throttled_filter_read_is_retried_in_rounds_and_the_object_then_acted_on(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batch, "ROUND_PAUSE", 0.0)
    throttled: list[str] = []

    def once(op: str, bucket: str, key: str) -> StoreError | None:
        if op == "HeadObject" and key == "in/000" and not throttled:
            throttled.append(key)
            return StoreError("SlowDown", "slow down", 503)
        return None

    store.faults.append(once)
    report = Engine(job(content_type="image/png"), store, concurrency=4).run()
    s = report.summary()
    assert (s["succeeded"], s["failed"], s["object_retries"]) == (len(DATA), 0, 1)
    assert "out/000" in store.keys("dst-b")


def test_a_tag_operation_with_a_filter_changes_only_matching_objects(store: MemoryStore) -> None:
    s, _ = run(store, job("tag", tags={"team": "data"}))
    assert (s["succeeded"], s["skipped"]) == (len(DATA), N - len(DATA))
    assert all(store.get("src-b", k).tags.get("seen") == "yes" for k in DATA)
    assert not any("seen" in store.get("src-b", f"in/{i:03d}").tags for i in range(N) if i % 3)


def test_a_filter_works_with_the_listing_filters(store: MemoryStore) -> None:
    s, _ = run(store, job(tags={"team": "data"}, include=["00*"]))
    assert s["listed"] == 10 and s["succeeded"] == 4  # in/000, 003, 006, 009
    assert store.calls["GetObjectTagging"] == 10  # objects the listing's own filters leave out cost nothing


def test_a_manifest_row_is_filtered_with_one_head_that_also_gives_the_copy_its_size(store: MemoryStore, tmp_path: Path) -> None:
    rows = [f"in/{i:03d}" for i in range(12)]
    manifest = tmp_path / "rows.csv"
    manifest.write_text("".join(f"src-b,{k}\n" for k in rows))
    s, lines = run(store, job(manifest={"path": str(manifest)}, content_type="image/*"))
    matched = [k for k in rows if int(k[3:]) % 3 != 1]
    assert (s["succeeded"], s["skipped"]) == (len(matched), len(rows) - len(matched))
    assert store.keys("dst-b") == [k.replace("in/", "out/") for k in matched]
    assert store.calls["HeadObject"] == len(rows)  # the filter's HEAD is the one the row's size comes from: not two
    assert s["bytes"] == sum(len(f"body {int(k[3:])}") for k in matched)
    assert lines["in/000"]["size"] == len(b"body 0")


def test_a_dry_run_makes_no_filter_call(store: MemoryStore) -> None:
    s, _ = run(store, job(options={"dry_run": True}, tags={"team": "data"}))
    assert s["would_process"] == N
    assert "GetObjectTagging" not in store.calls and "HeadObject" not in store.calls


def test_plan_prices_each_filter_read_per_listed_object_and_says_the_count_is_an_upper_bound(store: MemoryStore) -> None:
    plan = make_plan(job(tags={"team": "data"}, content_type="image/*"), store)
    assert plan.objects == N  # an upper bound: which objects match is known only by reading each
    assert plan.filter_requests == {"GetObjectTagging": N, "HeadObject": N}
    assert plan.requests["GetObjectTagging"] == N and plan.requests["HeadObject"] == N
    assert plan.requests["CopyObject"] == N
    assert "GetObjectTagging" not in store.calls and "HeadObject" not in store.calls


def test_plan_does_not_price_a_second_head_where_the_operation_heads_the_object_anyway(store: MemoryStore) -> None:
    store.put_object("src-b", "big/a", b"v" * (6 * MiB), content_type="video/mp4")
    options = {"multipart_threshold": 5 * MiB, "part_size": 5 * MiB}
    plan = make_plan(job(options=options, prefix="big/", content_type="video/*"), store)
    assert plan.filter_requests == {}  # the multipart copy's own HEAD is the filter's
    assert plan.requests["HeadObject"] == 2  # and the copy's, which confirms it (ops/identity.py)
    run(store, job(options=options, prefix="big/", content_type="video/*"))
    assert store.calls["HeadObject"] == plan.requests["HeadObject"]


def versioned_delete_batch(store: MemoryStore) -> list[Item]:
    """A versioned key in/v: an old version tagged purge=yes, a current one without, then a delete marker; as a batch
    message hands them to the stack's worker (which is not told which entry is a marker)."""
    store.enable_versioning("src-b")
    store.put_object("src-b", "in/v", b"old", tags={"purge": "yes"})
    store.put_object("src-b", "in/v", b"new", tags={})
    store.delete_object("src-b", "in/v")
    page = store.list_versions_page("src-b", "in/v")
    return [Item(ObjectInfo(o.key, o.size, o.etag, version_id=o.version_id)) for o in page.objects]


def test_a_batch_judges_each_version_by_its_own_tags_and_leaves_a_delete_marker_out(store: MemoryStore) -> None:
    batch = versioned_delete_batch(store)
    assert len(batch) == 3
    tally = Tally()
    with BoundedExecutor(2) as parts, BoundedExecutor(4) as pool:
        run = BatchRunner(job("delete", versions="all", tags={"purge": "yes"}), store, pool, parts, hands_on=True).start(batch, tally)
        assert run.wait(5) and run.complete
    assert (tally.succeeded, tally.skipped, tally.failed) == (1, 2, 0)
    assert [body for _, body in store.versions("src-b", "in/v")] == [b"new", None]  # the tagged old version alone is gone


def test_an_object_gone_since_it_was_listed_is_left_to_its_operation(store: MemoryStore) -> None:
    batch = [Item(o) for o in store.list_page("src-b", "in/").objects[:3]]
    store.delete_object("src-b", "in/000")  # deleted by someone else after the listing
    tally = Tally()
    with BoundedExecutor(2) as parts, BoundedExecutor(4) as pool:
        run = BatchRunner(job("delete", tags={"team": "data"}), store, pool, parts).start(batch, tally)
        assert run.wait(5) and run.complete
    # in/000: gone, so the delete (which S3 answers as done) counts it as an unfiltered delete would; 001, 002: no match
    assert (tally.succeeded, tally.skipped, tally.failed) == (1, 2, 0)
    assert "in/001" in store.keys("src-b")
