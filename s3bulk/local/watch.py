"""`s3bulk watch JOB_ID`: a deployed job's live line, as `s3bulk run` shows a local one, until the job ends.

The counts come from the ledger (one GetItem and one Query of the job's counter shards per poll);
the line is the local run's (`progress_fields`), so done/listed, objects/s, bytes/s, failures
and the ETA read the same wherever a job runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext

from rich.console import Console
from rich.live import Live
from rich.text import Text

from s3bulk.local.progress import Rates, progress_fields
from s3bulk.report import Snapshot

# One poll of a job: its ledger status and its counts.
Poll = tuple[str, Snapshot]

# A job submitted moments ago: its execution runs, and Validate has not yet made its ledger entry.
STARTING = "STARTING"
# Ledger statuses of a job that is still going (workers may still count batches while it stops).
GOING = frozenset({STARTING, "RUNNING", "STOPPING", "CANCELLING"})


def watch_line(job_id: str, status: str, snap: Snapshot, objects_per_s: float, bytes_per_s: float) -> str:
    fields = progress_fields(snap, objects_per_s, bytes_per_s)
    return f"{job_id} {status.lower()}  {fields['counts']}  {fields['rates']}  {fields['eta']}"


def watch(
    job_id: str,
    fetch: Callable[[], Poll],
    console: Console,
    *,
    every: float = 5.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> str:
    """Poll the job every `every` seconds and show its line (updated in place on a terminal, a line per change
    otherwise) until its status says it ended; its last status."""
    rates = Rates(window=max(60.0, 6 * every))  # a minute of polls: the pace, not one poll's noise
    live = Live(console=console, auto_refresh=False, transient=False) if console.is_terminal else None
    shown = ""
    with live if live is not None else nullcontext():
        while True:
            status, snap = fetch()
            objects_per_s, bytes_per_s = rates.add(clock(), snap)
            line = watch_line(job_id, status, snap, objects_per_s, bytes_per_s)
            if live is not None:
                live.update(Text.from_markup(line), refresh=True)
            elif line != shown:
                console.print(line, soft_wrap=True, highlight=False)
            shown = line
            if status not in GOING:
                return status
            sleep(every)
