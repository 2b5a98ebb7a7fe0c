"""Where a run's report goes: a link or a device stays what it is, `-` is standard output, and a path that went away
during the run costs the report nothing (it lands in the state directory, said in one line)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import threading
from pathlib import Path

import pytest

from s3bulk.local.preflight import UsageError, check_report_path, check_state_dir
from s3bulk.local.run import write_report_file
from s3bulk.report import REPORT_FAILURES, Report, Tally


def failed_report(n: int, job_id: str = "copy-r") -> Report:
    tally = Tally()
    for i in range(n):
        tally.fail(f"k{i:05d}", "AccessDenied", "no")
    return Report(job_id, "copy", "failed", tally, 1.0)


def test_a_report_through_a_symlink_writes_the_linked_file_and_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "kept" / "report.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "latest.json"
    link.symlink_to(real)
    failed_report(3).write(link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert json.loads(real.read_text())["failed"] == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept", "latest.json"]  # no temp file beside the link


def test_a_report_to_a_fifo_is_written_through_it_and_the_fifo_stays_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "report.pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    failed_report(2).write(fifo, spill_dir=tmp_path / "state")
    reader.join(10)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert json.loads(got[0])["failed"] == 2
    assert not (tmp_path / "state").exists()  # under the cap: the report lists every failure, no JSONL is written


def test_report_dash_prints_the_json_on_stdout_and_every_failure_past_the_cap_goes_to_the_state_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    state = tmp_path / "state"
    every = failed_report(REPORT_FAILURES + 5).write("-", spill_dir=state)
    doc = json.loads(capsys.readouterr().out)
    assert every == state / "copy-r.failures.jsonl"
    assert doc["failures_file"] == str(every) and doc["failures_not_listed"] == 5 and len(doc["failures"]) == REPORT_FAILURES
    assert len(every.read_text().splitlines()) == REPORT_FAILURES + 5
    assert not (tmp_path / "-").exists() and not (tmp_path / "-.failures.jsonl").exists()


def test_a_report_whose_directory_went_away_during_the_run_lands_in_the_state_dir_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = tmp_path / "reports"
    gone.mkdir()
    path = str(gone / "r.json")
    check_report_path(path)  # it passed the check up front
    shutil.rmtree(gone)  # ...and went away while the job ran
    state = tmp_path / "state"
    where, every = write_report_file(failed_report(1), path, state)
    assert where == str(state / "copy-r.report.json") and every is None
    assert json.loads(Path(where).read_text())["failed"] == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"warning: --report {path}: ") and where in err
    assert not gone.exists()  # not made again behind its owner's back


def test_dash_and_a_link_to_a_file_not_there_yet_pass_the_report_check(tmp_path: Path) -> None:
    check_report_path("-")
    link = tmp_path / "r.json"
    link.symlink_to(tmp_path / "out" / "r.json")
    with pytest.raises(UsageError, match="does not exist"):  # where the link points has no directory
        check_report_path(str(link))
    (tmp_path / "out").mkdir()
    check_report_path(str(link))


def test_a_state_dir_that_is_a_file_or_under_one_is_refused_naming_where_it_came_from(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    with pytest.raises(UsageError, match=r"^--state-dir .*afile: is a file, not a directory; .*--no-ledger$"):
        check_state_dir(afile, "--state-dir")
    with pytest.raises(UsageError, match=r"^\$S3BULK_STATE_DIR .*afile/sub: .*afile is a file, not a directory"):
        check_state_dir(afile / "sub", "$S3BULK_STATE_DIR")
    check_state_dir(tmp_path / "new" / "deeper", "--state-dir")  # missing directories are made later
