"""The synthesized template: what the stack promises, checked with aws_cdk.assertions, cfn-lint and cdk-nag."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match, Template

from app import build_app
from infra.config import DeployConfig, Schedule
from infra.stack import MAX_RECEIVES, VISIBILITY_RATIO, S3BulkStack

CONTEXT = {
    "read_buckets": "raw-logs,archive-bucket",
    "write_buckets": "archive-bucket",
    "delete_buckets": "raw-logs",
    "worker_max_concurrency": "40",
    "schedules_file": "tests/infra/schedules.json",
}


@pytest.fixture(scope="module")
def app() -> cdk.App:
    return build_app(dict(CONTEXT))


@pytest.fixture(scope="module")
def stack(app: cdk.App) -> S3BulkStack:
    found = app.node.find_child("S3Bulk")
    assert isinstance(found, S3BulkStack)
    return found


@pytest.fixture(scope="module")
def template(stack: S3BulkStack) -> Template:
    return Template.from_stack(stack)


def resources(template: Template, kind: str) -> dict[str, Any]:
    return dict(template.find_resources(kind))


def statements(template: Template) -> list[dict[str, Any]]:
    out = []
    for policy in resources(template, "AWS::IAM::Policy").values():
        out += policy["Properties"]["PolicyDocument"]["Statement"]
    return out


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_worker_event_source_reports_batch_item_failures_with_a_concurrency_cap(template: Template) -> None:
    template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {"FunctionResponseTypes": ["ReportBatchItemFailures"], "ScalingConfig": {"MaximumConcurrency": 40}},
    )


def test_work_queue_dead_letters_after_five_receives_and_outlasts_the_worker(template: Template) -> None:
    worker_timeout = next(
        r["Properties"]["Timeout"]
        for r in resources(template, "AWS::Lambda::Function").values()
        if r["Properties"]["Handler"] == "functions.worker.handler.handler"
    )
    queues = resources(template, "AWS::SQS::Queue")
    [work] = [q for q in queues.values() if "RedrivePolicy" in q["Properties"]]
    assert work["Properties"]["RedrivePolicy"]["maxReceiveCount"] == MAX_RECEIVES >= 5
    assert work["Properties"]["VisibilityTimeout"] >= VISIBILITY_RATIO * worker_timeout
    dlq_id = work["Properties"]["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
    assert dlq_id in queues
    assert all(q["Properties"].get("SqsManagedSseEnabled") for q in queues.values())


def test_worker_timeout_s_sets_the_workers_timeout_and_six_times_it_as_the_queues_visibility() -> None:
    app = build_app({**CONTEXT, "worker_timeout_s": "900"})
    found = app.node.find_child("S3Bulk")
    assert isinstance(found, S3BulkStack)
    t = Template.from_stack(found)
    [worker] = [
        r for r in resources(t, "AWS::Lambda::Function").values() if r["Properties"]["Handler"] == "functions.worker.handler.handler"
    ]
    [work] = [q for q in resources(t, "AWS::SQS::Queue").values() if "RedrivePolicy" in q["Properties"]]
    assert (worker["Properties"]["Timeout"], work["Properties"]["VisibilityTimeout"]) == (900, 5400)
    for bad in ("120", "901"):
        with pytest.raises(ValueError, match=r"^context worker_timeout_s: .* pass e\.g\. -c worker_timeout_s=900$"):
            build_app({**CONTEXT, "worker_timeout_s": bad})


def test_queues_and_buckets_refuse_plain_http(template: Template) -> None:
    deny_insecure = Match.object_like(
        {
            "PolicyDocument": Match.object_like(
                {
                    "Statement": Match.array_with(
                        [Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})]
                    )
                }
            )
        }
    )
    # The work queue, its dead-letter queue, and the ended-execution events' dead-letter queue.
    assert len(template.find_resources("AWS::SQS::QueuePolicy", {"Properties": deny_insecure})) == 4  # one is the schedules' DLQ
    assert len(template.find_resources("AWS::S3::BucketPolicy", {"Properties": deny_insecure})) == 2


def test_ledger_is_encrypted_point_in_time_recoverable_and_expires_finished_jobs(template: Template) -> None:
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "SSESpecification": {"SSEEnabled": True},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": True},
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        },
    )


def test_each_configured_schedule_starts_the_state_machine_with_its_job(template: Template) -> None:
    schedules = list(resources(template, "AWS::Scheduler::Schedule").values())
    assert len(schedules) == 1
    props = schedules[0]["Properties"]
    assert props["ScheduleExpression"] == "rate(1 day)"
    assert json.loads(props["Target"]["Input"]) == json.loads(Path("tests/infra/nightly-job.json").read_text())
    [sm_id] = resources(template, "AWS::StepFunctions::StateMachine")
    assert props["Target"]["Arn"] == {"Ref": sm_id}


def test_a_scheduled_run_that_could_not_start_is_kept_in_a_dead_letter_queue_the_scheduler_may_write_and_alarmed(
    template: Template,
) -> None:
    [schedule] = resources(template, "AWS::Scheduler::Schedule").values()
    dlq = schedule["Properties"]["Target"]["DeadLetterConfig"]["Arn"]["Fn::GetAtt"][0]
    assert dlq.startswith("ScheduleDeadLetters") and dlq in resources(template, "AWS::SQS::Queue")
    role = schedule["Properties"]["Target"]["RoleArn"]["Fn::GetAtt"][0]
    granted = [
        st
        for p in resources(template, "AWS::IAM::Policy").values()
        if {"Ref": role} in p["Properties"]["Roles"]
        for st in p["Properties"]["PolicyDocument"]["Statement"]
        if "sqs:SendMessage" in as_list(st["Action"])
    ]
    assert [st["Resource"] for st in granted] == [{"Fn::GetAtt": [dlq, "Arn"]}]
    alarms = resources(template, "AWS::CloudWatch::Alarm").values()
    watched = [
        a for a in alarms if any(d.get("Value") == {"Fn::GetAtt": [dlq, "QueueName"]} for d in a["Properties"].get("Dimensions", []))
    ]
    assert len(watched) == 1


def test_the_dashboards_name_holds_the_stack_and_its_region_since_dashboards_are_global_to_the_account(template: Template) -> None:
    [dash] = resources(template, "AWS::CloudWatch::Dashboard").values()
    parts = dash["Properties"]["DashboardName"]["Fn::Join"][1]
    assert {"Ref": "AWS::StackName"} in parts and {"Ref": "AWS::Region"} in parts


def test_dashboard_has_throughput_failure_queue_worker_and_execution_widgets(template: Template) -> None:
    [dash] = resources(template, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dash["Properties"]["DashboardBody"])
    for title in (
        "Objects/s",
        "Bytes/s",
        "Failures, dead letters, returned batches and S3 retries",
        "Work queue depth",
        "Age of oldest message (s)",
        "Dead-letter queue depth",
        "Worker concurrency",
        "Worker errors and throttles",
        "Worker duration (ms)",
        "Job executions",
    ):
        assert f'\\"title\\":\\"{title}\\"' in body, title
    for metric in ("ObjectsSucceeded", "Bytes", "ApproximateAgeOfOldestMessage", "Throttles", "ConcurrentExecutions", "ExecutionsFailed"):
        assert metric in body, metric


def test_alarms_cover_dead_letters_failed_and_early_ended_executions_every_functions_errors_and_stuck_work(
    template: Template,
) -> None:
    alarms = {
        re.sub(r"^Monitoring|Alarm[0-9A-F]{8}$", "", logical): a["Properties"]
        for logical, a in resources(template, "AWS::CloudWatch::Alarm").items()
    }
    assert set(alarms) == {
        "DeadLetters",  # a dead-lettered batch the counter could not count
        "DeadLetteredBatches",  # counted by the dead-letter counter, so the queue's own depth rarely shows them
        "ScheduleDeadLetters",  # a scheduled run the scheduler could not start (the fixture deploys a schedule)
        "FailedExecutions",
        "ExecutionsEndedEarly",  # timed out, or aborted by anything but its owner's stop or cancel
        "WorkerErrors",
        "FunctionErrors",  # every other function's
        "ExecutionEndedDeadLetters",  # an ended execution's event that never reached ExecutionEnded
        "StuckWork",  # old work and nothing finished: age alone fires on every large job
    }
    assert (alarms["DeadLetters"]["Threshold"], alarms["DeadLetters"]["ComparisonOperator"]) == (0, "GreaterThanThreshold")
    assert (alarms["DeadLetteredBatches"]["Threshold"], alarms["DeadLetteredBatches"]["Namespace"]) == (1, "S3Bulk")

    def expression(name: str) -> str:
        [expr] = [m["Expression"] for m in alarms[name]["Metrics"] if "Expression" in m]
        return str(expr)

    assert expression("StuckWork") == "IF(age > 3600 AND deleted == 0, 1, 0)"
    # ExecutionEnded's own count, which leaves out an end its owner asked for (AWS's Aborted metric cannot tell them apart).
    assert (
        alarms["ExecutionsEndedEarly"]["MetricName"] == "ExecutionsEndedUnasked" and alarms["ExecutionsEndedEarly"]["Namespace"] == "S3Bulk"
    )
    assert expression("FunctionErrors").count("+") == 5  # Validate, Lister, Progress, Finalize, ExecutionEnded, the counter


def test_the_execution_ended_rule_keeps_what_it_could_not_deliver_and_what_its_function_failed_on(template: Template) -> None:
    """EventBridge invokes ExecutionEnded asynchronously: its own failures, after Lambda's two retries, go to the same
    alarmed queue as the events EventBridge could not deliver, never dropped (a job would keep no report)."""
    [rule] = resources(template, "AWS::Events::Rule").values()
    [target] = rule["Properties"]["Targets"]
    assert target["RetryPolicy"]["MaximumRetryAttempts"] == 20 and "Arn" in target["DeadLetterConfig"]
    dlq = target["DeadLetterConfig"]["Arn"]
    ended = next(k for k, f in resources(template, "AWS::Lambda::Function").items() if k.startswith("ExecutionEnded"))
    [config] = [
        c for c in resources(template, "AWS::Lambda::EventInvokeConfig").values() if c["Properties"]["FunctionName"] == {"Ref": ended}
    ]
    assert config["Properties"]["DestinationConfig"]["OnFailure"]["Destination"] == dlq
    assert config["Properties"]["MaximumRetryAttempts"] == 2
    queue = dlq["Fn::GetAtt"][0]
    alarmed = [
        a for a in resources(template, "AWS::CloudWatch::Alarm").values() if queue in json.dumps(a["Properties"].get("Dimensions", []))
    ]
    assert alarmed, "an alarm watches the queue"
    sends = [st for st in statements(template) if "sqs:SendMessage" in as_list(st["Action"]) and queue in json.dumps(st["Resource"])]
    assert sends, "the function may send its failures there"


def test_no_statement_grants_every_action(template: Template) -> None:
    for st in statements(template):
        for action in as_list(st["Action"]):
            assert action != "*" and not action.endswith(":*"), st


def test_s3_object_actions_are_scoped_to_the_allow_list(template: Template) -> None:
    def buckets_of(st: dict[str, Any]) -> set[str]:
        names = set()
        for res in as_list(st["Resource"]):
            text = json.dumps(res)
            for b in ("raw-logs", "archive-bucket"):
                if f":s3:::{b}" in text:
                    names.add(b)
            if "Reports" in text:
                names.add("<reports>")
        return names

    granted: dict[str, set[str]] = {}
    for st in statements(template):
        for action in as_list(st["Action"]):
            if action.startswith("s3:"):
                granted.setdefault(action, set()).update(buckets_of(st))
    assert granted["s3:DeleteObject"] == {"raw-logs"}
    # abort-uploads: only on the delete buckets (what the parts hold is gone for good, as a delete's objects are).
    assert granted["s3:ListBucketMultipartUploads"] == {"raw-logs"}
    assert granted["s3:AbortMultipartUpload"] == {"raw-logs", "archive-bucket", "<reports>"}
    assert granted["s3:PutObject"] == {"archive-bucket", "<reports>"}
    assert granted["s3:GetObjectTagging"] == {"raw-logs", "archive-bucket"}
    assert granted["s3:ListBucket"] == {"raw-logs", "archive-bucket", "<reports>"}


def test_functions_get_the_allow_list_for_their_run_time_checks(template: Template) -> None:
    for fn in resources(template, "AWS::Lambda::Function").values():
        env = fn["Properties"]["Environment"]["Variables"]
        assert (env["S3BULK_READ_BUCKETS"], env["S3BULK_WRITE_BUCKETS"], env["S3BULK_DELETE_BUCKETS"]) == (
            "archive-bucket,raw-logs",
            "archive-bucket",
            "raw-logs",
        )
        # No X-Ray unless asked (-c tracing=true): its SDK's support ends 2027-02-25; Powertools' Tracer is told too.
        assert "TracingConfig" not in fn["Properties"] and env["POWERTOOLS_TRACE_DISABLED"] == "true"


def test_tracing_true_traces_every_function_and_the_state_machine() -> None:
    t = Template.from_stack(build_app({**CONTEXT, "schedules_file": "", "tracing": "true"}).node.find_child("S3Bulk"))  # type: ignore[arg-type]
    for fn in resources(t, "AWS::Lambda::Function").values():
        props = fn["Properties"]
        assert props["TracingConfig"] == {"Mode": "Active"} and props["Environment"]["Variables"]["POWERTOOLS_TRACE_DISABLED"] == "false"
    [machine] = resources(t, "AWS::StepFunctions::StateMachine").values()
    assert machine["Properties"]["TracingConfiguration"] == {"Enabled": True}
    assert any("xray:PutTraceSegments" in as_list(st["Action"]) for st in statements(t))


def test_validate_is_told_the_workers_memory_so_it_can_refuse_a_job_they_cannot_stream(template: Template) -> None:
    functions = resources(template, "AWS::Lambda::Function")
    [worker] = [f for logical, f in functions.items() if logical.startswith("Worker")]
    [validate] = [f for logical, f in functions.items() if logical.startswith("Validate")]
    env = validate["Properties"]["Environment"]["Variables"]
    assert env["S3BULK_WORKER_MEMORY_MB"] == str(worker["Properties"]["MemorySize"]) == "1024"
    assert env["S3BULK_CONCURRENCY"] == "32"  # the workers' threads, the rule's other half


def test_the_worker_runs_jobs_that_hold_no_bodies_on_64_threads_and_streaming_jobs_on_32(template: Template) -> None:
    [worker] = [f for logical, f in resources(template, "AWS::Lambda::Function").items() if logical.startswith("Worker")]
    env = worker["Properties"]["Environment"]["Variables"]
    assert (env["S3BULK_CONCURRENCY"], env["S3BULK_REQUEST_CONCURRENCY"]) == ("32", "64")
    assert DeployConfig.from_context({**CONTEXT, "worker_request_threads": "128"}.get).worker_request_threads == 128
    with pytest.raises(ValueError, match=r"^context worker_request_threads: a worker runs 1-512 object threads"):
        DeployConfig.from_context({**CONTEXT, "worker_request_threads": "0"}.get)


def test_a_scheduled_relay_the_workers_memory_cannot_stream_is_refused_at_synth() -> None:
    relay = {"operation": "copy", "source": {"bucket": "a-b"}, "destination": {"bucket": "c-d"}, "options": {"transfer": "relay"}}
    cfg = DeployConfig(("a-b",), ("c-d",), (), worker_memory_mb=512, schedules=(Schedule("nightly", "rate(1 day)", relay),))
    with pytest.raises(ValueError, match=r"^schedule nightly: job\.options\.transfer: .* set worker_memory_mb to at least 928 "):
        cfg.check()
    replace(cfg, worker_memory_mb=1024).check()


def test_state_machine_is_standard_with_retry_and_catch_on_every_task(template: Template) -> None:
    [sm] = resources(template, "AWS::StepFunctions::StateMachine").values()
    assert sm["Properties"].get("StateMachineType", "STANDARD") == "STANDARD"
    definition = json.loads("".join(p if isinstance(p, str) else "0" for p in sm["Properties"]["DefinitionString"]["Fn::Join"][1]))
    tasks = {name: s for name, s in definition["States"].items() if s["Type"] == "Task"}
    assert set(tasks) == {
        "Validate",
        "CreateLedgerEntry",
        "PlanListing",
        "CheckCount",
        "AwaitConfirmation",
        "AwaitCompletion",
        "CheckProgress",
        "Finalize",
        "ReportFailure",
        "MarkFailed",
        "ReopenJob",
        "WhyNotReopened",
        "ResumeHeld",
        "AfterListing",
        "AdoptJob",
        "ContinueAsNew",
    }
    maps = {name: s for name, s in definition["States"].items() if s["Type"] == "Map"}
    assert set(maps) == {"ListShards", "CountShards"}
    assert maps["ListShards"]["Catch"] and maps["ListShards"]["ItemProcessor"]["States"]["ListShard"]["Retry"]
    assert maps["CountShards"]["Catch"] and maps["CountShards"]["ItemProcessor"]["States"]["CountShard"]["Retry"]
    for name, state in tasks.items():
        assert state.get("Retry"), name
        assert state.get("Catch"), name


def test_cfn_lint_passes_on_the_synthesized_template(stack: S3BulkStack, tmp_path: Path) -> None:
    path = tmp_path / "S3Bulk.template.json"
    path.write_text(json.dumps(Template.from_stack(stack).to_json()))
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), str(path)], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_cdk_nag_passes_with_every_acknowledgement_reasoned(app: cdk.App) -> None:
    assembly = app.synth()
    report = json.loads((Path(assembly.directory) / "validation-report.json").read_text())
    [nag] = [r for r in report["pluginReports"] if r["pluginName"] == "AwsSolutions"]
    assert (nag["conclusion"], nag["violations"]) == ("success", [])
    suppressed = nag["suppressedViolations"]
    assert suppressed, "expected the documented acknowledgements to be exercised"
    assert all(len(v["reason"]) > 40 for v in suppressed)
    # SQS3: the ended-execution events' dead-letter queue is a DLQ cdk-nag does not recognize (EventBridge's).
    assert {v["ruleName"].split("[")[0] for v in suppressed} <= {
        "AwsSolutions-IAM4",
        "AwsSolutions-IAM5",
        "AwsSolutions-L1",
        "AwsSolutions-SQS3",
        "AwsSolutions-SF2",  # X-Ray off unless -c tracing=true
    }


def test_cdk_nag_fails_synth_on_an_unacknowledged_finding() -> None:
    app = build_app(dict(CONTEXT))
    stack = app.node.find_child("S3Bulk")
    assert isinstance(stack, S3BulkStack)
    s3.Bucket(stack, "NoLoggingNoTls")  # no access logs, no TLS-only policy
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()


def test_deploy_config_needs_a_read_allow_list() -> None:
    with pytest.raises(ValueError, match=r"^context read_buckets: empty"):
        DeployConfig.from_context({"read_buckets": ""}.get)


def test_a_schedule_outside_the_allow_list_is_refused() -> None:
    ctx = {**CONTEXT, "write_buckets": "elsewhere"}
    with pytest.raises(
        ValueError,
        match=r"^schedule nightly: job.destination.bucket: 'archive-bucket' is not in this deployment's write allow-list \(elsewhere\); redeploy with -c write_buckets=archive-bucket,elsewhere$",
    ):
        DeployConfig.from_context(ctx.get)


def _statements_for(context: dict[str, str]) -> list[dict[str, Any]]:
    app = build_app({**CONTEXT, **context})
    stack = app.node.find_child("S3Bulk")
    assert isinstance(stack, S3BulkStack)
    return statements(Template.from_stack(stack))


def _actions(sts: list[dict[str, Any]]) -> set[str]:
    return {a for st in sts for a in as_list(st["Action"])}


def test_a_copy_only_deployment_grants_no_delete_or_governance_bypass() -> None:
    sts = _statements_for({"delete_buckets": "", "schedules_file": ""})
    actions = _actions(sts)
    # DeleteObject(Version)Tagging takes an object's last tags off (a tag write, like PutObjectTagging); it deletes no object.
    tag_writes = {"s3:DeleteObjectTagging", "s3:DeleteObjectVersionTagging"}
    assert not {a for a in actions if (a.startswith("s3:Delete") and a not in tag_writes) or a == "s3:BypassGovernanceRetention"}
    assert "s3:PutObject" in actions  # the deployment still copies


def test_kms_permissions_exist_only_for_the_configured_keys_and_only_via_s3() -> None:
    """Workers decrypt sources and encrypt destinations; the lister only decrypts (manifests in SSE-KMS buckets)."""
    assert not {a for a in _actions(_statements_for({})) if a.startswith("kms:")}
    arn = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    app = build_app({**CONTEXT, "kms_keys": arn})
    stack = app.node.find_child("S3Bulk")
    assert isinstance(stack, S3BulkStack)
    by_role: dict[str, list[str]] = {}
    for policy in resources(Template.from_stack(stack), "AWS::IAM::Policy").values():
        for st in policy["Properties"]["PolicyDocument"]["Statement"]:
            if any(a.startswith("kms:") for a in as_list(st["Action"])):
                assert as_list(st["Resource"]) == [arn]
                assert st["Condition"] == {"StringLike": {"kms:ViaService": "s3.*.amazonaws.com"}}
                for role in policy["Properties"]["Roles"]:
                    by_role.setdefault(role["Ref"].split("ServiceRole")[0], []).extend(sorted(as_list(st["Action"])))
    # The worker also encrypts and re-encrypts a data key under these keys: set-encryption's UpdateObjectEncryption.
    worker = ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:ReEncryptFrom", "kms:ReEncryptTo"]
    assert by_role == {"Worker": worker, "Lister": ["kms:Decrypt"]}


def test_a_kms_key_that_is_not_an_arn_is_refused() -> None:
    with pytest.raises(ValueError, match="context kms_keys"):
        DeployConfig.from_context({**CONTEXT, "kms_keys": "alias/mine"}.get)


def test_only_actions_without_resource_level_permissions_use_a_star_resource(template: Template) -> None:
    unscoped = {a for st in statements(template) if "*" in as_list(st["Resource"]) for a in as_list(st["Action"])}
    assert unscoped, "the X-Ray and log-delivery statements should be found"
    assert {a.split(":")[0] for a in unscoped} <= {"xray", "logs"}, unscoped


def test_a_first_deploy_with_any_bucket_names_synthesizes_and_deploys_no_schedule() -> None:
    app = build_app({"read_buckets": "acme-logs-2026", "write_buckets": "acme-archive"})
    stack = app.node.find_child("S3Bulk")
    assert isinstance(stack, S3BulkStack)
    t = Template.from_stack(stack)
    assert resources(t, "AWS::Scheduler::Schedule") == {}
    tag_writes = {"s3:DeleteObjectTagging", "s3:DeleteObjectVersionTagging"}
    assert not [a for a in _actions(statements(t)) if a.startswith("s3:Delete") and a not in tag_writes]
    functions = resources(t, "AWS::Lambda::Function").values()
    assert {(f["Properties"]["Runtime"], f["Properties"]["Architectures"][0]) for f in functions} == {("python3.13", "arm64")}
    assert all("Layers" not in f["Properties"] for f in functions)  # every dependency is in the asset


def test_synth_without_a_read_allow_list_names_the_flag_to_set() -> None:
    with pytest.raises(ValueError, match=r"^context read_buckets: empty; pass -c read_buckets="):
        build_app({})


def test_a_missing_schedules_file_is_named_with_the_fix() -> None:
    with pytest.raises(ValueError, match=r"^context schedules_file: .*nope.json does not exist; pass -c schedules_file=PATH"):
        DeployConfig.from_context({**CONTEXT, "schedules_file": "nope.json"}.get)


def test_the_sample_schedules_file_loads_once_its_buckets_are_allowed() -> None:
    cfg = DeployConfig.from_context(
        {
            "read_buckets": "src-bucket",
            "write_buckets": "dst-bucket",
            "delete_buckets": "src-bucket",
            "schedules_file": "config/schedules.example.json",
        }.get
    )
    assert [s.name for s in cfg.schedules] == ["nightly-log-archive"]


def test_the_state_machine_logs_under_vendedlogs(template: Template) -> None:
    [group] = [
        g["Properties"]["LogGroupName"]
        for g in resources(template, "AWS::Logs::LogGroup").values()
        if "vendedlogs" in json.dumps(g["Properties"].get("LogGroupName", ""))
    ]
    assert json.dumps(group).startswith('{"Fn::Join": ["", ["/aws/vendedlogs/states/"')


def test_lambda_tasks_wait_out_throttling_before_their_one_retrier_for_other_errors(template: Template) -> None:
    """Throttling (a new account's low concurrency) is waited out for minutes; other errors get CDK's usual few tries."""
    [sm] = resources(template, "AWS::StepFunctions::StateMachine").values()
    definition = json.loads("".join(p if isinstance(p, str) else "0" for p in sm["Properties"]["DefinitionString"]["Fn::Join"][1]))
    for name in ("Validate", "PlanListing", "AwaitCompletion", "CheckProgress", "Finalize", "ReportFailure"):
        throttled, other, *_ = definition["States"][name]["Retry"]
        assert throttled["ErrorEquals"] == ["Lambda.TooManyRequestsException"] and throttled["MaxAttempts"] >= 20, name
        assert throttled["MaxDelaySeconds"] <= 60 and "Lambda.TooManyRequestsException" not in other["ErrorEquals"], name


def test_job_steps_retry_any_error_but_their_verdicts_and_waits_never_retry_their_timeout(template: Template) -> None:
    """A step's S3, SQS or DynamoDB error is tried again with backoff before the job stops; its own verdicts (a bad
    spec, a stopped job) never are; and the waits keep their States.Timeout for their catch (a poll, not an error)."""
    [sm] = resources(template, "AWS::StepFunctions::StateMachine").values()
    definition = json.loads("".join(p if isinstance(p, str) else "0" for p in sm["Properties"]["DefinitionString"]["Fn::Join"][1]))
    states = dict(definition["States"])
    for m in ("ListShards", "CountShards"):
        states.update(states[m]["ItemProcessor"]["States"])
    for name in ("PlanListing", "ListShard", "CountShard", "CheckCount", "CheckProgress", "Finalize"):
        *_, verdicts, anything = states[name]["Retry"]
        assert "JobError" in verdicts["ErrorEquals"] and "JobHalted" in verdicts["ErrorEquals"] and verdicts["MaxAttempts"] == 0, name
        assert anything["ErrorEquals"] == ["States.ALL"] and 3 <= anything["MaxAttempts"] <= 6 and anything["BackoffRate"] == 2, name
    for name in ("AwaitCompletion", "AwaitConfirmation", "ReportFailure", "Validate"):
        assert all("States.ALL" not in r["ErrorEquals"] for r in states[name]["Retry"]), name


def test_every_alarm_notifies_a_topic_cloudwatch_may_publish_to_and_an_email_subscribes_when_given(template: Template) -> None:
    """The topic's policy replaces SNS's default one: without an Allow for cloudwatch.amazonaws.com no alarm reaches anyone."""
    app = build_app({**CONTEXT, "alarm_email": "ops@example.com"})
    stack = app.node.find_child("S3Bulk")
    assert isinstance(stack, S3BulkStack)
    for t, subscribed in ((template, False), (Template.from_stack(stack), True)):
        [topic_id] = resources(t, "AWS::SNS::Topic")
        assert bool(resources(t, "AWS::SNS::Subscription")) is subscribed
        alarms = resources(t, "AWS::CloudWatch::Alarm").values()
        assert len(alarms) == 9
        for a in alarms:
            assert a["Properties"]["AlarmActions"] == [{"Ref": topic_id}] == a["Properties"]["OKActions"]
        [policy] = resources(t, "AWS::SNS::TopicPolicy").values()
        [publish] = [st for st in policy["Properties"]["PolicyDocument"]["Statement"] if st.get("Sid") == "CloudWatchAlarmsPublish"]
        assert publish["Effect"] == "Allow" and publish["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
        assert publish["Action"] == "sns:Publish" and publish["Resource"] == {"Ref": topic_id}
        assert set(publish["Condition"]) == {"StringEquals", "ArnLike"}  # this account's alarms only
        assert "AlarmTopicArn" in t.to_json()["Outputs"]


def test_a_bad_alarm_email_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^context alarm_email: 'ops' is not an email address"):
        DeployConfig.from_context({**CONTEXT, "alarm_email": "ops"}.get)


def test_completion_is_a_token_wait_with_a_timed_safety_net(template: Template) -> None:
    [sm] = resources(template, "AWS::StepFunctions::StateMachine").values()
    definition = json.loads("".join(p if isinstance(p, str) else "0" for p in sm["Properties"]["DefinitionString"]["Fn::Join"][1]))
    wait = definition["States"]["AwaitCompletion"]
    assert wait["Resource"].endswith(":states:::lambda:invoke.waitForTaskToken")
    assert (wait["TimeoutSecondsPath"], wait["Parameters"]["Payload"]["token.$"]) == ("$.poll_seconds", "$$.Task.Token")
    assert [c["Next"] for c in wait["Catch"]] == ["CheckProgress", "ReportFailure"]
    assert wait["Catch"][0]["ErrorEquals"] == ["States.Timeout"]
    assert "Wait" not in {s["Type"] for s in definition["States"].values()}  # no polling loop


def test_only_the_functions_that_count_batches_or_check_progress_may_resume_an_execution_and_only_this_stacks(
    template: Template,
) -> None:
    holders = []
    for policy in resources(template, "AWS::IAM::Policy").values():
        for st in policy["Properties"]["PolicyDocument"]["Statement"]:
            if "states:SendTaskSuccess" in as_list(st["Action"]):
                assert json.dumps(st["Resource"]).endswith(':stateMachine:", {"Ref": "AWS::StackName"}, "-jobs"]]}')
                holders += [r["Ref"].split("ServiceRole")[0] for r in policy["Properties"]["Roles"]]
    assert sorted(holders) == ["DeadLetterCounter", "Progress", "Worker"]


@pytest.mark.parametrize("value", ["30", "7200"])
def test_a_poll_period_outside_its_bounds_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match=r"^context poll_seconds: .* 60-3600 s"):
        DeployConfig.from_context({**CONTEXT, "poll_seconds": value}.get)


def test_shards_are_listed_in_parallel_up_to_the_deploy_time_setting(template: Template) -> None:
    [sm] = resources(template, "AWS::StepFunctions::StateMachine").values()
    definition = json.loads("".join(p if isinstance(p, str) else "0" for p in sm["Properties"]["DefinitionString"]["Fn::Join"][1]))
    listing = definition["States"]["ListShards"]
    assert (listing["ItemsPath"], listing["MaxConcurrency"]) == ("$.plan.shards", 16)
    assert "Lambda.Unknown" in listing["ItemProcessor"]["States"]["ListShard"]["Retry"][1]["ErrorEquals"]  # a killed lister resumes
    app = build_app({**CONTEXT, "list_shards": "4"})
    stack = app.node.find_child("S3Bulk")
    assert isinstance(stack, S3BulkStack)
    t = Template.from_stack(stack)
    assert '\\"MaxConcurrency\\":4' in json.dumps(resources(t, "AWS::StepFunctions::StateMachine"))
    with pytest.raises(ValueError, match=r"^context list_shards: "):
        DeployConfig.from_context({**CONTEXT, "list_shards": "0"}.get)
    with pytest.raises(ValueError, match=r"^context list_shards: a job lists in 1-1000 shards"):
        DeployConfig.from_context({**CONTEXT, "list_shards": "1001"}.get)
    assert listing.get("ItemProcessor", {}).get("ProcessorConfig", {"Mode": "INLINE"})["Mode"] == "INLINE"


def test_more_than_40_listing_shards_run_on_a_distributed_map_whose_children_may_read_their_own_history() -> None:
    """An inline Map runs at most 40 iterations at once: -c list_shards=200 makes ListShards and CountShards Distributed
    Maps of Standard child executions, 100 at once by default (list_concurrency), and lets ListShard read its child
    execution's history."""
    t = _template({"list_shards": "200"})
    [sm] = resources(t, "AWS::StepFunctions::StateMachine").values()
    definition = json.loads("".join(p if isinstance(p, str) else "0" for p in sm["Properties"]["DefinitionString"]["Fn::Join"][1]))
    for name in ("ListShards", "CountShards"):
        state = definition["States"][name]
        assert state["ItemProcessor"]["ProcessorConfig"] == {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}, name
        assert (state["MaxConcurrency"], state["ItemsPath"], state["Label"]) == (100, "$.plan.shards", name)
        assert state["Catch"][0]["Next"] == "ReportFailure"
    histories = [json.dumps(r) for r in _grants(t, "states:GetExecutionHistory", "Lister")]
    assert any('-jobs/*"' in r for r in histories), histories  # execution:STACK-jobs/LABEL:ID, a child's ARN
    assert any(r for r in _grants(t, "states:StartExecution", "Orchestration"))


def test_a_job_shares_the_account_politely_its_listers_and_workers_reserve_what_they_run_and_synth_refuses_more_than_it_has() -> None:
    """Up to 1,000 listing children on an unreserved Lister took the account's whole concurrency: every other function
    was throttled, and a child throttled past its retrier stopped the job. A job's shards now run list_concurrency at a
    time (100 by default), the Lister and the Worker reserve what they may run, and synth refuses a stack one of whose
    jobs would need more than the account's stated quota less the 100 Lambda keeps unreserved."""

    def max_concurrency(t: Template) -> int:
        [sm] = resources(t, "AWS::StepFunctions::StateMachine").values()
        definition = json.loads("".join(p if isinstance(p, str) else "0" for p in sm["Properties"]["DefinitionString"]["Fn::Join"][1]))
        return int(definition["States"]["ListShards"]["MaxConcurrency"])

    def reserved(t: Template) -> dict[str, int]:
        functions = resources(t, "AWS::Lambda::Function").items()
        return {
            k.rstrip("0123456789ABCDEF"): f["Properties"]["ReservedConcurrentExecutions"]
            for k, f in functions
            if "ReservedConcurrentExecutions" in f["Properties"]
        }

    t = _template({"list_shards": "400", "list_concurrency": "150", "worker_max_concurrency": "200"})
    assert max_concurrency(t) == 150
    assert reserved(t) == {"Lister": 150, "Worker": 200}
    outputs = t.to_json()["Outputs"]
    assert (outputs["LambdaConcurrencyNeeded"]["Value"], outputs["LambdaConcurrencyReserved"]["Value"]) == ("354", "350")
    assert reserved(_template({"reserve_concurrency": "false"})) == {}
    with pytest.raises(
        ValueError, match=r"^context account_concurrency: one job runs up to 1,004 Lambdas at once \(100 listers, 900 workers"
    ):
        DeployConfig.from_context({**CONTEXT, "list_shards": "1000", "worker_max_concurrency": "900", "schedules_file": ""}.get)
    ok = DeployConfig.from_context(
        {**CONTEXT, "list_shards": "1000", "worker_max_concurrency": "900", "account_concurrency": "5000", "schedules_file": ""}.get
    )
    assert ok.reserved == {"Lister": 100, "Worker": 900}
    with pytest.raises(ValueError, match=r"^context list_concurrency: at most list_shards \(16\)"):
        DeployConfig.from_context({**CONTEXT, "list_concurrency": "17", "schedules_file": ""}.get)
    with pytest.raises(ValueError, match=r"^context account_concurrency: .* over the account's 10; lower list_concurrency"):
        DeployConfig.from_context({**CONTEXT, "account_concurrency": "10", "reserve_concurrency": "false", "schedules_file": ""}.get)
    # A new account's quota of 10 reserves nothing, and runs a small job whole (docs/deploy.md).
    small = {"account_concurrency": "10", "reserve_concurrency": "false", "list_concurrency": "2", "worker_max_concurrency": "4"}
    assert DeployConfig.from_context({**CONTEXT, **small, "schedules_file": ""}.get).reserved == {}


def test_every_failed_timed_out_or_aborted_execution_reaches_the_execution_ended_function(template: Template) -> None:
    [rule] = resources(template, "AWS::Events::Rule").values()
    pattern = rule["Properties"]["EventPattern"]
    assert pattern["source"] == ["aws.states"] and pattern["detail-type"] == ["Step Functions Execution Status Change"]
    assert sorted(pattern["detail"]["status"]) == ["ABORTED", "FAILED", "TIMED_OUT"]
    [target] = rule["Properties"]["Targets"]
    [(logical, fn)] = [(k, f) for k, f in resources(template, "AWS::Lambda::Function").items() if k == target["Arn"]["Fn::GetAtt"][0]]
    assert fn["Properties"]["Handler"] == "functions.ended.handler.handler", logical
    assert target["RetryPolicy"]["MaximumRetryAttempts"] >= 10


def _template(context: dict[str, str]) -> Template:
    """The stack's template with these context values over the defaults."""
    app = build_app({**CONTEXT, **context})
    stack = app.node.find_child("S3Bulk")
    assert isinstance(stack, S3BulkStack)
    return Template.from_stack(stack)


def _grants(template: Template, action: str, role: str = "") -> list[list[Any]]:
    """The resources of every statement granting `action` (to roles whose logical id starts with `role`)."""
    return [
        as_list(st["Resource"])
        for policy in resources(template, "AWS::IAM::Policy").values()
        if any(r["Ref"].startswith(role) for r in policy["Properties"]["Roles"])
        for st in policy["Properties"]["PolicyDocument"]["Statement"]
        if action in as_list(st["Action"])
    ]


def _worker_env(template: Template) -> dict[str, str]:
    return dict(
        next(
            p["Properties"]["Environment"]["Variables"]
            for k, p in resources(template, "AWS::Lambda::Function").items()
            if k.startswith("Worker")
        )
    )


def _worker_invokes(context: dict[str, str]) -> tuple[list[Any], dict[str, str]]:
    """What the worker role may invoke, and the worker's environment."""
    template = _template(context)
    return _grants(template, "lambda:InvokeFunction", "WorkerServiceRole"), _worker_env(template)


def test_process_lambdas_are_the_only_functions_the_worker_may_invoke_and_only_when_given() -> None:
    assert _worker_invokes({})[0] == []
    arn = "arn:aws:lambda:eu-west-1:111122223333:function:thumbnails"
    invokes, env = _worker_invokes({"process_lambdas": arn})
    assert invokes == [[arn]]
    assert (env["S3BULK_PROCESS_LAMBDAS"], env["S3BULK_PROCESS_CODE"]) == (arn, "")


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"process_lambdas": "thumbnails"}, r"^context process_lambdas: 'thumbnails' is not a Lambda function ARN"),
        ({"process_code": "no/such/dir"}, r"^context process_code: .*no/such/dir is not a directory; pass -c process_code=DIR"),
    ],
)
def test_bad_process_context_is_refused_naming_the_flag(context: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DeployConfig.from_context({**CONTEXT, **context}.get)


def test_credentials_secrets_may_be_read_by_the_lister_and_worker_only_and_only_when_given() -> None:
    def readers(context: dict[str, str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for policy in resources(_template(context), "AWS::IAM::Policy").values():
            for st in policy["Properties"]["PolicyDocument"]["Statement"]:
                if "secretsmanager:GetSecretValue" in as_list(st["Action"]):
                    for role in policy["Properties"]["Roles"]:
                        out[role["Ref"].split("ServiceRole")[0]] = as_list(st["Resource"])
        return out

    assert readers({}) == {}
    arn = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:legacy-keys"
    assert readers({"credentials_secrets": f"{arn}@source"}) == {"Lister": [arn, f"{arn}-??????"], "Worker": [arn, f"{arn}-??????"]}
    full = f"{arn}-Ab12Cd"  # a full ARN already has its suffix: no wildcard that could reach another secret
    assert readers({"credentials_secrets": f"{full}@both"}) == {"Lister": [full], "Worker": [full]}


OPT_INS = {"allow_object_lock": "true", "allow_acl": "true", "allow_version_delete": "true"}


def test_the_worker_may_make_every_call_the_in_place_operations_and_their_undo_journal_make() -> None:
    """Each S3 call an in-place operation makes on the stack (the worker always keeps the per-key log, so the journal reads too),
    in a deployment that opted in to Object Lock and ACL writes."""
    actions = set(_actions(_statements_for(OPT_INS)))
    calls = {
        "tag": {"s3:GetObjectTagging", "s3:PutObjectTagging", "s3:DeleteObjectTagging"},
        "set-legal-hold": {"s3:GetObjectLegalHold", "s3:PutObjectLegalHold"},
        "set-retention": {"s3:GetObjectRetention", "s3:PutObjectRetention"},
        "set-acl": {"s3:GetObjectAcl", "s3:PutObjectAcl"},
        # An in-place copy asks once whether the bucket has ACLs, and then reads each object's grants to name them again.
        "set-storage-class": {
            "s3:GetObject",
            "s3:PutObject",
            "s3:GetObjectTagging",
            "s3:GetBucketOwnershipControls",
            "s3:GetObjectAcl",
            "s3:PutObjectAcl",  # a copy that names grants (x-amz-grant-*) needs it
            # HEAD shows the retention and legal hold only to a caller allowed to read them; the copy names them again.
            "s3:GetObjectRetention",
            "s3:GetObjectLegalHold",
            "s3:PutObjectRetention",
            "s3:PutObjectLegalHold",
        },
        "add-checksum": {
            "s3:GetObject",
            "s3:PutObject",
            "s3:GetObjectTagging",
            "s3:PutObjectTagging",
            "s3:GetBucketOwnershipControls",
            "s3:GetObjectAcl",
            "s3:PutObjectAcl",
            "s3:GetObjectRetention",
            "s3:GetObjectLegalHold",
            "s3:PutObjectRetention",
            "s3:PutObjectLegalHold",
        },
    }
    assert {op: needed - actions for op, needed in calls.items()} == {op: set() for op in calls}


def test_the_stack_may_make_every_call_a_job_on_versions_makes() -> None:
    """source.versions and version_id rows: the lister lists versions and checks the destination, the worker acts per version
    (version deletes and ACLs with their opt-ins)."""
    template = _template(OPT_INS)

    def granted(role: str, actions: set[str]) -> set[str]:
        return {a for a in actions if _grants(template, a, role)}

    assert granted("Lister", {"s3:ListBucketVersions", "s3:GetBucketVersioning"}) == {"s3:ListBucketVersions", "s3:GetBucketVersioning"}
    worker = {
        "s3:ListBucketVersions",
        "s3:GetObjectVersion",
        "s3:GetObjectVersionTagging",
        "s3:PutObjectVersionTagging",
        "s3:DeleteObjectVersionTagging",
        "s3:PutObjectVersionAcl",
        "s3:DeleteObjectVersion",
    }
    assert granted("Worker", worker) == worker


def test_a_credentials_secret_that_is_not_a_secret_arn_is_refused_naming_the_flag() -> None:
    with pytest.raises(ValueError, match=r"^context credentials_secrets: 'legacy-keys' is not a Secrets Manager secret ARN; pass -c"):
        DeployConfig.from_context({**CONTEXT, "credentials_secrets": "legacy-keys"}.get)


def test_a_secret_paired_with_its_endpoint_reaches_the_functions_and_a_value_that_is_no_endpoint_url_is_refused() -> None:
    arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:legacy-keys"
    other = arn.replace("legacy-keys", "other-keys")
    env = _worker_env(_template({**CONTEXT, "credentials_secrets": f"{arn}=https://s3.legacy.example:9000@source,{other}@destination"}))
    assert env["S3BULK_CREDENTIALS_SECRETS"] == f"{arn},{other}"  # the ARNs alone, as IAM grants them
    assert env["S3BULK_SECRET_ENDPOINTS"] == f"{arn}=https://s3.legacy.example:9000"  # the other: AWS's own endpoint only
    assert env["S3BULK_SECRET_SIDES"] == f"{arn}=source,{other}=destination"
    for bad in ("s3.legacy.example", "ftp://s3.legacy.example", "https://s3.legacy.example/?x=1"):
        with pytest.raises(ValueError, match=r"^context credentials_secrets: .* is not an endpoint URL; pass -c credentials_secrets=arn:"):
            DeployConfig.from_context({**CONTEXT, "credentials_secrets": f"{arn}={bad}@source"}.get)


def test_a_credentials_secret_without_the_side_its_keys_serve_is_refused_naming_the_three_choices() -> None:
    """Keys paired to pull from a partner must not push this account's buckets to it: the deployer says which side."""
    arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:team@legacy"  # "@" may be in a secret's name
    for unsaid in (arn, f"{arn}=https://s3.legacy.example:9000", f"{arn}@sideways"):
        with pytest.raises(ValueError, match=r"^context credentials_secrets: say which side of a job .* @source .* @destination .* @both"):
            DeployConfig.from_context({**CONTEXT, "credentials_secrets": unsaid}.get)
    said = DeployConfig.from_context({**CONTEXT, "credentials_secrets": f"{arn}@both"}.get)
    assert said.credentials_secrets == (arn,) and said.secret_sides == ((arn, "both"),)


def test_the_worker_may_bypass_governance_retention_only_when_the_deployer_allows_it() -> None:
    def bypass(context: dict[str, str]) -> tuple[list[list[str]], str]:
        template = _template(context)
        return _grants(template, "s3:BypassGovernanceRetention"), _worker_env(template)["S3BULK_ALLOW_BYPASS_GOVERNANCE"]

    assert bypass({}) == ([], "false")
    grants, allowed = bypass({"allow_bypass_governance": "true"})
    write = DeployConfig.from_context({**CONTEXT, "allow_bypass_governance": "true"}.get).write_buckets
    [arns] = grants
    rendered = json.dumps(arns)  # ARNs joined with the partition
    assert allowed == "true" and len(arns) == len(write) and all(f":s3:::{b}/*" in rendered for b in write)  # write buckets only


def test_a_default_deployment_grants_no_object_lock_acl_or_version_delete_writes_and_validate_names_the_flag() -> None:
    """Least privilege: the permissions that cannot all be taken back (a COMPLIANCE retention binds even root; a version
    delete is permanent) are granted only with their -c flag, and a job that needs one is refused at Validate, naming it."""
    from s3bulk.aws.allowlist import AllowList
    from s3bulk.job import JobError, parse_job

    opt_in = {
        "s3:PutObjectRetention": "allow_object_lock",
        "s3:PutObjectLegalHold": "allow_object_lock",
        "s3:PutObjectAcl": "allow_acl",
        "s3:PutObjectVersionAcl": "allow_acl",
        "s3:DeleteObjectVersion": "allow_version_delete",
    }
    default = _template({})
    assert {a for a in opt_in if _grants(default, a)} == set()
    for action, flag in opt_in.items():
        assert _grants(_template({flag: "true"}), action, "Worker"), (action, flag)
    env = _worker_env(default)
    allow = AllowList.from_env(env | {"S3BULK_READ_BUCKETS": "bkt", "S3BULK_WRITE_BUCKETS": "bkt", "S3BULK_DELETE_BUCKETS": "bkt"})
    jobs: dict[str, dict[str, Any]] = {
        "allow_object_lock": {"operation": "set-legal-hold", "legal_hold": "ON"},
        "allow_acl": {"operation": "set-acl", "acl": "private"},
        "allow_version_delete": {"operation": "delete", "source": {"bucket": "bkt", "prefix": "p/", "versions": "all"}},
    }
    for flag, doc in jobs.items():
        job = parse_job(json.dumps({"source": {"bucket": "bkt", "prefix": "p/"}, **doc}))
        with pytest.raises(JobError, match=rf"redeploy with -c {flag}=true"):
            allow.check(job)
    copy = parse_job(
        json.dumps({"operation": "copy", "source": {"bucket": "bkt", "prefix": "a/"}, "destination": {"bucket": "bkt", "prefix": "c/"}})
    )
    allow.check(copy)  # a plain copy needs none of them


def test_key_log_parts_expire_after_keep_key_logs_days_by_their_tag_and_the_writers_may_tag_them() -> None:
    from s3bulk.aws.reportbucket import KEY_LOG_TAG

    name, value = KEY_LOG_TAG.split("=")
    for days, context in ((30, {}), (7, {"keep_key_logs_days": "7"})):
        template = _template(context)
        [bucket] = [b for k, b in resources(template, "AWS::S3::Bucket").items() if k.startswith("Reports")]
        [rule] = [r for r in bucket["Properties"]["LifecycleConfiguration"]["Rules"] if r.get("Id") == "ExpireKeyLogs"]
        assert rule["TagFilters"] == [{"Key": name, "Value": value}] and rule["ExpirationInDays"] == days
    for role in ("Lister", "Worker"):
        assert _grants(_template({}), "s3:PutObjectTagging", role), role  # a PutObject with Tagging needs both actions
    with pytest.raises(ValueError, match=r"^context keep_key_logs_days: "):
        DeployConfig.from_context({**CONTEXT, "keep_key_logs_days": "0"}.get)


def test_bucket_owner_names_each_buckets_account_on_every_s3_statement_on_it() -> None:
    sts = _statements_for({"bucket_owner": "111122223333,archive-bucket=444455556666"})
    on_buckets = [
        st
        for st in sts
        if any(":s3:::raw-logs" in json.dumps(r) or ":s3:::archive-bucket" in json.dumps(r) for r in as_list(st["Resource"]))
    ]
    assert on_buckets
    for st in on_buckets:
        text = json.dumps(st["Resource"])
        account = st.get("Condition", {}).get("StringEquals", {}).get("s3:ResourceAccount")
        # one account per statement: a statement never mixes buckets of two owners
        assert account == ("444455556666" if "archive-bucket" in text else "111122223333"), st
        assert not ("archive-bucket" in text and "raw-logs" in text), st
    report_only = [st for st in sts if "Reports" in json.dumps(st["Resource"]) and ":s3:::" not in json.dumps(st["Resource"])]
    assert report_only and all("Condition" not in st or "s3:ResourceAccount" not in json.dumps(st["Condition"]) for st in report_only)


def test_bucket_owner_self_is_the_deploying_account_and_reaches_the_functions() -> None:
    app = build_app({**CONTEXT, "bucket_owner": "self"})
    stack = app.node.find_child("S3Bulk")
    assert isinstance(stack, S3BulkStack)
    template = Template.from_stack(stack)
    pinned = [st for st in statements(template) if "s3:ResourceAccount" in json.dumps(st.get("Condition", {}))]
    assert pinned and all(st["Condition"]["StringEquals"]["s3:ResourceAccount"] == {"Ref": "AWS::AccountId"} for st in pinned)
    envs = [
        f["Properties"]["Environment"]["Variables"]
        for f in resources(template, "AWS::Lambda::Function").values()
        if "Environment" in f["Properties"]
    ]
    owners = [e["S3BULK_BUCKET_OWNERS"] for e in envs if "S3BULK_BUCKET_OWNERS" in e]
    assert owners and "archive-bucket=" in json.dumps(owners[0]) and "AWS::AccountId" in json.dumps(owners[0])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("12345", r"^context bucket_owner: '12345' names no account; pass -c bucket_owner=ACCOUNT"),
        ("nobody-bucket=111122223333", r"^context bucket_owner: 'nobody-bucket' is in no allow-list"),
        ("111122223333,444455556666", r"^context bucket_owner: two accounts for every bucket"),
    ],
)
def test_a_bucket_owner_that_names_no_account_or_an_unlisted_bucket_is_refused_at_synth(value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DeployConfig.from_context({**CONTEXT, "bucket_owner": value, "schedules_file": ""}.get)


def _topic_statements(t: Template) -> list[dict[str, Any]]:
    return [st for p in resources(t, "AWS::SNS::TopicPolicy").values() for st in p["Properties"]["PolicyDocument"]["Statement"]]


def _resolved(value: Any, account: str, region: str) -> Any:
    """A template value with the few intrinsics a topic policy holds made concrete: a resource's Ref or Arn names it."""
    if isinstance(value, dict) and len(value) == 1:
        ((fn, arg),) = value.items()
        if fn == "Ref":
            return {"AWS::AccountId": account, "AWS::Region": region, "AWS::Partition": "aws"}.get(
                arg, f"arn:aws:sns:{region}:{account}:{arg}"
            )
        if fn == "Fn::GetAtt":
            return f"arn:aws:events:{region}:{account}:rule/{arg[0]}"
        if fn == "Fn::Join":
            return arg[0].join(str(_resolved(v, account, region)) for v in arg[1])
    if isinstance(value, dict):
        return {k: _resolved(v, account, region) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolved(v, account, region) for v in value]
    return value


def test_only_this_stacks_job_events_rule_may_publish_to_the_alarm_topic_and_a_forged_event_never_reaches_it() -> None:
    """CDK's SNS target grants events.amazonaws.com Publish with no condition, which makes the topic's own guard moot:
    anyone who can put an event in the account could mail the subscribers a fake "job finished". The topic names the
    stack's one rule (aws:SourceArn) and account; a publish on behalf of any other rule, here or elsewhere, is refused by
    IAM's rule (the harness's evaluator, s3bulk/testing/stack/iam.py)."""
    from s3bulk.testing.stack.iam import Need, allowed

    account, region = "111122223333", "eu-west-1"
    plain = Template.from_stack(build_app({**CONTEXT, "schedules_file": ""}).node.find_child("S3Bulk"))  # type: ignore[arg-type]
    assert not [st for st in _topic_statements(plain) if st["Principal"] == {"Service": "events.amazonaws.com"}]
    assert not [
        r
        for r in resources(plain, "AWS::Events::Rule").values()
        if "s3bulk" in json.dumps(r["Properties"].get("EventPattern", {}).get("source", []))
    ]

    notified = Template.from_stack(build_app({**CONTEXT, "schedules_file": "", "notify_job_events": "true"}).node.find_child("S3Bulk"))  # type: ignore[arg-type]
    [(rule_id, rule)] = [
        (k, r) for k, r in resources(notified, "AWS::Events::Rule").items() if r["Properties"]["EventPattern"].get("source") == ["s3bulk"]
    ]
    pattern = rule["Properties"]["EventPattern"]
    assert pattern["detail-type"] == ["s3bulk Job Status Change"] and "Reports" in json.dumps(pattern["detail"]["report"])
    [topic_id] = resources(notified, "AWS::SNS::Topic")
    events_may = [
        _resolved(st, account, region) for st in _topic_statements(notified) if st["Principal"] == {"Service": "events.amazonaws.com"}
    ]
    assert len(events_may) == 1 and all("Condition" in st for st in events_may), events_may
    topic_arn = f"arn:aws:sns:{region}:{account}:{topic_id}"

    def publish(source_arn: str, source_account: str) -> Need:
        return Need("sns:Publish", topic_arn, (("aws:SourceArn", source_arn), ("aws:SourceAccount", source_account)))

    assert allowed(events_may, publish(f"arn:aws:events:{region}:{account}:rule/{rule_id}", account))
    assert not allowed(events_may, publish(f"arn:aws:events:{region}:{account}:rule/someone-elses-rule", account))
    assert not allowed(events_may, publish(f"arn:aws:events:{region}:444455556666:rule/{rule_id}", "444455556666"))
    assert [t["Arn"] for t in rule["Properties"]["Targets"]] == [{"Ref": topic_id}]


def test_the_functions_run_on_arm64_unless_the_deploy_says_x86_64_and_another_value_is_refused() -> None:
    def architectures(context: dict[str, str]) -> set[str]:
        template = _template({**context, "aws:cdk:bundling-stacks": []})  # type: ignore[dict-item]  # no x86_64 wheels fetched here
        return {arch for fn in resources(template, "AWS::Lambda::Function").values() for arch in fn["Properties"].get("Architectures", [])}

    assert architectures({}) == {"arm64"}
    assert architectures({"architecture": "x86_64"}) == {"x86_64"}
    with pytest.raises(
        ValueError, match=r"^context architecture: 'amd64' is not a Lambda architecture; pass -c architecture=arm64 or x86_64"
    ):
        DeployConfig.from_context({**CONTEXT, "architecture": "amd64"}.get)
