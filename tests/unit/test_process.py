"""Operation 'process' on the in-memory store: results, retries, Batch Operations responses and bad input."""

from __future__ import annotations

import io
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from s3bulk import PermanentFailure, TemporaryFailure
from s3bulk.aws.invoke import FunctionFailed, invoke_with
from s3bulk.cli import main
from s3bulk.job import JobError, parse_job
from s3bulk.ops.batch import BatchRunner
from s3bulk.ops.executor import BoundedExecutor
from s3bulk.ops.items import Item
from s3bulk.ops.process import (
    RESULT_LIMIT,
    BatchOpsProcessor,
    ProcessCode,
    ProcessedObject,
    handler_invoker,
    load_callable,
    make_processor,
    read_response,
)
from s3bulk.report import Tally
from s3bulk.report.keylog import JsonlKeyLog
from s3bulk.source.selection import key_mapper
from s3bulk.store import ObjectInfo, StoreError
from s3bulk.testing.memstore import MemoryStore


def _job(process: dict[str, Any], destination: bool = False, retries: int = 3) -> Any:
    doc: dict[str, Any] = {
        "operation": "process",
        "source": {"bucket": "src", "prefix": "in/"},
        "process": process,
        "options": {"object_retries": retries},
    }
    if destination:
        doc["destination"] = {"bucket": "dst", "prefix": "out/"}
    return parse_job(json.dumps(doc))


def _store(keys: list[str]) -> MemoryStore:
    store = MemoryStore()
    store.create_bucket("src")
    store.create_bucket("dst")
    for key in keys:
        store.put_object("src", key, key.encode() * 3)
    return store


def _run(job: Any, store: MemoryStore, code: ProcessCode, keys: list[str]) -> tuple[Tally, list[dict[str, Any]]]:
    tally, out = Tally(), io.StringIO()
    keylog = JsonlKeyLog(out, "j1", "process")
    with BoundedExecutor(2, name="parts") as parts, BoundedExecutor(4) as pool:
        processor = make_processor(job, "j1", code, store, parts.submit)
        runner = BatchRunner(job, store, pool, parts, sleep=lambda _s: None, keylog=keylog, processor=processor)
        items = [Item(ObjectInfo(k, len(k) * 3, store.head_object("src", k).etag)) for k in keys]
        assert runner.start(items, tally).wait(30)
    return tally, [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_function_result_goes_to_the_key_log_cut_to_one_kibibyte() -> None:
    store = _store(["in/a", "in/b"])
    code = ProcessCode(function=lambda obj: obj.key * 2000)
    tally, lines = _run(_job({"function": "m:f"}), store, code, ["in/a", "in/b"])
    assert (tally.succeeded, tally.failed) == (2, 0)
    assert {line["key"]: len(line["result"]) for line in lines} == {"in/a": RESULT_LIMIT, "in/b": RESULT_LIMIT}


def test_a_temporary_failure_is_retried_until_the_rounds_run_out() -> None:
    store = _store(["in/a"])
    calls: list[str] = []

    def always_busy(obj: ProcessedObject) -> None:
        calls.append(obj.key)
        raise TemporaryFailure("busy")

    tally, lines = _run(_job({"function": "m:f"}, retries=2), store, ProcessCode(function=always_busy), ["in/a"])
    assert len(calls) == 3  # the first round and two retries
    assert (tally.failed, tally.retried) == (1, 2)
    assert [(line["outcome"], line["error"], line["attempts"]) for line in lines] == [("failed", "TemporaryFailure", 3)]


def test_a_throttled_read_inside_the_function_is_retried_like_a_temporary_failure() -> None:
    store = _store(["in/a"])
    faults = iter([StoreError("SlowDown", "slow", 503)])
    store.faults.append(lambda op, b, k: next(faults, None) if op == "GetObject" else None)
    tally, lines = _run(_job({"function": "m:f"}), store, ProcessCode(function=lambda obj: obj.open().read().decode()), ["in/a"])
    assert (tally.succeeded, tally.retried) == (1, 1)
    assert lines[0]["result"] == "in/ain/ain/a"


def test_write_without_a_destination_fails_the_object_with_a_fix() -> None:
    store = _store(["in/a"])
    tally, _ = _run(_job({"function": "m:f"}), store, ProcessCode(function=lambda obj: obj.write("x", b"1")), ["in/a"])
    assert tally.failed == 1
    (failure,) = tally.failures()
    assert failure["error"] == "PermanentFailure" and "add a destination bucket" in failure["message"]


def test_writes_land_under_the_destination_prefix_with_their_content_type() -> None:
    store = _store(["in/a"])
    code = ProcessCode(function=lambda obj: obj.write(obj.key.upper(), obj.open().read()[::-1], content_type="text/plain"))
    tally, _ = _run(_job({"function": "m:f"}, destination=True), store, code, ["in/a"])
    assert tally.succeeded == 1
    assert store.get_body("dst", "out/IN/A") == b"in/ain/ain/a"[::-1]
    assert store.get("dst", "out/IN/A").content_type == "text/plain"


def test_a_permanent_failure_is_not_retried() -> None:
    store = _store(["in/a"])
    calls: list[str] = []

    def refuse(obj: ProcessedObject) -> None:
        calls.append(obj.key)
        raise PermanentFailure("no")

    tally, _ = _run(_job({"function": "m:f"}), store, ProcessCode(function=refuse), ["in/a"])
    assert (len(calls), tally.failed, tally.retried) == (1, 1, 0)


def _event(n: int) -> dict[str, Any]:
    return BatchOpsProcessor(lambda e: e, "src", "j1", {}).event([ObjectInfo(f"k{i}", 1) for i in range(n)])


def test_a_task_missing_from_the_response_takes_treat_missing_keys_as() -> None:
    event = _event(3)
    first = event["tasks"][0]["taskId"]
    response = {"results": [{"taskId": first, "resultCode": "Succeeded", "resultString": "ok"}], "treatMissingKeysAs": "TemporaryFailure"}
    assert [r.code for r in read_response(event, response)] == ["Succeeded", "TemporaryFailure", "TemporaryFailure"]
    assert [r.code for r in read_response(event, {"results": []})] == ["PermanentFailure"] * 3


def test_a_malformed_response_or_result_code_is_a_permanent_failure_that_says_what_was_wrong() -> None:
    event = _event(1)
    (bad,) = read_response(event, "done")
    assert (bad.code, bad.error) == ("PermanentFailure", "InvalidResponse")
    (odd,) = read_response(event, {"results": [{"taskId": event["tasks"][0]["taskId"], "resultCode": "Maybe"}]})
    assert (odd.code, odd.error) == ("PermanentFailure", "InvalidResultCode") and "'Maybe'" in odd.message


def test_keys_travel_url_encoded_and_a_handler_that_unquotes_them_gets_the_exact_key() -> None:
    from urllib.parse import unquote_plus

    key = "in/a b+c%d/é\u2028?.txt"
    event = BatchOpsProcessor(lambda e: e, "src", "j1", {"x": "1"}).event([ObjectInfo(key, 1)])
    (task,) = event["tasks"]
    assert unquote_plus(task["s3Key"]) == key and " " not in task["s3Key"]
    assert (task["s3Bucket"], event["invocationSchemaVersion"], event["job"]["userArguments"]) == ("src", "2.0", {"x": "1"})


def test_a_handler_that_raises_fails_every_task_of_its_invocation() -> None:
    def broken(event: dict[str, Any], context: Any) -> dict[str, Any]:
        raise KeyError("s3BucketArn")

    results = BatchOpsProcessor(handler_invoker(broken), "src", "j1", {}, per_call=2).run([ObjectInfo("a", 1), ObjectInfo("b", 1)])
    assert [(r.code, r.error) for r in results] == [("PermanentFailure", "KeyError")] * 2


class _FakeLambda:
    def __init__(self, payload: Any, function_error: str | None = None) -> None:
        self.payload, self.function_error = payload, function_error
        self.sent: list[dict[str, Any]] = []

    def invoke(self, **kwargs: Any) -> dict[str, Any]:
        self.sent.append(kwargs)
        r: dict[str, Any] = {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(self.payload).encode())}
        if self.function_error:
            r["FunctionError"] = self.function_error
        return r


def test_a_deployed_function_is_invoked_synchronously_and_its_error_named() -> None:
    ok = _FakeLambda({"results": []})
    arn = "arn:aws:lambda:eu-west-1:123456789012:function:f"
    assert invoke_with(ok, arn)({"tasks": []}) == {"results": []}
    assert ok.sent[0]["FunctionName"] == arn and ok.sent[0]["InvocationType"] == "RequestResponse"
    failing = _FakeLambda({"errorType": "ValueError", "errorMessage": "bad key"}, "Unhandled")
    with pytest.raises(FunctionFailed, match="ValueError: bad key"):
        invoke_with(failing, arn)({"tasks": []})


def test_an_unimportable_function_is_a_job_error_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(JobError, match=r"^job\.process\.function: cannot import 'no_such_mod_xyz'"):
        load_callable("no_such_mod_xyz:run", [tmp_path], "function")
    (tmp_path / "has_mod_q.py").write_text("x = 1\n")
    with pytest.raises(JobError, match=r"^job\.process\.batchops_handler: 'has_mod_q' has no callable 'handler'"):
        load_callable("has_mod_q:handler", [tmp_path], "batchops_handler")


@pytest.mark.parametrize(
    ("process", "field"),
    [
        ({}, "job.process.function: give exactly one"),
        ({"function": "a:b", "batchops_handler": "c:d"}, "job.process.function: give exactly one"),
        ({"function": "a:b", "tasks_per_invocation": 5}, "job.process.tasks_per_invocation"),
        ({"batchops_handler": "a:b", "arguments": {"n": 3}}, "job.process.arguments"),
        ({"function": "not a spec"}, "job.process.function"),
        ({"batchops_lambda": "my-function"}, "job.process.batchops_lambda"),
    ],
)
def test_a_bad_process_section_is_refused_naming_the_field(process: dict[str, Any], field: str) -> None:
    with pytest.raises(JobError) as info:
        _job(process)
    assert str(info.value).startswith(field)


def test_the_cli_refuses_an_unimportable_function_with_exit_2_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job.json"
    job.write_text(
        json.dumps({"operation": "process", "source": {"bucket": "src", "prefix": "in/"}, "process": {"function": "absent_mod_k:run"}})
    )
    # An endpoint nothing listens on: any request would fail differently, and slowly.
    assert main(["run", str(job), "--endpoint-url", "http://127.0.0.1:9", "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: job.process.function: cannot import 'absent_mod_k'") and "\n" not in err


def _module(tmp_path: Path, source: str) -> str:
    """A module with a name no other test uses (imports are cached per process), written into tmp_path."""
    name = f"user_mod_{uuid.uuid4().hex[:12]}"
    (tmp_path / f"{name}.py").write_text(source)
    return name


def _refusal(spec: str, tmp_path: Path, field: str = "function") -> str:
    with pytest.raises(JobError) as info:
        load_callable(spec, [tmp_path], field)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"job.process.{field}: ")
    return message


def test_a_module_not_found_keeps_the_pythonpath_hint(tmp_path: Path) -> None:
    message = _refusal("absent_mod_zq.tools:run", tmp_path)
    assert message == (
        f"job.process.function: cannot import 'absent_mod_zq.tools': no module 'absent_mod_zq' in {tmp_path} or on PYTHONPATH; put it there"
    )


def test_a_module_found_that_imports_a_missing_dependency_names_the_dependency(tmp_path: Path) -> None:
    name = _module(tmp_path, "import yaml_not_installed_qq\n\ndef run(obj):\n    return None\n")
    message = _refusal(f"{name}:run", tmp_path, "batchops_handler")
    assert message == (
        f"job.process.batchops_handler: {name!r} imports 'yaml_not_installed_qq', which is not installed; "
        "pip install it (or fix the import)"
    )


def test_a_module_with_a_syntax_error_is_refused_with_its_file_line_and_message(tmp_path: Path) -> None:
    name = _module(tmp_path, "x = 1\ndef run(obj:\n    return 1\n")
    message = _refusal(f"{name}:run", tmp_path)
    assert f"{name!r} does not compile: {tmp_path / name}.py:2: " in message and message.endswith("; fix the syntax")
    assert "PYTHONPATH" not in message


def test_a_module_that_raises_on_import_is_refused_with_the_exception_type_and_message_on_one_line(tmp_path: Path) -> None:
    name = _module(tmp_path, "raise RuntimeError('config file\\nmissing')\n")
    message = _refusal(f"{name}:run", tmp_path)
    assert message == f"job.process.function: importing {name!r} raised RuntimeError: config file missing; fix the module"


def test_a_name_after_the_colon_that_is_not_callable_is_refused_as_such(tmp_path: Path) -> None:
    name = _module(tmp_path, "run = 3\n")
    message = _refusal(f"{name}:run", tmp_path)
    assert message == f"job.process.function: {name}.run is not callable (it is int 3); name a function after the colon"


def test_write_uses_the_key_as_given_and_relative_key_gives_the_same_key_copy_would() -> None:
    store = _store(["in/2024/a.log"])

    def run(obj: ProcessedObject) -> None:
        obj.write(obj.key + ".gz", b"full")  # obj.key keeps source.prefix "in/"
        obj.write(obj.relative_key + ".gz", b"relative")  # without it: copy's layout

    job = _job({"function": "m:f"}, destination=True)
    tally, _ = _run(job, store, ProcessCode(function=run), ["in/2024/a.log"])
    assert tally.succeeded == 1
    assert store.get_body("dst", "out/in/2024/a.log.gz") == b"full"
    assert store.get_body("dst", "out/2024/a.log.gz") == b"relative"
    copy = parse_job(json.dumps({**job.model_dump(mode="json", include={"source", "destination"}), "operation": "copy"}))
    mapper = key_mapper(copy)
    assert mapper is not None and mapper("in/2024/a.log") + ".gz" == "out/2024/a.log.gz"


def test_on_the_stack_only_a_function_defined_in_the_deployers_process_code_may_be_named(tmp_path: Path) -> None:
    """The stack imports the named callable and calls it under the worker's role: a job must not name the standard
    library's, a dependency's or s3bulk's own (os:system, boto3:client), nor one the deployer's module re-exports."""
    own = _module(tmp_path, "def run(obj):\n    return obj\n")
    assert load_callable(f"{own}:run", [tmp_path], "function", confined=True)(7) == 7
    reexport = _module(tmp_path, "from os import getcwd\n")
    for spec in ("os:getcwd", "json:dumps", "s3bulk.job:parse_job", f"{reexport}:getcwd"):
        with pytest.raises(JobError, match=r"^job\.process\.function: .* is not a function of this deployment's process code"):
            load_callable(spec, [tmp_path], "function", confined=True)
    with pytest.raises(JobError, match=r"^job\.process\.batchops_handler: 'os:getcwd' .*\(none: this deployment bundled no process code\)"):
        load_callable("os:getcwd", [], "batchops_handler", confined=True)
    assert load_callable("os:getcwd", [tmp_path], "function")() == __import__("os").getcwd()  # locally: the user's own machine


def test_on_the_stack_a_module_outside_the_deployers_code_is_refused_before_it_is_imported(tmp_path: Path) -> None:
    """Importing a module runs its code: a job naming a module found outside the deployment's process code (a dependency,
    a file left on the path) is refused before the import, so nothing of it runs under the worker's role."""
    own, elsewhere = tmp_path / "own", tmp_path / "elsewhere"
    own.mkdir()
    elsewhere.mkdir()
    ran = tmp_path / "ran"
    (elsewhere / "s3bulk_outside_probe.py").write_text(f"open({str(ran)!r}, 'w').close()\ndef run(obj):\n    return obj\n")
    sys.path.insert(0, str(elsewhere))
    try:
        with pytest.raises(JobError, match=r"^job\.process\.function: 's3bulk_outside_probe:run' is not a function of this deployment's"):
            load_callable("s3bulk_outside_probe:run", [own], "function", confined=True)
        assert not ran.exists()  # refused before its code ran
        assert "s3bulk_outside_probe" not in sys.modules
        with pytest.raises(JobError, match=r"no module 's3bulk_nowhere_probe' in"):  # not found anywhere: the path fix, as before
            load_callable("s3bulk_nowhere_probe:run", [own], "function", confined=True)
    finally:
        sys.path.remove(str(elsewhere))
        sys.modules.pop("s3bulk_outside_probe", None)
