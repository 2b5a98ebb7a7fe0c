"""Lambda as the runtime runs it: a context with a clock, one module copy per execution environment, function errors."""

from __future__ import annotations

import importlib
import importlib.util
import json
import threading
import time
import traceback
import uuid
from collections import Counter
from types import ModuleType
from typing import Any

from moto.core.models import DEFAULT_ACCOUNT_ID

from tests.integration.aws_harness import REGION
from tests.integration.stack.iam import acting_as


class LambdaContext:
    """What the runtime passes as `context`: the remaining time follows the wall clock from the function's Timeout,
    or drops to zero after `dies_after` reads (a worker whose time runs out mid-batch)."""

    def __init__(self, name: str, timeout_s: float, memory_mb: int, dies_after: int | None = None) -> None:
        self.function_name = name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = memory_mb
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:{DEFAULT_ACCOUNT_ID}:function:{name}"
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{name}"
        self.log_stream_name = self.aws_request_id
        self._deadline = time.monotonic() + timeout_s
        self._dies_after = dies_after
        self.reads = 0

    def get_remaining_time_in_millis(self) -> int:
        self.reads += 1
        if self._dies_after is not None and self.reads > self._dies_after:
            return 0
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class Function:
    """One Lambda function: its handler, timeout and memory, and a pool of execution environments."""

    def __init__(self, name: str, handler: str, timeout_s: float, memory_mb: int) -> None:
        self.name, self.timeout_s, self.memory_mb = name, timeout_s, memory_mb
        self.module_name, _, self.attr = handler.rpartition(".")
        importlib.import_module(self.module_name)  # the shared imports, and a namespace for pydantic's annotations
        self._idle: list[ModuleType] = []
        self._lock = threading.Lock()
        self.invocations = 0
        self.errors: Counter[str] = Counter()
        self.in_flight = 0

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

    def invoke(self, event: Any, dies_after: int | None = None) -> Any:
        module = self._environment()
        try:
            ctx = LambdaContext(self.name, self.timeout_s, self.memory_mb, dies_after)
            with acting_as(self.name):  # its AWS calls are checked against its own role (stack/iam.py)
                return getattr(module, self.attr)(event, ctx)
        except Exception as exc:
            with self._lock:
                self.errors[type(exc).__name__] += 1
            raise
        finally:
            with self._lock:
                self._idle.append(module)
                self.in_flight -= 1


def function_error(exc: Exception) -> bytes:
    """The payload Lambda returns for an unhandled exception; Step Functions takes errorType as the error name."""
    tb = traceback.format_exception(exc)
    return json.dumps({"errorType": type(exc).__name__, "errorMessage": str(exc), "stackTrace": tb}).encode()
