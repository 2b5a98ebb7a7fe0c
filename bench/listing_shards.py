"""The stack's listing path against the number of shards: PlanListing, then K listers paging their shards at once.

    python -m bench.listing_shards [--keys 100000] [--runs 3] [--latency-ms 50] [--page-ms 80] [--shards 1,2,4,8,16,32]
    python -m bench.listing_shards --quick          # under a minute, one run each
    python -m bench.listing_shards --store plan     # the plan alone on 0.3, 10 and 123 M generated keys: probes, balance

Each K is timed from the plan to the last shard's last page. The plan comes from two planners:
  stack       lister.plan_step itself (shards.plan_ranges: the first page its own range, the rest cut by
              plan_shards from the first page's last key, at most K ranges), called with a stub ledger that
              records the ranges it would write;
  even        K ranges of equal key counts, cut at known keys: the ceiling any planner could reach.
Each shard is paged by its own thread (one lister Lambda) with shards.list_shard_page and its own
store, and every run checks that the shards together listed every key exactly once. On the synthetic store the
table adds each K's rate with a core per lister (the plan, then the longest shard's injected latency plus its
thread's CPU time): K threads share this machine's cores, K lister Lambdas do not.

Two stores: SeaweedFS behind toxiproxy (+latency-ms per request, half each way), with a nested
(100 folders) and a flat layout of --keys keys each, through FastS3Store as bench.listing uses it;
and bench.synthetic's generated store with --page-ms per 1,000-key page (--probe-ms per probe, a LIST of
at most two keys), S3's latency without this machine's server CPU in the way. "plan probes" counts the
planner's probes (the stack's planner only; the even planner knows the keys).
"""

from __future__ import annotations

import argparse
import bisect
import functools
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from bench.run import s5cmd, seed_local_dir
from bench.synthetic import GeneratedStore
from bench.toxiproxy import Toxiproxy, build
from s3bulk.aws.allowlist import AllowList
from s3bulk.aws.ledger import DynamoLedger, JobRecord
from s3bulk.aws.lister import plan_step
from s3bulk.job import parse_job
from s3bulk.local.server import ACCESS_KEY, SECRET_KEY, SeaweedServer
from s3bulk.s3.clients import ClientSettings, make_s3_client
from s3bulk.s3.faststore import FastS3Store
from s3bulk.source.shards import Shard, list_shard_page, plan_ranges
from s3bulk.store import ListPage, ObjectStore, RequestOptions

Ranges = list[tuple[str, str | None]]
PLANNERS = ("stack", "even")
BUCKET = "bench-shards"


class CountingStore:
    """A store whose probes (LISTs of two keys at most) are counted, scoped or not: what the plan costs in requests."""

    def __init__(self, store: ObjectStore, counter: list[int] | None = None, lock: threading.Lock | None = None) -> None:
        self.store = store
        self.counter = counter if counter is not None else [0]
        self._lock = lock or threading.Lock()

    @property
    def probes(self) -> int:
        return self.counter[0]

    def list_page(
        self,
        bucket: str,
        prefix: str,
        token: str | None = None,
        start_after: str | None = None,
        delimiter: str | None = None,
        max_keys: int | None = None,
    ) -> ListPage:
        if max_keys is not None and max_keys <= 2:
            with self._lock:
                self.counter[0] += 1
        return self.store.list_page(bucket, prefix, token, start_after, delimiter, max_keys)

    def scoped(self, options: RequestOptions) -> CountingStore:
        return CountingStore(self.store.scoped(options), self.counter, self._lock)

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)


class _RecordingLedger:
    """The two calls plan_step makes on the DynamoDB ledger: load the job, record the ranges."""

    def __init__(self, job_json: str) -> None:
        self.job = parse_job(job_json)
        self.ranges: Ranges = []

    def load(self, job_id: str) -> JobRecord:
        return JobRecord(job_id, self.job, "RUNNING", False, {}, 0.0)

    def plan(self, job_id: str, ranges: Ranges) -> int:
        self.ranges = list(ranges)
        return len(ranges)


def stack_plan(store: ObjectStore, prefix: str, k: int) -> Ranges:
    """The ranges lister.plan_step writes for this source and list_shards=k."""
    doc = {"operation": "copy", "source": {"bucket": BUCKET, "prefix": prefix}, "destination": {"bucket": "bench-dst", "prefix": "out/"}}
    ledger = _RecordingLedger(json.dumps(doc))
    allow = AllowList(frozenset({BUCKET}), frozenset({"bench-dst"}), frozenset())
    plan_step("bench", ledger=cast(DynamoLedger, ledger), store=store, allow=allow, target=k)
    return ledger.ranges


def even_plan(keys: Sequence[str], k: int) -> Ranges:
    """k ranges of (nearly) equal key counts, cut at known keys."""
    cuts = [keys[len(keys) * i // k - 1] for i in range(1, k)]
    return list(zip(["", *cuts], [*cuts, None], strict=True))


@dataclass
class Run:
    seconds: float
    plan_seconds: float
    pages: int
    client_cpu: float
    server_cpu: float
    missing: int = 0  # keys of the source no shard listed (0: every key exactly once)
    probes: int = 0  # the plan's probes
    own_seconds: float = 0.0  # the plan, then the longest shard on a core of its own (list_shards): K Lambdas' time


@dataclass
class Row:
    planner: str
    k: int
    shards: int
    runs: list[Run] = field(default_factory=list)
    same_as: int | None = None  # the K whose identical plan was measured instead


def _session_cpu(sid: int | None) -> float:
    """CPU seconds of every process in a session (a server started with start_new_session)."""
    if sid is None:
        return 0.0
    total = 0
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                fields = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid:  # field 6 of stat: session id
                total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


# Seconds each thread slept in LatentStore's requests: with its CPU time, what the lister would take on a core of its own.
_SLEPT = threading.local()


def list_shards(stores: Sequence[ObjectStore], prefix: str, ranges: Ranges) -> tuple[list[list[str]], int, float]:
    """Every shard paged to its end by its own thread, as one lister Lambda each; keys per shard, pages, and the longest
    shard's own seconds (its requests' latency slept plus its thread's CPU: its time on a core of its own, as each
    lister Lambda has; only the synthetic store's latency is counted, so elsewhere it is CPU alone)."""
    out: list[list[str]] = [[] for _ in ranges]
    pages = [0] * len(ranges)
    own = [0.0] * len(ranges)
    errors: list[BaseException] = []

    def lister(i: int) -> None:
        store, shard, token = stores[i % len(stores)], Shard(*ranges[i]), None
        _SLEPT.seconds, cpu0 = 0.0, time.thread_time()
        try:
            while True:
                page = list_shard_page(store, BUCKET, prefix, shard, token)
                out[i].extend(o.key for o in page.objects)
                pages[i] += 1
                if page.done:
                    return
                token = page.next_token
        except BaseException as exc:  # noqa: BLE001 - re-raised by the caller
            errors.append(exc)
        finally:
            own[i] = time.thread_time() - cpu0 + _SLEPT.seconds

    threads = [threading.Thread(target=lister, args=(i,)) for i in range(len(ranges))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out, sum(pages), max(own)


def measure(
    stores: Sequence[ObjectStore],
    prefix: str,
    keys: Sequence[str],
    planner: Callable[[], Ranges],
    runs: int,
    server_sid: Sequence[int | None],
    probes: Callable[[], int] = lambda: 0,
) -> tuple[Ranges, list[Run]]:
    results, ranges = [], []
    for _ in range(runs):
        cpu0, srv0, t0 = time.process_time(), sum(_session_cpu(s) for s in server_sid), time.perf_counter()
        p0 = probes()
        ranges = planner()
        t1 = time.perf_counter()
        planned = probes() - p0
        listed, pages, longest = list_shards(stores, prefix, ranges)
        t2 = time.perf_counter()
        cpu, srv = time.process_time() - cpu0, sum(_session_cpu(s) for s in server_sid) - srv0
        flat = [key for shard in listed for key in shard]
        # Exactly once: as many keys as the source holds, each of them once, in S3's order across the shards.
        exact = flat == list(keys)
        if not exact:
            lost = sorted(set(keys) - set(flat))
            print(f"  NOT EXACT: {len(flat):,} keys listed ({len(set(flat)):,} distinct), the source holds {len(keys):,}", flush=True)
            for (after, upto), got in zip(ranges, listed, strict=True):
                print(f"    shard ({after!r}, {upto!r}]: {len(got):,} keys, first {got[:1]}", flush=True)
            print(f"    first keys not listed: {lost[:3]}", flush=True)
        missing = len(keys) - len(set(flat)) if not exact else 0
        results.append(Run(t2 - t0, t1 - t0, pages, cpu, srv, missing, planned, t1 - t0 + longest))
    return ranges, results


def sweep(
    label: str,
    stores: Sequence[ObjectStore],
    plan_store: ObjectStore,
    prefix: str,
    keys: Sequence[str],
    ks: Sequence[int],
    runs: int,
    server_sid: Sequence[int | None] = (),
) -> list[Row]:
    rows: list[Row] = []
    measured: dict[tuple[tuple[str, str | None], ...], Row] = {}
    counting = CountingStore(plan_store)
    planners: dict[str, Callable[[int], Ranges]] = {
        "stack": lambda k: stack_plan(cast(ObjectStore, counting), prefix, k),
        "even": lambda k: even_plan(keys, k),
    }
    for name in PLANNERS:
        for k in ks:
            if k == 1 and name != "stack":
                continue  # one shard whatever the planner: measured once, as "stack"
            ranges = planners[name](k)
            done = measured.get(tuple(ranges))
            if done is not None and name == "stack":
                # The same ranges as a K already measured (plan_step found no cut): the same listing, not re-run;
                # the plan is timed again (it lists the first page and probes), and its time replaces the other's.
                plans = []
                for _ in range(runs):
                    t0, p0 = time.perf_counter(), counting.probes
                    planners[name](k)
                    plans.append((time.perf_counter() - t0, counting.probes - p0))
                rs = [
                    Run(
                        r.seconds - r.plan_seconds + p,
                        p,
                        r.pages,
                        r.client_cpu,
                        r.server_cpu,
                        r.missing,
                        n,
                        r.own_seconds - r.plan_seconds + p,
                    )
                    for r, (p, n) in zip(done.runs, plans, strict=True)
                ]
                rows.append(Row(name, k, len(ranges), rs, same_as=done.k))
            else:
                _, rs = measure(stores, prefix, keys, functools.partial(planners[name], k), runs, server_sid, lambda: counting.probes)
                row = Row(name, k, len(ranges), rs)
                measured.setdefault(tuple(ranges), row)
                rows.append(row)
            print(f"  {label} {name:<10} K={k:<3} shards={rows[-1].shards:<3} {len(keys) / _median_s(rows[-1]):>9,.0f} keys/s", flush=True)
    return rows


def _median_s(row: Row) -> float:
    return statistics.median(r.seconds for r in row.runs)


def table(title: str, rows: Sequence[Row], keys: int, own: bool = False) -> str:
    """The sweep's rows; `own` adds each K's rate and efficiency with a core per lister (Run.own_seconds), as K lister
    Lambdas have: this machine's 2 cores shared by K threads are not what the stack runs on."""
    base = keys / _median_s(next(r for r in rows if r.k == 1))
    own_base = keys / statistics.median(x.own_seconds for x in next(r for r in rows if r.k == 1).runs)
    extra = " keys/s, a core each | efficiency, a core each |" if own else ""
    lines = [
        f"**{title}**",
        "",
        "| planner | K | shards | keys/s (median) | min-max | speed-up | efficiency |"
        + extra
        + " plan s | plan probes | LIST requests | client CPU ms/page | server + toxiproxy CPU ms/page |",
        "|---|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if own else "") + "---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        rates = [keys / x.seconds for x in r.runs]
        med = keys / _median_s(r)
        pages = statistics.median(x.pages for x in r.runs)
        cpu = statistics.median(x.client_cpu / x.pages * 1000 for x in r.runs)
        srv = statistics.median(x.server_cpu / x.pages * 1000 for x in r.runs)
        note = f" (same plan as K={r.same_as})" if r.same_as is not None else ""
        missing = max(x.missing for x in r.runs)
        if missing:
            note += f" **{missing:,} keys not listed**"
        own_rate = keys / statistics.median(x.own_seconds for x in r.runs)
        cells = f" {own_rate:,.0f} | {own_rate / own_base / r.k:.0%} |" if own else ""
        lines.append(
            f"| {r.planner} | {r.k}{note} | {r.shards} | {med:,.0f} | {min(rates):,.0f}-{max(rates):,.0f} | {med / base:.2f}x | "
            f"{med / base / r.k:.0%} |{cells} {statistics.median(x.plan_seconds for x in r.runs):.2f} | "
            f"{statistics.median(x.probes for x in r.runs):,.0f} | {pages:,.0f} | {cpu:.1f} | " + (f"{srv:.1f} |" if srv else "- |")
        )
    return "\n".join(lines)


class LatentStore(GeneratedStore):
    """Generated keys in/000000000...; each request sleeps like S3: a full page page_s, a probe (a few keys) probe_s."""

    def __init__(self, keys: int, page_s: float, probe_s: float) -> None:
        super().__init__(keys)
        self.page_s, self.probe_s = page_s, probe_s

    def list_page(
        self,
        bucket: str,
        prefix: str,
        token: str | None = None,
        start_after: str | None = None,
        delimiter: str | None = None,
        max_keys: int | None = None,
    ) -> ListPage:
        pause = self.probe_s if max_keys is not None and max_keys < self.page else self.page_s
        time.sleep(pause)
        _SLEPT.seconds = getattr(_SLEPT, "seconds", 0.0) + pause
        return super().list_page(bucket, prefix, token, start_after, delimiter, max_keys)

    def scoped(self, options: object) -> LatentStore:
        return self


def seaweed_leg(args: argparse.Namespace, ks: Sequence[int]) -> list[str]:
    out = []
    with tempfile.TemporaryDirectory() as tmp, SeaweedServer() as server:
        settings = ClientSettings(endpoint_url=server.endpoint_url, access_key=ACCESS_KEY, secret_key=SECRET_KEY)
        make_s3_client(settings, 4).create_bucket(Bucket=BUCKET)
        t0 = time.perf_counter()
        layouts = [
            (f"{args.keys:,} keys nested (100 folders)", "nested/", seed_local_dir(Path(tmp) / "nested", args.keys, 16, nested=100)),
            (f"{args.keys:,} keys flat", "flat/", seed_local_dir(Path(tmp) / "flat", args.keys, 16)),
        ]
        for _, prefix, local in layouts:
            s5cmd(server.endpoint_url, "cp", f"{local}/*", f"s3://{BUCKET}/{prefix}")
        print(f"seeded {2 * args.keys:,} objects in {time.perf_counter() - t0:.0f} s", flush=True)
        binary = build()
        if binary is None:
            raise SystemExit("toxiproxy could not be built (needs Go): see bench/toxiproxy.py")
        with Toxiproxy(binary, server.port, args.latency_ms // 2) as proxy:
            px = ClientSettings(endpoint_url=proxy.endpoint_url, access_key=ACCESS_KEY, secret_key=SECRET_KEY)
            stores = [FastS3Store(make_s3_client(px, 4), 4) for _ in range(max(ks))]
            plan_store = FastS3Store(make_s3_client(px, 16), 16)
            for st in [*stores, plan_store]:  # open each lister's connection first: the curve is steady state, not TCP set-up
                st.list_page(BUCKET, "flat/", max_keys=1)
            for probe in ("nested/p01", "nested/p01/", "flat/o00010"):  # S3: the first key after the string, in byte order
                got = plan_store.list_page(BUCKET, probe.split("/")[0] + "/", start_after=probe, max_keys=1).objects
                print(f"start-after {probe!r}: first key {got[0].key if got else None!r}", flush=True)
            sids = [server._proc.pid if server._proc else None, proxy._proc.pid if proxy._proc else None]
            for title, prefix, local in layouts:
                keys = sorted(f"{prefix}{p.relative_to(local).as_posix()}" for p in local.rglob("*") if p.is_file())
                rows = sweep(title, stores, plan_store, prefix, keys, ks, args.runs, sids)
                out.append(table(f"SeaweedFS + {args.latency_ms} ms per request (toxiproxy), {title}", rows, len(keys)))
                print(out[-1], flush=True)
    return out


def plan_leg(args: argparse.Namespace, ks: Sequence[int]) -> str:
    """The plan alone on large generated sources (no latency): its probes, and how far its largest range is from 1/K."""
    lines = [
        "**the plan alone, bench.synthetic's generated keys in/000000000... (no latency)**",
        "",
        "| keys | K | ranges | plan probes | largest range / (keys / K) |",
        "|---:|---:|---:|---:|---:|",
    ]
    for n in (int(x) for x in args.plan_keys.split(",")):
        store = CountingStore(GeneratedStore(n))

        def rank(bound: str | None, n: int = n) -> int:
            """Keys <= bound (every key when bound is None)."""
            return n if bound is None else bisect.bisect_right(range(n), bound, key=lambda i: f"in/{i:09d}")

        for k in ks:
            if k == 1:
                continue
            p0 = store.probes
            ranges = plan_ranges(cast(ObjectStore, store), BUCKET, "in/", k)
            sizes = [rank(r.upto) - (rank(r.after) if r.after else 0) for r in ranges]
            assert sum(sizes) == n, "the ranges do not cover the keys exactly once"
            lines.append(f"| {n:,} | {k} | {len(ranges)} | {store.probes - p0:,} | {max(sizes) / (n / k):.3f} |")
    return "\n".join(lines)


def synthetic_leg(args: argparse.Namespace, ks: Sequence[int]) -> str:
    store = LatentStore(args.synthetic_keys, args.page_ms / 1000, args.probe_ms / 1000)
    keys = [f"in/{i:09d}" for i in range(args.synthetic_keys)]
    rows = sweep("synthetic", [store], store, "in/", keys, ks, args.runs)
    title = f"synthetic store, {args.synthetic_keys:,} flat keys, {args.page_ms} ms per 1,000-key page, {args.probe_ms} ms per probe"
    return table(title, rows, len(keys), own=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    p.add_argument("--keys", type=int, default=100_000, help="keys per SeaweedFS layout (nested and flat)")
    p.add_argument("--synthetic-keys", type=int, default=300_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--latency-ms", type=int, default=50, help="added per request by toxiproxy, half each way")
    p.add_argument("--page-ms", type=int, default=80, help="synthetic: latency of a 1,000-key page")
    p.add_argument("--probe-ms", type=int, default=20, help="synthetic: latency of a probe (a LIST of two keys at most)")
    p.add_argument("--shards", default="1,2,4,8,16,32")
    p.add_argument("--store", choices=("both", "seaweedfs", "synthetic", "plan"), default="both")
    p.add_argument("--plan-keys", default="300000,10000000,123456789", help="plan: sizes of the generated sources to plan")
    p.add_argument("--quick", action="store_true", help="10,000 keys per layout, 50,000 synthetic, K=1,4,16, one run")
    args = p.parse_args(argv)
    if args.quick:
        args.keys, args.synthetic_keys, args.runs, args.shards = 10_000, 50_000, 1, "1,4,16"
    ks = sorted({int(k) for k in args.shards.split(",")} | {1})
    t0 = time.perf_counter()
    tables = []
    if args.store == "plan":
        tables.append(plan_leg(args, ks))
    if args.store in ("both", "synthetic"):
        tables.append(synthetic_leg(args, ks))
        print(tables[-1], flush=True)
    if args.store in ("both", "seaweedfs"):
        tables += seaweed_leg(args, ks)
    print(f"\n{time.perf_counter() - t0:.0f} s in all\n")
    print("\n\n".join(tables))
    return 0


if __name__ == "__main__":
    sys.exit(main())
