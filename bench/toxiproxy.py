"""toxiproxy in front of the S3 server, to add the round-trip latency of a real S3 request.

Built once with `go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0` into a cache
directory outside the repository (the kernel here has no netem).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from types import TracebackType

from s3bulk.localserver import free_ports

VERSION = "v2.12.0"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "s3bulk-bench"


def build() -> Path | None:
    """The toxiproxy server binary, building it if Go is available; None when it cannot be had."""
    binary = CACHE / "bin" / "server"
    if binary.exists():
        return binary
    if shutil.which("go") is None:
        return None
    env = {**os.environ, "GOBIN": str(binary.parent), "GOFLAGS": "-mod=mod"}
    proc = subprocess.run(
        ["go", "install", f"github.com/Shopify/toxiproxy/v2/cmd/server@{VERSION}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return binary if proc.returncode == 0 and binary.exists() else None


class Toxiproxy:
    """A proxy to `upstream` with `latency_ms` added each way; `endpoint_url` points at it."""

    def __init__(self, binary: Path, upstream_port: int, latency_ms_each_way: int) -> None:
        self.binary = binary
        self.upstream_port = upstream_port
        self.latency = latency_ms_each_way
        self.api_port, self.port = free_ports(2)
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _post(self, path: str, doc: dict[str, object]) -> None:
        req = urllib.request.Request(f"http://127.0.0.1:{self.api_port}{path}", data=json.dumps(doc).encode(), method="POST")
        with urllib.request.urlopen(req, timeout=5) as r:
            r.read()

    def __enter__(self) -> Toxiproxy:
        self._proc = subprocess.Popen(
            [str(self.binary), "-host", "127.0.0.1", "-port", str(self.api_port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.api_port}/version", timeout=1).read()
                break
            except OSError:
                time.sleep(0.05)
        self._post(
            "/proxies", {"name": "s3", "listen": f"127.0.0.1:{self.port}", "upstream": f"127.0.0.1:{self.upstream_port}", "enabled": True}
        )
        for stream in ("upstream", "downstream"):
            self._post(
                "/proxies/s3/toxics",
                {"name": f"lat-{stream}", "type": "latency", "stream": stream, "attributes": {"latency": self.latency, "jitter": 0}},
            )
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=10)
