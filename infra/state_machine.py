"""The job state machine: Validate -> ledger entry -> PlanListing -> ListShards (Map) -> AwaitCompletion -> Finalize.

Payloads carry ids and counts only. Waiting for the workers is one
`.waitForTaskToken` task, resumed by whoever sees the job complete (s3bulk/aws/completion.py),
so the history does not grow while a job runs. The wait times out after `poll_seconds`
(a safety net, e.g. for a worker that died between counting the last batch and sending
the token): CheckProgress asks the ledger, and the state machine finalizes or waits again.
One such cycle costs about 12 history events, so at the default 600 s an execution stays
under Step Functions' 25,000-event limit for about 14 days of work.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as ddb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from infra.config import MAX_INLINE_MAP
from s3bulk.aws.finish import CONTINUE
from s3bulk.aws.ledger import CANCELLED, CANCELLING

# How long a job with options.confirm waits for s3bulk confirm before it stops (resumable, as any stop).
CONFIRM_WAIT = cdk.Duration.days(7)
LAMBDA_TRANSIENT = ["Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException"]
# The account's concurrency is in use (a new account has as little as 10, shared with the workers): wait for room
# rather than fail the job, for up to about 25 minutes (the first retries come fast, then one a minute at most).
LAMBDA_THROTTLED = "Lambda.TooManyRequestsException"
THROTTLED_ATTEMPTS = 30
THROTTLED_MAX_DELAY = cdk.Duration.seconds(60)
# A function that crashed (out of memory, killed) or timed out. Every job step is idempotent (the lister
# resumes its shard from the last checkpoint, a re-sent page dedupes by batch id), so these are retried too.
LAMBDA_CRASHED = ["Lambda.Unknown", "Sandbox.Timedout"]


# A step's own verdicts: the job's spec or manifest refused, the job stopped under it, an endpoint's outage past its
# window. Deterministic, or a decision already made: never retried (ReportFailure fails or stops the job).
VERDICTS = ["JobError", "JobHalted", "EndpointUnreachable", "ManifestError", "ColumnarError"]
# Any other error of a step (an S3, SQS or DynamoDB call refused after the SDK's own retries): retried with backoff,
# as AWS advises for States.TaskFailed, for up to 30 s (2, 4, 8, 16 s, full jitter) before the job stops (resumable),
# not at the first one; as the retries of a crashed or timed-out call are paced.
FAULT_ATTEMPTS = 4


def _retry_faults(task: sfn.TaskStateBase) -> None:
    """After a step's specific retriers: its verdicts end it at once, and any other error is tried again."""
    task.add_retry(errors=VERDICTS, max_attempts=0)
    task.add_retry(
        errors=["States.ALL"],
        interval=cdk.Duration.seconds(2),
        max_attempts=FAULT_ATTEMPTS,
        backoff_rate=2.0,
        jitter_strategy=sfn.JitterType.FULL,
    )


def _retry(task: sfn.TaskStateBase, errors: list[str]) -> None:
    if isinstance(task, tasks.LambdaInvoke):  # first: Step Functions takes the first retrier whose errors match
        task.add_retry(
            errors=[LAMBDA_THROTTLED],
            interval=cdk.Duration.seconds(1),
            max_attempts=THROTTLED_ATTEMPTS,
            backoff_rate=2.0,
            max_delay=THROTTLED_MAX_DELAY,
            jitter_strategy=sfn.JitterType.FULL,
        )
    task.add_retry(errors=errors, interval=cdk.Duration.seconds(2), max_attempts=6, backoff_rate=2.0, jitter_strategy=sfn.JitterType.FULL)


def build_state_machine(
    scope: Construct,
    *,
    name: str,
    table: ddb.ITable,
    validate: lambda_.IFunction,
    lister: lambda_.IFunction,
    progress: lambda_.IFunction,
    finalize: lambda_.IFunction,
    list_concurrency: int,
    machine_arn: str,
    tracing: bool = False,
) -> sfn.StateMachine:
    """`name` is fixed so functions can be granted SendTaskSuccess on it without a reference cycle."""
    job_key = {
        "pk": tasks.DynamoAttributeValue.from_string(sfn.JsonPath.format("job#{}", sfn.JsonPath.string_at("$.job_id"))),
        "sk": tasks.DynamoAttributeValue.from_string("job"),
    }

    def set_status(name: str, status: str, remove: str = "") -> tasks.DynamoUpdateItem:
        """A direct DynamoDB update of the job's status (and attributes to remove), retried on the errors a write can meet."""
        task = tasks.DynamoUpdateItem(
            scope,
            name,
            table=table,
            key=job_key,
            update_expression="SET #s = :status" + (f" REMOVE {remove}" if remove else ""),
            expression_attribute_names={"#s": "status"},
            expression_attribute_values={":status": tasks.DynamoAttributeValue.from_string(status)},
            result_path=sfn.JsonPath.DISCARD,
        )
        _retry(
            task,
            [
                "DynamoDB.ProvisionedThroughputExceededException",
                "DynamoDB.InternalServerErrorException",
                "DynamoDB.TransactionConflictException",
                "States.Timeout",
            ],
        )
        return task

    failed = sfn.Fail(scope, "JobFailed", error="JobFailed", cause_path="$.error.Cause")
    mark_failed = set_status("MarkFailed", "FAILED")
    mark_failed.add_catch(failed, errors=["States.ALL"], result_path="$.mark_error")
    mark_failed.next(failed)

    invalid = sfn.Fail(scope, "InvalidJob", error="InvalidJob", cause_path="$.error.Cause")
    # retry_on_service_exceptions=False: CDK's own retrier would repeat _retry's (same errors, other timing).
    # The execution's name goes along: a job without its own id takes one derived from it, so the handler of the
    # execution's status-change event (which sees only the execution) finds the job.
    validate_task = tasks.LambdaInvoke(
        scope,
        "Validate",
        lambda_function=validate,
        payload=sfn.TaskInput.from_object({"job": sfn.JsonPath.entire_payload, "execution": sfn.JsonPath.string_at("$$.Execution.Name")}),
        payload_response_only=True,
        result_path="$",
        retry_on_service_exceptions=False,
    )
    _retry(validate_task, LAMBDA_TRANSIENT)
    validate_task.add_catch(invalid, errors=["JobError"], result_path="$.error")
    validate_task.add_catch(failed, errors=["States.ALL"], result_path="$.error")

    create = tasks.CallAwsService(
        scope,
        "CreateLedgerEntry",
        service="dynamodb",
        action="putItem",
        parameters={"TableName": table.table_name, "Item.$": "$.item", "ConditionExpression": "attribute_not_exists(pk)"},
        iam_resources=[table.table_arn],
        iam_action="dynamodb:PutItem",
        result_path=sfn.JsonPath.DISCARD,
    )
    _retry(
        create,
        [
            "DynamoDb.ProvisionedThroughputExceededException",
            "DynamoDb.InternalServerErrorException",
            "DynamoDb.TransactionConflictException",  # a write can conflict with an ongoing transaction on AWS too
            "States.Timeout",
        ],
    )
    slim = sfn.Pass(
        scope,
        "KeepIdsOnly",
        parameters={"job_id.$": "$.job_id", "poll_seconds.$": "$.poll_seconds", "continued": False},
    )
    # A job id submitted again (s3bulk resume) resumes that job rather than starting over: RUNNING again, so workers
    # work its batches; a job an outage stopped loses its stop reason, and its batches (handed back all along) are
    # worked again. Only a job that is not running, has not succeeded nor been cancelled and has the very same spec is reopened; the
    # execution that runs it is recorded (the end of an older one must not stop it) and its items' lease renewed.
    item = sfn.JsonPath.string_at
    reopen = tasks.DynamoUpdateItem(
        scope,
        "ReopenJob",
        table=table,
        key=job_key,
        update_expression="SET #s = :running, #e = :execution, expires_at = :expires REMOVE stop_reason, stopped_at",
        condition_expression="#s <> :running AND #s <> :succeeded AND #s <> :cancelling AND #s <> :cancelled AND #p = :spec",
        expression_attribute_names={"#s": "status", "#e": "execution", "#p": "spec"},
        expression_attribute_values={
            ":running": tasks.DynamoAttributeValue.from_string("RUNNING"),
            ":succeeded": tasks.DynamoAttributeValue.from_string("SUCCEEDED"),
            ":cancelling": tasks.DynamoAttributeValue.from_string(CANCELLING),
            ":cancelled": tasks.DynamoAttributeValue.from_string(CANCELLED),
            ":spec": tasks.DynamoAttributeValue.from_string(item("$.item.spec.S")),
            ":execution": tasks.DynamoAttributeValue.from_string(item("$.item.execution.S")),
            ":expires": tasks.DynamoAttributeValue.number_from_string(item("$.item.expires_at.N")),
        },
        result_path=sfn.JsonPath.DISCARD,
    )
    _retry(
        reopen,
        [
            "DynamoDB.ProvisionedThroughputExceededException",
            "DynamoDB.InternalServerErrorException",
            "DynamoDB.TransactionConflictException",
        ],
    )
    # Refused: say why, without touching the job (the end of this execution is not the job's: see execution_ended).
    why_refused = tasks.DynamoGetItem(
        scope,
        "WhyNotReopened",
        table=table,
        key=job_key,
        expression_attribute_names={"#s": "status"},  # a reserved word; the status alone keeps the state small
        projection_expression=[tasks.DynamoProjectionExpression().with_attribute("#s")],
        result_path="$.existing",
    )
    _retry(why_refused, ["DynamoDB.ProvisionedThroughputExceededException", "DynamoDB.InternalServerErrorException"])
    why_refused.add_catch(failed, errors=["States.ALL"], result_path="$.error")

    def refused(name: str, cause: str) -> sfn.Fail:
        return sfn.Fail(scope, name, error=name, cause=cause)

    status = "$.existing.Item.status.S"
    why_refused.next(
        sfn.Choice(scope, "RunningOrChanged?")
        .when(
            sfn.Condition.string_equals(status, "RUNNING"),
            refused(
                "JobAlreadyRunning",
                "This job id is running already; follow it with s3bulk status JOB_ID, or give the new job another job_id.",
            ),
        )
        .when(
            sfn.Condition.string_equals(status, "SUCCEEDED"),
            refused(
                "JobAlreadySucceeded",
                "This job id has finished already (s3bulk report JOB_ID); give the job another job_id to run it again.",
            ),
        )
        .when(
            sfn.Condition.or_(sfn.Condition.string_equals(status, CANCELLING), sfn.Condition.string_equals(status, CANCELLED)),
            refused(
                "JobCancelled",
                "This job id was cancelled, which is final (s3bulk report JOB_ID); give the job another job_id to run it again.",
            ),
        )
        .otherwise(
            refused(
                "JobSpecChanged",
                "This job id was submitted with another spec; resume it as it was (s3bulk resume JOB_ID) or give this job another job_id.",
            )
        )
    )
    reopen.add_catch(why_refused, errors=["DynamoDB.ConditionalCheckFailedException"], result_path=sfn.JsonPath.DISCARD)
    reopen.add_catch(failed, errors=["States.ALL"], result_path="$.error")
    # A reopened job's parked batches go back on the queue at once, and after a failure breaker's stop its failed objects
    # are taken back to be done again (s3bulk/aws/held.py), over as many calls as it takes, before the listing goes on.
    start_resume = sfn.Pass(scope, "StartResume", parameters={"after": ""}, result_path="$.resumed")
    resume_held = tasks.LambdaInvoke(
        scope,
        "ResumeHeld",
        lambda_function=lister,
        payload=sfn.TaskInput.from_object({"job_id.$": "$.job_id", "phase": "resume", "after": sfn.JsonPath.string_at("$.resumed.after")}),
        payload_response_only=True,
        result_path="$.resumed",
        retry_on_service_exceptions=False,
    )
    _retry(resume_held, [*LAMBDA_TRANSIENT, *LAMBDA_CRASHED, "States.Timeout"])
    _retry_faults(resume_held)
    reopen.next(start_resume)
    start_resume.next(resume_held)
    resume_held.next(sfn.Choice(scope, "HeldSent?").when(sfn.Condition.boolean_equals("$.resumed.done", True), slim).otherwise(resume_held))
    create.add_catch(reopen, errors=["DynamoDb.ConditionalCheckFailedException"], result_path=sfn.JsonPath.DISCARD)
    create.add_catch(failed, errors=["States.ALL"], result_path="$.error")

    def unfinished(result: str) -> sfn.Condition:
        """A report step's answer says call again (`report_done: false`); an answer without the field is finished."""
        done = f"{result}.report_done"
        return sfn.Condition.and_(sfn.Condition.is_present(done), sfn.Condition.boolean_equals(done, False))

    def renewing(result: str) -> sfn.Condition:
        """A looping step's answer says the execution's history is long (`renew: true`; absent: carry on)."""
        renew = f"{result}.renew"
        return sfn.Condition.and_(sfn.Condition.is_present(renew), sfn.Condition.boolean_equals(renew, True))

    # A step that failed for good: write the report with the error and what was counted, then fail.
    report_failure = tasks.LambdaInvoke(
        scope,
        "ReportFailure",
        lambda_function=finalize,
        payload=sfn.TaskInput.from_object({"job_id": sfn.JsonPath.string_at("$.job_id"), "error": sfn.JsonPath.object_at("$.error")}),
        payload_response_only=True,
        result_path="$.failure_report",
        retry_on_service_exceptions=False,
    )
    _retry(report_failure, [*LAMBDA_TRANSIENT, "States.Timeout"])
    report_failure.add_catch(mark_failed, errors=["States.ALL"], result_path="$.report_error")
    resume_held.add_catch(report_failure, errors=["States.ALL"], result_path="$.error")
    # The failure breaker (s3bulk/breakers/failure.py) stopped the job: as resumable as any stop, under an error of its own.
    breaker_tripped = sfn.Fail(
        scope,
        "FailureBreakerTripped",
        error="FailureBreaker",
        cause="More than options.failure_breaker.rate of at least options.failure_breaker.after finished objects failed; "
        "the job stopped taking work (its report names the errors). Fix the cause, then: s3bulk resume JOB_ID.",
    )

    def by_breaker(result: str) -> sfn.Condition:
        reason = f"{result}.stop_reason"
        return sfn.Condition.and_(sfn.Condition.is_present(reason), sfn.Condition.string_equals(reason, "failure_breaker"))

    # An endpoint that stopped answering stops the job, resumable: the same job submitted again goes on from its checkpoints.
    job_stopped = sfn.Fail(
        scope,
        "JobStopped",
        error="JobStopped",
        cause="The job stopped (its report's error says why: an endpoint that stopped answering, a step that kept failing, "
        "its owner); its queued work is kept. Resume it once the cause is fixed: s3bulk resume JOB_ID.",
    )
    report_failure.next(
        sfn.Choice(scope, "FailureReportWritten?")
        .when(unfinished("$.failure_report"), report_failure)
        .otherwise(
            sfn.Choice(scope, "StoppedByOutage?")
            .when(by_breaker("$.failure_report"), breaker_tripped)
            .when(sfn.Condition.string_equals("$.failure_report.status", "stopped"), job_stopped)
            .otherwise(failed)
        )
    )

    def job_task(name: str, fn: lambda_.IFunction, result_path: str, **extra: Any) -> tasks.LambdaInvoke:
        """A Lambda step that takes the job id and whose errors mark the job failed."""
        task = tasks.LambdaInvoke(
            scope,
            name,
            lambda_function=fn,
            payload=sfn.TaskInput.from_object({"job_id.$": "$.job_id", **extra}),
            payload_response_only=True,
            result_path=result_path,
            retry_on_service_exceptions=False,
        )
        _retry(task, [*LAMBDA_TRANSIENT, *LAMBDA_CRASHED, "States.Timeout"])
        _retry_faults(task)
        task.add_catch(report_failure, errors=["States.ALL"], result_path="$.error")
        return task

    plan = job_task("PlanListing", lister, "$.plan")

    def shard_loop(
        map_name: str, task_name: str, choice_name: str, done_name: str, result_path: str, phase: str
    ) -> sfn.Map | sfn.DistributedMap:
        """A Map over the plan's shards whose item calls the lister until its answer says done (each call ends before its
        timeout and the loop calls it again), several shards at once."""
        extra = (
            {"phase": phase}
            if phase != "list"
            else {"execution": sfn.JsonPath.string_at("$$.Execution.Id"), "started": sfn.JsonPath.string_at("$$.Execution.StartTime")}
        )
        task = tasks.LambdaInvoke(
            scope,
            task_name,
            lambda_function=lister,
            payload=sfn.TaskInput.from_object({"job_id.$": "$.job_id", "shard.$": "$.shard", **extra}),
            payload_response_only=True,
            result_path=result_path,
            retry_on_service_exceptions=False,
        )
        _retry(task, [*LAMBDA_TRANSIENT, *LAMBDA_CRASHED, "States.Timeout"])
        _retry_faults(task)
        task.next(
            sfn.Choice(scope, choice_name)
            .when(sfn.Condition.boolean_equals(f"{result_path}.done", True), sfn.Succeed(scope, done_name))
            # The execution's history is long: the shard goes on from its checkpoint in the job's next execution.
            .when(renewing(result_path), sfn.Succeed(scope, f"{done_name}Paused"))
            .otherwise(task)
        )
        loop: sfn.Map | sfn.DistributedMap
        selector = {"job_id.$": "$.job_id", "shard.$": "$$.Map.Item.Value"}
        if list_concurrency > MAX_INLINE_MAP:
            # A Distributed Map fails with States.ExceedToleratedFailureThreshold, not its child's error: the child writes
            # the job's report with its own step's error first (Finalize, as ReportFailure does; the parent's ReportFailure
            # then finds it written and keeps it), and ends with that error.
            failed = sfn.Fail(scope, f"{task_name}Error", error_path="$.error.Error", cause_path="$.error.Cause")
            report = tasks.LambdaInvoke(
                scope,
                f"{task_name}Report",
                lambda_function=finalize,
                payload=sfn.TaskInput.from_object(
                    {"job_id": sfn.JsonPath.string_at("$.job_id"), "error": sfn.JsonPath.object_at("$.error")}
                ),
                payload_response_only=True,
                result_path="$.failure_report",
                retry_on_service_exceptions=False,
            )
            _retry(report, [*LAMBDA_TRANSIENT, "States.Timeout"])
            report.add_catch(failed, errors=["States.ALL"], result_path="$.report_error")
            report.next(sfn.Choice(scope, f"{task_name}Reported?").when(unfinished("$.failure_report"), report).otherwise(failed))
            task.add_catch(report, errors=["States.ALL"], result_path="$.error")
        shape: dict[str, Any] = {
            "items_path": "$.plan.shards",
            "item_selector": selector,
            "max_concurrency": list_concurrency,
            "result_path": sfn.JsonPath.DISCARD,
        }
        if list_concurrency <= MAX_INLINE_MAP:
            loop = sfn.Map(scope, map_name, **shape)
        else:
            # Past the 40 iterations an inline Map runs at once: each shard's loop is a child execution of its own (its
            # own 25,000-event history, which its ListShard asks about), up to 10,000 at once. The plan's shard numbers
            # are the items, inline (at most 1,000 small numbers). Any child failing fails the map (no failure is
            # tolerated), after it wrote the job's report with its own step's error (above).
            loop = sfn.DistributedMap(scope, map_name, **shape, map_execution_type=sfn.StateMachineType.STANDARD, label=map_name)
        loop.item_processor(task)
        loop.add_catch(report_failure, errors=["States.ALL"], result_path="$.error")
        return loop

    # Each shard lists from its own cursor until done, sending its batches.
    list_shards = shard_loop("ListShards", "ListShard", "ShardDone?", "ShardListed", "$.listing", "list")
    # The delete guard (options.max_delete on a delete or move): every shard counted, then the total checked, before ListShards.
    count_shards = shard_loop("CountShards", "CountShard", "ShardCounted?", "ShardCountDone", "$.counting", "count")
    check_count = tasks.LambdaInvoke(
        scope,
        "CheckCount",
        lambda_function=lister,
        payload=sfn.TaskInput.from_object({"job_id.$": "$.job_id", "phase": "check"}),
        payload_response_only=True,
        result_path="$.guard",
        retry_on_service_exceptions=False,
    )
    _retry(check_count, [*LAMBDA_TRANSIENT, *LAMBDA_CRASHED, "States.Timeout"])
    _retry_faults(check_count)
    check_count.add_catch(report_failure, errors=["States.ALL"], result_path="$.error")
    # A missing field would be a runtime error in a Choice: a plan without "guard" lists at once.
    wants_guard = sfn.Condition.and_(sfn.Condition.is_present("$.plan.guard"), sfn.Condition.boolean_equals("$.plan.guard", True))
    # options.confirm: nothing is changed until the owner confirms the planned (and, with max_delete, counted) job.
    await_confirmation = tasks.LambdaInvoke(
        scope,
        "AwaitConfirmation",
        lambda_function=progress,
        integration_pattern=sfn.IntegrationPattern.WAIT_FOR_TASK_TOKEN,
        payload=sfn.TaskInput.from_object(
            {"job_id": sfn.JsonPath.string_at("$.job_id"), "token": sfn.JsonPath.task_token, "phase": "confirm"}
        ),
        task_timeout=sfn.Timeout.duration(CONFIRM_WAIT),
        result_path=sfn.JsonPath.DISCARD,
        retry_on_service_exceptions=False,
    )
    _retry(await_confirmation, LAMBDA_TRANSIENT)
    await_confirmation.add_catch(report_failure, errors=["States.ALL"], result_path="$.error")
    await_confirmation.next(list_shards)
    wants_confirm = sfn.Condition.and_(sfn.Condition.is_present("$.plan.confirm"), sfn.Condition.boolean_equals("$.plan.confirm", True))
    confirm = sfn.Choice(scope, "Confirm?").when(wants_confirm, await_confirmation).otherwise(list_shards)
    guard = sfn.Choice(scope, "DeleteGuard?").when(wants_guard, count_shards).otherwise(confirm)

    await_completion = tasks.LambdaInvoke(
        scope,
        "AwaitCompletion",
        lambda_function=progress,
        integration_pattern=sfn.IntegrationPattern.WAIT_FOR_TASK_TOKEN,
        payload=sfn.TaskInput.from_object({"job_id": sfn.JsonPath.string_at("$.job_id"), "token": sfn.JsonPath.task_token}),
        task_timeout=sfn.Timeout.at("$.poll_seconds"),
        result_path="$.completion",
        retry_on_service_exceptions=False,
    )
    _retry(await_completion, LAMBDA_TRANSIENT)
    check = job_task("CheckProgress", progress, "$.progress", execution=sfn.JsonPath.string_at("$$.Execution.Id"))
    # The wait timing out is the safety net, not an error: ask the ledger.
    await_completion.add_catch(check, errors=["States.Timeout"], result_path=sfn.JsonPath.DISCARD)
    await_completion.add_catch(report_failure, errors=["States.ALL"], result_path="$.error")

    finalize_task = job_task("Finalize", finalize, "$.result")

    too_many = sfn.Fail(
        scope,
        "TooManyFailures",
        error="TooManyFailures",
        cause="More objects failed than options.tolerated_failures allows; see the report.",
    )
    succeeded = sfn.Succeed(scope, "JobSucceeded")

    # Continue as new (s3bulk/aws/history.py): the job goes on in a new execution, which adopts it (AdoptJob) and lists
    # on from its checkpoints; this one ends. The new one's input names the job and this execution.
    continue_input = sfn.Pass(
        scope,
        "ContinueInput",
        parameters={
            CONTINUE: {"job_id.$": "$.job_id", "from.$": "$$.Execution.Name"},
            "poll_seconds.$": "$.poll_seconds",
        },
        result_path="$.continue_input",
    )
    continue_as_new = sfn.CustomState(
        scope,
        "ContinueAsNew",
        state_json={
            "Type": "Task",
            "Resource": f"arn:{cdk.Aws.PARTITION}:states:::states:startExecution",
            "Parameters": {
                "StateMachineArn": machine_arn,
                "Input.$": "States.JsonToString($.continue_input)",
                "Name.$": "States.UUID()",
            },
            "ResultSelector": {"started": True},  # the answer carries a timestamp: nothing of it is kept
            "ResultPath": "$.continued_in",
            "Retry": [
                {"ErrorEquals": ["States.ALL"], "IntervalSeconds": 2, "MaxAttempts": 6, "BackoffRate": 2.0, "JitterStrategy": "FULL"}
            ],
        },
    )
    continue_as_new.add_catch(report_failure, errors=["States.ALL"], result_path="$.error")
    continue_input.next(continue_as_new)
    continue_as_new.next(sfn.Succeed(scope, "ContinuedInNewExecution"))
    after_listing = job_task("AfterListing", progress, "$.listed", phase="listed")
    after_listing.next(
        sfn.Choice(scope, "ListingDone?")
        .when(sfn.Condition.boolean_equals("$.listed.listing_done", True), await_completion)
        .otherwise(continue_input)
    )
    all_done = (
        sfn.Choice(scope, "AllBatchesDone?")
        .when(sfn.Condition.boolean_equals("$.progress.complete", True), finalize_task)
        .when(renewing("$.progress"), continue_input)
        .otherwise(await_completion)
    )
    verdict = (
        sfn.Choice(scope, "WithinTolerance?")
        .when(by_breaker("$.result"), breaker_tripped)
        .when(sfn.Condition.string_equals("$.result.status", "stopped"), job_stopped)
        .when(sfn.Condition.boolean_equals("$.result.over_threshold", True), too_many)
        .otherwise(succeeded)
    )

    # failures.jsonl is assembled over as many Finalize calls as it takes (s3bulk/aws/assembly.py).
    report_written = sfn.Choice(scope, "ReportWritten?").when(unfinished("$.result"), finalize_task).otherwise(verdict)

    create.next(slim)
    slim.next(plan)
    # A job gone on in a new execution has passed its guard and confirmation: it lists on at once.
    plan.next(sfn.Choice(scope, "ContinuedJob?").when(sfn.Condition.boolean_equals("$.continued", True), list_shards).otherwise(guard))
    count_shards.next(check_count)
    check_count.next(confirm)
    list_shards.next(after_listing)
    await_completion.next(finalize_task)
    check.next(all_done)
    finalize_task.next(report_written)
    validate_task.next(create)
    # An execution started by ContinueAsNew adopts its job (only from the execution that started it, and only while the
    # job runs), then lists on.
    adopt = tasks.DynamoUpdateItem(
        scope,
        "AdoptJob",
        table=table,
        key={
            "pk": tasks.DynamoAttributeValue.from_string(sfn.JsonPath.format("job#{}", sfn.JsonPath.string_at(f"$.{CONTINUE}.job_id"))),
            "sk": tasks.DynamoAttributeValue.from_string("job"),
        },
        update_expression="SET #e = :execution",
        condition_expression="#s = :running AND #e = :from",
        expression_attribute_names={"#s": "status", "#e": "execution"},
        expression_attribute_values={
            ":running": tasks.DynamoAttributeValue.from_string("RUNNING"),
            ":execution": tasks.DynamoAttributeValue.from_string(sfn.JsonPath.string_at("$$.Execution.Name")),
            ":from": tasks.DynamoAttributeValue.from_string(sfn.JsonPath.string_at(f"$.{CONTINUE}.from")),
        },
        result_path=sfn.JsonPath.DISCARD,
    )
    _retry(
        adopt,
        [
            "DynamoDB.ProvisionedThroughputExceededException",
            "DynamoDB.InternalServerErrorException",
            "DynamoDB.TransactionConflictException",
        ],
    )
    adopt.add_catch(
        sfn.Fail(
            scope, "NotAdopted", error="NotAdopted", cause="The job was stopped or resumed before this execution could go on with it."
        ),
        errors=["States.ALL"],
        result_path="$.error",
    )
    adopt.next(
        sfn.Pass(
            scope,
            "ContinuedIds",
            parameters={"job_id.$": f"$.{CONTINUE}.job_id", "poll_seconds.$": "$.poll_seconds", "continued": True},
        )
    ).next(plan)
    definition = sfn.Choice(scope, "ContinuedFrom?").when(sfn.Condition.is_present(f"$.{CONTINUE}"), adopt).otherwise(validate_task)

    # Under /aws/vendedlogs/states/, as AWS advises: other names grow the account's CloudWatch Logs
    # resource policy with each state machine until it hits its 5,120-character limit.
    log_group = logs.LogGroup(
        scope,
        "StateMachineLogs",
        log_group_name=f"/aws/vendedlogs/states/{cdk.Aws.STACK_NAME}-jobs",
        retention=logs.RetentionDays.ONE_MONTH,
        removal_policy=cdk.RemovalPolicy.DESTROY,
    )
    return sfn.StateMachine(
        scope,
        "JobStateMachine",
        state_machine_name=name,
        definition_body=sfn.DefinitionBody.from_chainable(definition),
        state_machine_type=sfn.StateMachineType.STANDARD,
        tracing_enabled=tracing,
        logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=False),
    )
