"""A Distributed Map's children as AWS runs them, on moto's interpreter (5.2.5).

moto runs a Distributed Map's items on threads, as an inline Map's, and differs from AWS in two ways that matter to
the listing shards past 40 (infra/state_machine.py):
- a child runs under its parent's execution ARN, its events in one list for the whole map run. On AWS each child is an
  execution of its own, `arn:...:execution:MACHINE/LABEL:ID`, with its own history: ListShard asks about that
  history (s3bulk/aws/history.py), and IAM authorizes the call by that ARN;
- a child that fails is counted and dropped, and the map succeeds. AWS fails the Map state with
  States.ExceedToleratedFailureThreshold once more children failed than it tolerates (none, unless the state says).
Children here get their own ARN and history (GetExecutionHistory answers it; at the history limit the child fails, as
any execution does), a failed child fails the map as AWS does, and a stop of the parent is a stop of its children
(`parent_of`).
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, cast
from unittest import mock

from moto.stepfunctions.parser.api import ExecutionFailedEventDetails, GetExecutionHistoryOutput, HistoryEventType
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEvent, FailureEventException
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import StatesErrorNameType
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor.distributed_item_processor_worker import (
    DistributedItemProcessorWorker,
)
from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager
from moto.stepfunctions.parser.models import StepFunctionsParserBackend

from s3bulk.aws.history import HISTORY_LIMIT


class HistoryLimitReached(RuntimeError):
    """A child execution's history reached Step Functions' limit: AWS fails the execution there."""


class _LimitedHistory(EventManager):
    """A child's own history, failing the child at the history limit as AWS fails any execution there."""

    def __init__(self, limit: Callable[[], int]) -> None:
        super().__init__()
        self._limit = limit

    def add_event(self, *args: Any, **kwargs: Any) -> int:
        event_id = super().add_event(*args, **kwargs)
        if event_id >= self._limit():
            raise HistoryLimitReached(f"the execution reached the maximum number of history events ({self._limit()})")
        return event_id


class Children:
    """The child executions of every Distributed Map run in the harness: their parents, histories and failures."""

    def __init__(self, history_limit: Callable[[], int] = lambda: HISTORY_LIMIT) -> None:
        self._lock = threading.Lock()
        self.parents: dict[str, str] = {}  # child ARN -> parent execution ARN
        self.histories: dict[str, EventManager] = {}
        self.failed: list[str] = []  # child ARNs that ended FAILED
        self.history_limit = history_limit  # Step Functions' per execution (a test scales the harness's down)

    def parent_of(self, arn: str) -> str:
        """The top execution an ARN runs under (itself when it is no child)."""
        with self._lock:
            while arn in self.parents:
                arn = self.parents[arn]
        return arn

    @contextlib.contextmanager
    def emulated(self) -> Iterator[Children]:
        real_job, real_history = DistributedItemProcessorWorker._eval_job, StepFunctionsParserBackend.get_execution_history
        children = self

        def eval_job(worker: DistributedItemProcessorWorker, env: Any, job: Any) -> None:
            context = env.states.context_object.context_object_data
            parent = str(context["Execution"]["Id"])
            machine = str(worker._map_run_record.map_state_machine_arn)  # ...:stateMachine:MACHINE/LABEL
            name = str(uuid.uuid4())
            arn = f"{machine.replace(':stateMachine:', ':execution:', 1)}:{name}"
            history = _LimitedHistory(children.history_limit)
            with children._lock:
                children.parents[arn] = parent
                children.histories[arn] = history
            started = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")  # as AWS writes StartTime
            context["Execution"] = {**context["Execution"], "Id": arn, "Name": name, "StartTime": started}  # the child's own copy
            env.event_manager = history
            real_job(worker, env, job)
            if job.job_output is None:  # moto's worker caught the child's error (or its timeout): FAILED
                with children._lock:
                    children.failed.append(arn)
                # No failure is tolerated (the state names no ToleratedFailure*): the map run fails.
                job.job_output = FailureEventException(
                    failure_event=FailureEvent(
                        env=env,
                        error_name=StatesErrorName(typ=StatesErrorNameType.StatesExceedToleratedFailureThreshold),
                        event_type=HistoryEventType.ExecutionFailed,
                        event_details=cast(
                            EventDetails,
                            {
                                "executionFailedEventDetails": ExecutionFailedEventDetails(
                                    error=StatesErrorNameType.StatesExceedToleratedFailureThreshold.to_name(),
                                    cause=f"The specified tolerated failure threshold was exceeded: child execution {arn} failed",
                                )
                            },
                        ),
                    )
                )

        def get_execution_history(backend: StepFunctionsParserBackend, execution_arn: str) -> Any:
            with children._lock:
                history = children.histories.get(execution_arn)
            if history is None:
                return real_history(backend, execution_arn)
            return GetExecutionHistoryOutput(events=history.get_event_history())

        with (
            mock.patch.object(DistributedItemProcessorWorker, "_eval_job", eval_job),
            mock.patch.object(StepFunctionsParserBackend, "get_execution_history", get_execution_history),
        ):
            yield self
