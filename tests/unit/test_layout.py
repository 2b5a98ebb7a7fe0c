"""The layout says where code runs, and the import graph keeps it so.

- Each Lambda handler, imported in a clean interpreter, pulls in nothing of the local runtime
  (engine, SQLite ledger, rich) or the test doubles.
- s3bulk/ and infra/ have no import cycle, counting imports made inside functions.
- Each subpackage imports only the layers below it.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HANDLERS = [
    "functions.validate.handler",
    "functions.lister.handler",
    "functions.worker.handler",
    "functions.progress.handler",
    "functions.finalize.handler",
    "functions.ended.handler",
]
# Modules the Lambda path must never load: the local runtime and its dependencies, and the test doubles.
LOCAL_ONLY = ("s3bulk.local", "s3bulk.testing", "s3bulk.cli", "sqlite3", "_sqlite3", "rich")


@pytest.mark.parametrize("handler", HANDLERS)
def test_a_lambda_handler_imports_nothing_of_the_local_runtime(handler: str) -> None:
    code = f"import importlib, json, sys; importlib.import_module({handler!r}); print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120)
    loaded = json.loads(out.stdout)
    assert "s3bulk.aws.steps" in loaded  # the closure really was the handler's
    assert [m for m in loaded if m == "s3bulk" or m.startswith(LOCAL_ONLY)] == ["s3bulk"]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _graph(packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Module -> the project modules it imports, anywhere in its body (function-level imports included)."""
    files = [p for pkg in packages for p in (ROOT / pkg).rglob("*.py")]
    modules = {_module_name(p): p for p in files}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" for a in node.names] + [base]
            for target in targets:
                # the longest project module the import names (from pkg import module, or from module import name)
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    deps.add(target)
        graph[name] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_cycle_finder_finds_a_cycle_hidden_in_a_function() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_s3bulk_and_infra_have_no_import_cycle() -> None:
    graph = _graph(("s3bulk", "infra"))
    assert "s3bulk.ops.batch" in graph["s3bulk.local.engine"]  # the graph sees real edges
    assert _cycles(graph) == []


# What each part of s3bulk may import. The package root is shared by both runtimes.
ALLOWED = {
    "root": {"root"},
    "bodies": {"root", "bodies"},
    "ops": {"root", "bodies", "ops"},
    "s3": {"root", "s3"},
    "testing": {"root", "testing"},
    "local": {"root", "bodies", "ops", "s3", "local"},
    "aws": {"root", "bodies", "ops", "s3", "aws"},
    "cli": {"root", "bodies", "ops", "s3", "local", "aws", "cli", "emulator"},
    # the stack emulator (s3bulk/testing/stack: the tests' whole-stack harness and `s3bulk demo --stack`) drives the AWS side
    "emulator": {"root", "bodies", "ops", "s3", "aws", "local", "testing", "emulator"},
}


# The shared core: the package root's modules and these packages, which both runtimes use.
CORE = {"job", "source", "report", "breakers"}


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in CORE:
        return "root"
    if module in {"s3bulk.cli", "s3bulk.__main__"}:  # the command and its entry point
        return "cli"
    if module.startswith("s3bulk.testing.stack"):
        return "emulator"
    return parts[1] if len(parts) > 2 else "root"


def test_each_layer_imports_only_the_layers_below_it() -> None:
    graph = _graph(("s3bulk",))
    wrong = sorted(
        f"{module} imports {dep}"
        for module, deps in graph.items()
        for dep in deps
        if module != "s3bulk" and dep != "s3bulk" and _layer(dep) not in ALLOWED[_layer(module)]
    )
    assert wrong == []


def test_a_local_run_loads_none_of_the_stacks_client_code() -> None:
    """Start-up is part of every local job's wall time: `s3bulk run` loads its command's module only (cli/__init__)."""
    code = "import json, sys; import s3bulk.cli, s3bulk.cli.local; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120)
    loaded = json.loads(out.stdout)
    assert "s3bulk.local.engine" in loaded  # the run's own modules were loaded
    assert [m for m in loaded if m.startswith(("s3bulk.aws.", "s3bulk.cli.remote", "s3bulk.local.demo"))] == []


# A module past this many lines holds more than one concern: split it (docs/architecture.md names each part), or say
# in its docstring why it stays whole ("one concern:" and the reason).
MAX_LINES = 600
# The package root holds the shared core's leaves; everything else lives in a package whose name says what it holds.
MAX_ROOT_MODULES = 6


def test_no_module_of_s3bulk_is_over_600_lines_unless_its_docstring_says_why() -> None:
    over = []
    for path in sorted((ROOT / "s3bulk").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > MAX_LINES and "one concern:" not in (ast.get_docstring(ast.parse(text)) or ""):
            over.append(f"{path.relative_to(ROOT)}: {text.count(chr(10))} lines")
    assert over == []


def test_the_package_root_holds_at_most_six_modules() -> None:
    modules = sorted(p.name for p in (ROOT / "s3bulk").glob("*.py") if p.name not in {"__init__.py", "__main__.py"})
    assert len(modules) <= MAX_ROOT_MODULES, modules
    assert {"store.py"} <= set(modules)  # the port stays at the root
