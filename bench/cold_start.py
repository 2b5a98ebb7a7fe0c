"""The Lambda asset: its size (unzipped and zipped) and the cold-start import time of each handler, with and without bytecode.

Builds the asset with the stack's own bundler (infra/bundling.py) for this
machine's architecture, then imports each handler in fresh interpreters of the
functions' Python version (infra/runtime.py) that see
only the asset (as /var/task), once with the precompiled pycs and once with them
removed (what every init paid before: the runtime compiled the code, and could
not write the pycs back to the read-only /var/task). Medians of --runs.

The deployed asset is the arm64 one; its size is measured too (built, not imported).

python -m bench.cold_start [--runs 7]
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import shutil
import statistics
import subprocess
import tempfile
import zipfile
from pathlib import Path

from infra import bundling, runtime

HANDLERS = ("validate", "lister", "worker", "progress", "finalize")
PROBE = "import time, importlib; t = time.perf_counter(); importlib.import_module({mod!r}); print(time.perf_counter() - t)"


def sizes(root: Path) -> tuple[int, int]:
    """Bytes unzipped, bytes as a deflate zip (what CDK uploads and Lambda downloads)."""
    raw = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted(root.rglob("*")):
            if p.is_file():
                z.write(p, p.relative_to(root).as_posix())
    return raw, buf.tell()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    machine = "arm64" if platform.machine().lower() in {"aarch64", "arm64"} else "x86_64"
    with tempfile.TemporaryDirectory() as tmp:
        arm = Path(tmp) / "arm64"
        bundling.build(arm, bundling.PLATFORMS["arm64"])
        raw, zipped = sizes(arm)
        print(f"arm64 asset (deployed): {raw / 2**20:.1f} MiB unzipped, {zipped / 2**20:.1f} MiB zipped")
        compiled = Path(tmp) / "compiled"
        bundling.build(compiled, bundling.PLATFORMS[machine])
        source_only = Path(tmp) / "source-only"
        shutil.copytree(compiled, source_only, ignore=shutil.ignore_patterns("__pycache__"))
        raw_src, zipped_src = sizes(source_only)
        print(f"without bytecode: {raw_src / 2**20:.1f} MiB unzipped, {zipped_src / 2**20:.1f} MiB zipped")
        base = runtime.ensure()  # the runtime's Python version: the pycs are its own
        print(
            f"\nimport time of each handler on Python {runtime.RELEASE}, median of {args.runs} fresh interpreters ({machine}, {os.cpu_count()} cores)"
        )
        print(f"{'handler':<10} {'with pycs':>10} {'without':>10} {'saved':>8}")
        for name in HANDLERS:
            module = f"functions.{name}.handler"
            with_pyc = _timed(base, compiled, module, args.runs)
            without = _timed(base, source_only, module, args.runs)
            print(f"{name:<10} {with_pyc * 1000:>8.0f}ms {without * 1000:>8.0f}ms {without / with_pyc:>7.1f}x")


def _timed(python: str, task: Path, module: str, runs: int) -> float:
    """-I keeps the project's venv and PYTHONPATH out (and ignores PYTHON* variables, so -B stops pyc writes); the task dir goes first, as in Lambda."""
    probe = f"import sys; sys.path.insert(0, {str(task)!r}); " + PROBE.format(mod=module)
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1", "AWS_DEFAULT_REGION": "us-east-1"}
    env |= {"POWERTOOLS_TRACE_DISABLED": "true", "POWERTOOLS_SERVICE_NAME": "s3bulk"}
    out = []
    for _ in range(runs):
        proc = subprocess.run([python, "-I", "-B", "-c", probe], env=env, capture_output=True, text=True, check=True, cwd="/")
        out.append(float(proc.stdout.strip().splitlines()[-1]))
    return statistics.median(out)


if __name__ == "__main__":
    main()
