"""What a person watching a run sees: a live progress line and a closing summary."""

from __future__ import annotations

import threading
import time
from collections import deque
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn
from rich.table import Table

from s3bulk.report import Report, Snapshot, Tally

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


def progress_fields(snap: Snapshot, objects_per_s: float, bytes_per_s: float) -> dict[str, str]:
    total = f"{snap.listed:,}" if snap.listing_done else f"{snap.listed:,}+ (listing)"
    eta = "-:--:--"
    if snap.listing_done and objects_per_s > 0:
        eta = human_seconds((snap.listed - snap.done) / objects_per_s)
    failed = f" [red]{snap.failed:,} failed[/]" if snap.failed else ""
    return {
        "counts": f"{snap.done:,}/{total}{failed}",
        "rates": f"{objects_per_s:,.0f} obj/s  {human_bytes(bytes_per_s)}/s",
        "eta": f"ETA {eta}",
    }


class ProgressDisplay:
    """Polls the tally a few times a second; the engine never waits on the display."""

    def __init__(self, tally: Tally, label: str, console: Console, interval: float = 0.25) -> None:
        self.tally = tally
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
            fields = progress_fields(snap, per_s, bytes_s)
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


def summary_table(report: Report) -> Table:
    s = report.summary()
    secs = max(s["seconds"], 1e-9)
    done = s["succeeded"] + s["skipped"] + s["failed"]
    style = {"succeeded": "green", "dry-run": "cyan"}.get(s["status"], "red")
    table = Table(title=f"{s['operation']}: [{style}]{s['status']}[/]", show_header=False)
    table.add_column("measure", style="bold")
    table.add_column("value", justify="right")
    rows: list[tuple[str, str]] = [("job", s["job_id"]), ("listed", f"{s['listed']:,}")]
    if s["status"] == "dry-run":
        rows += [("would process", f"{s['would_process']:,}"), ("would skip", f"{s['skipped']:,}"), ("bytes", human_bytes(s["bytes"]))]
    else:
        rows += [
            ("succeeded", f"{s['succeeded']:,}"),
            ("skipped", f"{s['skipped']:,}"),
            ("failed", f"{s['failed']:,}"),
            ("bytes", human_bytes(s["bytes"])),
            ("objects/s", f"{done / secs:,.0f}"),
            ("bytes/s", human_bytes(s["bytes"] / secs) + "/s"),
            ("retries", f"{s['retries']:,}"),
        ]
    rows.append(("seconds", f"{s['seconds']:,.2f}"))
    for name, value in rows:
        table.add_row(name, value)
    return table


def failures_table(report: Report) -> Table | None:
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
        table.caption = f"... and {rest:,} more; --report PATH lists every one"
    return table
