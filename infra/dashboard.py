"""What an operator watches during a migration: throughput, failures, queue health, workers, executions."""

from __future__ import annotations

from typing import TYPE_CHECKING

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cw
from constructs import Construct

from s3bulk.awsenv import METRICS_NAMESPACE, SERVICE

if TYPE_CHECKING:
    from infra.stack import S3BulkStack

PERIOD = cdk.Duration.minutes(1)
# Oldest message older than this means workers are not keeping up (or are stuck).
OLDEST_MESSAGE_ALARM_S = 3600


def _metric(name: str, statistic: str = "Sum") -> cw.Metric:
    return cw.Metric(namespace=METRICS_NAMESPACE, metric_name=name, dimensions_map={"service": SERVICE}, statistic=statistic, period=PERIOD)


def _per_second(name: str, label: str) -> cw.MathExpression:
    mid = name[0].lower() + name[1:]  # ids must differ between expressions in one graph
    return cw.MathExpression(expression=f"{mid} / PERIOD({mid})", using_metrics={mid: _metric(name)}, label=label, period=PERIOD)


def build_dashboard(scope: Construct, stack: S3BulkStack) -> cw.Dashboard:
    worker = stack.worker_fn
    sm = stack.state_machine
    dash = cw.Dashboard(scope, "Dashboard", dashboard_name=f"{cdk.Aws.STACK_NAME}-s3bulk", default_interval=cdk.Duration.hours(3))
    dash.add_widgets(
        cw.GraphWidget(
            title="Objects/s", left=[_per_second("ObjectsSucceeded", "succeeded/s"), _per_second("ObjectsFailed", "failed/s")], width=8
        ),
        cw.GraphWidget(title="Bytes/s", left=[_per_second("Bytes", "bytes/s")], width=8),
        cw.GraphWidget(
            title="Failures, dead letters, returned batches and S3 retries",
            left=[_metric("ObjectsFailed"), _metric("DeadLetteredBatches"), _metric("BatchesReturned")],
            right=[_metric("Retries")],
            width=8,
        ),
    )
    dash.add_widgets(
        cw.GraphWidget(
            title="Work queue depth",
            left=[
                stack.queue.metric_approximate_number_of_messages_visible(period=PERIOD),
                stack.queue.metric_approximate_number_of_messages_not_visible(period=PERIOD),
            ],
            width=8,
        ),
        cw.GraphWidget(
            title="Age of oldest message (s)", left=[stack.queue.metric_approximate_age_of_oldest_message(period=PERIOD)], width=8
        ),
        cw.GraphWidget(
            title="Dead-letter queue depth", left=[stack.dlq.metric_approximate_number_of_messages_visible(period=PERIOD)], width=8
        ),
    )
    dash.add_widgets(
        cw.GraphWidget(
            title="Worker concurrency",
            left=[worker.metric("ConcurrentExecutions", statistic="Maximum", period=PERIOD)],
            width=6,
        ),
        cw.GraphWidget(
            title="Worker errors and throttles", left=[worker.metric_errors(period=PERIOD), worker.metric_throttles(period=PERIOD)], width=6
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


def build_alarms(scope: Construct, stack: S3BulkStack) -> list[cw.Alarm]:
    five = cdk.Duration.minutes(5)
    above = cw.ComparisonOperator.GREATER_THAN_THRESHOLD
    at_least = cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD

    def alarm(name: str, metric: cw.Metric, description: str, threshold: float, op: cw.ComparisonOperator, periods: int = 1) -> cw.Alarm:
        return metric.create_alarm(
            scope,
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
            stack.dlq.metric_approximate_number_of_messages_visible(period=five, statistic="Maximum"),
            "A batch was dead-lettered: its objects are in the job report as failed; inspect and redrive.",
            0,
            above,
        ),
        alarm(
            "FailedExecutionsAlarm",
            stack.state_machine.metric_failed(period=five),
            "A job execution failed (invalid job, too many object failures, or an error).",
            1,
            at_least,
        ),
        alarm(
            "WorkerErrorsAlarm",
            stack.worker_fn.metric_errors(period=five),
            "Worker invocations are erroring (not per-object failures, which are reported per key).",
            1,
            at_least,
        ),
        alarm(
            "OldestMessageAlarm",
            stack.queue.metric_approximate_age_of_oldest_message(period=five, statistic="Maximum"),
            f"Work has waited over {OLDEST_MESSAGE_ALARM_S // 60} minutes: workers are not keeping up or are stuck.",
            OLDEST_MESSAGE_ALARM_S,
            above,
            periods=3,
        ),
    ]
