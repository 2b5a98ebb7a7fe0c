"""Lambda as the runtime runs it: a context with a clock, one module copy per execution environment, function errors,
an invocation ended at its Timeout, and the account's concurrency."""

from __future__ import annotations

import importlib
import importlib.util
import json
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable
from types import ModuleType
from typing import Any

from moto.core.exceptions import JsonRESTError
from moto.core.models import DEFAULT_ACCOUNT_ID

from s3bulk.aws.doctor import LAMBDA_UNRESERVED_FLOOR  # what Lambda keeps unreserved: a reservation leaving less is refused
from s3bulk.testing.stack.aws import REGION
from s3bulk.testing.stack.iam import Invocation, Killed, acting_as
from s3bulk.testing.stack.recursion import invoked


class LambdaContext:
    """What the runtime passes as `context`: the remaining time follows the wall clock from the function's Timeout,
    or drops to zero after `dies_after` reads (a worker whose time runs out mid-batch). With `may_die`, it drops only
    if that says yes when the reads pass `dies_after` (a shared number of deaths, taken by whoever reaches it first)."""

    def __init__(
        self, name: str, timeout_s: float, memory_mb: int, dies_after: int | None = None, may_die: Callable[[], bool] | None = None
    ) -> None:
        self.function_name = name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = memory_mb
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:{DEFAULT_ACCOUNT_ID}:function:{name}"
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{name}"
        self.log_stream_name = self.aws_request_id
        self._deadline = time.monotonic() + timeout_s
        self._dies_after = dies_after
        self._may_die = may_die
        self._dead: bool | None = None
        self.reads = 0

    def get_remaining_time_in_millis(self) -> int:
        self.reads += 1
        if self._dies_after is not None and self.reads > self._dies_after:
            if self._dead is None:
                self._dead = self._may_die() if self._may_die is not None else True
            if self._dead:
                return 0
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class TimedOut(Exception):
    """Lambda ended the invocation at its Timeout: the caller sees the runtime's error, the sandbox is discarded."""

    error_type = "Sandbox.Timedout"


class Throttled(JsonRESTError):
    """The account (or the function's reserved concurrency) has no free execution environment: Invoke answers 429."""

    code = 429

    def __init__(self, name: str, limit: int) -> None:
        super().__init__("TooManyRequestsException", f"Rate Exceeded. ({name}: all {limit} of the concurrency it may use are running)")


class Concurrency:
    """The account's concurrent executions, shared by every function (a new account's quota is as low as 10).

    A function with reserved concurrency runs only within its reservation, which is taken out of the account's pool
    for every other function. A synchronous Invoke beyond what it may run is refused at once (429); an asynchronous
    one waits, as Lambda's own queue retries it. `peak` is the most that ever ran at once."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.running = 0
        self.peak = 0
        self.throttled: Counter[str] = Counter()
        self.reserved: dict[str, int] = {}
        self._own: Counter[str] = Counter()  # running invocations of each function that has a reservation
        self._cond = threading.Condition()

    def reserve(self, name: str, reserved: int) -> None:
        """A function's ReservedConcurrentExecutions, refused as Lambda refuses it when the account keeps too little."""
        others = sum(n for f, n in self.reserved.items() if f != name)
        if self.limit is not None and self.limit - others - reserved < LAMBDA_UNRESERVED_FLOOR:
            raise ValueError(
                f"{name}: Specified ReservedConcurrentExecutions for function decreases account's "
                f"UnreservedConcurrentExecution below its minimum value of [{LAMBDA_UNRESERVED_FLOOR}] (account limit {self.limit})"
            )
        self.reserved[name] = reserved

    def _full(self, name: str) -> tuple[bool, int]:
        if name in self.reserved:
            return self._own[name] >= self.reserved[name], self.reserved[name]
        if self.limit is None:
            return False, 0
        shared = self.limit - sum(self.reserved.values())
        return self.running - sum(self._own.values()) >= shared, shared

    def acquire(self, name: str, *, wait: bool) -> None:
        with self._cond:
            while (full := self._full(name))[0]:
                if not wait:
                    self.throttled[name] += 1
                    raise Throttled(name, full[1])
                self._cond.wait(0.05)
            self.running += 1
            if name in self.reserved:
                self._own[name] += 1
            self.peak = max(self.peak, self.running)

    def release(self, name: str = "") -> None:
        with self._cond:
            self.running -= 1
            if name in self.reserved:
                self._own[name] -= 1
            self._cond.notify_all()


class Function:
    """One Lambda function: its handler, timeout and memory, and a pool of execution environments.

    Each invocation runs on a thread of its own and is ended at the function's Timeout, as Lambda ends it:
    the caller gets `Sandbox.Timedout` at once, the environment is thrown away, and whatever the abandoned
    thread (or a thread it started) still asks of AWS raises Killed instead of reaching it (stack/iam.py)."""

    def __init__(
        self,
        name: str,
        handler: str,
        timeout_s: float,
        memory_mb: int,
        concurrency: Concurrency | None = None,
        recursive_loop: str = "Terminate",
    ) -> None:
        self.name, self.timeout_s, self.memory_mb = name, timeout_s, memory_mb
        self.recursive_loop = recursive_loop  # the function's RecursiveLoop: Lambda stops a loop past 16 hops unless Allow
        self.module_name, _, self.attr = handler.rpartition(".")
        importlib.import_module(self.module_name)  # the shared imports, and a namespace for pydantic's annotations
        self.concurrency = concurrency or Concurrency(None)
        self._idle: list[ModuleType] = []
        self._lock = threading.Lock()
        self.invocations = 0
        self.errors: Counter[str] = Counter()
        self.in_flight = 0
        self.timed_out = 0
        self.running: set[Invocation] = set()

    def end_all(self, reason: str) -> None:
        """The stack is torn down: an invocation still running (a lister a stopped execution left) does nothing more."""
        with self._lock:
            for invocation in self.running:
                invocation.kill(reason)

    def _environment(self) -> ModuleType:
        with self._lock:
            self.invocations += 1
            self.in_flight += 1
            if self._idle:
                return self._idle.pop()
        spec = importlib.util.find_spec(self.module_name)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    def invoke(
        self,
        event: Any,
        dies_after: int | None = None,
        *,
        asynchronous: bool = False,
        may_die: Callable[[], bool] | None = None,
        lineage: dict[str, int] | None = None,
    ) -> Any:
        self.concurrency.acquire(self.name, wait=asynchronous)
        try:
            module = self._environment()
        except BaseException:
            self.concurrency.release(self.name)
            raise
        invocation = Invocation(self.name, invoked(self.name, lineage or {}))
        with self._lock:
            self.running.add(invocation)
        ctx = LambdaContext(self.name, self.timeout_s, self.memory_mb, dies_after, may_die)
        outcome: dict[str, Any] = {}

        def run() -> None:
            with acting_as(self.name, invocation):  # its AWS calls are checked against its own role (stack/iam.py)
                try:
                    outcome["result"] = getattr(module, self.attr)(event, ctx)
                except Killed:
                    pass  # the invocation ended without it; nothing it did after that reached AWS
                except BaseException as exc:  # noqa: BLE001 - handed to the caller as the function's error
                    outcome["error"] = exc

        worker = threading.Thread(target=run, name=f"lambda-{self.name}", daemon=True)
        worker.start()
        worker.join(self.timeout_s)
        timed_out = worker.is_alive()
        if timed_out:
            invocation.kill("ended at its timeout")
            with self._lock:
                self.running.discard(invocation)
        with self._lock:
            self.in_flight -= 1
            self.running.discard(invocation)
            if timed_out:
                self.timed_out += 1
                self.errors[TimedOut.error_type] += 1
            else:
                self._idle.append(module)  # a timed-out sandbox is discarded, its module state with it
            if "error" in outcome:
                self.errors[type(outcome["error"]).__name__] += 1
        self.concurrency.release(self.name)
        if timed_out:
            raise TimedOut(f"Task timed out after {self.timeout_s:.2f} seconds")
        if "error" in outcome:
            raise outcome["error"]
        return outcome.get("result")


def function_error(exc: Exception) -> bytes:
    """The payload Lambda returns for an unhandled exception; Step Functions takes errorType as the error name."""
    tb = traceback.format_exception(exc)
    return json.dumps({"errorType": getattr(exc, "error_type", type(exc).__name__), "errorMessage": str(exc), "stackTrace": tb}).encode()


# Lambda's limit on an asynchronous (Event) invocation's payload.
ASYNC_PAYLOAD_BYTES = 256 * 1024
# Lambda retries an asynchronous invocation that raised or timed out twice, then drops it (or sends it to a DLQ).
ASYNC_RETRIES = 2


def asynchronously(fn: Function, event: Any, closed: threading.Event) -> threading.Thread:
    """An asynchronous invocation as Lambda runs it: later, on its own, waiting for concurrency, retried twice on error;
    none starts once the stack is `closed`."""

    def run() -> None:
        for _ in range(1 + ASYNC_RETRIES):
            if closed.is_set():
                return
            try:
                fn.invoke(event, asynchronous=True)
                return
            except Exception:  # noqa: BLE001 - counted in fn.errors; Lambda tries the event again
                continue

    thread = threading.Thread(target=run, name=f"async-{fn.name}", daemon=True)
    thread.start()
    return thread
