"""Every command of README's sh blocks, run as README shows it: `s3bulk serve --seed`, its printed exports, then each command
of the first-job block in order against that server, each checked by its exit code and the whole by boto3.

A command this test does not know fails it, so a new README line is never left unchecked. The set-up block's two
`make` targets and `s3bulk demo --stack` are run elsewhere (named below); docs/deploy.md's block is followed by
tests/infra/test_readme_deploy.py.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import boto3

ROOT = Path(__file__).resolve().parents[2]
# README commands another test runs, and which: kept honest by the assertions in the test below.
RUN_ELSEWHERE = {
    "make demo": "tests/integration/test_demo.py runs `s3bulk demo`, the target's one command",
    "make test": ".ci/run runs it",
    ".venv/bin/s3bulk demo --stack": "tests/integration/test_demo.py::test_demo_stack_runs_the_synthesized_pipeline_here_and_verifies_every_object_apart_from_s3bulk",
}


def blocks() -> list[list[str]]:
    """README's sh blocks, each as its command lines (comments and blank lines dropped)."""
    text = (ROOT / "README.md").read_text()
    out = []
    for body in re.findall(r"```sh\n(.*?)```", text, re.S):
        lines = [line.split("  #", 1)[0].split(" #", 1)[0].strip() for line in body.splitlines()]
        out.append([line for line in lines if line and not line.startswith("#")])
    return out


def test_the_elsewhere_commands_are_what_their_tests_run() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo: .*\n\t\$\(BIN\)/s3bulk demo\n", makefile, re.M)
    assert re.search(r"^test: .*\n\t\$\(BIN\)/pytest", makefile, re.M) and "make test" in (ROOT / ".ci" / "run").read_text()
    demo_tests = (ROOT / "tests" / "integration" / "test_demo.py").read_text()
    name = RUN_ELSEWHERE[".venv/bin/s3bulk demo --stack"].rsplit("::", 1)[1]
    assert f"def {name}(" in demo_tests and 'run_cli("demo", "--stack", env=env)' in demo_tests  # README's command, as shown


def test_every_readme_command_runs_as_shown_against_s3bulk_serve(tmp_path: Path) -> None:
    work = tmp_path / "clone"  # README's commands run from the clone's root: its events/ and .venv/, nothing written there
    work.mkdir()
    for name in ("events", ".venv"):
        (work / name).symlink_to(ROOT / name)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "S3BULK_STATE_DIR": str(tmp_path / "state")}
    ran: list[str] = []
    server: subprocess.Popen[str] | None = None
    try:
        for block in blocks():
            for line in block:
                if line in RUN_ELSEWHERE:
                    ran.append(line)
                    continue
                argv = shlex.split(line)
                if argv[:2] == [".venv/bin/s3bulk", "serve"]:
                    server, exports = _serve(argv, work, env)
                    env |= exports
                elif argv[0] == "export":
                    shown = dict(a.split("=", 1) for a in argv[1:])
                    assert server is not None and set(shown) <= set(env), (shown, env)  # README's names are the ones printed
                    assert all(env[k] == v for k, v in shown.items() if k != "AWS_ENDPOINT_URL_S3"), shown
                elif argv[0] == ".venv/bin/s3bulk":
                    assert server is not None, f"{line}: README runs it before starting the server"
                    proc = subprocess.run(
                        ["bash", "-o", "pipefail", "-c", line], cwd=work, env=env, capture_output=True, text=True, timeout=300
                    )
                    assert proc.returncode == 0, (line, proc.stdout[-2000:], proc.stderr[-2000:])
                else:
                    raise AssertionError(f"README shows a command this test does not know: {line}")
                ran.append(line)
        assert set(RUN_ELSEWHERE) <= set(ran), "README no longer shows a command this test says it shows"

        # What the commands did, checked apart from s3bulk.
        s3 = boto3.client(
            "s3",
            endpoint_url=env["AWS_ENDPOINT_URL_S3"],
            region_name="us-east-1",
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        )
        copied = [o["Key"] for p in s3.get_paginator("list_objects_v2").paginate(Bucket="demo-dst") for o in p.get("Contents", [])]
        sources = [o["Key"] for p in s3.get_paginator("list_objects_v2").paginate(Bucket="demo-src") for o in p.get("Contents", [])]
        expected = sorted("copied/" + k.removeprefix("data/") for k in sources if "/_tmp/" not in k)
        assert sorted(copied) == expected and len(expected) > 900
        assert '"status": "succeeded"' in (work / "report.json").read_text()
        assert all(not s3.get_object_tagging(Bucket="demo-dst", Key=k)["TagSet"] for k in copied[:50])  # undone
        assert (work / "keys.jsonl").read_text().count('"outcome": "succeeded"') == len(expected)  # each was tagged first
        assert '"$schema"' in (work / "job.schema.json").read_text()
    finally:
        if server is not None:
            server.send_signal(signal.SIGINT)
            server.communicate(timeout=60)


def _serve(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """`s3bulk serve` as README starts it, and the variables its printed exports set."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    exports: dict[str, str] = {}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and "AWS_SECRET_ACCESS_KEY" not in exports:
        line = proc.stdout.readline()
        if not line:
            break
        if line.strip().startswith("export "):
            exports |= dict(a.split("=", 1) for a in shlex.split(line.strip())[1:])
    assert "AWS_ENDPOINT_URL_S3" in exports and "AWS_SECRET_ACCESS_KEY" in exports, exports
    return proc, exports
