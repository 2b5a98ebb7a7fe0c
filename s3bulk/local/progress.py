"""What a person watching a run sees: a live progress line and a closing summary."""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn
from rich.table import Table

from s3bulk.breakers.outage import OutageBreaker
from s3bulk.report import NOTES, REPORT_FAILURES, Report, Snapshot, Tally, failures_file, writes_stdout

_UNITS = ("B", "KB", "MB", "GB", "TB", "PB")


def human_bytes(n: float) -> str:
    for unit in _UNITS:
        if abs(n) < 1000 or unit == _UNITS[-1]:
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"


def human_seconds(s: float) -> str:
    s = int(s)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class Rates:
    """Objects/s and bytes/s over the last few seconds, so the ETA follows the current pace."""

    def __init__(self, window: float = 5.0) -> None:
        self.window = window
        self._samples: deque[tuple[float, int, int]] = deque()

    def add(self, now: float, snap: Snapshot) -> tuple[float, float]:
        self._samples.append((now, snap.done, snap.bytes))
        while len(self._samples) > 2 and now - self._samples[0][0] > self.window:
            self._samples.popleft()
        t0, d0, b0 = self._samples[0]
        dt = now - t0
        if dt <= 0:
            return 0.0, 0.0
        return (snap.done - d0) / dt, (snap.bytes - b0) / dt


# An endpoint that has not answered for this long is named on the live line (and, without one, in a note on stderr).
WAITING_AFTER_S = 3.0


def waiting_for(breakers: Sequence[OutageBreaker]) -> tuple[str, float] | None:
    """The endpoint the job has waited on longest without an answer, past WAITING_AFTER_S; None otherwise."""
    found = [w for b in breakers if (w := b.waiting()) is not None and w[1] >= WAITING_AFTER_S]
    return max(found, key=lambda w: w[1]) if found else None


def progress_fields(snap: Snapshot, objects_per_s: float, bytes_per_s: float, waiting: tuple[str, float] | None = None) -> dict[str, str]:
    total = f"{snap.listed:,}" if snap.listing_done else f"{snap.listed:,}+ (listing)"
    eta = "-:--:--"
    if snap.listing_done and objects_per_s > 0:
        eta = human_seconds((snap.listed - snap.done) / objects_per_s)
    failed = f" [red]{snap.failed:,} failed[/]" if snap.failed else ""
    rates = f"{objects_per_s:,.0f} obj/s  {human_bytes(bytes_per_s)}/s"
    if waiting is not None:
        rates = f"[yellow]waiting for {waiting[0]}: no answer for {waiting[1]:,.0f} s[/]"
    return {"counts": f"{snap.done:,}/{total}{failed}", "rates": rates, "eta": f"ETA {eta}"}


class EndpointWatch:
    """Without a live line (not a terminal, --progress off): one note on stderr when an endpoint stops answering, so a
    run that waits out an outage (up to options.outage_seconds) does not sit silent."""

    def __init__(self, breakers: Sequence[OutageBreaker], *, quiet: bool = False, interval: float = 0.5) -> None:
        self.breakers, self.quiet, self.interval = breakers, quiet, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="s3bulk-watch", daemon=True)

    def _loop(self) -> None:
        told: set[str] = set()
        while not self._stop.wait(self.interval):
            waiting = waiting_for(self.breakers)
            if waiting is not None and waiting[0] not in told:
                told.add(waiting[0])
                print(
                    f"waiting for {waiting[0]}: no answer for {waiting[1]:,.0f} s; the job stops (resumable) if it gives "
                    "none for options.outage_seconds",
                    file=sys.stderr,
                    flush=True,
                )

    def __enter__(self) -> EndpointWatch:
        if not self.quiet:
            self._thread.start()
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


class ProgressDisplay:
    """Polls the tally a few times a second; the engine never waits on the display."""

    def __init__(self, tally: Tally, label: str, console: Console, interval: float = 0.25, breakers: Sequence[OutageBreaker] = ()) -> None:
        self.tally = tally
        self.breakers = breakers
        self.interval = interval
        self._stop = threading.Event()
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[counts]}"),
            TextColumn("{task.fields[rates]}"),
            TextColumn("{task.fields[eta]}"),
            console=console,
            transient=False,
        )
        self._task = self._progress.add_task(label, total=None, counts="0", rates="", eta="")
        self._thread = threading.Thread(target=self._loop, name="s3bulk-progress", daemon=True)

    def _loop(self) -> None:
        rates = Rates()
        while True:
            stopping = self._stop.wait(self.interval)
            snap = self.tally.snapshot()
            per_s, bytes_s = rates.add(time.monotonic(), snap)
            total = snap.listed if snap.listing_done else None
            fields = progress_fields(snap, per_s, bytes_s, waiting_for(self.breakers))
            self._progress.update(self._task, total=total, completed=snap.done, **fields)  # type: ignore[arg-type]
            if stopping:
                return

    def __enter__(self) -> ProgressDisplay:
        self._progress.start()
        self._thread.start()
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        self._progress.stop()


def summary_table(report: Report, *, deletes: bool = False) -> Table:
    """The closing summary; `deletes` (a sync with delete_extraneous) shows its deletions even when there were none."""
    s = report.summary()
    secs = max(s["seconds"], 1e-9)
    # This run's own work over this run's seconds: a resumed run's counts include what earlier runs did.
    done = report.run_done if report.run_done is not None else s["succeeded"] + s["skipped"] + s["failed"]
    done_bytes = report.run_bytes if report.run_bytes is not None else s["bytes"]
    style = {"succeeded": "green", "dry-run": "cyan", "interrupted": "yellow"}.get(s["status"], "red")
    table = Table(title=f"{s['operation']}: [{style}]{s['status']}[/]", show_header=False)
    table.add_column("measure", style="bold")
    table.add_column("value", justify="right")
    rows: list[tuple[str, str]] = [("job", s["job_id"]), ("listed", f"{s['listed']:,}")]
    if s["status"] == "dry-run":
        rows += [("would process", f"{s['would_process']:,}"), ("would skip", f"{s['skipped']:,}"), ("bytes", human_bytes(s["bytes"]))]
        if deletes or "would_delete_extraneous" in s:
            rows.append(("would delete", f"{s.get('would_delete_extraneous', 0):,}"))
    else:
        rows += [("succeeded", f"{s['succeeded']:,}"), ("skipped", f"{s['skipped']:,}"), ("failed", f"{s['failed']:,}")]
        if deletes or "deleted_extraneous" in s:
            rows.append(("deleted (extraneous)", f"{s.get('deleted_extraneous', 0):,}"))
        if "not_done" in s:
            rows.append(("not done", f"{s['not_done']:,}"))
        rows += [
            ("bytes", human_bytes(s["bytes"])),
            ("objects/s", f"{done / secs:,.0f}"),
            ("bytes/s", human_bytes(done_bytes / secs) + "/s"),
            ("retries", f"{s['retries']:,}"),
        ]
    # What no content evidence decided (report.NOTES), shown only when some object was so decided.
    rows += [(name.replace("_", " "), f"{s[name]:,}") for name in NOTES if s.get(name)]
    rows.append(("seconds", f"{s['seconds']:,.2f}"))
    for name, value in rows:
        table.add_row(name, value)
    return table


def mapping_lines(mappings: list[tuple[str, str]]) -> list[str]:
    """The first source -> destination keys as lines (repr: a `//` or a trailing space shows)."""
    if not mappings:
        return []
    return [f"first {len(mappings)} source -> destination keys:"] + [f"  {src!r} -> {dst!r}" for src, dst in mappings]


def listed_where(report_path: str | None, every: Path | None = None) -> str:
    """Where a run's failures are listed, each with its key and error: the report (every failure past the first
    REPORT_FAILURES in `every`, the JSONL written with it), or the flag that writes one."""
    if every is not None:
        return f"{every} lists every one"
    if not report_path:
        return "pass --report PATH to list every one"
    return f"the report {'on standard output' if writes_stdout(report_path) else f'at {report_path}'} lists every one"


def failures_table(report: Report, report_path: str | None = None, every: Path | None = None) -> Table | None:
    """The first failures; past them, where the rest are listed (`every`: the JSONL of every failure written with
    the report, when the report does not list them all; Report.write returns it)."""
    shown = report.tally.first_failures
    if not shown:
        return None
    table = Table(title="failures", title_style="red")
    for col in ("key", "error", "message"):
        table.add_column(col, overflow="fold")
    for f in shown:
        table.add_row(repr(f["key"])[1:-1], f["error"], f["message"])
    rest = report.tally.failed - len(shown)
    if rest > 0:
        if every is None and report_path and report.tally.failed > REPORT_FAILURES and not writes_stdout(report_path):
            every = failures_file(report_path)  # report.json lists the first ones; the JSONL beside it every one
        table.caption = f"... and {rest:,} more; {listed_where(report_path, every)}"
    return table
