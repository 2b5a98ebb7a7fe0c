"""A newcomer's afternoon with the real CLI on a real server: a typo'd sync, Ctrl-C, resumes as printed, a closed pipe."""

from __future__ import annotations

import http.server
import json
import random
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import S3BULK, cli_env, client_for, run_cli
from tests.integration.helpers import list_keys, seed_small, write_job

pytestmark = pytest.mark.seaweed


def test_a_typod_sync_deletes_nothing_and_exits_2(seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path) -> None:
    c = client_for(seaweed)
    src, dst = bucket_factory(c, "src"), bucket_factory(c, "dst")
    seed_small(c, src, "data/", 20)
    kept = seed_small(c, dst, "sync/", 30)
    env = cli_env(tmp_path) | {"S3BULK_STATE_DIR": str(tmp_path / "state")}
    doc: dict[str, Any] = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "data/typo-prefix/"},
        "destination": {"bucket": dst, "prefix": "sync/"},
        "options": {"if_exists": "skip-unchanged", "delete_extraneous": True},
    }
    job = write_job(tmp_path / "t.json", doc)
    for extra in ([], ["--dry-run"]):
        r = run_cli("run", str(job), "--endpoint-url", seaweed, *extra, env=env)
        assert r.returncode == 2, r.stdout + r.stderr
        assert "selects no object" in r.stderr and "allow_empty_source" in r.stderr and "Traceback" not in r.stderr
    assert sorted(list_keys(c, dst, "sync/")) == sorted(kept)
    assert not (tmp_path / "state").exists() or list((tmp_path / "state").iterdir()) == []  # no run left to --resume

    doc["options"]["allow_empty_source"] = True  # emptying the destination on purpose
    dry = run_cli("run", str(write_job(tmp_path / "t.json", doc)), "--endpoint-url", seaweed, "--dry-run", env=env)
    assert dry.returncode == 0 and "would delete" in dry.stdout and "30" in dry.stdout, dry.stdout
    done = run_cli("run", str(job), "--endpoint-url", seaweed, "--report", str(tmp_path / "r.json"), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "deleted (extraneous)" in done.stdout
    assert json.loads((tmp_path / "r.json").read_text())["deleted_extraneous"] == 30
    assert list_keys(c, dst, "sync/") == []


def test_ctrl_c_twice_at_random_moments_then_a_bare_resume_moves_everything_exactly(
    seaweed: str, bucket_factory: Callable[[Any, str], str], tmp_path: Path
) -> None:
    """SIGINT as `timeout -s INT` sends it (to the process, then to its group: twice), at random moments of a move,
    three times; each run leaves a report, and `s3bulk run --resume ID` exactly as printed (no --endpoint-url) ends it."""
    n = 1500
    c = client_for(seaweed)
    src, dst = bucket_factory(c, "src"), bucket_factory(c, "dst")
    expected = seed_small(c, src, "in/", n)
    state = tmp_path / "state"
    env = cli_env(tmp_path) | {"S3BULK_STATE_DIR": str(state)}
    job = write_job(
        tmp_path / "m.json",
        {
            "operation": "move",
            "source": {"bucket": src, "prefix": "in/"},
            "destination": {"bucket": dst, "prefix": "out/"},
            "options": {"concurrency": 4, "batch_size": 50},
        },
    )
    rng = random.Random(27)
    resume: list[str] = []
    for i in range(3):
        args = ["run", *resume] if resume else ["run", str(job), "--endpoint-url", seaweed]
        report = tmp_path / f"r{i}.json"
        proc = subprocess.Popen(
            [*S3BULK, *args, "--report", str(report)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        time.sleep(rng.uniform(0.6, 2.5))  # anywhere from start-up (imports, the ledger) to mid-run
        proc.send_signal(signal.SIGINT)
        time.sleep(rng.uniform(0.0, 0.05))
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        assert "Traceback" not in err, err
        if proc.returncode == 130 and report.exists():
            summary = json.loads(report.read_text())
            assert summary["status"] == "interrupted" and summary["done"] + summary["not_done"] + summary["failed"] == summary["listed"]
            assert "interrupted:" in err and "to finish: s3bulk run --resume " in err
        else:  # the signal came before the job started: nothing was done, and no report is promised
            assert proc.returncode in {0, 130}, out + err
        printed = [line for line in (out + err).splitlines() if "s3bulk run --resume " in line]
        if printed and not resume:
            resume = printed[-1].split("s3bulk run ", 1)[1].rstrip(")").split()
    if not resume:  # every signal landed before a ledger existed: start it once more, to the end
        resume = [str(job), "--endpoint-url", seaweed]
    final = run_cli("run", *resume, "--report", str(tmp_path / "final.json"), env=env)
    assert final.returncode == 0, final.stdout + final.stderr
    s = json.loads((tmp_path / "final.json").read_text())
    assert (s["status"], s["listed"], s["succeeded"], s["failed"]) == ("succeeded", n, n, 0), s
    assert list_keys(c, src, "in/") == []
    assert sorted(list_keys(c, dst, "out/")) == sorted("out/" + k[3:] for k in expected)


class _GoneAfterHello(http.server.BaseHTTPRequestHandler):
    """An endpoint that answers a HeadBucket (the CLI's first look) and then nothing: every other request's connection
    is closed unanswered, as by a server that went away once the job had started."""

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def log_message(self, *args: Any) -> None:
        pass


def test_a_run_whose_endpoint_answered_then_went_away_says_so_and_its_resume_goes_nowhere_else(tmp_path: Path) -> None:
    """The outage breaker is for an endpoint that did answer: it waits options.outage_seconds and stops resumably (an
    endpoint that never answered fails in seconds instead: test_newcomer_setup_cli.py)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _GoneAfterHello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    gone = f"http://127.0.0.1:{server.server_address[1]}"
    state = tmp_path / "state"
    env = cli_env(tmp_path) | {"S3BULK_STATE_DIR": str(state)}
    job = write_job(
        tmp_path / "j.json",
        {
            "operation": "copy",
            "source": {"bucket": "src-b", "prefix": "in/"},
            "destination": {"bucket": "dst-b"},
            "options": {"outage_seconds": 6},  # the "waiting for" note comes after 3 s: room for it on a loaded machine
        },
    )
    try:
        r = run_cli("run", str(job), "--endpoint-url", gone, env=env)
    finally:
        server.shutdown()
        server.server_close()
    assert r.returncode == 3, r.stdout + r.stderr
    assert f"waiting for {gone}" in r.stderr and f"{gone} unreachable" in r.stderr
    assert "holds no object" not in r.stdout and "None:" not in r.stderr
    (ledger,) = state.glob("*.sqlite")
    assert f"s3bulk run --resume {ledger.stem}" in r.stderr
    elsewhere = run_cli("run", "--resume", ledger.stem, "--endpoint-url", "http://127.0.0.1:8333", env=env)
    assert elsewhere.returncode == 2 and f"the run used --endpoint-url {gone}" in elsewhere.stderr


def test_a_reader_that_leaves_early_ends_the_output_quietly(tmp_path: Path) -> None:
    proc = subprocess.Popen([*S3BULK, "schema"], env=cli_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # `| head -0`: the pipe is gone before the first write
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 141 and err == "", err


def test_plan_of_a_missing_bucket_exits_2_like_run(seaweed: str, tmp_path: Path) -> None:
    env = cli_env(tmp_path) | {"S3BULK_STATE_DIR": str(tmp_path / "state")}
    job = write_job(tmp_path / "j.json", {"operation": "copy", "source": {"bucket": "no-such-bucket-27"}, "destination": {"bucket": "x-y"}})
    plan = run_cli("plan", str(job), "--endpoint-url", seaweed, env=env)
    run = run_cli("run", str(job), "--endpoint-url", seaweed, "-q", env=env)
    assert (plan.returncode, run.returncode) == (2, 2), plan.stderr + run.stdout + run.stderr
    assert "'no-such-bucket-27': no such bucket" in plan.stderr and "Traceback" not in plan.stderr
