"""The `s3bulk` command (and `python -m s3bulk`): a Ctrl-C while the program still loads ends quietly.

Loading boto3, rich and the rest takes about a second; a signal in that time would otherwise
print a traceback from some import. The CLI then routes signals itself (local/interrupt.py).
"""

from __future__ import annotations

import atexit
import gc
import os
import signal
import sys
import threading
from types import FrameType
from typing import NoReturn


def _while_loading(signum: int, frame: FrameType | None) -> None:
    _exiting()
    print("interrupted while starting; nothing was changed", file=sys.stderr, flush=True)
    raise SystemExit(130)


def _exiting() -> None:
    """Once the outcome is known, a further signal (a second Ctrl-C, `timeout`'s group delivery) must not change it."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)


def run() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _while_loading)
    # The collector would walk the import's hundreds of thousands of new objects again and again (~35 ms), and
    # none is garbage: it stays off until the command's own modules are loaded too (cli.loaded()).
    gc.disable()
    from s3bulk.cli import main

    code = main()
    _exiting()
    _exit_now(code)


def _exit_now(code: int) -> NoReturn:
    """Exit without freeing every module's objects one by one (pydantic's, botocore's, rich's): that teardown takes
    ~70 ms, a tenth of a small job's wall time, and frees nothing the OS would not. Only once nothing else runs:
    atexit's handlers run first and the output is flushed; a live thread, or output that cannot be flushed,
    gets the ordinary exit instead (mypy ends the same way)."""
    if any(t is not threading.main_thread() and t.is_alive() for t in threading.enumerate()):
        sys.exit(code)
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)
    os._exit(code)


if __name__ == "__main__":
    run()
