"""Ctrl-C at any point of a copy or move run, then --resume: a report every time, and counts that end exact.

The stop request is what the CLI's signal handler makes of SIGINT (local/interrupt.py); here it is made
at a chosen request, or just before a chosen batch's ledger commit, so each point is hit for sure.
"""

from __future__ import annotations

import io
import json
import random
import threading
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from s3bulk.job import Job, parse_job
from s3bulk.local.interrupt import Interrupt
from s3bulk.local.ledger import LocalLedger
from s3bulk.local.run import execute
from s3bulk.report import Report
from s3bulk.store import StoreError
from s3bulk.testing.memstore import MemoryStore

N = 240
# Where the stop request lands: the n-th request of a kind, or the n-th batch commit (between a batch's last object
# and its ledger row), or before the first batch (during the delete guard's count).
POINTS = ("ListObjectsV2", "CopyObject", "DeleteObject", "commit", "guard")


def seeded() -> MemoryStore:
    s = MemoryStore(page_size=40)
    s.create_bucket("src-b")
    s.create_bucket("dst-b")
    for i in range(N):
        s.put_object("src-b", f"in/{i:04d}", f"body-{i}".encode())
    return s


def job_of(operation: str, guard: bool) -> Job:
    options: dict[str, Any] = {"batch_size": 20, "list_workers": 2}
    if guard:
        options["max_delete"] = N  # the move counts its deletes first: a listing before the first batch
    return parse_job(
        json.dumps(
            {
                "operation": operation,
                "source": {"bucket": "src-b", "prefix": "in/"},
                "destination": {"bucket": "dst-b", "prefix": "out/"},
                "options": options,
            }
        )
    )


class StopAt:
    """Asks the run to stop at the n-th request of one kind (counted across threads)."""

    def __init__(self, interrupt: Interrupt, op: str, nth: int) -> None:
        self.interrupt, self.op, self.nth = interrupt, op, nth
        self.seen = 0
        self._lock = threading.Lock()

    def __call__(self, op: str, bucket: str, key: str) -> StoreError | None:
        if op == self.op:
            with self._lock:
                self.seen += 1
                if self.seen == self.nth:
                    self.interrupt.request()
        return None


def run_once(job: Job, store: MemoryStore, ledger: LocalLedger, interrupt: Interrupt, report: Path) -> Report:
    try:
        return execute(
            job,
            store,
            concurrency=4,
            console=Console(file=io.StringIO()),
            quiet=True,
            report_path=str(report),
            ledger=ledger,
            interrupt=interrupt,
        )
    finally:
        ledger.close()


def interrupted_run(job: Job, store: MemoryStore, state: Path, job_id: str, first: bool, point: str, nth: int, report: Path) -> Report:
    interrupt = Interrupt()
    ledger = LocalLedger.create(state, job_id, job) if first else LocalLedger.open(state, job_id)
    if point == "guard":
        store.faults.append(StopAt(interrupt, "ListObjectsV2", nth))
    elif point == "commit":
        real = ledger.finish_batch
        commits = [0]

        def stop_then_commit(*args: Any) -> None:
            commits[0] += 1
            if commits[0] == nth:
                interrupt.request()  # the signal lands here; the batch's commit still follows
            real(*args)

        ledger.finish_batch = stop_then_commit  # type: ignore[method-assign,assignment]
    else:
        store.faults.append(StopAt(interrupt, point, nth))
    try:
        return run_once(job, store, ledger, interrupt, report)
    finally:
        store.faults.clear()


@pytest.mark.parametrize("seed", range(50))
def test_an_interrupt_anywhere_then_resume_ends_with_exact_counts_and_a_report(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    operation = "move" if seed % 2 else "copy"
    point = POINTS[seed % len(POINTS)]
    if point in {"DeleteObject", "guard"} and operation == "copy":
        point = "CopyObject" if point == "DeleteObject" else "ListObjectsV2"
    job = job_of(operation, guard=point == "guard")
    store = seeded()
    state = tmp_path / "state"
    job_id = f"{operation}-interrupt-{seed}"
    stops = 1 + seed % 3  # up to three interrupted runs in a row (the report's case had two), then one to the end
    for run in range(stops):
        limit = {"ListObjectsV2": 6, "CopyObject": N // 2, "DeleteObject": N // 2, "commit": 8, "guard": 6}[point]
        report_file = tmp_path / f"interrupted-{run}.json"
        report = interrupted_run(job, store, state, job_id, run == 0, point, rng.randint(1, limit), report_file)
        written = json.loads(report_file.read_text())
        assert written["status"] == report.status
        assert report.interrupted or run > 0, f"the stop at {point} never landed"  # later runs have less left to do
        if report.interrupted:
            assert report.exit_code == 130 and written["status"] == "interrupted"
            assert written["done"] + written["failed"] + written["not_done"] == written["listed"]
    final = run_once(job, store, LocalLedger.open(state, job_id), Interrupt(), tmp_path / "final.json")
    s = json.loads((tmp_path / "final.json").read_text())
    assert final.exit_code == 0, s
    assert (s["status"], s["listed"], s["succeeded"], s["failed"], s["scanned"]) == ("succeeded", N, N, 0, N), (point, s)
    assert store.keys("dst-b") == [f"out/{i:04d}" for i in range(N)]
    assert all(store.get_body("dst-b", f"out/{i:04d}") == f"body-{i}".encode() for i in range(N))
    assert store.keys("src-b") == ([] if operation == "move" else [f"in/{i:04d}" for i in range(N)])


def test_a_stop_before_the_first_batch_still_writes_the_report_and_leaves_a_resumable_ledger(tmp_path: Path) -> None:
    job, store, interrupt = job_of("move", guard=True), seeded(), Interrupt()
    interrupt.request()  # the signal came while the delete guard counted
    ledger = LocalLedger.create(tmp_path, "move-early", job)
    report = run_once(job, store, ledger, interrupt, tmp_path / "r.json")
    assert report.exit_code == 130
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "interrupted"
    assert store.calls.get("CopyObject", 0) == 0 and store.keys("src-b") != []
    done = run_once(job, store, LocalLedger.open(tmp_path, "move-early"), Interrupt(), tmp_path / "r2.json")
    assert done.summary()["succeeded"] == N and store.keys("src-b") == []


class Killed(Exception):
    """Stands for the process dying at that line: nothing after it in that batch runs."""


@pytest.mark.parametrize("where", ["after-the-deletes", "during-the-deletes"])
def test_a_move_killed_between_its_deletes_and_its_commit_is_finished_by_the_resume(where: str, tmp_path: Path) -> None:
    """The batch journals its confirmed copies before deleting their sources, so a resume deletes (again) and commits it:
    its sources are gone from any new listing, and without the journal the job's counts fell short by the batch."""
    job, store = job_of("move", guard=False), seeded()
    ledger = LocalLedger.create(tmp_path, "move-kill", job)
    if where == "after-the-deletes":
        real, commits = ledger.finish_batch, [0]

        def killed_at_the_third_commit(*args: Any) -> None:
            commits[0] += 1
            if commits[0] == 3:
                raise Killed
            real(*args)

        ledger.finish_batch = killed_at_the_third_commit  # type: ignore[method-assign,assignment]
    else:
        deletes = [0]

        def killed_mid_delete(op: str, bucket: str, key: str) -> StoreError | None:
            if op == "DeleteObject":
                deletes[0] += 1
                if deletes[0] == 50:  # half of the third batch's sources are gone
                    raise Killed
            return None

        store.faults.append(killed_mid_delete)
    first = run_once(job, store, ledger, Interrupt(), tmp_path / "first.json")
    store.faults.clear()
    # The batch killed at its commit moved all its objects, and the report counts them (what was done, recorded or not);
    # the one killed mid-delete had counted none of its moves yet.
    assert first.summary()["succeeded"] == (N if where == "after-the-deletes" else N - 20)
    # Whichever thread ran the batch's commit (a pool thread, or the one that started the batch when its tasks had all
    # ended first), the run says the batch was not recorded: never a report of success with the batch silently short.
    assert first.exit_code == 1 and "could not be recorded (Killed" in str(first.error), first.error
    final = run_once(job, store, LocalLedger.open(tmp_path, "move-kill"), Interrupt(), tmp_path / "final.json")
    s = final.summary()
    assert (s["status"], s["listed"], s["succeeded"], s["failed"], s["scanned"]) == ("succeeded", N, N, 0, N), s
    assert store.keys("src-b") == [] and len(store.keys("dst-b")) == N


def test_an_interrupted_report_counts_the_objects_done_in_batches_the_ledger_had_not_yet_recorded(tmp_path: Path) -> None:
    # One batch holds every object, so nothing is committed when the stop lands; the report said 0 done while half
    # the objects had been copied.
    job = parse_job(json.dumps({
        "operation": "copy",
        "source": {"bucket": "src-b", "prefix": "in/"},
        "destination": {"bucket": "dst-b", "prefix": "out/"},
        "options": {"batch_size": N},
    }))  # fmt: skip
    store = seeded()
    report = interrupted_run(job, store, tmp_path / "state", "copy-uncommitted", True, "CopyObject", N // 2, tmp_path / "r.json")
    written = json.loads((tmp_path / "r.json").read_text())
    copied = len(store.keys("dst-b"))
    assert report.interrupted and N // 2 <= copied < N
    assert (written["succeeded"], written["bytes"]) == (copied, sum(len(store.get_body("dst-b", k)) for k in store.keys("dst-b")))
    assert written["done"] + written["failed"] + written["not_done"] == written["listed"] == N
    final = run_once(job, store, LocalLedger.open(tmp_path / "state", "copy-uncommitted"), Interrupt(), tmp_path / "final.json")
    assert final.summary()["succeeded"] == N and store.keys("dst-b") == [f"out/{i:04d}" for i in range(N)]


def test_a_ctrl_c_while_the_arguments_are_read_ends_in_one_line_and_exit_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A signal that lands while argparse builds the parser (a newcomer's quick Ctrl-C) was a traceback: the
    handler raised KeyboardInterrupt before _main's own handling began."""
    import s3bulk.cli as cli

    def interrupted() -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_parser", interrupted)
    assert cli.main(["validate", "job.json"]) == 130
    err = capsys.readouterr().err
    assert err.strip() == "interrupted before the job started; nothing was changed"
