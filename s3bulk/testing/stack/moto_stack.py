"""Provision a synthesized template in moto, resolve its intrinsics, and run its state machine with the real handlers."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast
from unittest import mock

import boto3
from moto import mock_aws
from moto.awslambda_simple.models import LambdaSimpleBackend
from moto.core.botocore_stubber import BotocoreStubber
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.events.models import EventPattern
from moto.s3.responses import S3Response
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import StateTaskServiceSfn
from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task_lambda import StateTaskLambda
from moto.stepfunctions.responses import StepFunctionResponse

from s3bulk.aws.history import HISTORY_LIMIT
from s3bulk.aws.ledger import DynamoLedger
from s3bulk.testing.stack.assets import Asset, assets_of, imports_from_assets
from s3bulk.testing.stack.aws import REGION
from s3bulk.testing.stack.distributed import Children
from s3bulk.testing.stack.event_source import IN_FLIGHT_LIMIT, SqsEventSource
from s3bulk.testing.stack.fastpath import through_moto as fast_path_through_moto
from s3bulk.testing.stack.faults import Faults, hook_dynamo_clients
from s3bulk.testing.stack.iam import IamGate
from s3bulk.testing.stack.kms import MotoKms
from s3bulk.testing.stack.lambdas import ASYNC_PAYLOAD_BYTES, Concurrency, Function, Throttled, asynchronously, function_error
from s3bulk.testing.stack.limits import Limits, inline_maps_over_concurrency
from s3bulk.testing.stack.motofixes import bytes_bodies, lambda_service_error, parts_with_checksums, sfn_api_names
from s3bulk.testing.stack.partitions import Partitions

REPO = Path(__file__).resolve().parents[3]
ACCOUNT = DEFAULT_ACCOUNT_ID
PSEUDO = {
    "AWS::Partition": "aws",
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackName": "S3Bulk",
}
# Process-wide settings the functions need here: no X-Ray daemon (the fast path's requests, which in-process moto
# would not see on their sockets, are handed to it by stack/fastpath.py); Powertools Metrics keeps one class-level metric set per process, which concurrent
# in-process invocations would flush under each other, so EMF output is off (tests/unit covers the metrics).
RUNTIME_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
    "AWS_EC2_METADATA_DISABLED": "true",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_DISABLED": "true",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
}


def synthesize(context: dict[str, object]) -> dict[str, Any]:
    """The app's only stack, synthesized in-process, as a CloudFormation template."""
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")  # before jsii starts node
    import aws_cdk as cdk
    from aws_cdk.assertions import Template

    if str(REPO) not in sys.path:  # app.py sits at the clone's root, beside the package (the demo runs from anywhere)
        sys.path.insert(0, str(REPO))
    from app import build_app

    app = build_app(context)
    [stack] = [c for c in app.node.children if isinstance(c, cdk.Stack)]
    return dict(Template.from_stack(stack).to_json())


def resources_of(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: r.get("Properties", {}) for k, r in template["Resources"].items() if r["Type"] == kind}


@dataclass
class Execution:
    arn: str
    status: str  # SUCCEEDED, FAILED, ... or ABORTED when it did not end in time and the harness stopped it
    description: dict[str, Any]
    events: list[dict[str, Any]]
    seconds: float
    ended: list[Any] = field(default_factory=list)  # what the EventBridge rules' functions returned for its status-change event

    def entered(self) -> list[str]:
        return [e["stateEnteredEventDetails"]["name"] for e in self.events if "stateEnteredEventDetails" in e]


class StackOnMoto:
    """Provision a synthesized template in moto and run it; a context manager (moto, env vars and pollers live inside it).

    `visibility_scale` multiplies every queue's VisibilityTimeout (3,600 s in the stack), so a batch
    left to its visibility timeout comes back in test time (a crashed, timed-out or throttled invocation's
    records; one still running is held for its function's Timeout, stack/event_source.py); `buckets` are created too (the allow-listed
    buckets are the deployer's, not the stack's); `env` adds or overrides function environment variables.
    """

    def __init__(
        self,
        template: dict[str, Any],
        *,
        buckets: tuple[str, ...] = (),
        faults: Faults | None = None,
        pollers: int = 4,
        visibility_scale: float = 1 / 100,
        env: dict[str, str] | None = None,
        check_iam: bool = True,
        check_limits: bool = True,
        account_concurrency: int | None = None,
        timeouts: dict[str, float] | None = None,
        in_flight_limit: int = IN_FLIGHT_LIMIT,
        history_limit: int = HISTORY_LIMIT,
        partition_scale: float = 1.0,
        runtime_env: dict[str, str] | None = None,
        staged_assets: bool = True,
    ) -> None:
        self.template = template
        # Over RUNTIME_ENV for the whole process (the demo's AWS_ENDPOINT_URL_S3: S3 served by SeaweedFS, not moto)
        self.runtime_env = {**RUNTIME_ENV, **(runtime_env or {})}
        # Whether synthesis staged each function's asset, so imports are checked against it (the demo skips the build)
        self.staged_assets = staged_assets
        # DynamoDB's units a second per partition (stack/partitions.py), divided by this: a test scales them down
        self.partition_scale = partition_scale
        # Step Functions' history limit per execution: at it, AWS fails the execution (States.Runtime); a test scales it down
        self.history_limit = history_limit
        self.history_failed: list[str] = []  # executions the harness failed at the limit
        self.in_flight_limit = in_flight_limit  # SQS's, per queue (stack/event_source.py); a test scales it down
        self.check_iam = check_iam  # False: a test that means to be refused asserts on `iam.denied` itself
        self.check_limits = check_limits  # False: a test that means to reach a limit asserts on `limits.refused` itself
        self.buckets = buckets
        self.faults = faults or Faults()
        self.pollers = pollers
        self.visibility_scale = visibility_scale
        self.extra_env = env or {}
        # The account's concurrent executions (None: as many as the test starts), and functions deployed with another
        # Timeout than the template's (logical id prefix -> seconds): each invocation is ended at its function's.
        self.concurrency = Concurrency(account_concurrency)
        self.timeouts = timeouts or {}
        self.names: dict[str, Any] = dict(PSEUDO)
        self.functions: dict[str, Function] = {}
        self.sources: list[SqsEventSource] = []
        self.rules: list[tuple[str, EventPattern, list[Function]]] = []
        self.background: list[threading.Thread] = []  # asynchronous Invokes a function made, each run as Lambda's queue would
        self.closed = threading.Event()
        self.user_stops: dict[str, tuple[str, str]] = {}  # execution ARN -> StopExecution's (error, cause)
        self.task_tokens: dict[str, list[str]] = {}  # execution ARN -> the task tokens its .waitForTaskToken tasks were given
        self.refused_after_stop: list[str] = []  # "ARN: function": a task moto's interpreter started after StopExecution
        self.children = Children(lambda: self.history_limit)  # a Distributed Map's child executions (stack/distributed.py)
        self.assets: dict[str, Asset] = {}  # each function's staged deployment package (stack/assets.py)
        self.refused_imports: list[str] = []  # "function: importer imports module" its package does not hold
        self._stack = ExitStack()

    # intrinsic functions
    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            [(key, arg)] = value.items()
            if key == "Ref":
                return self._name(arg)
            if key == "Fn::GetAtt":
                return self._name(f"{arg[0]}.{arg[1]}")
            if key == "Fn::Join":
                return str(arg[0]).join(str(self.resolve(p)) for p in arg[1])
            if key == "Fn::Split":
                return str(self.resolve(arg[1])).split(str(arg[0]))
            if key == "Fn::Select":
                return self.resolve(arg[1])[int(arg[0])]
            if key.startswith("Fn::"):
                raise NotImplementedError(f"intrinsic {key} is not emulated: {value}")
        return {k: self.resolve(v) for k, v in value.items()}

    def _name(self, token: str) -> Any:
        if token not in self.names:
            raise KeyError(f"{token} names nothing this harness provisions; add its resource type to StackOnMoto")
        return self.names[token]

    # lifecycle
    def __enter__(self) -> StackOnMoto:
        try:
            self._stack.enter_context(mock.patch.dict(os.environ, self.runtime_env))
            os.environ.pop("AWS_PROFILE", None)
            self._stack.enter_context(mock_aws(config={"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}))
            self._stack.enter_context(mock.patch.object(BotocoreStubber, "__call__", bytes_bodies(BotocoreStubber.__call__)))
            self._stack.enter_context(mock.patch.object(S3Response, "serialized", parts_with_checksums(S3Response.serialized)))
            self.s3 = boto3.client("s3", region_name=REGION)
            self.sqs = boto3.client("sqs", region_name=REGION)
            self.ddb = boto3.client("dynamodb", region_name=REGION)
            self.sfn = boto3.client("stepfunctions", region_name=REGION)
            self._provision()
            if self.staged_assets and (
                outdir := os.environ.get("CDK_OUTDIR")
            ):  # where synthesis staged each function's asset (tests/conftest.py)
                self.assets = assets_of(self.template, Path(outdir))
                if not self.assets:  # a rule that checks nothing would pass everything: say so instead
                    raise RuntimeError(f"no function's asset is staged in CDK_OUTDIR ({outdir}); synthesize the template there")
                self._stack.enter_context(imports_from_assets(self.assets, self.refused_imports))
            self.iam = IamGate.from_template(self.template, self.resolve, region=REGION, account=ACCOUNT)
            self.iam.state_machine = self.state_machine_arn
            self.iam.extra_needs = MotoKms(ACCOUNT, REGION).needs  # S3's KMS calls for SSE-KMS objects
            self.limits = Limits(
                {
                    self.names[q]: int(p["MaximumMessageSize"])
                    for q, p in resources_of(self.template, "AWS::SQS::Queue").items()
                    if "MaximumMessageSize" in p
                },
                partitions=Partitions(self.partition_scale),
            )
            self.limits.refused += inline_maps_over_concurrency(self.definition)
            self._stack.enter_context(self.children.emulated())
            self._stack.enter_context(self.iam.enforced(self.limits))
            self.fast_requests = self._stack.enter_context(fast_path_through_moto(self.iam))
            self._stack.enter_context(mock.patch.object(LambdaSimpleBackend, "invoke", self._lambda_invoke()))
            self._stack.enter_context(mock.patch.object(StepFunctionResponse, "stop_execution", self._recording_stops()))
            self._stack.enter_context(
                mock.patch.object(lambda_eval_utils, "execute_lambda_function_integration", self._no_task_after_stop())
            )
            self._stack.enter_context(mock.patch.object(StateTaskLambda, "_from_error", lambda_service_error(StateTaskLambda._from_error)))
            self._stack.enter_context(
                mock.patch.object(StateTaskServiceSfn, "_normalise_parameters", sfn_api_names(StateTaskServiceSfn._normalise_parameters))
            )
            if self.faults.dynamo is not None:
                self._stack.enter_context(hook_dynamo_clients(self.faults.dynamo))
            for source in self.sources:
                source.start()
                self._stack.callback(source.stop)
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self.closed.set()
        for fn in self.functions.values():  # nothing a test leaves running reaches AWS (or the next test) afterwards
            fn.end_all("ended with the stack")
        self._stack.close()
        if kind is None and self.check_iam and self.iam.denied:
            raise AssertionError("AWS would refuse these calls (each role as synthesized):\n" + "\n".join(self.iam.denied))
        if kind is None and self.refused_imports:
            raise AssertionError("Lambda could not import these (each function's own asset):\n" + "\n".join(self.refused_imports))
        if kind is None and self.check_limits and self.limits.refused:
            raise AssertionError("AWS would refuse these calls (its service limits):\n" + "\n".join(self.limits.refused))

    def _provision(self) -> None:
        iam = boto3.client("iam", region_name=REGION)
        role = iam.create_role(RoleName="s3bulk-stack", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        for b in self.buckets:
            self.s3.create_bucket(Bucket=b)
        for logical in resources_of(self.template, "AWS::S3::Bucket"):
            name = f"s3bulk-{logical.lower()}"
            self.s3.create_bucket(Bucket=name)
            self.names |= {logical: name, f"{logical}.Arn": f"arn:aws:s3:::{name}", f"{logical}.DomainName": f"{name}.s3.amazonaws.com"}
        for logical, p in resources_of(self.template, "AWS::DynamoDB::Table").items():
            spec = {k: p[k] for k in ("KeySchema", "AttributeDefinitions", "GlobalSecondaryIndexes", "ProvisionedThroughput") if k in p}
            self.ddb.create_table(TableName=logical, BillingMode=p.get("BillingMode", "PROVISIONED"), **spec)
            arn = self.ddb.describe_table(TableName=logical)["Table"]["TableArn"]
            self.names |= {logical: logical, f"{logical}.Arn": arn}
        queues = resources_of(self.template, "AWS::SQS::Queue")
        for logical, p in queues.items():
            attrs: dict[str, str] = {k: str(p[k]) for k in ("MessageRetentionPeriod", "DelaySeconds", "MaximumMessageSize") if k in p}
            attrs["VisibilityTimeout"] = str(max(1, round(int(p.get("VisibilityTimeout", 30)) * self.visibility_scale)))
            url = self.sqs.create_queue(QueueName=logical, Attributes=attrs)["QueueUrl"]
            arn = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            self.names |= {logical: url, f"{logical}.Arn": arn, f"{logical}.QueueName": logical, f"{logical}.QueueUrl": url}
        for logical, p in queues.items():  # once every queue exists, the redrive policies that name them
            if "RedrivePolicy" in p:
                self.sqs.set_queue_attributes(
                    QueueUrl=self.names[logical], Attributes={"RedrivePolicy": json.dumps(self.resolve(p["RedrivePolicy"]))}
                )
        env: dict[str, str] = {}
        lam = boto3.client("lambda", region_name=REGION)
        for logical, p in resources_of(self.template, "AWS::Lambda::Function").items():
            for k, v in self.resolve(p.get("Environment", {}).get("Variables", {})).items():
                if env.setdefault(k, str(v)) != str(v):  # one process holds every function: their environments must agree
                    raise NotImplementedError(f"functions disagree on {k} ({env[k]!r} vs {v!r}); set it per invocation")
            arn = lam.create_function(
                FunctionName=logical,
                Runtime=p["Runtime"],
                Role=role,
                Handler=p["Handler"],
                Code={"ZipFile": b"0"},
                Timeout=p.get("Timeout", 3),
            )["FunctionArn"]
            self.names |= {logical: logical, f"{logical}.Arn": arn}
            timeout = next((t for prefix, t in self.timeouts.items() if logical.startswith(prefix)), float(p.get("Timeout", 3)))
            memory, loop = int(p.get("MemorySize", 128)), str(p.get("RecursiveLoop", "Terminate"))
            self.functions[logical] = Function(logical, p["Handler"], timeout, memory, self.concurrency, recursive_loop=loop)
            if "ReservedConcurrentExecutions" in p:  # the deploy fails as Lambda refuses it, if the account keeps too little
                self.concurrency.reserve(logical, int(p["ReservedConcurrentExecutions"]))
        os.environ.update(env | self.extra_env)
        [(logical, sm)] = resources_of(self.template, "AWS::StepFunctions::StateMachine").items()
        definition = self.resolve(sm["DefinitionString"])
        self.definition: dict[str, Any] = json.loads(definition)
        self.state_machine_arn = self.sfn.create_state_machine(
            name=self.resolve(sm.get("StateMachineName", logical)), definition=definition, roleArn=role
        )["stateMachineArn"]
        self.names |= {logical: self.state_machine_arn, f"{logical}.Name": self.state_machine_arn.rsplit(":", 1)[1]}
        by_arn = {self.names[f"{logical}.Arn"]: fn for logical, fn in self.functions.items()}
        for logical, p in resources_of(self.template, "AWS::Events::Rule").items():
            pattern = EventPattern.load(json.dumps(self.resolve(p["EventPattern"])))
            fns = [by_arn[arn] for arn in (self.resolve(t["Arn"]) for t in p.get("Targets", [])) if arn in by_arn]
            self.rules.append((logical, pattern, fns))
        for p in resources_of(self.template, "AWS::Lambda::EventSourceMapping").values():
            source_arn, fn = self.resolve(p["EventSourceArn"]), self.resolve(p["FunctionName"])
            [url] = [self.names[q] for q in queues if self.names[f"{q}.Arn"] == source_arn]
            self.sources.append(
                SqsEventSource(self.sqs, url, source_arn, self.functions[fn], p, self.faults, self.pollers, self.in_flight_limit)
            )

    def _recording_stops(self) -> Callable[..., Any]:
        """StopExecution by anyone (a test, the CLI's s3bulk stop): its error and cause, for the ABORTED event AWS sends."""
        real, stops = StepFunctionResponse.stop_execution, self.user_stops

        def stop_execution(response: StepFunctionResponse) -> Any:
            arn = str(response._get_param("executionArn"))
            stops.setdefault(arn, (str(response._get_param("error") or ""), str(response._get_param("cause") or "")))
            return real(response)

        return stop_execution

    def _no_task_after_stop(self) -> Callable[..., None]:
        """AWS runs no state of an execution after StopExecution: the Lambdas already running go on, but no task starts.
        moto's interpreter (5.2) may still take a running task's error through a Catch to the next task (a lister's
        JobHalted to Finalize), or start a Map iteration's: such a task is refused here, not invoked, and recorded."""
        real, stops, refused = lambda_eval_utils.execute_lambda_function_integration, self.user_stops, self.refused_after_stop
        tokens, children = self.task_tokens, self.children

        def execute(env: Any, parameters: dict[str, Any], region: str, state_credentials: Any) -> None:
            arn = children.parent_of(str(env.states.context_object.context_object_data["Execution"]["Id"]))
            if arn in stops:
                refused.append(f"{arn}: {parameters.get('FunctionName')}")
                raise RuntimeError("the execution was stopped (StopExecution): AWS starts no task after it")
            raw = parameters.get("Payload")  # JSON bytes by now (moto casts it before the call)
            with contextlib.suppress(ValueError, TypeError):
                payload = json.loads(raw) if isinstance(raw, bytes | str) else raw
                if isinstance(payload, dict) and isinstance(payload.get("token"), str):
                    tokens.setdefault(arn, []).append(payload["token"])
            real(env=env, parameters=parameters, region=region, state_credentials=state_credentials)

        return execute

    def _lambda_invoke(self) -> Callable[..., bytes]:
        functions, limits, started, closed = self.functions, self.limits, self.background, self.closed

        def invoke(
            backend: LambdaSimpleBackend, function_name: str, qualifier: str | None, body: Any, headers: Any, response_headers: Any
        ) -> bytes:
            fn = functions[backend.get_function(function_name, qualifier).function_name]
            data = body if isinstance(body, bytes) else str(body or "").encode()
            if headers.get("X-Amz-Invocation-Type") == "Event":
                if len(data) > ASYNC_PAYLOAD_BYTES:
                    raise ValueError(f"{fn.name}: an asynchronous Invoke's payload is {len(data):,} bytes, over Lambda's 256 KiB")
                started.append(asynchronously(fn, json.loads(data or b"{}"), closed))
                return b""  # 202: Lambda queued the event
            if (over := limits.state_data(f"{fn.name}'s task input", data)) is not None:
                response_headers["x-amz-function-error"] = "Unhandled"
                return json.dumps({"errorType": "States.DataLimitExceeded", "errorMessage": over}).encode()
            try:
                result = fn.invoke(json.loads(body or b"{}"))
            except Throttled:
                raise  # Invoke itself is refused (429): Step Functions sees Lambda.TooManyRequestsException
            except Exception as exc:  # noqa: BLE001 - as Lambda: any exception is a function error
                response_headers["x-amz-function-error"] = "Unhandled"
                return function_error(exc)
            out = json.dumps(result).encode()
            if (over := limits.state_data(f"{fn.name}'s result", out)) is not None:  # the state's output, as Step Functions checks it
                response_headers["x-amz-function-error"] = "Unhandled"
                return json.dumps({"errorType": "States.DataLimitExceeded", "errorMessage": over}).encode()
            return out

        return invoke

    def pair_endpoint(self, secret: str, url: str) -> None:
        """The endpoint a secret's keys are for, as `-c credentials_secrets=ARN=URL@SIDE` deploys it (a server a test starts
        has its port only then): before the first job, since a function environment reads its allow-list once."""
        os.environ["S3BULK_SECRET_ENDPOINTS"] = f"{secret}={url}"  # one process holds every function; restored on exit

    def template_env(self, logical_prefix: str) -> dict[str, str]:
        """A function's environment as the template declares it (before any test override)."""
        [props] = [p for logical, p in resources_of(self.template, "AWS::Lambda::Function").items() if logical.startswith(logical_prefix)]
        return {k: str(v) for k, v in self.resolve(props.get("Environment", {}).get("Variables", {})).items()}

    def deploy(self, name: str, handler: str, timeout_s: float = 60) -> str:
        """A function of the user's own, outside the stack (an S3 Batch Operations function): invoking it runs `handler`."""
        lam = boto3.client("lambda", region_name=REGION)
        role = f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/s3bulk-stack"
        arn = str(
            lam.create_function(
                FunctionName=name, Runtime="python3.13", Role=role, Handler=handler, Code={"ZipFile": b"0"}, Timeout=int(timeout_s)
            )["FunctionArn"]
        )
        self.functions[name] = Function(name, handler, timeout_s, 128, self.concurrency)
        return arn

    # running
    def function(self, handler_module: str) -> Function:
        [fn] = [f for f in self.functions.values() if f.module_name == handler_module]
        return fn

    def run(
        self, job: dict[str, Any], timeout: float = 45.0, *, stop_when: Callable[[], bool] | None = None, name: str | None = None
    ) -> Execution:
        """Start an execution with `job` as input and wait (at most `timeout`) for it to end; stop it if it does not.

        `stop_when` plays a user who stops the execution (StopExecution) once it returns True. Once the
        execution has ended, its status-change event goes to the template's EventBridge rules, as on AWS.
        """
        # AWS names an unnamed execution with a UUID; in-process moto would name it "None".
        name = name or str(uuid.uuid4())
        arn = self.sfn.start_execution(stateMachineArn=self.state_machine_arn, input=json.dumps(job), name=name)["executionArn"]
        return self.follow(arn, timeout, stop_when=stop_when)

    def follow(self, arn: str, timeout: float = 45.0, *, stop_when: Callable[[], bool] | None = None) -> Execution:
        """Wait for an execution started elsewhere (the CLI's submit or resume) as `run` waits for its own."""
        began = time.monotonic()
        desc = self.sfn.describe_execution(executionArn=arn)
        stopped = False
        while desc["status"] == "RUNNING" and time.monotonic() - began < timeout:
            if stop_when is not None and stop_when():
                self.sfn.stop_execution(executionArn=arn, error="User.Stopped", cause="stopped by its owner")
            if arn in self.user_stops:
                stopped = True
                break
            if self._over_history(arn):
                stopped = True
                break
            time.sleep(0.1)
            desc = self.sfn.describe_execution(executionArn=arn)
        stopped = stopped or arn in self.user_stops
        ended: list[Any] = []
        if stopped:
            # AWS ends a stopped execution at once, ABORTED with StopExecution's error and cause, and EventBridge tells
            # ExecutionEnded within seconds while the Lambdas it started still run (stopping an execution stops none of
            # them). moto's interpreter (5.2) ends it only once its running task returns, and FAILED, with an error of
            # its own stop handling: the event is published as AWS sends it, before that.
            if arn in self.history_failed:  # AWS's own end at the history limit: FAILED, States.Runtime
                error, cause = "States.Runtime", f"The execution reached the maximum number of history events ({self.history_limit})."
                desc = {**desc, "status": "FAILED", "error": error, "cause": cause}
            else:
                error, cause = self.user_stops[arn]
                desc = {**desc, "status": "ABORTED", "error": error, "cause": cause}
            ended = self.publish_status(desc)
        in_flight = self.sfn.describe_execution(executionArn=arn)["status"] == "RUNNING"
        if in_flight:  # stop it, and wait until moto has (its thread, and the invocations it runs, must not outlive moto)
            if not stopped:
                self.sfn.stop_execution(executionArn=arn, error="Harness.Timeout", cause=f"not ended after {timeout:.0f}s")
            # moto's interpreter leaves a .waitForTaskToken state only when its token is answered (AWS ends the execution
            # at once): the harness answers them, so its thread ends now instead of at the 30 s bound below. No step of
            # the execution runs after (the stop refuses every task), so nothing the test checks can see the answer.
            for token in self.task_tokens.get(arn, []):
                with contextlib.suppress(Exception):
                    self.sfn.send_task_failure(taskToken=token, error="Harness.Stopped", cause="the execution was stopped")
            stopping = time.monotonic()
            while self.sfn.describe_execution(executionArn=arn)["status"] == "RUNNING" and time.monotonic() - stopping < 30:
                time.sleep(0.1)
            self._quiesce()
        events = self.sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
        if not stopped:
            desc = self.sfn.describe_execution(executionArn=arn)
            ended = self.publish_status(desc)
        return Execution(arn, desc["status"], desc, events, time.monotonic() - began, ended)

    def _over_history(self, arn: str) -> bool:
        """The execution reached Step Functions' history limit: AWS fails it there, whatever it was doing (its running
        Lambdas go on); moto's interpreter has no limit, so the harness stops it and publishes the failure."""
        if self.history_limit >= HISTORY_LIMIT:
            return False  # not scaled down: no test here runs 25,000 events, and counting them each poll would cost
        events = self.sfn.get_execution_history(executionArn=arn, maxResults=1000, reverseOrder=True)["events"]
        if max((int(e["id"]) for e in events), default=0) < self.history_limit:
            return False
        self.history_failed.append(arn)
        self.user_stops[arn] = ("States.Runtime", "history limit")  # moto's stop ends its thread; the event says FAILED
        self.sfn.stop_execution(executionArn=arn, error="States.Runtime", cause="history limit")
        return True

    def follow_job(self, arn: str, job_id: str, timeout: float = 120.0) -> list[Execution]:
        """Follow a job's executions from `arn` through each one it went on in (continue as new: the job item names its
        current execution), until one ends without handing the job on; every execution followed, in order."""
        ledger = DynamoLedger(self.ddb, self.bucket_of("Ledger"))
        deadline = time.monotonic() + timeout
        followed = [self.follow(arn, max(1.0, deadline - time.monotonic()))]
        prefix = arn.rsplit(":", 1)[0]
        while followed[-1].status == "SUCCEEDED" and "ContinuedInNewExecution" in followed[-1].entered():
            name = ledger.load(job_id).execution
            for _ in range(100):  # the new execution adopts the job in its first step
                if name and not arn.endswith(f":{name}"):
                    break
                time.sleep(0.1)
                name = ledger.load(job_id).execution
            arn = f"{prefix}:{name}"
            followed.append(self.follow(arn, max(1.0, deadline - time.monotonic())))
        return followed

    def status_event(self, desc: dict[str, Any]) -> dict[str, Any]:
        """The "Step Functions Execution Status Change" event EventBridge carries for an execution (DescribeExecution's fields)."""

        def millis(t: Any) -> int | None:
            return int(t.timestamp() * 1000) if isinstance(t, datetime) else None

        return {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "Step Functions Execution Status Change",
            "source": "aws.states",
            "account": ACCOUNT,
            "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "region": REGION,
            "resources": [desc["executionArn"]],
            "detail": {
                "executionArn": desc["executionArn"],
                "stateMachineArn": desc["stateMachineArn"],
                "name": desc.get("name") or desc["executionArn"].rsplit(":", 1)[1],
                "status": desc["status"],
                "startDate": millis(desc.get("startDate")),
                "stopDate": millis(desc.get("stopDate")),
                "input": desc.get("input"),
                "output": desc.get("output"),
                "inputDetails": {"included": True},
                "error": desc.get("error"),
                "cause": desc.get("cause"),
            },
        }

    def publish_status(self, desc: dict[str, Any]) -> list[Any]:
        """Deliver an execution's status-change event to every rule whose pattern matches it; their functions' results."""
        event = self.status_event(desc)
        # EventBridge invokes its targets asynchronously: a throttled one waits in Lambda's queue rather than failing.
        return [
            fn.invoke(event, asynchronous=True) for _, pattern, fns in self.rules if pattern.matches_event(cast(Any, event)) for fn in fns
        ]

    def settle(self, timeout: float = 120.0) -> None:
        """Wait for the asynchronous invocations functions started (and those they started in turn)."""
        deadline = time.monotonic() + timeout
        while any(t.is_alive() for t in self.background):
            if time.monotonic() > deadline:
                raise AssertionError("asynchronous invocations still running")
            time.sleep(0.05)

    def _quiesce(self, timeout: float = 30.0) -> None:
        """Wait for Lambda invocations the stopped execution still has in flight."""
        deadline = time.monotonic() + timeout
        while any(f.in_flight for f in self.functions.values()) and time.monotonic() < deadline:
            time.sleep(0.05)

    def describe(self) -> str:
        """What ran and what was injected: for assertion messages."""
        lines = [f"{f.name}: {f.invocations} invocations, errors {dict(f.errors)}" for f in self.functions.values()]
        lines += [f"event source {s.fn.name}: {s.stats}" for s in self.sources]
        if self.faults.dynamo is not None:
            lines.append(f"dynamo writes {dict(self.faults.dynamo.writes)}, conflicts injected {dict(self.faults.dynamo.injected)}")
        partitions = self.limits.partitions
        lines.append(f"dynamo partitions: throttled {dict(partitions.throttled)}, peak units/s {partitions.peak}")
        lines.append(f"queues {self.queue_depths()}")
        return "\n".join(lines)

    @property
    def worker_source(self) -> SqsEventSource:
        """The work queue's event source (the dead-letter queue has one of its own, the counter's)."""
        [source] = [s for s in self.sources if s.fn.name.startswith("Worker")]
        return source

    def queue_depths(self) -> dict[str, int]:
        """Visible plus in-flight messages per queue logical id."""
        out = {}
        for logical in resources_of(self.template, "AWS::SQS::Queue"):
            a = self.sqs.get_queue_attributes(QueueUrl=self.names[logical], AttributeNames=["All"])["Attributes"]
            out[logical] = int(a["ApproximateNumberOfMessages"]) + int(a["ApproximateNumberOfMessagesNotVisible"])
        return out

    def bucket_of(self, logical_prefix: str) -> str:
        [name] = [v for k, v in self.names.items() if k.startswith(logical_prefix) and "." not in k]
        return str(name)
