"""The tools compared, each as a command line, and a runner that measures a child's wall time, CPU and peak RSS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from s3bulk.local.server import ACCESS_KEY, SECRET_KEY

BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Measure:
    seconds: float
    cpu_seconds: float
    peak_rss_mb: float


def tool_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "RCLONE_"))}
    env.update(
        AWS_ACCESS_KEY_ID=ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY=SECRET_KEY,
        AWS_DEFAULT_REGION="us-east-1",
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
    )
    return env


def rclone_env(endpoint: str) -> dict[str, str]:
    env = tool_env()
    env.update(
        RCLONE_CONFIG_LS3_TYPE="s3",
        RCLONE_CONFIG_LS3_PROVIDER="Other",
        RCLONE_CONFIG_LS3_ENDPOINT=endpoint,
        RCLONE_CONFIG_LS3_ACCESS_KEY_ID=ACCESS_KEY,
        RCLONE_CONFIG_LS3_SECRET_ACCESS_KEY=SECRET_KEY,
        RCLONE_CONFIG_LS3_FORCE_PATH_STYLE="true",
        RCLONE_CONFIG=os.devnull,
    )
    return env


def measure(argv: list[str], env: dict[str, str], *, timeout: float = 1800) -> Measure:
    """Run a child to completion; CPU and peak RSS come from its own rusage (wait4), children included."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err)
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                raise TimeoutError(f"{argv[0]} ran over {timeout}s")
            time.sleep(0.005)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{' '.join(argv[:4])} exited {proc.returncode}: {err.read()[-1500:].decode(errors='replace')}")
    return Measure(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def high_water(pid: int) -> int:
    """A live process's peak RSS so far (VmHWM), in bytes; 0 once it has gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmHWM:")), 0)


def run_with_peak_rss(argv: list[str], env: dict[str, str], *, timeout: float = 900) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run a child and return it with the peak RSS it reached: its own high-water mark, read every 20 ms.

    Unlike `measure` (RUSAGE_CHILDREN, which floors at the largest child this process ever had), this is
    the child's own figure.
    """
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak, stop = 0, threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, high_water(proc.pid))
            stop.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate(timeout=timeout)
    stop.set()
    sampler.join()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), peak


def s3bulk_job(tmp: Path, doc: dict[str, object]) -> Path:
    path = tmp / f"job-{time.monotonic_ns()}.json"
    path.write_text(json.dumps(doc))
    return path


Runner = Callable[[str, str, str, str, str], Measure]
"""(endpoint, src_bucket, src_prefix, dst_bucket, dst_prefix) -> Measure"""


def copy_tools(tmp: Path, s3bulk_args: tuple[str, ...] = (), s5cmd_args: tuple[str, ...] = ()) -> dict[str, Runner]:
    """Each tool's copy command; `s5cmd_args` go before s5cmd's `cp` (e.g. --numworkers 128 for the +20 ms leg)."""
    env = tool_env()

    def s3bulk(endpoint: str, sb: str, sp: str, db: str, dp: str) -> Measure:
        job = s3bulk_job(tmp, {"operation": "copy", "source": {"bucket": sb, "prefix": sp}, "destination": {"bucket": db, "prefix": dp}})
        return measure([str(BIN / "s3bulk"), "run", str(job), "--endpoint-url", endpoint, "-q", *s3bulk_args], env)

    def s5cmd(endpoint: str, sb: str, sp: str, db: str, dp: str) -> Measure:
        return measure([str(BIN / "s5cmd"), "--endpoint-url", endpoint, *s5cmd_args, "cp", f"s3://{sb}/{sp}*", f"s3://{db}/{dp}"], env)

    def rclone(endpoint: str, sb: str, sp: str, db: str, dp: str) -> Measure:
        args = ["copy", f"ls3:{sb}/{sp}", f"ls3:{db}/{dp}", "--transfers", "32", "--checkers", "32", "--s3-no-check-bucket"]
        return measure([str(BIN / "rclone"), *args], rclone_env(endpoint))

    def awscli(endpoint: str, sb: str, sp: str, db: str, dp: str) -> Measure:
        return measure(
            [str(BIN / "aws"), "--endpoint-url", endpoint, "s3", "cp", "--recursive", "--quiet", f"s3://{sb}/{sp}", f"s3://{db}/{dp}"], env
        )

    def baseline(endpoint: str, sb: str, sp: str, db: str, dp: str) -> Measure:
        return measure([sys.executable, "-m", "bench.baseline", "copy", endpoint, sb, sp, db, dp], env)

    return {"s3bulk": s3bulk, "s5cmd": s5cmd, "rclone": rclone, "aws s3": awscli, "boto3 baseline": baseline}


def delete_tools(tmp: Path) -> dict[str, Callable[[str, str, str], Measure]]:
    env = tool_env()

    def s3bulk(endpoint: str, bucket: str, prefix: str) -> Measure:
        job = s3bulk_job(tmp, {"operation": "delete", "source": {"bucket": bucket, "prefix": prefix}})
        return measure([str(BIN / "s3bulk"), "run", str(job), "--endpoint-url", endpoint, "-q"], env)

    def s5cmd(endpoint: str, bucket: str, prefix: str) -> Measure:
        return measure([str(BIN / "s5cmd"), "--endpoint-url", endpoint, "rm", f"s3://{bucket}/{prefix}*"], env)

    def rclone(endpoint: str, bucket: str, prefix: str) -> Measure:
        return measure(
            [str(BIN / "rclone"), "delete", f"ls3:{bucket}/{prefix}", "--checkers", "32", "--transfers", "32"], rclone_env(endpoint)
        )

    def awscli(endpoint: str, bucket: str, prefix: str) -> Measure:
        return measure([str(BIN / "aws"), "--endpoint-url", endpoint, "s3", "rm", "--recursive", "--quiet", f"s3://{bucket}/{prefix}"], env)

    def baseline(endpoint: str, bucket: str, prefix: str) -> Measure:
        return measure([sys.executable, "-m", "bench.baseline", "delete", endpoint, bucket, prefix], env)

    return {"s3bulk": s3bulk, "s5cmd": s5cmd, "rclone": rclone, "aws s3": awscli, "boto3 baseline": baseline}
