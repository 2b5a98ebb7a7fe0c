"""The `s3bulk` command (and `python -m s3bulk`): a Ctrl-C while the program still loads ends quietly.

Loading boto3, rich and the rest takes about a second; a signal in that time would otherwise
print a traceback from some import. The CLI then routes signals itself (local/interrupt.py).
"""

from __future__ import annotations

import signal
import sys
from types import FrameType


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
    from s3bulk.cli import main

    code = main()
    _exiting()
    sys.exit(code)


if __name__ == "__main__":
    run()
