"""The cost model's sizing logic: CPU-bound workers cost the same GB-seconds at any size, latency-bound ones more."""

from __future__ import annotations

import json
import math

import pytest

from bench.cost_model import (
    KEY_LOG_LINE_BYTES,
    KEY_LOG_STORED_BYTES,
    MAX_SHARDS,
    MESSAGE_BYTES,
    SCALE_ROWS,
    THREADS,
    at_scale,
    batch_operations,
    fixed_monthly,
    item_bytes,
    lister_calls_per_shard,
    per_million,
    query_rru,
    render,
    request_threads_for,
    s3_requests,
    worker_memory_for,
    worker_sizing,
    worker_threads_for,
)
from infra.config import MAX_INLINE_MAP
from s3bulk.aws.history import RENEW_AT
from s3bulk.aws.lister import PAGES_PER_STEP
from s3bulk.pace import LATENCY_S, cpu_rate, lister_keys_per_s


def test_a_cpu_bound_worker_costs_the_same_gb_seconds_at_any_memory_size() -> None:
    small, larger = worker_sizing(0.6, 512), worker_sizing(0.6, 1024)
    assert larger.objects_per_s == pytest.approx(2 * small.objects_per_s)
    assert larger.gb_seconds == pytest.approx(small.gb_seconds)


def test_past_the_latency_bound_more_memory_only_costs_more() -> None:
    big, bigger = worker_sizing(0.6, 3008), worker_sizing(0.6, 10240)
    assert big.objects_per_s == bigger.objects_per_s == pytest.approx(THREADS / LATENCY_S)
    assert bigger.dollars > big.dollars


def test_orchestration_per_million_is_far_below_batch_operations_fees() -> None:
    total = sum(per_million(0.6, 1024, 50).values())
    assert 0 < total < 0.10
    assert "S3 Batch Operations" in render(0.6, "test")


def test_one_lister_pages_its_shard_one_step_after_another() -> None:
    # 80 ms LIST + 25 ms send and checkpoint + 20 ms of one core at 512/1,769 of a vCPU
    assert lister_keys_per_s() == pytest.approx(1000 / (0.080 + 0.025 + 0.020 * 1769 / 512))  # ~5,740
    assert lister_keys_per_s(1769) == pytest.approx(1000 / 0.125)


def test_at_100_million_objects_on_one_prefix_the_s3_put_limit_bounds_the_job_and_every_worker_waits_billed() -> None:
    r = at_scale(1e8, 16, 50, 1, 0.6)
    assert r.listing_per_s == pytest.approx(16 * lister_keys_per_s())  # ~92,000 keys/s: not the bottleneck
    assert r.workers_per_s == pytest.approx(50 * 1024 / 1769 * 1000 / 0.6)  # CPU-bound 1,024 MB workers, ~48,200/s
    assert (r.s3_per_s, r.per_s, r.bound) == (3500, 3500, "S3 PUT limit")
    assert r.seconds == pytest.approx(1e8 / 3500 + 0.08)  # ~7.9 h
    # 50 workers x 1 GB x 28,571.5 s, at $0.0000133334 per GB-s
    assert r.costs["Lambda workers (GB-s)"] == pytest.approx(50 * (1e8 / 3500 + 0.08) * 0.0000133334)  # ~$19.05
    # 100,000 pages of one ~100 KB message, sent a step of 8 at a time (each of the 16 shards' 5 lister calls ends one
    # step early): 12,580 SendMessageBatch of ~790 KB (13 billed requests each); 20,000 invocations, each a
    # ReceiveMessage of 5 messages (~500 KB: 8 requests) and a DeleteMessageBatch; $0.40 per million
    assert PAGES_PER_STEP == 8
    assert r.costs["SQS (send, receive, delete)"] == pytest.approx((12_580 * 13 + 2e4 * 8 + 2e4) * 0.40 / 1e6)  # $0.137
    # 100,000 transactions of 4 WRU, 100,000 leases held and released (2 WRU) and 12,580 checkpoints, each a
    # transaction (2x) of its listing shard and the counter shards its 8 batches are pending on (about 7.2 of the 32
    # distinct): 2 x 8.2 WRU, at $0.625/M (+ the job's own few writes and the lister calls' leases)
    distinct = 32 * (1 - (31 / 32) ** 8)
    assert r.costs["DynamoDB writes (finish_batch, checkpoint)"] == pytest.approx((6e5 + 12_580 * 2 * (1 + distinct)) * 0.625e-6, abs=3e-4)
    # Per counted batch: the marker (1 RRU), the job item (1) and its own counter shard (1), at $0.125/M; a full read
    # (the job item, 16 listing shards of ~0.5 KB in 2, 32 counter shards by key) per drained counter shard, about 33;
    # plus a status read (0.5 RRU) per container every 30 s: 50 x 28,571 s / 30
    assert r.costs["DynamoDB reads (completion check per batch)"] == pytest.approx(
        (1e5 * 3 + 33 * 35 + 0.5 * 50 * 28571.5 / 30) * 0.125e-6,
        rel=2e-2,  # + the lister calls' and CheckProgress's, ~1%
    )
    assert batch_operations(1e8) == pytest.approx(0.25 + 100 + 0.25)
    assert s3_requests(1e8) == pytest.approx(500 + (1e5 + 400) * 0.005 / 1000)


def test_one_shard_makes_listing_the_bound_once_s3_has_partitions_to_spare() -> None:
    r = at_scale(1e8, 1, 200, 100, 0.6)
    assert r.bound == "listing"
    assert r.seconds == pytest.approx(1e8 / lister_keys_per_s() + 0.08)  # ~4.4 h
    # Fed by one lister, workers run only as the messages keep them busy: the per-million cost, 100 times
    assert r.costs["Lambda workers (GB-s)"] == pytest.approx(100 * worker_sizing(0.6, 1024).dollars, rel=1e-4)
    assert "At scale: 100 M and 1 B" in render(0.6, "test")


def test_worker_threads_cover_the_cpu_rate_times_the_latency_within_what_large_bodies_fit() -> None:
    # 1,024 MB buys 0.579 vCPU: at 0.55 ms/object that is 1,053 objects/s, 31.6 in flight at 30 ms -> 32 threads.
    assert worker_threads_for(0.55, 1024) == 32
    # At 0.30 ms/object, 1,930 objects/s would want 64 in flight, but 64 threads' bodies (24 MiB each) need 2 GB.
    assert worker_threads_for(0.30, 1024) == 32
    assert worker_threads_for(0.30, 2048) == 64
    assert worker_threads_for(2.0, 1024) == 16  # a slow worker needs few in flight


def test_worker_memory_is_the_largest_cpu_bound_size_that_holds_its_threads_bodies() -> None:
    assert worker_memory_for(0.55, 32) == 1024  # 1,280 MB would outrun 32 threads' 1,067 objects/s
    assert worker_memory_for(0.30, 32) == 1024  # 512 MB is CPU-bound but cannot hold 32 threads' bodies
    assert worker_memory_for(0.30, 64) == 2048


def test_the_stacks_worker_defaults_are_the_models_for_the_measured_cpu_per_object() -> None:
    """infra/config.py's defaults are re-derived from docs/benchmarks.json whenever `make bench` changes the CPU per object."""
    from bench.cost_model import ROOT, measured_cpu_ms
    from infra.config import DeployConfig

    cpu_ms, _ = measured_cpu_ms(json.loads((ROOT / "docs" / "benchmarks.json").read_text()))
    defaults = DeployConfig(read_buckets=(), write_buckets=(), delete_buckets=())
    assert defaults.worker_threads == worker_threads_for(cpu_ms, defaults.worker_memory_mb)
    assert defaults.worker_request_threads == request_threads_for(cpu_ms, defaults.worker_memory_mb)
    assert defaults.worker_memory_mb == worker_memory_for(cpu_ms, defaults.worker_threads, request_threads=defaults.worker_request_threads)


def test_jobs_that_hold_no_bodies_get_the_threads_their_cpu_share_needs_with_no_memory_cap() -> None:
    # At 0.30 ms/object a 1,024 MB worker's CPU copies 1,930 objects/s: 58 in flight at 30 ms, so 64 threads, which
    # streaming could not hold (64 x 24 MiB) and a copy need not.
    assert (request_threads_for(0.30, 1024), worker_threads_for(0.30, 1024)) == (64, 32)
    assert worker_sizing(0.30, 1024, 64).objects_per_s == pytest.approx(cpu_rate(0.30, 1024))  # CPU-bound: nothing idle
    assert worker_sizing(0.30, 1024, 32).objects_per_s == pytest.approx(32 / LATENCY_S)  # latency-bound on 32
    assert request_threads_for(2.0, 1024) == 16 and request_threads_for(0.1, 3008) == 512
    # The memory choice is CPU-bound at the request threads among sizes that hold the streaming threads' bodies.
    assert worker_memory_for(0.30, 32, request_threads=64) == 1024


def test_each_of_the_k_listers_bills_the_whole_listing_time_in_calls_of_270_seconds() -> None:
    """state_machine.shard_loop calls the lister again until its shard is done; each call ends 30 s before its 5 min timeout."""
    r = at_scale(1e8, 16, 50, 10, 0.6)
    list_seconds = 1e8 / (16 * lister_keys_per_s())  # ~1,088 s: each shard holds 1/16 of the keys
    assert r.costs["Lambda listers (GB-s)"] == pytest.approx(16 * list_seconds * 0.5 * 0.0000133334)  # ~$0.116
    # The same keys listed by one lister bill the same GB-s, in one sixteenth of the calls' wall time each
    assert at_scale(1e8, 1, 50, 10, 0.6).costs["Lambda listers (GB-s)"] == pytest.approx(r.costs["Lambda listers (GB-s)"])
    assert lister_calls_per_shard(list_seconds) == 5  # ceil(1,088 / 270)
    requests = next(i for i in r.items if i.name == "Lambda requests")
    # 20,000 worker invocations (5 messages each), 16 x 5 ListShard calls, Validate, PlanListing, Finalize and
    # AwaitCompletion plus CheckProgress and AwaitCompletion again for each of the 2 timed-out 600 s waits
    assert requests.quantity == pytest.approx(20_000 + 80 + 3 + 5)


def test_every_counted_batch_puts_its_key_log_part_to_the_report_bucket() -> None:
    r = at_scale(1e8, 16, 50, 10, 0.6)
    # 100,000 key-log parts (ReportBucket.put_keys) + an intent per step of 8 pages (put_intent; each of the 16 shards'
    # 5 lister calls ends one step early: 12,580) + one intent GET per lister call + Finalize's report.json,
    # failures.jsonl, assembly state and LIST, at $0.005 per 1,000
    assert r.costs["S3 report bucket PUTs (key-log part per batch)"] == pytest.approx((1e5 + 12_580 + 16 * 5 + 4) * 0.005 / 1000)


def test_key_logs_are_stored_for_their_retention_and_30_days_more_as_noncurrent_versions() -> None:
    """ExpireKeyLogs expires a tagged part after keep_key_logs_days; the versioned bucket keeps it 30 days more."""
    gb = 1e8 * KEY_LOG_STORED_BYTES / 1024**3  # ~4 GB: ~44 B a line, gzip'd a part at a time
    for days in (30, 7):
        r = at_scale(1e8, 16, 50, 10, 0.6, keep_days=days)
        months = (days + 30) / (730 / 24)
        assert r.costs["S3 key-log storage"] == pytest.approx(gb * months * 0.023)
        assert r.costs["S3 key-log tags"] == pytest.approx(1e5 * months * 0.01 / 10_000)  # one tag per part
    assert 400 < KEY_LOG_LINE_BYTES < 700
    assert KEY_LOG_STORED_BYTES <= 60  # issue 42's bound: a tenth of the plain lines, or better


def test_a_stored_key_log_part_is_the_gzip_of_its_lines_and_reads_back_whole() -> None:
    import io

    from s3bulk.aws.reportbucket import ReportBucket

    class Client:
        def __init__(self) -> None:
            self.objects: dict[str, bytes] = {}

        def put_object(self, Bucket: str, Key: str, Body: bytes, **_: object) -> None:
            self.objects[Key] = Body

        def get_object(self, Bucket: str, Key: str) -> dict[str, object]:
            return {"Body": io.BytesIO(self.objects[Key])}

    client = Client()
    reports = ReportBucket(client, "reports")
    text = "".join(f'{{"key": "k{i}", "outcome": "succeeded"}}\n' for i in range(1000))
    reports.put_keys("job", "b1", io.StringIO(text), "try1")
    [(key, body)] = client.objects.items()
    assert key == "jobs/job/keys/b1~try1.jsonl.gz" and body[:2] == b"\x1f\x8b" and len(body) < len(text) / 5
    assert reports.keys_part("job", "b1", "try1").decode() == text


def test_the_completion_check_reads_the_listing_shards_in_one_query_and_each_counter_shard_by_its_own_key() -> None:
    # DynamoDB's item size: names + string bytes + 1 byte per 2 significant digits + 1 + a boolean's 1
    assert item_bytes({"pk": {"S": "abc"}, "n": {"N": "123000"}, "b": {"BOOL": True}}) == (2 + 3) + (1 + 3) + (1 + 1)
    # K listing shards together at 1 RRU per 4 KB (~0.5 KB each), plus 32 counter shards under keys of their own at 1 each
    assert [query_rru(k) for k in (1, 16, 40)] == [1 + 32, 2 + 32, 5 + 32]


def test_step_functions_counts_the_states_a_job_passes() -> None:
    r = at_scale(1e8, 16, 50, 10, 0.6)  # 48 min: listing takes ~18 min, then two 600 s waits time out
    # 12 fixed states + per shard 5 x (ListShard, ShardDone?) + ShardListed + 2 x (CheckProgress, AllBatchesDone?, AwaitCompletion)
    assert r.costs["Step Functions transitions"] == pytest.approx((12 + 16 * 11 + 6) * 0.025 / 1000)


def test_one_1000_key_message_is_billed_as_two_sqs_requests() -> None:
    assert 64 * 1024 < MESSAGE_BYTES <= 2 * 64 * 1024


def test_the_fixed_monthly_cost_is_the_dashboard_the_alarms_and_the_idle_queue_polls() -> None:
    items = {i.name: i.dollars for i in fixed_monthly()}
    assert items["CloudWatch dashboard"] == 3.00
    assert items["CloudWatch alarms"] == pytest.approx(15 * 0.10)  # 8 alarms reading 15 metrics
    # 5 pollers, a 20 s ReceiveMessage after another, 730 h a month
    idle_polls = 5 * 730 * 180 * 0.40 / 1e6
    assert items["SQS: the worker's event source polls the empty queue"] == pytest.approx(idle_polls)
    assert items["SQS: the dead-letter counter's event source polls the empty dead-letter queue"] == pytest.approx(idle_polls)
    assert sum(items.values()) == pytest.approx(3.00 + 1.50 + 2 * idle_polls)


def test_the_model_counts_every_custom_metric_the_handlers_emit() -> None:
    from bench import cost_model
    from s3bulk import metrics

    names = {v for k, v in vars(metrics).items() if k.isupper() and k not in ("NAMESPACE", "SERVICE")}
    assert names == {*cost_model.BATCH_METRICS, *cost_model.LISTER_METRICS, *cost_model.EVENT_METRICS}


def test_prices_come_from_the_data_file_plan_reads() -> None:
    from bench import cost_model
    from s3bulk.local.plan import load_prices

    prices = load_prices()
    assert prices["sqs_request_per_million"] / 1e6 == cost_model.SQS_REQUEST
    assert prices["s3_standard_gb_month"] == cost_model.S3_GB_MONTH
    assert prices["cloudwatch_dashboard_month"] == cost_model.CW_DASHBOARD_MONTH


def test_every_scale_row_is_a_shard_count_the_stack_deploys() -> None:
    assert all(1 <= k <= MAX_SHARDS for k, _, _ in SCALE_ROWS)
    assert math.isclose(at_scale(1e8, MAX_SHARDS, 1000, 1000, 0.6).listing_per_s, MAX_SHARDS * lister_keys_per_s())


def test_finalize_fits_one_call_at_100m_objects_10_percent_failed_and_loops_past_that() -> None:
    from bench.cost_model import finalize_at_scale

    assert "About 297 s in all: 1 Finalize call(s)" in " ".join(finalize_at_scale(1e8, 0.10))
    assert "Finalize call(s)" in " ".join(finalize_at_scale(1e9, 0.10)) and " 1 Finalize call(s)" not in " ".join(
        finalize_at_scale(1e9, 0.10)
    )


def test_the_models_ceilings_say_which_binds_and_none_of_dynamodb_or_sqs_binds_the_fastest_row() -> None:
    from bench.cost_model import SCALE_ROWS, ceilings, ceilings_section

    inline = [at_scale(1e9, k, c, p, 0.27) for k, c, p in SCALE_ROWS if k <= MAX_INLINE_MAP]
    fastest = max(inline, key=lambda r: r.per_s)
    named = {name: rate for name, rate, _ in ceilings(fastest)}
    assert named["job item's partition (reads)"] == pytest.approx(3000 / 1.40 * 1000)
    assert named["KMS, SSE-KMS without Bucket Keys"] == 25_000  # 50,000 requests/s, 2 an object
    assert all(rate > fastest.per_s for name, rate in named.items() if not name.startswith("KMS"))
    # Past 40 shards a new on-demand table's first 4,000 WRU/s binds, and the model says so row by row.
    k1000 = at_scale(1e9, 1000, 1000, 1000, 0.27)
    lowest = min(ceilings(k1000)[:-1], key=lambda c: c[1])
    assert lowest[0] == k1000.bound == "new on-demand table (writes)" and lowest[1] == k1000.per_s < k1000.listing_per_s
    text = "\n".join(ceilings_section())
    assert "1,044 (over the default)" in text and "**binds**" not in text and "1 + 1,000 children" in text
    assert "2 of the 1 B rows would run faster than a" in text


def test_a_billion_objects_into_30_prefixes_take_under_8_hours_for_at_most_25_dollars(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42's bound on the model's own rates and counts: 40 listers, 50 workers on 64 request threads, S3's limit on
    30 prefixes the job's pace, and no other ceiling (DynamoDB, SQS in flight, history) below it."""
    from bench import cost_model

    r = at_scale(1e9, MAX_INLINE_MAP, 50, 30, 0.27)
    assert (r.bound, r.per_s) == ("S3 PUT limit", 30 * 3500) and r.seconds < 8 * 3600  # ~2.6 h
    assert r.total <= 25
    assert all(rate > r.per_s for _, rate, _ in cost_model.ceilings(r)[:-1])  # KMS aside: only for SSE-KMS jobs
    assert cost_model.history_events(r) < RENEW_AT  # one execution
    # What each change bought: a checkpoint and an intent a page, and copies on the streaming threads, cost more.
    monkeypatch.setattr(cost_model, "PAGES_PER_STEP", 1)
    assert at_scale(1e9, MAX_INLINE_MAP, 50, 30, 0.27).total > r.total + 4
    monkeypatch.undo()
    monkeypatch.setattr(cost_model, "request_threads_for", lambda cpu, memory=1024: worker_threads_for(cpu, memory))
    assert at_scale(1e9, MAX_INLINE_MAP, 50, 30, 0.27).costs["Lambda workers (GB-s)"] > 1.9 * r.costs["Lambda workers (GB-s)"]


def test_the_shared_pace_model_holds_the_numbers_this_model_computes_and_measures() -> None:
    """s3bulk/pace.py (what `s3bulk plan` prices the stack's pace with) keeps constants this model derives: they agree."""
    import json

    from bench.cost_model import LIST_SHARD_ITEM, ROOT, checkpoint_wru, measured_cpu_ms, wru
    from s3bulk import pace
    from s3bulk.aws.lister import PAGES_PER_STEP

    assert pace.PAGES_PER_STEP == PAGES_PER_STEP
    assert pytest.approx(checkpoint_wru(PAGES_PER_STEP), abs=0.1) == pace.CHECKPOINT_WRU_PER_STEP
    assert wru(LIST_SHARD_ITEM) == pace.SHARD_ITEM_WRU
    cpu_ms, _ = measured_cpu_ms(json.loads((ROOT / "docs" / "benchmarks.json").read_text()))
    assert pytest.approx(cpu_ms, abs=0.005) == pace.CPU_MS_PER_OBJECT
