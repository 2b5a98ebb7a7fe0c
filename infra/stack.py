"""S3BulkStack: ledger, work queue and DLQ, six Lambdas, the job state machine, schedules, dashboard and alarms."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import (
    aws_dynamodb as ddb,
)
from aws_cdk import (
    aws_events as events,
)
from aws_cdk import (
    aws_events_targets as targets,
)
from aws_cdk import (
    aws_iam as iam,
)
from aws_cdk import (
    aws_lambda as lambda_,
)
from aws_cdk import (
    aws_lambda_destinations as destinations,
)
from aws_cdk import (
    aws_lambda_event_sources as sources,
)
from aws_cdk import (
    aws_logs as logs,
)
from aws_cdk import (
    aws_s3 as s3,
)
from aws_cdk import (
    aws_scheduler as scheduler,
)
from aws_cdk import (
    aws_sns as sns,
)
from aws_cdk import (
    aws_sns_subscriptions as subscriptions,
)
from aws_cdk import (
    aws_sqs as sqs,
)
from aws_cdk.interfaces.aws_events import IRuleRef
from constructs import Construct

from infra.bundling import MANIFEST_REQUIREMENTS, PROCESS_DIR, RUNTIME_PYTHON, TASK_ROOT, compiler, lambda_code
from infra.config import MAX_INLINE_MAP, DeployConfig, concurrency_needed
from infra.grants import GrantingStack, account_of
from infra.monitoring import Monitoring
from infra.state_machine import build_state_machine
from s3bulk.aws.events import DETAIL_TYPE as EVENT_DETAIL_TYPE
from s3bulk.aws.events import SOURCE as EVENT_SOURCE
from s3bulk.aws.ledger import JOBS_INDEX
from s3bulk.aws.reportbucket import KEY_LOG_TAG
from s3bulk.metrics import NAMESPACE, SERVICE

# Visibility timeout / worker timeout: AWS asks for at least 6x so a batch is
# never redelivered while a worker (and its retries) may still hold it.
VISIBILITY_RATIO = 6
MAX_RECEIVES = 5
# python3.13 on Amazon Linux 2023 (infra/runtime.py says why and where its interpreter comes from).
RUNTIME = lambda_.Runtime(f"python{RUNTIME_PYTHON[0]}.{RUNTIME_PYTHON[1]}", lambda_.RuntimeFamily.PYTHON)
# The functions' processor (-c architecture): arm64 by default (Graviton: about 20% cheaper per GB-second than x86_64).
ARCHITECTURES = {"arm64": lambda_.Architecture.ARM_64, "x86_64": lambda_.Architecture.X86_64}


COUNTER_TIMEOUT_S = 120
LISTER_TIMEOUT_S = 300


class S3BulkStack(GrantingStack):
    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        self.config = config
        # Kept on destroy unless the deployer said they may go (-c destroy_data=true): the reports are the jobs' record.
        keep = cdk.RemovalPolicy.DESTROY if config.destroy_data else cdk.RemovalPolicy.RETAIN

        # -- the job ledger ---------------------------------------------------------------------
        self.table = ddb.Table(
            self,
            "Ledger",
            partition_key=ddb.Attribute(name="pk", type=ddb.AttributeType.STRING),
            sort_key=ddb.Attribute(name="sk", type=ddb.AttributeType.STRING),
            billing_mode=ddb.BillingMode.PAY_PER_REQUEST,
            encryption=ddb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=ddb.PointInTimeRecoverySpecification(point_in_time_recovery_enabled=True),
            time_to_live_attribute="expires_at",
            removal_policy=keep,
            # The ledger is every job's exact record: a delete by hand or by another stack's mistake is refused too, until
            # the deployer says the data may go (-c destroy_data=true, which cdk destroy then honours).
            deletion_protection=not config.destroy_data,
        )
        # Recent jobs, newest first (s3bulk jobs): sparse, only job items carry `kind`; keys only, rarely written.
        self.table.add_global_secondary_index(
            index_name=JOBS_INDEX,
            partition_key=ddb.Attribute(name="kind", type=ddb.AttributeType.STRING),
            sort_key=ddb.Attribute(name="created_at", type=ddb.AttributeType.NUMBER),
            projection_type=ddb.ProjectionType.KEYS_ONLY,
        )

        # -- reports ----------------------------------------------------------------------------
        access_logs = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            # ACLs off: S3 delivers the access logs under the bucket policy CDK writes for them (the
            # serverAccessLogsUseBucketPolicy flag in cdk.json), so no ACL is needed, as AWS advises for every bucket.
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[s3.LifecycleRule(expiration=cdk.Duration.days(90))],
            # Kept by every destroy, destroy_data or not: S3 delivers server access logs minutes late, so the report
            # bucket's last ones land after an emptying and its deletion ended DELETE_FAILED (BucketNotEmpty). Its
            # logs expire in 90 days; delete it by hand an hour after the destroy.
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        cdk.Validations.of(access_logs).acknowledge(
            cdk.Acknowledgment(
                id="AwsSolutions::AwsSolutions-S1", reason="This is the access-log bucket; logging it into itself would loop."
            )
        )
        self.reports = s3.Bucket(
            self,
            "Reports",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            server_access_logs_bucket=access_logs,
            server_access_logs_prefix="reports/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    noncurrent_version_expiration=cdk.Duration.days(30), abort_incomplete_multipart_upload_after=cdk.Duration.days(1)
                ),
                # Per-key logs grow with every object of every job: kept -c keep_key_logs_days (reports and failures stay).
                s3.LifecycleRule(
                    id="ExpireKeyLogs",
                    tag_filters={KEY_LOG_TAG.split("=")[0]: KEY_LOG_TAG.split("=")[1]},
                    expiration=cdk.Duration.days(config.keep_key_logs_days),
                ),
            ],
            removal_policy=keep,
            auto_delete_objects=config.destroy_data,  # every version and delete marker too: `aws s3 rb --force` leaves them
        )

        # -- the work queue and its dead-letter queue ---------------------------------------------
        worker_timeout = cdk.Duration.seconds(config.worker_timeout_s)

        def queue(name: str, **props: Any) -> sqs.Queue:
            """Every queue: SSE, TLS only, messages kept 14 days."""
            return sqs.Queue(
                self, name, encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True, retention_period=cdk.Duration.days(14), **props
            )

        # Its consumer (the dead-letter counter) has COUNTER_TIMEOUT_S; AWS asks for 6x on an event source's queue.
        self.dlq = queue("DeadLetters", visibility_timeout=cdk.Duration.seconds(COUNTER_TIMEOUT_S * VISIBILITY_RATIO))
        # Events about ended executions that EventBridge could not deliver to ExecutionEnded within its retries.
        self.ended_dlq = queue("EndedEventDeadLetters")
        cdk.Validations.of(self.ended_dlq).acknowledge(
            cdk.Acknowledgment(
                id="AwsSolutions::AwsSolutions-SQS3",
                reason="This queue is the dead-letter queue of the ExecutionEnded rule's target (an EventBridge DLQ, "
                "which cdk-nag does not recognize as one); an alarm watches its depth.",
            )
        )
        self.queue = queue(
            "Work",
            visibility_timeout=cdk.Duration.seconds(config.worker_timeout_s * VISIBILITY_RATIO),
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dlq, max_receive_count=MAX_RECEIVES),
        )

        # -- Lambdas ----------------------------------------------------------------------------
        if config.precompile and self.bundling_required:
            compiler()  # one line at synth, not a traceback from inside the bundling, when no Python 3.13 compiles
        arch = ARCHITECTURES[config.architecture]
        code = lambda_code(arch, config.process_code, precompile=config.precompile)
        # The Lister reads manifests, Parquet and ORC ones with pyarrow: only its asset carries it (the worker's stays lean).
        manifest_code = lambda_code(arch, requirements=MANIFEST_REQUIREMENTS, precompile=config.precompile)
        env = {
            "S3BULK_TABLE": self.table.table_name,
            "S3BULK_QUEUE_URL": self.queue.queue_url,
            "S3BULK_REPORT_BUCKET": self.reports.bucket_name,
            "S3BULK_READ_BUCKETS": ",".join(config.read_buckets),
            "S3BULK_WRITE_BUCKETS": ",".join(config.write_buckets),
            "S3BULK_DELETE_BUCKETS": ",".join(config.delete_buckets),
            "S3BULK_CONCURRENCY": str(config.worker_threads),
            "S3BULK_REQUEST_CONCURRENCY": str(config.worker_request_threads),
            # Validate refuses a relay or process job the workers' memory cannot stream (s3bulk/bodies/memory.py).
            "S3BULK_WORKER_MEMORY_MB": str(config.worker_memory_mb),
            # A stopped job's report waits for the work in flight to drain: at most a worker's batch or a lister's call
            # (whose status checks are 30 s apart) begun just before the stop.
            "S3BULK_DRAIN_S": str(max(config.worker_timeout_s, LISTER_TIMEOUT_S) + 30),
            "S3BULK_MAX_RECEIVES": str(MAX_RECEIVES),
            "S3BULK_POLL_SECONDS": str(config.poll_seconds),
            "S3BULK_LIST_SHARDS": str(config.list_shards),
            "S3BULK_PROCESS_CODE": f"{TASK_ROOT}/{PROCESS_DIR}" if config.process_code is not None else "",
            "S3BULK_PROCESS_LAMBDAS": ",".join(config.process_lambdas),
            "S3BULK_CREDENTIALS_SECRETS": ",".join(config.credentials_secrets),
            "S3BULK_SECRET_ENDPOINTS": ",".join(f"{s}={u}" for s, u in config.secret_endpoints),
            "S3BULK_SECRET_SIDES": ",".join(f"{s}={side}" for s, side in config.secret_sides),
            "S3BULK_KMS_KEYS": ",".join(config.kms_keys),
            # Every request on a pinned bucket carries its owner (ExpectedBucketOwner): S3 refuses it if another owns it.
            "S3BULK_BUCKET_OWNERS": ",".join(f"{b}={account_of(a)}" for b, a in config.bucket_owners),
            "S3BULK_ALLOW_BYPASS_GOVERNANCE": "true" if config.allow_bypass_governance else "false",
            "S3BULK_ALLOW_OBJECT_LOCK": "true" if config.allow_object_lock else "false",
            "S3BULK_ALLOW_ACL": "true" if config.allow_acl else "false",
            "S3BULK_ALLOW_VERSION_DELETE": "true" if config.allow_version_delete else "false",
            "POWERTOOLS_SERVICE_NAME": SERVICE,
            "POWERTOOLS_METRICS_NAMESPACE": NAMESPACE,
            # Powertools' Tracer sends nothing unless the deployer asked for tracing (-c tracing=true).
            "POWERTOOLS_TRACE_DISABLED": "false" if config.tracing else "true",
        }

        def function(
            name: str, handler: str, memory: int, timeout: cdk.Duration, asset: lambda_.Code = code, *, loops: bool = False
        ) -> lambda_.Function:
            # The Lister and the Worker reserve what they may run (AWS's SQS scaling guide asks it of an event source's
            # function): a job's listers and workers never take the account's other functions' concurrency, nor the
            # reverse. The other steps run one at a time per job, from the unreserved rest.
            fn = lambda_.Function(
                self,
                name,
                runtime=RUNTIME,
                architecture=arch,
                handler=handler,
                code=asset,
                memory_size=memory,
                timeout=timeout,
                reserved_concurrent_executions=config.reserved.get(name),
                environment=env,
                tracing=lambda_.Tracing.ACTIVE if config.tracing else lambda_.Tracing.DISABLED,
                # Lambda stops a chain of events that invokes a function a 17th time, unless it allows loops: the Worker
                # sends a waiting batch, and each batch's rest, back to its own queue (each loop bounded: strikes,
                # STOPPED_KEEP_S), and the DeadLetterCounter sends children on, so those two allow them.
                recursive_loop=lambda_.RecursiveLoop.ALLOW if loops else lambda_.RecursiveLoop.TERMINATE,
                log_group=logs.LogGroup(
                    self, f"{name}Logs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=cdk.RemovalPolicy.DESTROY
                ),
            )
            return fn

        self.validate_fn = function("Validate", "functions.validate.handler.handler", 256, cdk.Duration.seconds(30))
        self.lister_fn = function("Lister", "functions.lister.handler.handler", 512, cdk.Duration.seconds(LISTER_TIMEOUT_S), manifest_code)
        self.worker_fn = function("Worker", "functions.worker.handler.handler", config.worker_memory_mb, worker_timeout, loops=True)
        self.progress_fn = function("Progress", "functions.progress.handler.handler", 256, cdk.Duration.seconds(60))
        self.finalize_fn = function("Finalize", "functions.finalize.handler.handler", 1024, cdk.Duration.minutes(14))
        self.ended_fn = function("ExecutionEnded", "functions.ended.handler.handler", 1024, cdk.Duration.minutes(14))
        # A batch whose worker Lambda never finished it (ended at its timeout or memory on every delivery) is counted
        # failed here, so its job ends with a report instead of waiting for it.
        self.dead_letters_fn = function(
            "DeadLetterCounter", "functions.deadletters.handler.handler", 256, cdk.Duration.seconds(COUNTER_TIMEOUT_S), loops=True
        )
        self.dead_letters_fn.add_event_source(
            sources.SqsEventSource(self.dlq, batch_size=10, report_batch_item_failures=True, max_concurrency=2)
        )

        self.work_source = sources.SqsEventSource(
            self.queue,
            batch_size=config.worker_batch_size,
            report_batch_item_failures=True,
            max_concurrency=config.worker_max_concurrency,
        )
        self.worker_fn.add_event_source(self.work_source)
        # A fixed name, so the functions that resume a waiting execution are granted it by ARN, with no reference cycle.
        machine_name = f"{cdk.Aws.STACK_NAME}-jobs"
        self.state_machine_arn = self.format_arn(
            service="states", resource="stateMachine", resource_name=machine_name, arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME
        )
        self._grant(config)

        # -- orchestration ----------------------------------------------------------------------
        self.state_machine = build_state_machine(
            Construct(self, "Orchestration"),
            name=machine_name,
            table=self.table,
            validate=self.validate_fn,
            lister=self.lister_fn,
            progress=self.progress_fn,
            finalize=self.finalize_fn,
            tracing=config.tracing,
            list_concurrency=config.listers,
            machine_arn=self.state_machine_arn,
        )
        # Continue as new (s3bulk/aws/history.py): the state machine starts its job's next execution itself.
        self.state_machine.add_to_role_policy(iam.PolicyStatement(actions=["states:StartExecution"], resources=[self.state_machine_arn]))
        self.schedule_dlq: sqs.Queue | None = None
        self._schedules(config)
        self._on_execution_end(machine_name)

        # -- observability ----------------------------------------------------------------------
        # Always there, so alarms always have somewhere to go (subscribe later: output AlarmTopicArn). A topic policy
        # replaces SNS's default one, so CloudWatch, which publishes as its service principal, is allowed by name,
        # for this account's alarms only.
        self.alarm_topic = sns.Topic(self, "Alarms", display_name="s3bulk alarms", enforce_ssl=True)
        self._may_publish("CloudWatchAlarmsPublish", "cloudwatch", {"ArnLike": {"aws:SourceArn": self._arn("cloudwatch", "alarm:*")}})
        if config.notify_job_events:
            # Each finished job of this stack (its report is in this stack's bucket), as the topic's subscribers see alarms.
            # EventBridge publishes as its service principal: the topic lets it do so for this one rule only. CDK's own
            # SNS target would add an unconditioned grant to events.amazonaws.com, which lets anyone who can put an event
            # in the account (or route one here by a rule of their own) mail the subscribers a fake "job finished".
            rule = events.Rule(
                self,
                "JobEventsToTopic",
                description="s3bulk: each finished job's status event to the alarm topic",
                event_pattern=events.EventPattern(
                    source=[EVENT_SOURCE],
                    detail_type=[EVENT_DETAIL_TYPE],
                    detail={"report": events.Match.prefix(f"s3://{self.reports.bucket_name}/")},
                ),
                targets=[_TopicTarget(self.alarm_topic)],
            )
            self._may_publish("JobEventsRulePublish", "events", {"ArnEquals": {"aws:SourceArn": rule.rule_arn}})
        if config.alarm_email:
            self.alarm_topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))
        cdk.CfnOutput(self, "AlarmTopicArn", value=self.alarm_topic.topic_arn)
        cdk.Validations.of(self.alarm_topic).acknowledge(
            cdk.Acknowledgment(
                id="AwsSolutions::AwsSolutions-SNS2",
                reason="CloudWatch alarms cannot publish to a topic encrypted with the AWS-managed SNS key, and the "
                "notifications carry only alarm names and states; a customer-managed key would cost every deployment $1/month.",
            )
        )
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            worker=self.worker_fn,
            queue=self.queue,
            dlq=self.dlq,
            state_machine=self.state_machine,
            alarm_topic=self.alarm_topic,
            functions=[self.validate_fn, self.lister_fn, self.progress_fn, self.finalize_fn, self.ended_fn, self.dead_letters_fn],
            ended_dlq=self.ended_dlq,
            schedule_dlq=self.schedule_dlq,
        )

        for name, value in {
            "StateMachineArn": self.state_machine.state_machine_arn,
            "LedgerTable": self.table.table_name,
            "ReportBucket": self.reports.bucket_name,
            "WorkQueueUrl": self.queue.queue_url,
            "DeadLetterQueueUrl": self.dlq.queue_url,
            # For cross-account bucket policies and KMS key policies: the principals that list and that read and write.
            "ListerRoleArn": self.lister_fn.role.role_arn if self.lister_fn.role else "",
            "WorkerRoleArn": self.worker_fn.role.role_arn if self.worker_fn.role else "",
            # What one job may run at once (listers, workers, and the state machine's own steps): `s3bulk doctor`
            # compares it with the account's unreserved concurrency (a new account may have 10).
            "LambdaConcurrencyNeeded": str(concurrency_needed(config)),
            # Of which the Lister and the Worker reserve this much (0: -c reserve_concurrency=false).
            "LambdaConcurrencyReserved": str(sum(config.reserved.values())),
            # s3bulk tune changes how many workers run at once, on this mapping, while jobs run.
            "WorkerEventSourceMapping": self.work_source.event_source_mapping_id,
        }.items():
            cdk.CfnOutput(self, name, value=value)
        self._acknowledge()

    def _arn(self, service: str, resource: str) -> str:
        return f"arn:{self.partition}:{service}:{self.region}:{self.account}:{resource}"

    def _may_publish(self, sid: str, service: str, source: dict[str, Any]) -> None:
        """A service publishing to the alarm topic as its own principal: for this account's `source` only."""
        self.alarm_topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid=sid,
                principals=[iam.ServicePrincipal(f"{service}.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.alarm_topic.topic_arn],
                conditions={"StringEquals": {"aws:SourceAccount": self.account}, **source},
            )
        )

    def _on_execution_end(self, machine_name: str) -> None:
        """Every execution that FAILED, TIMED_OUT or was ABORTED reaches ExecutionEnded, which reports and stops its job.

        The state machine reports on every path it controls; a StopExecution, a timeout, an error
        no Catch takes and the history limit bypass them all. EventBridge retries delivery for a
        day; the function's own async retries cover its errors.
        """
        events.Rule(
            self,
            "ExecutionEndedRule",
            description="s3bulk: report and stop the job of an execution that failed, timed out or was aborted",
            event_pattern=events.EventPattern(
                source=["aws.states"],
                detail_type=["Step Functions Execution Status Change"],
                detail={"status": ["FAILED", "TIMED_OUT", "ABORTED"], "stateMachineArn": [self.state_machine_arn]},
            ),
            targets=[
                targets.LambdaFunction(
                    self.ended_fn, retry_attempts=20, max_event_age=cdk.Duration.hours(24), dead_letter_queue=self.ended_dlq
                )
            ],
        )
        # EventBridge hands the event over asynchronously; Lambda retries a failed invocation twice and would then drop
        # it: its job would keep no report and stay RUNNING. Kept in the same queue instead, whose alarm says so.
        self.ended_fn.configure_async_invoke(on_failure=destinations.SqsDestination(self.ended_dlq), retry_attempts=2)

    def _schedules(self, config: DeployConfig) -> None:
        if not config.schedules:
            return
        role = iam.Role(self, "SchedulerRole", assumed_by=iam.ServicePrincipal("scheduler.amazonaws.com"))
        self.state_machine.grant_start_execution(role)
        # A scheduled run EventBridge Scheduler could not start within its retries (a throttle, the state machine's
        # concurrency) is kept here and alarmed, rather than dropped: a nightly migration silently skipped is a lost night.
        self.schedule_dlq = sqs.Queue(
            self,
            "ScheduleDeadLetters",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=cdk.Duration.days(14),
        )
        cdk.Validations.of(self.schedule_dlq).acknowledge(
            cdk.Acknowledgment(
                id="AwsSolutions::AwsSolutions-SQS3",
                reason="This queue is the schedules' dead-letter queue (an EventBridge Scheduler DLQ, which cdk-nag does not "
                "recognize as one); an alarm watches its depth.",
            )
        )
        self.schedule_dlq.grant_send_messages(role)
        for s in config.schedules:
            scheduler.CfnSchedule(
                self,
                f"Schedule-{s.name}",
                name=f"{cdk.Aws.STACK_NAME}-{s.name}",
                description=f"s3bulk scheduled {s.job['operation']} of s3://{s.job['source']['bucket']}/{s.job['source'].get('prefix', '')}",
                schedule_expression=s.expression,
                schedule_expression_timezone=s.timezone,
                flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
                target=scheduler.CfnSchedule.TargetProperty(
                    arn=self.state_machine.state_machine_arn,
                    role_arn=role.role_arn,
                    input=json.dumps(s.job),
                    retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(maximum_retry_attempts=3, maximum_event_age_in_seconds=3600),
                    dead_letter_config=scheduler.CfnSchedule.DeadLetterConfigProperty(arn=self.schedule_dlq.queue_arn),
                ),
            )

    def _acknowledge(self) -> None:
        """Each cdk-nag finding we accept, with its reason; any other finding fails synth."""
        iam5 = "AwsSolutions::AwsSolutions-IAM5"
        reasons = {
            "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]": (
                "The AWS managed basic execution role only lets a function write its own CloudWatch Logs."
            ),
            f"{iam5}[Resource::*]": (
                "X-Ray PutTraceSegments/PutTelemetryRecords (Lambda and Step Functions tracing) and CloudWatch Logs delivery "
                "for the state machine have no resource-level permissions; AWS requires *."
            ),
            f"{iam5}[Resource::<{self.get_logical_id(self.reports.node.default_child)}.Arn>/jobs/*]": (  # type: ignore[arg-type]
                "Workers, Finalize and (for bad manifest rows) the lister write one object per batch, page or job "
                "under jobs/ of this stack's own report bucket."
            ),
            f"{iam5}[Resource::<{self.get_logical_id(self.reports.node.default_child)}.Arn>/jobs/*/waiting/*]": (  # type: ignore[arg-type]
                "Workers and CheckProgress read back a capped job's parked batches (one object per batch waiting for "
                "room) under jobs/ID/waiting/ of this stack's own report bucket, and nothing else there."
            ),
            f"{iam5}[Resource::arn:{_nag(self.partition, 'Partition')}:states:{_nag(self.region, 'Region')}:"
            f"{_nag(self.account, 'AccountId')}:execution:<AWS::StackName>-jobs:*]": (
                "ListShard and CheckProgress read the length of their own execution's history (any execution of this "
                "stack's own state machine), to go on in a new execution before Step Functions' 25,000-event limit."
            ),
        }
        if not self.config.tracing:
            reasons["AwsSolutions::AwsSolutions-SF2"] = (
                "X-Ray tracing is off unless the deployer asks for it (-c tracing=true): AWS ends support for the X-Ray SDK "
                "behind Powertools' Tracer on 2027-02-25, and every job's logs, metrics, ledger and report already say "
                "what it did."
            )
        reasons["AwsSolutions::AwsSolutions-L1"] = (
            f"Functions run {RUNTIME.name} on Amazon Linux 2023, the version the suite runs the assets on (a bare "
            "interpreter of it in the runtime-fidelity tests); a newer runtime is a project-wide move, not a per-function one."
        )
        for fn in (self.validate_fn, self.lister_fn, self.progress_fn, self.finalize_fn):
            logical = self.get_logical_id(fn.node.default_child)  # type: ignore[arg-type]
            reasons[f"{iam5}[Resource::<{logical}.Arn>:*]"] = "The state machine may invoke any version of this stack's own function."
        for bucket in sorted(set(self.config.read_buckets) | set(self.config.write_buckets) | set(self.config.delete_buckets)):
            reasons[f"{iam5}[Resource::arn:<AWS::Partition>:s3:::{bucket}/*]"] = (
                f"Object-level actions on the deploy-time allow-listed bucket {bucket}; a bulk job may touch any key in it, "
                "and the lister and worker also check the allow-list at run time."
            )
        if self.config.list_shards > MAX_INLINE_MAP:
            machine = self.get_logical_id(self.state_machine.node.default_child)  # type: ignore[arg-type]
            # As cdk-nag prints them: the stack's environment's Region and account where it fixes them (a deploy.json's
            # Region, cdk deploy's CDK_DEFAULT_ACCOUNT), else the pseudo parameters (issue 51).
            arn = f"arn:{_nag(self.partition, 'Partition')}:states:{_nag(self.region, 'Region')}:{_nag(self.account, 'AccountId')}"
            executions = f"Resource::{arn}:execution:"
            name = f'{{"Fn::Select":[6,{{"Fn::Split":[":",{{"Ref":"{machine}"}}]}}]}}'
            children = "the child executions the Distributed Map of the listing shards (-c list_shards above 40) starts"
            reasons[f"{iam5}[{executions}{name}:*]"] = f"The state machine describes and stops its own executions' {children}."
            for label in ("ListShards", "CountShards"):
                reasons[f"{iam5}[{executions}{name}/{label}:*]"] = f"The state machine describes and stops {children}."
            reasons[f"{iam5}[{executions}<AWS::StackName>-jobs/*]"] = (
                f"ListShard reads the length of its own child execution's history: {children}."
            )
        for rule, reason in reasons.items():
            cdk.Validations.of(self).acknowledge(cdk.Acknowledgment(id=rule, reason=reason))


@jsii.implements(events.IRuleTarget)
class _TopicTarget:
    """An SNS topic as a rule's target, granting nothing: the topic's policy names the rule itself (targets.SnsTopic
    would grant every EventBridge rule of every account)."""

    def __init__(self, topic: sns.ITopic) -> None:
        self.topic = topic

    def bind(self, rule: IRuleRef, id: str | None = None) -> events.RuleTargetConfig:
        return events.RuleTargetConfig(arn=self.topic.topic_arn)


def _nag(value: str, pseudo: str) -> str:
    """An ARN part as cdk-nag prints it: the value when the stack's environment fixes it, else <AWS::Pseudo>."""
    return f"<AWS::{pseudo}>" if cdk.Token.is_unresolved(value) else value
