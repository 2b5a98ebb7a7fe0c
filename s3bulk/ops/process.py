"""Operation 'process': the user's code on each object, or their S3 Batch Operations Lambda (docs/process.md).

Three kinds of code, one result shape:
- `function` ("module:callable") is called as run(obj) with a `ProcessedObject`;
- `batchops_handler` / `batchops_lambda` get S3 Batch Operations' invocation
  schema 2.0 events, `tasks_per_invocation` objects each, and answer per task.

Every call ends as one `TaskResult` per object; the batch runner retries the
TemporaryFailure ones in later rounds, like throttled requests. Nothing here
knows which runtime runs it: the Lambda client comes in as a plain callable.
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import json
import sys
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, Protocol
from urllib.parse import quote_plus

from s3bulk.bodies.budget import MemoryBudget
from s3bulk.bodies.reader import PREFETCH, RANGE_SIZE, open_object
from s3bulk.bodies.writer import ObjectWriter, write_stream
from s3bulk.breakers.outage import EndpointUnreachable
from s3bulk.errors import ErrorKind, PermanentFailure, classify, error_code, error_message
from s3bulk.job import MAX_KEY_BYTES, Destination, Job, JobError, Process
from s3bulk.store import UNKNOWN_SIZE, ObjectHead, ObjectInfo, ObjectStore

RESULT_LIMIT = 1024  # characters of a result string kept in the per-key log
ResultCode = Literal["Succeeded", "TemporaryFailure", "PermanentFailure"]
Invoke = Callable[[dict[str, Any]], Any]
"""Sends one Batch Operations event to the function and returns its response (the in-process handler or a Lambda)."""


@dataclass(frozen=True, slots=True)
class TaskResult:
    code: ResultCode
    result: str = ""  # the function's return value or resultString, cut to RESULT_LIMIT
    error: str = ""  # a failure's code for the report
    message: str = ""


def _cut(text: object) -> str:
    return "" if text is None else str(text)[:RESULT_LIMIT]


def failure(exc: BaseException) -> TaskResult:
    """An exception as a task result: retryable ones (TemporaryFailure, throttles, timeouts) get another round."""
    code: ResultCode = "TemporaryFailure" if classify(exc) is ErrorKind.RETRYABLE else "PermanentFailure"
    return TaskResult(code, "", error_code(exc), error_message(exc))


class ProcessedObject:
    """What a process function gets: the object's facts, its bytes as a file, and a way to write outputs."""

    def __init__(
        self,
        store: ObjectStore,
        bucket: str,
        info: ObjectInfo,
        arguments: Mapping[str, Any],
        destination: Destination | None,
        submit: Callable[..., Any] | None = None,
        budget: MemoryBudget | None = None,
        dst_store: ObjectStore | None = None,
        source_prefix: str = "",
    ) -> None:
        self.bucket = bucket
        self._budget = budget
        self._dst_store = dst_store or store  # outputs go to the destination's endpoint and keys
        self.key = info.key  # the full source key, source.prefix included
        # The key without source.prefix: obj.write(obj.relative_key, ...) lands where copy would put the object.
        self.relative_key = info.key[len(source_prefix) :] if info.key.startswith(source_prefix) else info.key
        self.arguments = arguments
        self._store = store
        self._info = info
        self._head: ObjectHead | None = None
        self._destination = destination
        self._submit = submit
        self._opened: list[io.BufferedReader] = []
        self.outputs: list[str] = []  # destination keys written, for the per-key log

    @property
    def size(self) -> int:
        return self._info.size if self._info.size != UNKNOWN_SIZE else self.head().size

    @property
    def etag(self) -> str:
        return self._info.etag or self.head().etag

    @property
    def last_modified(self) -> datetime | None:
        return self._info.last_modified or self.head().last_modified

    def head(self) -> ObjectHead:
        """The object's HEAD (Content-Type, metadata), fetched once when asked for."""
        if self._head is None:
            self._head = self._store.head_object(self.bucket, self.key)
        return self._head

    def open(self, *, range_size: int = RANGE_SIZE, prefetch: int = PREFETCH) -> io.BufferedReader:
        """The object as a seekable binary file (ranged GETs pinned to its ETag); closed for you after run(obj)."""
        known = self._info.size != UNKNOWN_SIZE and self._info.etag
        head = ObjectHead(self._info.size, self._info.etag) if known else self.head()
        f = open_object(
            self._store,
            self.bucket,
            self.key,
            head=head,
            range_size=range_size,
            prefetch=prefetch,
            submit=self._submit,
            budget=self._budget,
        )
        self._opened.append(f)
        return f

    def writer(
        self,
        relative_key: str,
        content_type: str | None = None,
        metadata: Mapping[str, str] | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> ObjectWriter:
        """A streaming writer for destination.prefix + relative_key; use it in a `with` block (an exception aborts it).

        `relative_key` is taken as given: nothing strips source.prefix from it (pass obj.relative_key for copy's layout).
        """
        dst = self._destination
        if dst is None:
            raise PermanentFailure("obj.write needs the job's destination; add a destination bucket to the job")
        if not isinstance(relative_key, str) or not relative_key:
            raise PermanentFailure(f"obj.write: relative_key must be a non-empty string, got {relative_key!r}")
        key = dst.prefix + relative_key
        if len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
            raise PermanentFailure(f"obj.write: {key[:60]!r}... is over {MAX_KEY_BYTES} UTF-8 bytes; shorten it")
        head = ObjectHead(0, "", content_type or "binary/octet-stream", dict(metadata or {}))
        self.outputs.append(key)
        return ObjectWriter(
            self._dst_store,
            dst.bucket,
            key,
            head=head,
            tags=tags,
            storage_class=dst.storage_class,
            submit=self._submit,
            budget=self._budget,
        )

    def write(
        self,
        relative_key: str,
        data: bytes | bytearray | memoryview | io.IOBase | Any,
        content_type: str | None = None,
        metadata: Mapping[str, str] | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> str:
        """Write bytes or a binary stream to destination.prefix + relative_key; returns the new object's ETag."""
        return write_stream(self.writer(relative_key, content_type, metadata, tags), data)

    def close(self) -> None:
        for f in self._opened:
            f.close()
        self._opened.clear()


class Processor(Protocol):
    per_call: int  # objects per call of run()

    def run(self, objects: Sequence[ObjectInfo]) -> list[TaskResult]: ...


@dataclass
class FunctionProcessor:
    """run(obj) per object; its return value is the result, its exception the failure."""

    function: Callable[[ProcessedObject], Any]
    store: ObjectStore
    bucket: str
    arguments: Mapping[str, Any]
    destination: Destination | None
    submit: Callable[..., Any] | None = None
    budget: MemoryBudget | None = None
    dst_store: ObjectStore | None = None
    per_call: int = 1
    source_prefix: str = ""  # for obj.relative_key

    def run(self, objects: Sequence[ObjectInfo]) -> list[TaskResult]:
        return [self._one(info) for info in objects]

    def _one(self, info: ObjectInfo) -> TaskResult:
        obj = ProcessedObject(
            self.store,
            self.bucket,
            info,
            self.arguments,
            self.destination,
            self.submit,
            self.budget,
            self.dst_store,
            source_prefix=self.source_prefix,
        )
        try:
            return TaskResult("Succeeded", _cut(self.function(obj)))
        except EndpointUnreachable:
            raise  # the job's outage, not this object's: the runner leaves the group not done
        except Exception as exc:  # noqa: BLE001 - the user's code: every exception is this object's outcome
            return failure(exc)
        finally:
            obj.close()


@dataclass
class BatchOpsProcessor:
    """S3 Batch Operations' LambdaInvoke contract, invocation schema 2.0: one event per `per_call` objects."""

    invoke: Invoke
    bucket: str
    job_id: str
    arguments: Mapping[str, str]
    per_call: int = 1

    def event(self, objects: Sequence[ObjectInfo]) -> dict[str, Any]:
        """Keys URL-encoded as Batch Operations sends them (handlers unquote_plus them); s3BucketArn too, for 1.0 handlers."""
        return {
            "invocationSchemaVersion": "2.0",
            "invocationId": uuid.uuid4().hex,
            "job": {"id": self.job_id, "userArguments": dict(self.arguments)},
            "tasks": [
                {
                    "taskId": f"{n}-{uuid.uuid4().hex[:12]}",
                    "s3Key": quote_plus(o.key, safe="/", errors="surrogatepass"),
                    "s3VersionId": None,
                    "s3Bucket": self.bucket,
                    "s3BucketArn": f"arn:aws:s3:::{self.bucket}",
                }
                for n, o in enumerate(objects)
            ],
        }

    def run(self, objects: Sequence[ObjectInfo]) -> list[TaskResult]:
        event = self.event(objects)
        try:
            response = self.invoke(event)
        except Exception as exc:  # noqa: BLE001 - a failed invocation is every task's outcome
            return [failure(exc)] * len(objects)
        return read_response(event, response)


_CODES: dict[str, ResultCode] = {"Succeeded": "Succeeded", "TemporaryFailure": "TemporaryFailure", "PermanentFailure": "PermanentFailure"}


def _code(value: object, default: ResultCode | None = "PermanentFailure") -> ResultCode | None:
    return _CODES.get(str(value), default) if value is not None else default


def read_response(event: Mapping[str, Any], response: Any) -> list[TaskResult]:
    """Each task's result, in event order; a task the response leaves out gets `treatMissingKeysAs` (PermanentFailure)."""
    tasks = [t["taskId"] for t in event["tasks"]]
    if not isinstance(response, dict) or not isinstance(response.get("results"), list):
        got = type(response).__name__ if not isinstance(response, dict) else f"keys {sorted(response)[:6]}"
        bad = TaskResult("PermanentFailure", "", "InvalidResponse", f"the function must return {{'results': [...], ...}}; got {got}")
        return [bad] * len(tasks)
    missing = _code(response.get("treatMissingKeysAs"))
    by_task: dict[str, TaskResult] = {}
    for r in response["results"]:
        if not isinstance(r, dict) or r.get("taskId") not in tasks:
            continue
        raw, text = r.get("resultCode"), _cut(r.get("resultString"))
        code = _code(raw, None)
        if code is None:
            by_task[r["taskId"]] = TaskResult(
                "PermanentFailure", text, "InvalidResultCode", f"resultCode {raw!r} is not one of {sorted(_CODES)}"
            )
        elif code == "Succeeded":
            by_task[r["taskId"]] = TaskResult("Succeeded", text)
        else:
            by_task[r["taskId"]] = TaskResult(code, text, code, text or code)
    absent = TaskResult("Succeeded")
    if missing is not None and missing != "Succeeded":
        absent = TaskResult(missing, "", missing, "the function's response has no result for this task")
    return [by_task.get(t, absent) for t in tasks]


@dataclass(frozen=True)
class LocalContext:
    """The few Lambda context fields a handler commonly reads, for handlers run in-process."""

    function_name: str = "s3bulk-local"
    function_version: str = "$LATEST"
    invoked_function_arn: str = "arn:aws:lambda:local:000000000000:function:s3bulk-local"
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/aws/lambda/s3bulk-local"
    log_stream_name: str = "local"

    def get_remaining_time_in_millis(self) -> int:
        return 900_000


def handler_invoker(handler: Callable[[dict[str, Any], Any], Any]) -> Invoke:
    """Call a Lambda handler in-process, through a JSON round trip as Lambda would, with a minimal context."""

    def invoke(event: dict[str, Any]) -> Any:
        response = handler(json.loads(json.dumps(event)), LocalContext())
        return json.loads(json.dumps(response, default=str))

    return invoke


_IMPORT_LOCK = threading.Lock()


def _one_line(text: object, limit: int = 200) -> str:
    """An exception's text on one line (the user's code may raise multi-line messages)."""
    return " ".join(str(text).split())[:limit]


def _is_missing(module_name: str, missing: str | None) -> bool:
    """Whether a ModuleNotFoundError is about the named module itself (or a package on its dotted path), not a dependency."""
    return missing is not None and (module_name == missing or module_name.startswith(missing + "."))


def load_callable(spec: str, search: Sequence[Path], field_name: str, *, confined: bool = False) -> Callable[..., Any]:
    """Import "module:callable" with `search` first on sys.path; a bad spec is a JobError naming the field.

    Each way an import fails gets its own fix: a module not found is a path problem, while a
    module found but broken (a missing dependency, a syntax error, an exception) is a code problem.
    `confined` (the stack): the callable must be defined in a module under `search`, the deployer's own code, never
    the standard library's, a dependency's or s3bulk's, which would run under the worker's role as the job asks.
    """
    module_name, _, attr = spec.partition(":")
    label = f"job.process.{field_name}"
    with _IMPORT_LOCK:
        for path in reversed([str(p) for p in search]):
            if path not in sys.path:
                sys.path.insert(0, path)
        if confined and not _found_within(module_name, search):  # before the import: importing runs the module's code
            raise _not_own(label, spec, search)
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if _is_missing(module_name, exc.name):
                where = ", ".join(str(p) for p in search)
                raise JobError(
                    f"{label}: cannot import {module_name!r}: no module {exc.name!r} in {where} or on PYTHONPATH; put it there"
                ) from None
            if exc.name is None:
                raise JobError(f"{label}: importing {module_name!r} raised ModuleNotFoundError: {_one_line(exc)}; fix the module") from None
            raise JobError(
                f"{label}: {module_name!r} imports {exc.name!r}, which is not installed; pip install it (or fix the import)"
            ) from None
        except SyntaxError as exc:
            at = f"{exc.filename}:{exc.lineno}" if exc.filename else f"line {exc.lineno}"
            raise JobError(f"{label}: {module_name!r} does not compile: {at}: {_one_line(exc.msg)}; fix the syntax") from None
        except Exception as exc:  # noqa: BLE001 - any other import-time failure of the user's module is a job error
            raise JobError(f"{label}: importing {module_name!r} raised {type(exc).__name__}: {_one_line(exc)}; fix the module") from None
    if not hasattr(module, attr):
        raise JobError(f"{label}: {module_name!r} has no callable {attr!r}; check the name after the colon")
    fn = getattr(module, attr)
    if not callable(fn):
        raise JobError(
            f"{label}: {module_name}.{attr} is not callable (it is {type(fn).__name__} {_one_line(repr(fn), 40)}); "
            "name a function after the colon"
        )
    if confined and not (_within(module, search) and _within(sys.modules.get(getattr(fn, "__module__", None) or ""), search)):
        raise _not_own(label, spec, search)
    return fn  # type: ignore[no-any-return]


def _not_own(label: str, spec: str, search: Sequence[Path]) -> JobError:
    where = ", ".join(str(p) for p in search) or "none: this deployment bundled no process code"
    return JobError(
        f"{label}: {spec!r} is not a function of this deployment's process code ({where}); name one defined in your "
        "own modules, deployed with -c process_code=DIR"
    )


def _found_within(module_name: str, roots: Sequence[Path]) -> bool:
    """Whether the module's top-level package would be imported from under `roots`, found without running any code (a
    module imported already is judged by where it came from). One not found at all passes: its import fails, running
    nothing, with the message that says where it was looked for."""
    try:
        found = importlib.util.find_spec(module_name.partition(".")[0])
    except (ImportError, ValueError):
        return True
    if found is None:
        return True
    places = [found.origin] if found.origin and found.has_location else []
    places += list(found.submodule_search_locations or [])
    return bool(places) and all(any(Path(p).resolve().is_relative_to(r.resolve()) for r in roots) for p in places)


def _within(module: ModuleType | None, roots: Sequence[Path]) -> bool:
    """Whether a module's file lies under one of `roots` (a built-in or a namespace package has none: no)."""
    file = getattr(module, "__file__", None)
    if not file:
        return False
    where = Path(file).resolve()
    return any(where.is_relative_to(root.resolve()) for root in roots)


@dataclass(frozen=True)
class ProcessCode:
    """A job's process section, loaded: the function to call or the Batch Operations invoker."""

    function: Callable[[ProcessedObject], Any] | None = None
    invoke: Invoke | None = None


def load_code(
    process: Process, search: Sequence[Path], lambda_invoker: Callable[[str], Invoke] | None = None, *, confined: bool = False
) -> ProcessCode:
    """Import or connect what the job names, before any object is touched (`confined`: only the code in `search`)."""
    if process.function is not None:
        return ProcessCode(function=load_callable(process.function, search, "function", confined=confined))
    if process.batchops_handler is not None:
        handler = load_callable(process.batchops_handler, search, "batchops_handler", confined=confined)
        return ProcessCode(invoke=handler_invoker(handler))
    assert process.batchops_lambda is not None
    if lambda_invoker is None:
        raise JobError(
            "job.process.batchops_lambda: this runtime cannot invoke Lambda functions; use batchops_handler to run it in-process"
        )
    return ProcessCode(invoke=lambda_invoker(process.batchops_lambda))


def make_processor(
    job: Job,
    job_id: str,
    code: ProcessCode,
    store: ObjectStore,
    submit: Callable[..., Any] | None,
    budget: MemoryBudget | None = None,
    dst_store: ObjectStore | None = None,
) -> Processor:
    """`submit` runs prefetches and parts (the runner's part pool); `budget` caps the body bytes all objects hold together;
    `dst_store` writes the outputs when the destination is another endpoint or account."""
    assert job.process is not None
    if code.function is not None:
        return FunctionProcessor(
            code.function,
            store,
            job.source.bucket,
            job.process.arguments,
            job.destination,
            submit,
            budget,
            dst_store,
            source_prefix=job.source.prefix,
        )
    assert code.invoke is not None
    return BatchOpsProcessor(code.invoke, job.source.bucket, job_id, dict(job.process.arguments), job.process.tasks_per_invocation)
