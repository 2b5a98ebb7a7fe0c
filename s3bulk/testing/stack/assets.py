"""Lambda's rule that a function imports only what its deployment package holds.

On AWS each function runs from its own asset: the Lister's carries pyarrow, the others do not, and no asset carries
the local runtime (s3bulk/local, s3bulk/cli, s3bulk/testing). Here every handler shares one interpreter, so a module
one function imported is there for all: a Worker that reached `import pyarrow` would pass here and fail on AWS. So
while a stack runs, an import made by our code (s3bulk, functions) on a thread working for a function must resolve
inside that function's staged asset (`asset.HASH` in the CDK output directory, the template's Code.S3Key), or the
standard library; otherwise it raises ImportError, as the Lambda runtime would. Imports made by moto, botocore or a
test's own code are not checked: they are not in the package either way.
"""

from __future__ import annotations

import builtins
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from s3bulk.testing.stack.iam import principal_of_thread

OURS = ("s3bulk", "functions")


class Asset:
    """One staged deployment package: which dotted module names it can import."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._known: dict[str, bool] = {}
        self._lock = threading.Lock()

    def holds(self, name: str) -> bool:
        with self._lock:
            if name not in self._known:
                self._known[name] = self._find(name)
            return self._known[name]

    def _find(self, name: str) -> bool:
        if name.split(".")[0] in sys.stdlib_module_names:
            return True
        path = self.root
        for part in name.split("."):
            if (path / part).is_dir():
                path = path / part
                continue
            return (path / f"{part}.py").is_file() or any(path.glob(f"{part}.*.so")) or any(path.glob(f"{part}.so"))
        return True


def assets_of(template: Mapping[str, Any], outdir: Path) -> dict[str, Asset]:
    """Each function's staged asset, by logical id; a function whose asset is not staged there is left out (unchecked)."""
    shared: dict[str, Asset] = {}
    out: dict[str, Asset] = {}
    for logical, r in template["Resources"].items():
        if r["Type"] != "AWS::Lambda::Function":
            continue
        key = str(r["Properties"].get("Code", {}).get("S3Key", ""))
        root = outdir / f"asset.{key.removesuffix('.zip')}"
        if key and root.is_dir():
            out[logical] = shared.setdefault(key, Asset(root))
    return out


@contextmanager
def imports_from_assets(assets: Mapping[str, Asset], refused: list[str]) -> Iterator[None]:
    """Refuse, and record in `refused`, an import of ours that the running function's asset does not hold."""
    real: Callable[..., Any] = builtins.__import__

    def guarded(name: str, globals: Mapping[str, Any] | None = None, *args: Any, **kwargs: Any) -> Any:
        level = kwargs.get("level", args[2] if len(args) > 2 else 0)
        if level == 0 and globals is not None and str(globals.get("__name__", "")).startswith(OURS):
            fn = principal_of_thread()
            asset = assets.get(fn) if fn else None
            if asset is not None and not asset.holds(name):
                importer = globals.get("__name__")
                refused.append(f"{fn}: {importer} imports {name}, which its asset does not hold")
                raise ModuleNotFoundError(f"No module named {name!r} (not in the {fn} function's deployment package)", name=name)
        return real(name, globals, *args, **kwargs)

    with mock.patch.object(builtins, "__import__", guarded):
        yield
