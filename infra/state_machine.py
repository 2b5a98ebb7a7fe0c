"""The job state machine: Validate -> ledger entry -> List loop -> Wait/CheckProgress loop -> Finalize -> Succeed/Fail.

Payloads carry ids and counts only. The progress loop reads the ledger with
the direct DynamoDB integration, so waiting costs no Lambda invocations.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as ddb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

LAMBDA_TRANSIENT = ["Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException", "Lambda.TooManyRequestsException"]


def _retry(task: sfn.TaskStateBase, errors: list[str]) -> None:
    task.add_retry(errors=errors, interval=cdk.Duration.seconds(2), max_attempts=6, backoff_rate=2.0, jitter_strategy=sfn.JitterType.FULL)


def build_state_machine(
    scope: Construct, *, table: ddb.ITable, validate: lambda_.IFunction, lister: lambda_.IFunction, finalize: lambda_.IFunction
) -> sfn.StateMachine:
    job_key = {
        "pk": tasks.DynamoAttributeValue.from_string(sfn.JsonPath.format("job#{}", sfn.JsonPath.string_at("$.job_id"))),
        "sk": tasks.DynamoAttributeValue.from_string("job"),
    }

    failed = sfn.Fail(scope, "JobFailed", error="JobFailed", cause_path="$.error.Cause")
    mark_failed = tasks.DynamoUpdateItem(
        scope,
        "MarkFailed",
        table=table,
        key=job_key,
        update_expression="SET #s = :failed",
        expression_attribute_names={"#s": "status"},
        expression_attribute_values={":failed": tasks.DynamoAttributeValue.from_string("FAILED")},
        result_path=sfn.JsonPath.DISCARD,
    )
    _retry(mark_failed, ["DynamoDB.ProvisionedThroughputExceededException", "DynamoDB.InternalServerErrorException", "States.Timeout"])
    mark_failed.add_catch(failed, errors=["States.ALL"], result_path="$.mark_error")
    mark_failed.next(failed)

    invalid = sfn.Fail(scope, "InvalidJob", error="InvalidJob", cause_path="$.error.Cause")
    # retry_on_service_exceptions=False: CDK's own retrier would repeat _retry's (same errors, other timing).
    validate_task = tasks.LambdaInvoke(
        scope, "Validate", lambda_function=validate, payload_response_only=True, result_path="$", retry_on_service_exceptions=False
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
    _retry(create, ["DynamoDb.ProvisionedThroughputExceededException", "DynamoDb.InternalServerErrorException", "States.Timeout"])
    slim = sfn.Pass(
        scope,
        "KeepIdsOnly",
        parameters={"job_id.$": "$.job_id", "poll_seconds.$": "$.poll_seconds"},
    )
    # A job id submitted again resumes that job rather than starting over.
    create.add_catch(slim, errors=["DynamoDb.ConditionalCheckFailedException"], result_path=sfn.JsonPath.DISCARD)
    create.add_catch(failed, errors=["States.ALL"], result_path="$.error")

    def job_task(name: str, fn: lambda_.IFunction, result_path: str) -> tasks.LambdaInvoke:
        """A Lambda step that takes the job id and whose errors mark the job failed."""
        task = tasks.LambdaInvoke(
            scope,
            name,
            lambda_function=fn,
            payload=sfn.TaskInput.from_object({"job_id.$": "$.job_id"}),
            payload_response_only=True,
            result_path=result_path,
            retry_on_service_exceptions=False,
        )
        _retry(task, [*LAMBDA_TRANSIENT, "States.Timeout"])
        task.add_catch(mark_failed, errors=["States.ALL"], result_path="$.error")
        return task

    list_task = job_task("List", lister, "$.listing")

    wait = sfn.Wait(scope, "Wait", time=sfn.WaitTime.seconds_path("$.poll_seconds"))
    check = tasks.DynamoGetItem(
        scope,
        "CheckProgress",
        table=table,
        key=job_key,
        consistent_read=True,
        result_selector={
            "listing_done.$": "$.Item.listing_done.BOOL",
            "pending.$": "$.Item.pending.N",
            "failed.$": "$.Item.failed.N",
            "succeeded.$": "$.Item.succeeded.N",
        },
        result_path="$.progress",
    )
    _retry(check, ["DynamoDB.ProvisionedThroughputExceededException", "DynamoDB.InternalServerErrorException", "States.Timeout"])
    check.add_catch(mark_failed, errors=["States.ALL"], result_path="$.error")

    finalize_task = job_task("Finalize", finalize, "$.result")

    too_many = sfn.Fail(
        scope,
        "TooManyFailures",
        error="TooManyFailures",
        cause="More objects failed than options.tolerated_failures allows; see the report.",
    )
    succeeded = sfn.Succeed(scope, "JobSucceeded")

    listing_done = (
        sfn.Choice(scope, "ListingDone?").when(sfn.Condition.boolean_equals("$.listing.listing_done", True), wait).otherwise(list_task)
    )
    all_done = (
        sfn.Choice(scope, "AllBatchesDone?")
        .when(
            sfn.Condition.and_(
                sfn.Condition.boolean_equals("$.progress.listing_done", True), sfn.Condition.string_equals("$.progress.pending", "0")
            ),
            finalize_task,
        )
        .otherwise(wait)
    )
    verdict = (
        sfn.Choice(scope, "WithinTolerance?")
        .when(sfn.Condition.boolean_equals("$.result.over_threshold", True), too_many)
        .otherwise(succeeded)
    )

    create.next(slim)
    slim.next(list_task)
    list_task.next(listing_done)
    wait.next(check)
    check.next(all_done)
    finalize_task.next(verdict)
    definition = validate_task.next(create)

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
        definition_body=sfn.DefinitionBody.from_chainable(definition),
        state_machine_type=sfn.StateMachineType.STANDARD,
        tracing_enabled=True,
        logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=False),
    )
