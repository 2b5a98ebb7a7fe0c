"""moto as its own process (`python -m moto.server`), untouched by the test session's in-process patches.

tests/integration/moto_s3.py patches moto inside the pytest process, so a ThreadedMotoServer there answers as S3
does where moto alone would not. A differential test needs moto as it is shipped: this runs it in a child process
on a free loopback port, stopped (and its temp dir removed) at the end.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.integration.versitygw import LoopbackServer


class PlainMotoServer(LoopbackServer):
    """Unpatched moto (the version requirements-dev.txt pins); accepts any credentials."""

    name = "moto"

    def command(self, workdir: Path) -> list[str]:
        return [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)]
