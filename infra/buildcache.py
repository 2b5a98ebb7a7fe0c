"""Build a tool once per machine into a cache folder, whatever number of processes ask at once.

The functions' CPython (infra/runtime.py) and the test suite's versitygw (tests/integration/versitygw.py) are both built
from source into ~/.cache/s3bulk: minutes each, so once per machine and version. The rules are one: a file lock beside
the folder (a second process waits, then finds the build done), the temp folders of a build killed before its cleanup
cleared by the lock's holder, and the build made in a temp folder of its own and renamed into place, so a half-built
folder is never taken for a good one.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def build_once(final: Path, name: str, *, ready: Callable[[], bool], build: Callable[[Path], Path], what: str) -> None:
    """Make `final` unless `ready()` says it is there: under the lock, `build(work)` builds in the empty folder `work`
    and returns the folder that becomes `final` (work itself or one inside it). Its errors propagate; nothing is kept."""
    if ready():
        return
    final.parent.mkdir(parents=True, exist_ok=True)
    with open(final.parent / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also when this process dies
        if ready():
            return  # another process built it while this one waited
        for stale in final.parent.glob(f".{name}-*"):
            shutil.rmtree(stale, ignore_errors=True)  # a build killed before its cleanup: only the lock's holder builds
        work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=final.parent))
        try:
            started = time.monotonic()
            print(f"building {what} into {final}: minutes, once", file=sys.stderr, flush=True)
            product = build(work)
            if final.exists():
                shutil.rmtree(final)  # a folder left without what makes it ready
            os.rename(product, final)
            print(f"built {what} in {time.monotonic() - started:.0f}s", file=sys.stderr, flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
