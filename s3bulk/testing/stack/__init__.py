"""The synthesized stack, run as it will run: the real state machine on moto's ASL interpreter, the real handlers as its Lambdas.

`synthesize(context)` builds the CDK app in-process and returns the stack's template.
`StackOnMoto(template)` provisions, in moto, every table, queue, bucket and function
the template declares (same logical ids, key schemas, redrive policy, handler paths
and environments), resolves every Ref/Fn::GetAtt/Fn::Join in the state machine's
definition to them, creates the state machine, and then:

- routes moto's Lambda invoke to the real handler named by the function's `Handler`,
  with a fake LambdaContext whose clock is the function's `Timeout`; an exception
  becomes a function error whose errorType is its class name, as on AWS, so the
  definition's Retry/Catch on error names act on it;
- emulates each `AWS::Lambda::EventSourceMapping` on an SQS queue: poller threads
  receive up to BatchSize messages, build the SQS event as AWS does, invoke the
  function, delete what succeeded, and leave the rest to reappear when their
  visibility timeout ends (whatever the handler set stands); a delivered record is
  held invisible for its function's Timeout, as AWS's six-times rule guarantees, so
  scaled-down visibility never hands it to a second poller mid-invocation; moto's
  redrive moves messages past maxReceiveCount to the DLQ;
- injects faults (`Faults`): DynamoDB TransactionConflict on a seeded fraction of
  the handlers' writes, workers whose time runs out mid-batch, duplicate deliveries.

Each concurrent invocation gets its own copy of the handler module (its own module
globals and `functools.cache`d clients), as each Lambda execution environment has;
an environment serves one invocation at a time and is reused after it, so caches
behave as in warm containers and never leak between harnesses.

The parts live beside this file (moto_stack, lambdas, event_source, faults, iam, ...); import them from here. It runs
only locally (tests, and `s3bulk demo --stack`), never in a Lambda asset.
"""

from s3bulk.aws.remote import Deployment
from s3bulk.testing.stack.aws import REGION
from s3bulk.testing.stack.event_source import SourceStats, SqsEventSource
from s3bulk.testing.stack.faults import DynamoConflicts, Faults
from s3bulk.testing.stack.lambdas import Function, LambdaContext
from s3bulk.testing.stack.moto_stack import Execution, StackOnMoto, resources_of, synthesize


def cli_flags(deployment: Deployment) -> list[str]:
    """The flags that point the CLI's stack commands at the harness's deployment."""
    return [
        "--region",
        REGION,
        "--state-machine-arn",
        deployment.state_machine_arn,
        "--table",
        deployment.table,
        "--report-bucket",
        deployment.report_bucket,
    ]


__all__ = [
    "DynamoConflicts",
    "Execution",
    "Faults",
    "Function",
    "LambdaContext",
    "SourceStats",
    "SqsEventSource",
    "StackOnMoto",
    "cli_flags",
    "resources_of",
    "synthesize",
]
