"""The Lambda assets: our code plus every dependency, vendored for the functions' architecture, compiled.

Two assets: the functions' (requirements-lambda.txt), and the Lister's, the one function
that reads manifests, which adds the columnar reader for Parquet and ORC
(requirements-lambda-manifest.txt, pyarrow). The worker's asset stays as lean as before.

Why vendor: the python3.x runtime ships whatever boto3/botocore AWS last put in
that Region (older ones lack `Config(request_checksum_calculation=...)`, which the
S3 client factory passes), and AWS's packaging guide says to bundle every
dependency. So the asset holds the exact versions of requirements-lambda.txt, the
ones the test suite runs, and shadows the runtime's SDK (`/var/task` is first on
`sys.path`).

How, without Docker: pip fetches the wheels for the target platform
(`--platform manylinux2014_aarch64 --only-binary=:all:`), from the package index
only, through CDK's local bundling (an `ILocalBundling` implemented here, run at
synth). The vendored tree is built once per requirements hash and kept under
`build/lambda-deps/`, so repeated syntheses copy it instead of calling pip.

Bytecode: every module is compiled with `unchecked-hash` pycs, so Lambda's init
imports them without compiling (the runtime's bytecode check would otherwise
compare the zip's 2-second mtimes) and the files are the same on every build;
`-d /var/task` puts the paths Lambda will show into tracebacks. A pyc is per
Python version, so an interpreter of the runtime's version compiles them
(`infra/runtime.py find`: the synthesizing one, `python3.13` on PATH, one an
installer left, or the one `make runtime-python` builds). Without one, synth
refuses in one line; `-c precompile=false` ships the sources instead (correct,
slower to start), so the asset depends on the deploy's settings alone, never on
what the deploying machine happens to have.

Platform: python3.13 runs on Amazon Linux 2023 (glibc 2.34), so pip takes
manylinux_2_28 wheels (current pyarrow ships no others) as well as manylinux2014.

The asset hash is computed here from what goes in (requirements, platform,
Python version and every source file), so it is stable across syntheses and
changes exactly when the code or a pin does.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_lambda as lambda_

from infra import runtime

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "requirements-lambda.txt"
# The Lister's: the base pins plus pyarrow (Parquet and ORC manifests).
MANIFEST_REQUIREMENTS = ROOT / "requirements-lambda-manifest.txt"
# Parts of vendored packages nothing in a function loads: C headers, Cython sources, pyarrow's own tests and its
# Flight RPC libraries (no other library links them). Removed after pip, so part of the tree's hash.
PRUNED = (
    "pyarrow/include",
    "pyarrow/src",
    "pyarrow/tests",
    "pyarrow/*.pyx",
    "pyarrow/*.pxd",
    "pyarrow/includes",
    "pyarrow/*flight*",
)
CACHE = ROOT / "build" / "lambda-deps"
RUNTIME_PYTHON = runtime.VERSION
# The newest manylinux the runtime's glibc (2.34) loads; pip is also given manylinux2014 (`pip_platforms`).
PLATFORMS = {"arm64": "manylinux_2_28_aarch64", "x86_64": "manylinux_2_28_x86_64"}
# The code the functions run: the shared core and the AWS side, never the local runtime or the test doubles.
SOURCES = ("s3bulk", "functions")
EXCLUDED = ("s3bulk/local", "s3bulk/testing", "s3bulk/cli")
TASK_ROOT = "/var/task"
# Where the deployer's process code sits in the asset; the worker's S3BULK_PROCESS_CODE points here.
PROCESS_DIR = "process_code"


def source_files() -> list[Path]:
    """Every file of ours that goes into the asset, relative to the repository root, in a stable order."""
    out = []
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*")):
            rel = path.relative_to(ROOT)
            text = rel.as_posix()
            if not path.is_file() or "__pycache__" in rel.parts or path.suffix == ".pyc":
                continue
            if any(text == e or text.startswith(e + "/") for e in EXCLUDED):
                continue
            out.append(rel)
    return out


def _python_tag() -> str:
    return f"{RUNTIME_PYTHON[0]}.{RUNTIME_PYTHON[1]}"


def pip_platforms(platform: str) -> list[str]:
    """pip's --platform takes one tag and no older ones: a manylinux_2_28 platform also takes manylinux2014 wheels."""
    older = platform.replace("manylinux_2_28_", "manylinux2014_")
    return [platform] if older == platform else [platform, older]


def _pins(requirements: Path) -> bytes:
    """A requirements file's bytes with those of every file it includes (`-r`), so a pin changed in either counts."""
    out = [requirements.read_bytes()]
    for line in requirements.read_text().splitlines():
        if line.startswith("-r "):
            out.append(_pins(requirements.parent / line[3:].strip()))
    return b"\0".join(out)


def deps_hash(platform: str, requirements: Path | None = None, precompile: bool = True) -> str:
    """What the vendored tree depends on: the pins, the platform, the Python version, whether it is compiled (the
    deploy's `precompile` setting, never what this machine happens to have), what is pruned."""
    h = hashlib.sha256()
    h.update(_pins(requirements or REQUIREMENTS))
    h.update(f"\0{platform}\0{_python_tag()}\0{precompile}".encode())
    if requirements is not None and requirements != REQUIREMENTS:  # the base tree's hash (and so its cache) is as before
        h.update("\0".join(PRUNED).encode())
    return h.hexdigest()[:16]


def user_files(process_code: Path | None) -> list[Path]:
    """The deployer's process code (-c process_code=DIR), relative to DIR, in a stable order; no caches."""
    if process_code is None:
        return []
    return [
        p.relative_to(process_code)
        for p in sorted(process_code.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    ]


def asset_hash(platform: str, process_code: Path | None = None, requirements: Path | None = None, precompile: bool = True) -> str:
    h = hashlib.sha256(deps_hash(platform, requirements, precompile).encode())
    for rel in source_files():
        h.update(b"\0" + rel.as_posix().encode() + b"\0")
        h.update((ROOT / rel).read_bytes())
    if process_code is not None:
        for rel in user_files(process_code):
            h.update(b"\0" + PROCESS_DIR.encode() + b"/" + rel.as_posix().encode() + b"\0")
            h.update((process_code / rel).read_bytes())
    return h.hexdigest()


class NoRuntimePython(ValueError):
    """`precompile` is on and no interpreter of the runtime's version is on this machine: said in one line at synth."""


def compiler() -> str:
    """The interpreter that compiles the asset's bytecode, or NoRuntimePython naming both ways on."""
    python = runtime.find()
    if python is None:
        raise NoRuntimePython(
            f"context precompile: the functions' bytecode is compiled at synth by a Python {_python_tag()} (their runtime's), "
            f"and this machine has none: install one (`make runtime-python`, docs/deploy.md says how on macOS and Ubuntu) "
            f"or set S3BULK_RUNTIME_PYTHON, or deploy with -c precompile=false (sources only, the same asset from any "
            f"machine; each cold start compiles what it imports, about 0.5 s more)"
        )
    return python


def _compile(directory: Path, ddir: str = TASK_ROOT, precompile: bool = True) -> None:
    """`ddir`: where `directory` will sit in the function, for the paths tracebacks show."""
    if not precompile:
        return
    python = compiler()
    done = subprocess.run(
        [python, "-I", "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash", "-d", ddir, str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"compiling the Lambda asset in {directory} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")


def _prune(tree: Path) -> None:
    for pattern in PRUNED:
        for path in sorted(tree.glob(pattern)):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()


def vendored(platform: str, cache: Path = CACHE, requirements: Path | None = None, precompile: bool = True) -> Path:
    """The dependency tree for `platform`, built once per requirements hash (pip, wheels only, no Docker)."""
    target = cache / deps_hash(platform, requirements, precompile)
    if target.is_dir():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="building-", dir=cache))
    try:
        subprocess.run(
            [
                sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
                *(f"--platform={p}" for p in pip_platforms(platform)), "--only-binary=:all:", "--implementation", "cp", "--python-version", _python_tag(),
                "--target", str(work), "-r", str(requirements or REQUIREMENTS),
            ],
            check=True,
        )  # fmt: skip
        shutil.rmtree(work / "bin", ignore_errors=True)  # console scripts: nothing in Lambda runs them
        if requirements is not None and requirements != REQUIREMENTS:
            _prune(work)
        _compile(work, precompile=precompile)
        try:
            work.rename(target)  # atomic: a half-built tree is never taken for a cached one
        except OSError:
            if not target.is_dir():
                raise
            shutil.rmtree(work, ignore_errors=True)  # another synth (a second process) built the same tree first: use it
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return target


def _copy(src: str, dst: str) -> None:
    """Hard links where the filesystem allows (the cache is read-only by convention), copies elsewhere."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def build(output: Path, platform: str, process_code: Path | None = None, requirements: Path | None = None, precompile: bool = True) -> None:
    """Fill `output` as /var/task will be: the vendored dependencies, our sources, and the deployer's process code, compiled
    (unless `precompile` is off)."""
    shutil.copytree(vendored(platform, requirements=requirements, precompile=precompile), output, dirs_exist_ok=True, copy_function=_copy)
    for rel in source_files():
        dest = output / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dest)
    for top in SOURCES:
        _compile(output / top, f"{TASK_ROOT}/{top}", precompile)
    if process_code is not None:
        for rel in user_files(process_code):
            dest = output / PROCESS_DIR / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(process_code / rel, dest)
        _compile(output / PROCESS_DIR, f"{TASK_ROOT}/{PROCESS_DIR}", precompile)


@jsii.implements(cdk.ILocalBundling)
class VendoredBundling:
    """CDK local bundling: runs `build` at synth instead of a Docker container."""

    def __init__(self, platform: str, process_code: Path | None = None, requirements: Path | None = None, precompile: bool = True) -> None:
        self.platform = platform
        self.process_code = process_code
        self.requirements = requirements
        self.precompile = precompile

    def try_bundle(self, output_dir: str, *args: Any, **kwargs: Any) -> bool:
        build(Path(output_dir), self.platform, self.process_code, self.requirements, self.precompile)
        return True


def lambda_code(
    architecture: lambda_.Architecture, process_code: Path | None = None, requirements: Path | None = None, precompile: bool = True
) -> lambda_.Code:
    """An asset for the stack's functions (Validate imports the process code too, to refuse a job naming a missing one);
    with `requirements=MANIFEST_REQUIREMENTS`, the Lister's, which reads manifests (no process code: it runs none)."""
    platform = PLATFORMS[architecture.name]
    return lambda_.Code.from_asset(
        str(ROOT / "functions"),
        asset_hash_type=cdk.AssetHashType.CUSTOM,
        asset_hash=asset_hash(platform, process_code, requirements, precompile),
        bundling=cdk.BundlingOptions(
            image=lambda_.Runtime.PYTHON_3_13.bundling_image,  # never pulled: the local bundling always succeeds
            local=VendoredBundling(platform, process_code, requirements, precompile),
        ),
    )
