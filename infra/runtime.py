"""The functions' Python: the Lambda runtime's version, and an interpreter of that version on this machine.

The functions run python3.13 on Amazon Linux 2023 (glibc 2.34, so manylinux_2_28 wheels such as
current pyarrow load; AWS deprecates python3.13 in 2029). python3.11 ran on Amazon Linux 2, whose
end of life was 2026-06-30. The local CLI keeps running on Python 3.11 and later.

An interpreter of the runtime's version is needed twice, and neither is the one that synthesizes:
the asset's bytecode is compiled at synth (a pyc is per version), and the tests run the asset on a
bare interpreter of that version, as Lambda does. `find()` looks for one: this interpreter,
`$S3BULK_RUNTIME_PYTHON`, `python3.13` on PATH, one Homebrew, uv, pyenv or deadsnakes installed off PATH, or the
one `ensure()` built. Where it cannot build one (macOS, a Linux without apt), it says in one line how to get one.
`ensure()` builds
CPython once per machine from the upstream source Debian ships for its stable release (checksum
pinned), fetched from the Debian mirror apt already uses, into `~/.cache/s3bulk/python-3.13.5/`:
no package registry ships a CPython interpreter, and the machine's C toolchain builds one in minutes.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request
from pathlib import Path

from infra.buildcache import build_once

VERSION = (3, 13)
NAME = f"python{VERSION[0]}.{VERSION[1]}"
RELEASE = "3.13.5"
# Debian trixie's python3.13 source: the upstream release tarball, byte for byte, at this path of any Debian mirror.
SOURCE_PATH = "pool/main/p/python3.13/python3.13_3.13.5.orig.tar.xz"
SOURCE_SHA256 = "93e583f243454e6e9e4588ca2c2662206ad961659863277afcdb96801647d640"
# The compiler, and the headers for what the functions import: ssl (botocore), zlib (gzip'd key logs), ctypes, bz2, lzma.
BUILD_PACKAGES = ("gcc", "make", "libssl-dev", "zlib1g-dev", "libffi-dev", "libbz2-dev", "liblzma-dev")
# CPython's build succeeds without an optional module whose headers are missing: a build is kept only if these import.
NEEDED_MODULES = ("ssl", "zlib", "ctypes", "bz2", "lzma")
BUILD_TIMEOUT = 3600.0
APT_SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))


class RuntimePythonError(RuntimeError):
    pass


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "s3bulk" / f"python-{RELEASE}"


@functools.lru_cache(maxsize=32)
def _version_of(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [python, "-I", "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError:
        return None
    parts = out.stdout.split()
    return (int(parts[0]), int(parts[1])) if out.returncode == 0 and len(parts) == 2 else None


# Where the usual installers put a python3.13 that may not be on PATH: Homebrew (Apple silicon, Intel), deadsnakes and
# distribution packages, `uv python install 3.13`, pyenv. Globs newest first; a home-relative one under $HOME.
INSTALLED = (
    "/opt/homebrew/bin/{name}",
    "/opt/homebrew/opt/python@{version}/bin/{name}",
    "/usr/local/bin/{name}",
    "/usr/local/opt/python@{version}/bin/{name}",
    "/usr/bin/{name}",
    "~/.local/share/uv/python/cpython-{version}.*/bin/{name}",
    "~/.local/bin/{name}",
    "~/.pyenv/versions/{version}.*/bin/{name}",
)
# How to get one, by system: said in one line where s3bulk cannot build it (anywhere but Debian or Ubuntu as root).
HOW_TO_GET = (
    "macOS: brew install python@{version}, or uv python install {version}; Ubuntu: uv python install {version}, or "
    "apt install {name} from the deadsnakes PPA; then run this again, or set S3BULK_RUNTIME_PYTHON to its path"
)


def _installed(home: Path | None = None) -> list[str]:
    """The interpreters the usual installers left, in INSTALLED's order (newest patch release first within a glob)."""
    version = "{}.{}".format(*VERSION)
    home = home or Path.home()
    out: list[str] = []
    for pattern in INSTALLED:
        path = pattern.format(name=NAME, version=version)
        root, rel = (home, path[2:]) if path.startswith("~/") else (Path("/"), path[1:])
        out += sorted((str(p) for p in root.glob(rel)), key=_release_key, reverse=True) if "*" in rel else [str(root / rel)]
    pyenv_root = os.environ.get("PYENV_ROOT")
    if pyenv_root:
        found = Path(pyenv_root).glob(f"versions/{version}.*/bin/{NAME}")
        out += sorted((str(p) for p in found), key=_release_key, reverse=True)
    return out


def _release_key(path: str) -> tuple[int, ...]:
    """3.13.10 after 3.13.9: the numbers in the path, compared as numbers."""
    return tuple(int(n) for n in re.findall(r"\d+", path))


def find() -> str | None:
    """An interpreter of the runtime's version, or None: this one, $S3BULK_RUNTIME_PYTHON, python3.13 on PATH, one the
    usual installers left off PATH (Homebrew, uv, pyenv, deadsnakes), the built one."""
    if sys.version_info[:2] == VERSION:
        return sys.executable
    candidates = [os.environ.get("S3BULK_RUNTIME_PYTHON"), shutil.which(NAME), *_installed(), str(cache_dir() / "bin" / NAME)]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and _version_of(candidate) == VERSION:
            return candidate
    return None


def can_build() -> bool:
    """Building needs Debian's source and build packages: Linux with apt (the packages then installed as root, or said)."""
    return sys.platform.startswith("linux") and shutil.which("apt-get") is not None


def debian_mirrors(sources: tuple[Path, ...] = APT_SOURCES) -> list[str]:
    """The archive URIs apt is configured with (one-line and deb822 forms), security archives last."""
    lines: list[str] = []
    for root in sources:
        files = sorted(root.glob("*.list")) + sorted(root.glob("*.sources")) if root.is_dir() else [root]
        for file in files:
            with contextlib.suppress(OSError):
                lines += file.read_text().splitlines()
    uris: list[str] = []
    for line in (raw.strip() for raw in lines):
        if line.startswith("deb ") or line.startswith("deb-src "):
            rest = re.sub(r"^\[[^\]]*\]\s*", "", line.split(None, 1)[1])  # the options, however many: [arch=amd64 signed-by=...]
            found = rest.split()[:1]
        elif line.startswith("URIs:"):
            found = line.split()[1:]
        else:
            continue
        uris += [u.rstrip("/") for u in found if u.startswith(("http://", "https://")) and u.rstrip("/") not in uris]
    return sorted(uris, key=lambda u: u.endswith("-security"))


def _fetch_source(into: Path) -> Path:
    override = os.environ.get("S3BULK_DEBIAN_MIRROR")
    mirrors = [override.rstrip("/")] if override else debian_mirrors()
    if not mirrors:
        raise RuntimePythonError(
            f"building {NAME} needs its source from a Debian mirror and apt names none: set S3BULK_DEBIAN_MIRROR, "
            f"or set S3BULK_RUNTIME_PYTHON to a {NAME} interpreter"
        )
    target = into / "python.tar.xz"
    errors = []
    for mirror in mirrors:
        url = f"{mirror}/{SOURCE_PATH}"
        try:
            with urllib.request.urlopen(url, timeout=120) as response, open(target, "wb") as out:
                shutil.copyfileobj(response, out, 1 << 20)
        except OSError as e:
            errors.append(f"{url}: {e}")
            continue
        digest = hashlib.sha256(target.read_bytes()).hexdigest()
        if digest == SOURCE_SHA256:
            return target
        errors.append(f"{url}: sha256 {digest}, expected {SOURCE_SHA256}")
    raise RuntimePythonError(f"could not fetch {NAME}'s source: " + "; ".join(errors))


def _missing_packages() -> list[str]:
    if shutil.which("dpkg-query") is None:
        return []
    out = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package} ${db:Status-Status}\\n", *BUILD_PACKAGES], capture_output=True, text=True, check=False
    )
    installed = {line.split()[0] for line in out.stdout.splitlines() if line.endswith(" installed")}
    return [p for p in BUILD_PACKAGES if p not in installed]


def _install_build_packages() -> None:
    missing = _missing_packages()
    if not missing:
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise RuntimePythonError(f"building {NAME} needs these packages: apt-get install {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing], check=True, env=env, stdout=subprocess.DEVNULL)


def _build(work: Path, prefix: Path) -> None:
    tarball = _fetch_source(work)
    with tarfile.open(tarball) as tar:
        if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later (Debian 12's 3.11.2 has no filters)
            tar.extractall(work, filter="data")
        else:
            tar.extractall(work)  # the tarball's checksum is pinned
    tarball.unlink()
    [src] = [p for p in work.iterdir() if p.is_dir()]
    jobs = str(os.cpu_count() or 2)
    steps = (
        ["./configure", f"--prefix={prefix}", "--without-ensurepip", "--disable-test-modules", "--quiet"],
        ["make", f"-j{jobs}", "--silent"],
        ["make", "--silent", "altinstall"],
    )
    deadline = time.monotonic() + BUILD_TIMEOUT
    for step in steps:
        done = subprocess.run(step, cwd=src, capture_output=True, text=True, timeout=max(1.0, deadline - time.monotonic()), check=False)
        if done.returncode != 0:
            raise RuntimePythonError(f"building {NAME}: {' '.join(step)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    shutil.rmtree(src)


def ensure() -> str:
    """An interpreter of the runtime's version: one already on this machine, else CPython built once into the cache."""
    found = find()
    if found:
        return found
    if not can_build():
        raise RuntimePythonError(
            f"no {NAME} found, and s3bulk builds one only on Debian or Ubuntu with apt (as root): "
            + HOW_TO_GET.format(name=NAME, version="{}.{}".format(*VERSION))
        )
    final = cache_dir()
    python = final / "bin" / NAME

    def build(work: Path) -> Path:
        _install_build_packages()
        prefix = work / "prefix"
        _build(work, prefix)
        check = subprocess.run(
            [str(prefix / "bin" / NAME), "-I", "-c", f"import {', '.join(NEEDED_MODULES)}"], capture_output=True, text=True, check=False
        )
        if check.returncode != 0:  # kept, it would be taken for a good build for ever
            raise RuntimePythonError(
                f"the CPython {RELEASE} built lacks a module the functions import ({check.stderr.strip().splitlines()[-1]}): "
                f"install {' '.join(BUILD_PACKAGES)} and run it again"
            )
        return prefix  # the interpreter finds its library next to its binary, so the move is safe

    build_once(
        final,
        f"python-{RELEASE}",
        ready=lambda: python.is_file() and _version_of(str(python)) == VERSION,
        build=build,
        what=f"CPython {RELEASE} (the functions' runtime)",
    )
    _version_of.cache_clear()  # a broken build's answer must not stand for this one's
    if _version_of(str(python)) != VERSION:
        raise RuntimePythonError(f"the CPython built into {final} does not run")
    return str(python)


def main() -> int:
    """`make runtime-python`: the interpreter's path, or one line saying what is missing (exit 2)."""
    try:
        print(ensure())
    except RuntimePythonError as exc:
        print(f"s3bulk: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
