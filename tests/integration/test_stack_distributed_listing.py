"""Listing past 40 shards: the synthesized state machine's Distributed Map on moto's interpreter, each shard's loop a
child execution of its own (s3bulk/testing/stack/distributed.py gives it its ARN and history, and fails the map when a
child fails, as AWS does), every key listed and acted on exactly once, checked with boto3."""

from __future__ import annotations

import json
from typing import Any

import pytest
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.s3.models import s3_backends

from s3bulk.aws import history
from s3bulk.aws import lister as lister_module
from s3bulk.aws.steps import TimeLeft
from s3bulk.job import JobError
from s3bulk.source.shards import Shard
from s3bulk.testing.stack import StackOnMoto, synthesize
from tests.integration.test_stack_on_moto import DST, ENV, SRC, report

CONTEXT: dict[str, object] = {"read_buckets": f"{SRC},{DST}", "write_buckets": DST, "delete_buckets": SRC, "list_shards": 100}
N = 200_000  # objects of the manifest job; a CSV manifest, so that moto's listing (0.6 s a page at 200,000 keys) stays out
KEEP = 1_000  # objects beside them under the same prefix, in no manifest: never touched


def hex_key(i: int) -> str:
    """Distinct for every i below 2**32 (an odd multiplier is a bijection mod 2**32): keys spread as hashed names do."""
    return f"in/{i * 2654435761 % 2**32:08x}"


def put_direct(keys: list[str], body: bytes = b"x") -> None:
    """Straight into moto's S3 backend: setup, not under test (100x faster than PutObject through boto3)."""
    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    for key in keys:
        backend.put_object(SRC, key, body)


def keys_left(stack: StackOnMoto, prefix: str) -> set[str]:
    return {
        o["Key"] for page in stack.s3.get_paginator("list_objects_v2").paginate(Bucket=SRC, Prefix=prefix) for o in page.get("Contents", ())
    }


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return synthesize(CONTEXT)


def test_the_listing_map_is_distributed_with_each_shard_in_a_standard_child(template: dict[str, Any]) -> None:
    with StackOnMoto(template, buckets=(SRC, DST), env=ENV) as stack:
        for name in ("ListShards", "CountShards"):
            state = stack.definition["States"][name]
            assert state["ItemProcessor"]["ProcessorConfig"] == {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
            assert state["MaxConcurrency"] == 100


def test_a_200000_object_manifest_delete_lists_in_100_shards_on_a_distributed_map_and_deletes_exactly_its_objects(
    template: dict[str, Any],
) -> None:
    selected = [hex_key(i) for i in range(N)]
    kept = {f"in/keep-{i:04d}" for i in range(KEEP)}
    body = "".join(f"{SRC},{k}\n" for k in selected).encode()
    env = {**ENV, "S3BULK_CSV_SHARD_BYTES": str(len(body) // 100)}
    with StackOnMoto(template, buckets=(SRC, DST), env=env) as stack:
        put_direct(selected + sorted(kept))
        stack.s3.put_object(Bucket=SRC, Key="lists/keys.csv", Body=body)
        job = {
            "operation": "delete",
            "source": {"bucket": SRC, "prefix": "in/", "manifest": {"bucket": SRC, "key": "lists/keys.csv", "format": "csv"}},
            "options": {"batch_size": 1000},
        }
        ex = stack.run(job, timeout=900)
        assert ex.status == "SUCCEEDED", f"{ex.status}: {ex.description.get('cause')}\n{stack.describe()}"
        assert len(json.loads(ex.description["output"])["plan"]["shards"]) == 100
        children = [arn for arn in stack.children.parents if "/ListShards:" in arn]
        assert len(children) == 100 and not stack.children.failed  # a child execution per shard, each of its own
        r = report(stack, ex.description.get("output"))
        assert (r["listed"], r["succeeded"], r["failed"]) == (N, N, 0)
        assert keys_left(stack, "in/") == kept  # every listed object deleted, and no other (boto3's own listing)
        # 100 children started together and none was old enough for its history to be near the renewal bound, so no
        # ListShard asked about it (GetExecutionHistory: 400 at once, then 20 a second, per account); CheckProgress asks
        # once a poll.
        asked = stack.limits.sfn_api.calls["GetExecutionHistory"]
        print(f"GetExecutionHistory calls: {asked} for {len(children)} listing children")
        assert asked < len(children) and not stack.limits.sfn_api.throttled


def cut_evenly(monkeypatch: pytest.MonkeyPatch, keys: list[str], k: int) -> None:
    """PlanListing cuts the source into k ranges at known places (a cut between two keys, every third one on a key)
    instead of probing: the planner cuts no finer than several pages a shard, so > 40 shards would take > 400,000 keys,
    where moto lists a page in 0.6 s. Any cuts cover the keys exactly once (tests/unit/test_shard_listing_property.py);
    this is the stack listing them, each range in a child execution."""
    ordered = sorted(keys)
    cuts = [ordered[len(ordered) * i // k] if i % 3 else ordered[len(ordered) * i // k][:-1] + "~" for i in range(1, k)]

    def planned(store: Any, bucket: str, prefix: str, target: int) -> list[Shard]:
        assert target == 100
        return [Shard(after, upto) for after, upto in zip(["", *cuts], [*cuts, None], strict=True)]

    monkeypatch.setattr(lister_module, "plan_ranges", planned)


def test_a_prefix_cut_in_more_than_40_key_ranges_is_counted_then_listed_each_range_in_a_child_that_asks_its_own_history(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    real = history.History.events

    def events(self: history.History, arn: str) -> int:
        asked.append(arn)
        return real(self, arn)

    monkeypatch.setattr(history.History, "events", events)
    monkeypatch.setattr(history, "MAX_EVENTS_PER_S", 1e9)  # every call asks, however young its execution: IAM is checked
    selected = [hex_key(i) for i in range(12_000)]
    cut_evenly(monkeypatch, selected, 60)
    with StackOnMoto(template, buckets=(SRC, DST), env=ENV) as stack:
        put_direct(selected)
        put_direct([f"keep/{i:03d}" for i in range(300)])
        # max_delete: the delete guard counts every shard first, on the CountShards Distributed Map, then lists.
        job = {"operation": "delete", "source": {"bucket": SRC, "prefix": "in/"}, "options": {"batch_size": 500, "max_delete": 12_000}}
        ex = stack.run(job, timeout=600)
        assert ex.status == "SUCCEEDED", f"{ex.status}: {ex.description.get('cause')}\n{stack.describe()}"
        shards = len(json.loads(ex.description["output"])["plan"]["shards"])
        assert shards == 60  # more than an inline Map runs at once
        assert "CountShards" in ex.entered() and len([a for a in stack.children.parents if "/CountShards:" in a]) == 60
        r = report(stack, ex.description.get("output"))
        assert (r["listed"], r["succeeded"], r["failed"]) == (12_000, 12_000, 0)
        assert keys_left(stack, "in/") == set() and len(keys_left(stack, "keep/")) == 300
        # Each ListShard asked about its own child's history (IAM allowed the child's ARN); any other ask was
        # CheckProgress's, about the parent's (it runs only if the completion wait reaches its safety net).
        children = {arn for arn in stack.children.parents if "/ListShards:" in arn}
        assert len(children) == shards and {arn for arn in asked if arn in children} == children
        assert {arn for arn in asked if arn not in children} <= {stack.children.parents[arn] for arn in children}
        assert all(stack.children.histories[arn].get_event_history() for arn in children)


def test_a_shard_that_fails_fails_the_map_and_the_report_names_its_own_error(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """AWS fails a Distributed Map with States.ExceedToleratedFailureThreshold; the child reports its step's error first,
    so the job's report names what went wrong, not the map's threshold."""
    real = lister_module._list_shard

    def one_shard_fails(job_id: str, shard: int, *args: Any) -> Any:
        if shard == 3:
            raise JobError("job.source.manifest: row 7 names bucket 'other', which this deployment may not read")
        return real(job_id, shard, *args)

    monkeypatch.setattr(lister_module, "_list_shard", one_shard_fails)
    keys = [hex_key(i) for i in range(8_000)]
    cut_evenly(monkeypatch, keys, 50)
    with StackOnMoto(template, buckets=(SRC, DST), env=ENV) as stack:
        put_direct(keys)
        ex = stack.run({"operation": "delete", "source": {"bucket": SRC, "prefix": "in/"}, "options": {"batch_size": 500}}, timeout=600)
        assert ex.status == "FAILED", f"{ex.status}\n{stack.describe()}"
        # Its child failed (and any other that called after the job failed: JobHalted), so the map did.
        assert stack.children.failed and all("/ListShards:" in arn for arn in stack.children.failed)
        r = report(stack, ex.description.get("output") or json.dumps({"job_id": stack_job_id(stack)}))
        assert r["status"] == "failed" and "row 7 names bucket 'other'" in str(r.get("error")), r
        assert "ExceedToleratedFailureThreshold" not in str(r.get("error"))


def stack_job_id(stack: StackOnMoto) -> str:
    """The one job the stack's ledger holds."""
    table = next(name for name in stack.names if name.startswith("Ledger") and "." not in name)
    items = stack.ddb.scan(TableName=table, FilterExpression="sk = :j", ExpressionAttributeValues={":j": {"S": "job"}})["Items"]
    [item] = items
    return str(item["pk"]["S"]).removeprefix("job#")


def a_page_a_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each ListShard call lists one page, then finds its time short: a shard of a few pages is a long loop of calls, each
    call 7 events of its child's history.

    On AWS a call lists pages for its 300 s less the 30 s margin, and its own requests before the first page (its
    history's length, the job, its lease, the status, the shard, a step left to redo: six) take well under a second.
    Scaled down by the clock instead (a 4 s Lister, a 3.9 s margin), those requests had to fit in 0.1 s, and on a loaded
    machine they take 0.2 to 0.4 s (1.5 s cold): no call listed a page, and the job never ended. So the call's clock
    reads as the Lambda's own (a 300 s Lister) until the call has listed a page, and as no time left after it."""
    real = lister_module._list_shard

    def one_page(
        job_id: str, shard: int, job: Any, ledger: Any, store: Any, dst: Any, sender: Any, reports: Any, time_left: TimeLeft, *rest: Any
    ) -> Any:
        checks = 0

        def short_after_a_page() -> float:
            nonlocal checks
            checks += 1
            return time_left() if checks == 1 else 0.0

        return real(job_id, shard, job, ledger, store, dst, sender, reports, short_after_a_page, *rest)

    monkeypatch.setattr(lister_module, "PAGES_PER_STEP", 1)  # the page is its own step, sent before the call returns
    monkeypatch.setattr(lister_module, "_list_shard", one_page)


def test_a_shard_whose_child_history_grows_long_goes_on_in_the_jobs_next_execution_and_the_job_ends_exact(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child's history is its own (25,000 events, scaled down here, and enforced: the harness fails a child at it, as
    AWS fails any execution). Its ListShard answers `renew` past RENEW_AT, the child ends, and the job goes on in a new
    execution whose map runs the shard on from its checkpoint; every key deleted once, no child failed."""
    a_page_a_call(monkeypatch)  # a shard of 10 pages (20 keys each) is a loop of 10 calls, 70 events: past RENEW_AT
    keys = [hex_key(i) for i in range(800)]
    cut_evenly(monkeypatch, keys, 4)
    env = {**ENV, "S3BULK_LIST_PAGE_SIZE": "20", "S3BULK_HISTORY_RENEW_AT": "40"}
    with StackOnMoto(template, buckets=(SRC, DST), env=env, history_limit=120) as stack:
        put_direct(keys)
        arn = stack.sfn.start_execution(
            stateMachineArn=stack.state_machine_arn,
            input=json.dumps({"job_id": "long-shards", "operation": "delete", "source": {"bucket": SRC, "prefix": "in/"}}),
            name="long-shards-1",
        )["executionArn"]
        chain = stack.follow_job(arn, "long-shards", timeout=300)
        assert chain[-1].status == "SUCCEEDED", (chain[-1].description, stack.describe())
        assert len(chain) >= 2 and not stack.children.failed and stack.history_failed == []
        paused = [a for a, h in stack.children.histories.items() if "ShardListedPaused" in json.dumps(h.get_event_history(), default=str)]
        assert paused  # a child went past RENEW_AT and handed its shard on
        assert all(len(h.get_event_history()) < 120 for h in stack.children.histories.values())
        r = report(stack, json.dumps({"job_id": "long-shards"}))
        assert (r["listed"], r["succeeded"], r["failed"]) == (800, 800, 0)
        assert keys_left(stack, "in/") == set()


def test_a_child_that_reaches_the_history_limit_anyway_fails_the_map_and_stops_its_job_resumably(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The harness enforces the limit on each child (the negative control of the test above): with no renewal, a shard's
    child ends at its 120th event, the map fails, and the job stops, resumable, as at a parent's limit."""
    a_page_a_call(monkeypatch)  # a shard of 20 pages (10 keys each) is a loop of 20 calls, 140 events: past the limit
    keys = [hex_key(i) for i in range(800)]
    cut_evenly(monkeypatch, keys, 4)
    env = {**ENV, "S3BULK_LIST_PAGE_SIZE": "10", "S3BULK_HISTORY_RENEW_AT": str(10**9)}
    with StackOnMoto(template, buckets=(SRC, DST), env=env, history_limit=120) as stack:
        put_direct(keys)
        ex = stack.run({"job_id": "never-renews", "operation": "delete", "source": {"bucket": SRC, "prefix": "in/"}}, timeout=300)
        assert (ex.status, ex.description.get("error")) == ("FAILED", "JobStopped"), stack.describe()
        assert stack.children.failed
        assert max(len(h.get_event_history()) for h in stack.children.histories.values()) == 120
        assert report(stack, json.dumps({"job_id": "never-renews"}))["status"] == "stopped"
        assert keys_left(stack, "in/")  # the listing never finished: some keys are left for the resume
