"""What an operator watches during a migration: throughput, failures, queue health, workers, executions.

A construct that takes the resources it watches (not the stack), so it can be
built and tested on its own and the stack does not import back from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from s3bulk import metrics as m

PERIOD = cdk.Duration.minutes(1)
# Work older than this while no batch is being finished means the workers are stuck. Age alone is not a signal: a
# 100 M-object job keeps messages waiting for hours while its workers are busy.
OLDEST_MESSAGE_ALARM_S = 3600


def _metric(name: str, statistic: str = "Sum") -> cw.Metric:
    return cw.Metric(namespace=m.NAMESPACE, metric_name=name, dimensions_map={"service": m.SERVICE}, statistic=statistic, period=PERIOD)


def _per_second(name: str, label: str) -> cw.MathExpression:
    mid = name[0].lower() + name[1:]  # ids must differ between expressions in one graph
    return cw.MathExpression(expression=f"{mid} / PERIOD({mid})", using_metrics={mid: _metric(name)}, label=label, period=PERIOD)


class Monitoring(Construct):
    """The job dashboard and its alarms, over the worker, the work queue and its DLQ, and the job state machine."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        worker: lambda_.IFunction,
        queue: sqs.IQueue,
        dlq: sqs.IQueue,
        state_machine: sfn.IStateMachine,
        alarm_topic: sns.ITopic | None = None,
        functions: Sequence[lambda_.IFunction] = (),
        ended_dlq: sqs.IQueue | None = None,
        schedule_dlq: sqs.IQueue | None = None,
    ) -> None:
        """With `alarm_topic`, every alarm notifies it when it fires and when it clears. `functions` are the other
        functions whose errors alarm together; `ended_dlq` holds execution-ended events that could not be delivered;
        `schedule_dlq` scheduled runs that could not be started."""
        super().__init__(scope, construct_id)
        self.worker, self.queue, self.dlq, self.state_machine = worker, queue, dlq, state_machine
        self.functions, self.ended_dlq, self.schedule_dlq = list(functions), ended_dlq, schedule_dlq
        self.dashboard = self._dashboard()
        self.alarms = self._alarms()
        if alarm_topic is not None:
            action = cw_actions.SnsAction(alarm_topic)
            for a in self.alarms:
                a.add_alarm_action(action)
                a.add_ok_action(action)

    def _dashboard(self) -> cw.Dashboard:
        worker, sm, queue = self.worker, self.state_machine, self.queue
        # Dashboards are global to the account: the Region in the name lets the same stack deploy in two Regions.
        name = f"{cdk.Aws.STACK_NAME}-{cdk.Aws.REGION}-s3bulk"
        dash = cw.Dashboard(self, "Dashboard", dashboard_name=name, default_interval=cdk.Duration.hours(3))
        dash.add_widgets(
            cw.GraphWidget(
                title="Objects/s",
                left=[_per_second(m.OBJECTS_SUCCEEDED, "succeeded/s"), _per_second(m.OBJECTS_FAILED, "failed/s")],
                width=8,
            ),
            cw.GraphWidget(title="Bytes/s", left=[_per_second(m.BYTES, "bytes/s")], width=8),
            cw.GraphWidget(
                title="Failures, dead letters, returned batches and S3 retries",
                left=[_metric(m.OBJECTS_FAILED), _metric(m.DEAD_LETTERED_BATCHES), _metric(m.BATCHES_RETURNED)],
                right=[_metric(m.RETRIES)],
                width=8,
            ),
        )
        dash.add_widgets(
            cw.GraphWidget(
                title="Work queue depth",
                left=[
                    queue.metric_approximate_number_of_messages_visible(period=PERIOD),
                    queue.metric_approximate_number_of_messages_not_visible(period=PERIOD),
                ],
                width=8,
            ),
            cw.GraphWidget(
                title="Age of oldest message (s)", left=[queue.metric_approximate_age_of_oldest_message(period=PERIOD)], width=8
            ),
            cw.GraphWidget(
                title="Dead-letter queue depth", left=[self.dlq.metric_approximate_number_of_messages_visible(period=PERIOD)], width=8
            ),
        )
        dash.add_widgets(
            cw.GraphWidget(
                title="Worker concurrency",
                left=[worker.metric("ConcurrentExecutions", statistic="Maximum", period=PERIOD)],
                width=6,
            ),
            cw.GraphWidget(
                title="Worker errors and throttles",
                left=[worker.metric_errors(period=PERIOD), worker.metric_throttles(period=PERIOD)],
                width=6,
            ),
            cw.GraphWidget(
                title="Worker duration (ms)",
                left=[worker.metric_duration(statistic=s, period=PERIOD) for s in ("p50", "p99", "Maximum")],
                width=6,
            ),
            cw.GraphWidget(
                title="Job executions",
                left=[sm.metric_started(period=PERIOD), sm.metric_succeeded(period=PERIOD), sm.metric_failed(period=PERIOD)],
                width=6,
            ),
        )
        return dash

    def _other_alarms(self, alarm: Any, five: cdk.Duration, at_least: Any, above: Any) -> list[cw.Alarm]:
        """Errors of the functions other than the worker (listers, Finalize, ExecutionEnded, ...), and events about
        ended executions that could not be delivered to ExecutionEnded."""
        out = []
        if self.functions:
            ids = {f"f{i}": fn.metric_errors(period=five) for i, fn in enumerate(self.functions)}
            out.append(
                alarm(
                    "FunctionErrorsAlarm",
                    cw.MathExpression(expression=" + ".join(ids), using_metrics=ids, period=five, label="errors of the other functions"),
                    "A job step's function is erroring (a lister, Validate, Progress, Finalize, ExecutionEnded or the "
                    "dead-letter counter); Step Functions retries it, but see its logs.",
                    1,
                    at_least,
                )
            )
        held = (
            (
                "ExecutionEndedDeadLettersAlarm",
                self.ended_dlq,
                "An ended execution's event could not reach ExecutionEnded, or ExecutionEnded failed on it past its "
                "retries: its job may lack a report; run s3bulk status on it and redrive the event.",
            ),
            (
                "ScheduleDeadLettersAlarm",
                self.schedule_dlq,
                "A scheduled job could not be started within its retries: the message holds its input; start it with "
                "s3bulk submit, and check the state machine's throttles.",
            ),
        )
        for name, queue, text in held:  # a dead-letter queue of an EventBridge target: any message in it is news
            if queue is not None:
                out.append(
                    alarm(name, queue.metric_approximate_number_of_messages_visible(period=five, statistic="Maximum"), text, 0, above)
                )
        return out

    def _alarms(self) -> list[cw.Alarm]:
        five = cdk.Duration.minutes(5)
        above = cw.ComparisonOperator.GREATER_THAN_THRESHOLD
        at_least = cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD

        def alarm(
            name: str,
            metric: cw.Metric | cw.MathExpression,
            description: str,
            threshold: float,
            op: cw.ComparisonOperator,
            periods: int = 1,
        ) -> cw.Alarm:
            return metric.create_alarm(  # a Metric or a MathExpression
                self,
                name,
                alarm_description=description,
                threshold=threshold,
                comparison_operator=op,
                evaluation_periods=periods,
                treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
            )

        return [
            alarm(
                "DeadLettersAlarm",
                self.dlq.metric_approximate_number_of_messages_visible(period=five, statistic="Maximum"),
                "A dead-lettered batch is waiting: the dead-letter counter could not count it (see its logs); inspect and redrive.",
                0,
                above,
            ),
            alarm(
                "DeadLetteredBatchesAlarm",
                _metric(m.DEAD_LETTERED_BATCHES),
                "A batch was dead-lettered and counted failed (its worker raised, or Lambda ended it at its timeout or "
                "memory on every delivery): its objects are in the job report with what to change.",
                1,
                at_least,
            ),
            alarm(
                "FailedExecutionsAlarm",
                self.state_machine.metric_failed(period=five),
                "A job execution failed (invalid job, too many object failures, or an error).",
                1,
                at_least,
            ),
            alarm(
                "WorkerErrorsAlarm",
                self.worker.metric_errors(period=five),
                "Worker invocations are erroring (not per-object failures, which are reported per key).",
                1,
                at_least,
            ),
            alarm(
                "StuckWorkAlarm",
                cw.MathExpression(
                    expression=f"IF(age > {OLDEST_MESSAGE_ALARM_S} AND deleted == 0, 1, 0)",
                    using_metrics={
                        "age": self.queue.metric_approximate_age_of_oldest_message(period=five, statistic="Maximum"),
                        "deleted": self.queue.metric_number_of_messages_deleted(period=five, statistic="Sum"),
                    },
                    period=five,
                    label="work waiting, none finished",
                ),
                f"Work has waited over {OLDEST_MESSAGE_ALARM_S // 60} minutes and no batch was finished for 15 minutes: "
                "the workers are stuck (throttled, failing, or the event source disabled).",
                1,
                at_least,
                periods=3,
            ),
            alarm(
                "ExecutionsEndedEarlyAlarm",
                _metric(m.UNASKED_ENDS),  # ExecutionEnded's count: a stop or cancel its owner asked for is left out
                "A job execution timed out, or was stopped by something other than its owner's s3bulk stop or cancel: "
                "ExecutionEnded wrote its report (stopped, resumable); check it.",
                1,
                at_least,
            ),
            *self._other_alarms(alarm, five, at_least, above),
        ]
