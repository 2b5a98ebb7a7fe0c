"""Versions on the in-memory store: whole-key pages, history copies, plans and the job rules."""

from __future__ import annotations

import json
from typing import Any

import pytest

from s3bulk.job import JobError, parse_job
from s3bulk.local.engine import Engine
from s3bulk.local.plan import make_plan
from s3bulk.ops.copies import CopySettings
from s3bulk.ops.executor import BoundedExecutor
from s3bulk.ops.versions import copy_history
from s3bulk.source.listing import VersionsView, iter_objects
from s3bulk.source.shards import iter_objects_parallel
from s3bulk.store import StoreError
from s3bulk.testing.memstore import MemoryStore

SETTINGS = CopySettings(64 * 1024 * 1024, 8 * 1024 * 1024)


def versioned(histories: dict[str, str], page_size: int = 1000) -> MemoryStore:
    """A versioned bucket "src-b" (and "dst-b"), each key's history written event by event: p a PUT, d a delete marker."""
    store = MemoryStore(page_size=page_size)
    for bucket in ("src-b", "dst-b"):
        store.create_bucket(bucket)
        store.enable_versioning(bucket)
    for key, events in histories.items():
        for n, event in enumerate(events):
            if event == "p":
                store.put_object("src-b", key, f"{key}#{n}".encode())
            else:
                store.delete_object("src-b", key)
    return store


def bodies(store: MemoryStore, bucket: str, key: str) -> list[str]:
    return [b.decode() if b is not None else "-" for _, b in store.versions(bucket, key)]


def test_every_versions_page_ends_between_keys_even_when_one_key_outgrows_a_page() -> None:
    histories = {"a": "pp", "b": "p" * 12, "c": "pdp", "d": "p"}
    store = versioned(histories, page_size=5)
    view = VersionsView(store)
    page, token, pages = None, None, []
    while page is None or token is not None:
        page = view.list_page("src-b", "", token=token)
        pages.append([o.key for o in page.objects])
        token = page.next_token
    assert all(p and (i == len(pages) - 1 or p[-1] not in pages[i + 1]) for i, p in enumerate(pages))
    assert ["b"] * 12 in pages  # one key, read whole
    listed = [(o.key, o.delete_marker) for o in iter_objects(view, "src-b", "")]
    assert listed == [(k, e == "d") for k, events in histories.items() for e in reversed(events)]
    assert [(o.key, o.version_id) for o in iter_objects_parallel(view, "src-b", "", 4)] == [
        (o.key, o.version_id) for o in iter_objects(view, "src-b", "")
    ]


def test_a_history_copy_appends_only_what_the_destination_lacks_and_refuses_a_diverged_one() -> None:
    store = versioned({"k": "ppdp"})
    with BoundedExecutor(2, 4) as parts:
        first = copy_history(store, store, parts, "src-b", "k", "dst-b", "c/k", SETTINGS)
        again = copy_history(store, store, parts, "src-b", "k", "dst-b", "c/k", SETTINGS)
        store.put_object("src-b", "k", b"newer")
        more = copy_history(store, store, parts, "src-b", "k", "dst-b", "c/k", SETTINGS)
        store.put_object("dst-b", "c/k", b"someone else's")
        with pytest.raises(StoreError) as diverged:
            copy_history(store, store, parts, "src-b", "k", "dst-b", "c/k", SETTINGS)
    assert (first.versions, first.copied, again.copied, more.copied) == (4, 4, 0, 1)
    assert bodies(store, "dst-b", "c/k")[:5] == ["k#0", "k#1", "-", "k#3", "newer"]
    assert diverged.value.code == "VersionHistoryDiffers" and "version 6 of s3://dst-b/c/k" in diverged.value.message


def job(doc: dict[str, Any]) -> Any:
    return parse_job(json.dumps(doc))


def test_a_copy_of_all_versions_through_the_engine_copies_each_keys_history_once() -> None:
    store = versioned({"in/a": "ppp", "in/b": "pd", "in/c": "d", "other": "p"})
    j = job({"operation": "copy", "source": {"bucket": "src-b", "prefix": "in/", "versions": "all"}, "destination": {"bucket": "dst-b"}})
    s = Engine(j, store, concurrency=4).run().summary()
    assert (s["scanned"], s["listed"], s["succeeded"], s["failed"]) == (6, 3, 3, 0)
    # destination key = destination.prefix ("") + the key without source.prefix
    assert [bodies(store, "dst-b", k) for k in ("a", "b", "c")] == [["in/a#0", "in/a#1", "in/a#2"], ["in/b#0", "-"], ["-"]]
    assert store.versions("dst-b", "other") == [] and store.versions("dst-b", "in/a") == []


def test_the_plan_counts_versions_and_the_calls_a_copy_of_histories_makes() -> None:
    store = versioned({"in/a": "ppp", "in/b": "pd"})
    delete = make_plan(job({"operation": "delete", "source": {"bucket": "src-b", "prefix": "in/", "versions": "all"}}), store)
    assert (delete.objects, delete.requests["ListObjectVersions"], delete.requests["DeleteObjects"]) == (5, 1, 1)
    noncurrent = make_plan(job({"operation": "delete", "source": {"bucket": "src-b", "prefix": "in/", "versions": "noncurrent"}}), store)
    assert noncurrent.objects == 3
    copy = make_plan(
        job({"operation": "copy", "source": {"bucket": "src-b", "prefix": "in/", "versions": "all"}, "destination": {"bucket": "dst-b"}}),
        store,
    )
    assert (copy.objects, copy.requests["ListObjectVersions"], copy.requests["CopyObject"]) == (2, 1 + 4, 5)
    assert copy.requests["GetBucketVersioning"] == 1
    assert store.versions("dst-b", "in/a") == []  # a plan changes nothing


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            {"operation": "verify", "source": {"bucket": "src-b", "versions": "all"}, "destination": {"bucket": "dst-b"}},
            r'^job\.source\.versions: versions "all" works with .*, not \'verify\'; use "current"$',
        ),
        (
            {"operation": "copy", "source": {"bucket": "src-b", "versions": "noncurrent"}, "destination": {"bucket": "dst-b"}},
            r"^job\.source\.versions: versions \"noncurrent\" works with .*, not 'copy'",
        ),
        (
            {
                "operation": "delete",
                "source": {"bucket": "src-b", "all": True, "versions": "all", "manifest": {"bucket": "m-b", "key": "m"}},
            },
            r"^job\.source\.versions: a manifest names its own versions",
        ),
        (
            {
                "operation": "copy",
                "source": {"bucket": "src-b", "versions": "all"},
                "destination": {"bucket": "dst-b"},
                "options": {"if_exists": "skip"},
            },
            r"^job\.options\.if_exists: a copy of all versions compares",
        ),
    ],
)
def test_versions_the_operation_cannot_use_are_refused_naming_the_field(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(JobError, match=message):
        job(doc)


def test_a_queue_message_carries_each_objects_version_id_and_storage_class() -> None:
    from s3bulk.aws.messages import BatchMessage, pack
    from s3bulk.store import ObjectInfo

    objs = [
        ObjectInfo("k", 3, '"e"', version_id="v1"),
        ObjectInfo("k", 0, "", version_id="v0", latest=False, delete_marker=True),
        ObjectInfo("g", 5, '"f"', storage_class="GLACIER", version_id="v9"),
        ObjectInfo("plain", 1, '"p"'),
    ]
    [msg] = pack("job", 1, objs, 10)
    back = BatchMessage.model_validate_json(msg.encode()).objects()
    assert [(o.key, o.version_id, o.storage_class) for o in back] == [
        ("k", "v1", None),
        ("k", "v0", None),
        ("g", "v9", "GLACIER"),
        ("plain", "", None),
    ]


def test_undo_of_a_tag_job_on_versions_puts_each_versions_own_tags_back(tmp_path: Any) -> None:
    import io

    from s3bulk.local.undo import undo_log

    store = versioned({"in/a": "pp"})
    [(old, _), (new, _)] = store.versions("src-b", "in/a")
    store.put_tags("src-b", "in/a", {"age": "old"}, version_id=old)
    store.put_tags("src-b", "in/a", {"age": "new"}, version_id=new)
    log = io.StringIO()
    j = job(
        {
            "operation": "tag",
            "source": {"bucket": "src-b", "prefix": "in/", "versions": "all"},
            "tagging": {"mode": "replace", "tags": {"team": "x"}},
        }
    )
    s = Engine(j, store, concurrency=2, key_log=log).run().summary()
    assert s["succeeded"] == 2
    assert [store.get_tags("src-b", "in/a", version_id=v) for v in (old, new)] == [{"team": "x"}] * 2
    result = undo_log(io.BytesIO(log.getvalue().encode()), store)
    assert (result.restored, result.changed_since, result.failed) == (2, 0, 0)
    assert [store.get_tags("src-b", "in/a", version_id=v) for v in (old, new)] == [{"age": "old"}, {"age": "new"}]


@pytest.mark.parametrize("page_size", [2, 3, 4, 7])
def test_a_versions_listing_of_nested_keys_lists_every_version_once_whatever_the_page_size(page_size: int) -> None:
    """Sub-prefixes (CommonPrefixes, with the parallel listing's delimiter) and keys with more versions than a page."""
    histories = {"in/a": "p", "in/b/x": "ppp", "in/b/y": "pd", "in/c": "ppp", "in/k": "pppp", "in/m/x": "p", "in/m/z/q": "pp", "in/n": "d"}
    store = versioned(histories, page_size=page_size)
    want = sorted((o.key, o.version_id) for o in iter_objects(VersionsView(versioned(histories)), "src-b", "in/"))
    assert len(want) == sum(len(h) for h in histories.values())
    for workers in (1, 4):
        got = [(o.key, o.version_id) for o in iter_objects_parallel(VersionsView(store), "src-b", "in/", workers)]
        assert sorted(got) == want and len(got) == len(set(got)), workers
