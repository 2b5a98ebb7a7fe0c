"""`s3bulk run` of a delete, move or sync on a terminal shows what it would delete and asks once; --yes skips it."""

from __future__ import annotations

import io
import json
from typing import Any, cast

import pytest
from rich.console import Console

from s3bulk.cli.local import Declined, confirm_on_terminal
from s3bulk.job import parse_job
from s3bulk.local.preflight import UsageError
from s3bulk.s3.stores import S3Store
from s3bulk.testing.memstore import MemoryStore


@pytest.fixture
def store() -> S3Store:
    s = MemoryStore()
    s.create_bucket("src-b")
    for i in range(7):
        s.put_object("src-b", f"p/{i}", b"x" * 100)
    s.put_object("src-b", "other/keep", b"y")
    return cast(S3Store, s)


def job(op: str = "delete", **options: Any) -> Any:
    doc: dict[str, Any] = {"operation": op, "source": {"bucket": "src-b", "prefix": "p/"}, "options": options}
    if op == "tag":
        doc["tagging"] = {"mode": "merge", "tags": {"a": "b"}}
    return parse_job(json.dumps(doc))


def terminal(monkeypatch: pytest.MonkeyPatch, tty: bool = True) -> Console:
    monkeypatch.setattr("sys.stdin.isatty", lambda: tty)
    return Console(file=io.StringIO(), force_terminal=tty)


def test_a_delete_on_a_terminal_shows_its_count_and_goes_on_only_on_yes(store: S3Store, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def yes(question: str) -> str:
        asked.append(question)
        return "yes"

    console = terminal(monkeypatch)
    confirm_on_terminal(job(), store, None, console, yes=False, ask=yes)
    assert asked == ["This run would delete 7 objects (700 B) from s3://src-b/p/. Go on? [y/N] "]
    with pytest.raises(Declined):
        confirm_on_terminal(job(), store, None, console, yes=False, ask=lambda q: "")
    assert cast(MemoryStore, store).calls.get("DeleteObjects", 0) == 0  # asking changed nothing


def test_yes_confirm_false_a_dry_run_a_copy_and_a_script_are_not_asked(store: S3Store, monkeypatch: pytest.MonkeyPatch) -> None:
    def never(question: str) -> str:
        raise AssertionError(f"asked: {question}")

    console = terminal(monkeypatch)
    confirm_on_terminal(job(), store, None, console, yes=True, ask=never)
    confirm_on_terminal(job(confirm=False), store, None, console, yes=False, ask=never)
    confirm_on_terminal(job(dry_run=True), store, None, console, yes=False, ask=never)
    confirm_on_terminal(job("tag"), store, None, console, yes=False, ask=never)
    confirm_on_terminal(job(), store, None, terminal(monkeypatch, tty=False), yes=False, ask=never)  # no one to ask


def test_confirm_true_without_a_terminal_is_refused_in_one_line_naming_yes(store: S3Store, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UsageError, match=r"job\.options\.confirm: this run would ask on a terminal, and it has none; pass --yes"):
        confirm_on_terminal(job(confirm=True), store, None, terminal(monkeypatch, tty=False), yes=False)
