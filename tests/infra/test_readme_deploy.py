"""docs/deploy.md's Deploy section (README links to it), followed line by line against the app the CDK CLI runs: no step fails, none needs a flag.

What can run offline runs: the deploy file is copied as the README says, the app is synthesized
from it alone (as `cdk bootstrap`, `cdk deploy` and `cdk destroy` each synthesize it), the sample
job is checked against the allow-list that deploy grants, and the tear-down's `destroy_data`
deploy is synthesized too. A README step this test does not know fails it, so a new step is
never left unchecked.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from app import build_app
from infra.config import ROOT, DeployConfig, read_deploy_file
from infra.stack import S3BulkStack
from s3bulk.aws.allowlist import AllowList
from s3bulk.aws.remote import deploy_file_defaults
from s3bulk.job import parse_job


def deploy_steps() -> list[list[str]]:
    """The commands of docs/deploy.md's Deploy block, comments and continuation lines joined, in order."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    section = text[text.index("## Deploy") :]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, "docs/deploy.md's Deploy section has no sh block"
    steps = []
    for line in block.group(1).replace("\\\n", " ").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            steps.append(shlex.split(line))
    return steps


def stack_of(deploy_file: Path, **context: object) -> S3BulkStack:
    app = build_app({"deploy_file": str(deploy_file), **context})
    stack = app.node.find_child("S3Bulk")
    assert isinstance(stack, S3BulkStack)
    return stack


def test_following_the_deploy_section_line_by_line_needs_no_flag_and_no_step_fails(tmp_path: Path) -> None:
    deploy: Path | None = None
    seen: list[str] = []
    for step in deploy_steps():
        seen.append(" ".join(step[:3]))
        match step:
            case ["npm", "ci", *_] | ["export", *_]:
                continue  # the CLI's install and its environment: nothing of the app's
            case ["cp", "config/deploy.example.json", "deploy.json"]:
                deploy = tmp_path / "deploy.json"
                shutil.copy(ROOT / "config/deploy.example.json", deploy)
            case ["npx", "cdk", ("bootstrap" | "deploy" | "destroy") as command, *rest]:
                assert rest == [], f"cdk {command} takes its settings from deploy.json, with no flags: {rest}"
                assert deploy is not None, f"cdk {command} before deploy.json exists"
                stack = stack_of(deploy)  # each of these synthesizes the app first
                settings = read_deploy_file(deploy)
                assert stack.region == settings["region"], "bootstrap and deploy must target deploy.json's Region"
            case [".venv/bin/s3bulk", "submit", job_file]:
                assert deploy is not None
                cfg = DeployConfig.from_context(read_deploy_file(deploy).get)
                allow = AllowList(frozenset(cfg.read_buckets), frozenset(cfg.write_buckets), frozenset(cfg.delete_buckets))
                allow.check(parse_job((ROOT / job_file).read_text()))  # the sample job runs on the sample deploy
            case [".venv/bin/s3bulk", "doctor"]:
                assert deploy is not None  # reads the deployed stack's LambdaConcurrencyNeeded output: test_remote_cli.py
                outputs = Template.from_stack(stack_of(deploy)).to_json()["Outputs"]
                assert int(outputs["LambdaConcurrencyNeeded"]["Value"]) == 16 + 50 + 4
            case [".venv/bin/s3bulk", ("status" | "report" | "resume" | "retry" | "stop" | "cancel" | "watch" | "confirm"), "JOB_ID", *_]:
                continue  # need a submitted job: test_remote_cli.py and test_execution_ends.py run them
            case [".venv/bin/s3bulk", "jobs"]:
                continue  # reads the deployed ledger's Jobs index: test_remote_cli.py
            case [".venv/bin/s3bulk", "tune", "JOB_ID", "--concurrency", _]:
                continue  # needs a running job: test_stack_tune.py runs it
            case [".venv/bin/s3bulk", "tune", "--max-concurrency", _]:
                assert deploy is not None  # the mapping it changes is a stack output
                outputs = Template.from_stack(stack_of(deploy)).to_json()["Outputs"]
                assert "WorkerEventSourceMapping" in outputs
            case _:
                pytest.fail(f"docs/deploy.md's Deploy section has a step this test does not follow: {' '.join(step)}")
    assert seen[-1] == "npx cdk destroy", "the section ends with the tear-down"


def test_destroy_data_empties_and_deletes_what_a_default_destroy_keeps_and_unprotects_the_ledger(tmp_path: Path) -> None:
    deploy = tmp_path / "deploy.json"
    doc = json.loads((ROOT / "config/deploy.example.json").read_text())
    deploy.write_text(json.dumps({**doc, "destroy_data": True}))
    (tmp_path / "default.json").write_text(json.dumps(doc))
    kept = Template.from_stack(stack_of(tmp_path / "default.json")).to_json()["Resources"]
    gone = Template.from_stack(stack_of(deploy)).to_json()["Resources"]

    def policies(resources: dict[str, Any], kind: str) -> set[str]:
        return {r["DeletionPolicy"] for r in resources.values() if r["Type"] == kind}

    assert policies(kept, "AWS::DynamoDB::Table") == {"Retain"} and policies(gone, "AWS::DynamoDB::Table") == {"Delete"}
    # A kept ledger also refuses a DeleteTable (by hand, or another stack's mistake) until destroy_data says it may go.
    protected = {r["Properties"].get("DeletionProtectionEnabled") for r in kept.values() if r["Type"] == "AWS::DynamoDB::Table"}
    assert protected == {True}
    assert {r["Properties"].get("DeletionProtectionEnabled") for r in gone.values() if r["Type"] == "AWS::DynamoDB::Table"} == {False}
    # No bucket of the stack has ACLs enabled: the access-log bucket takes S3's log delivery by its bucket policy.
    for resources in (kept, gone):
        owners = [r["Properties"].get("OwnershipControls") for r in resources.values() if r["Type"] == "AWS::S3::Bucket"]
        assert all(o is None or o == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]} for o in owners), owners
    buckets = {name: r["DeletionPolicy"] for name, r in gone.items() if r["Type"] == "AWS::S3::Bucket"}
    assert policies(kept, "AWS::S3::Bucket") == {"Retain"}
    # The report bucket goes; the access-log bucket stays: S3 delivers its last logs after any emptying.
    assert {n.startswith("AccessLogs"): p for n, p in buckets.items()} == {True: "Retain", False: "Delete"}
    emptied = [r for r in gone.values() if r["Type"] == "Custom::S3AutoDeleteObjects"]
    assert len(emptied) == 1 and not any(r["Type"] == "Custom::S3AutoDeleteObjects" for r in kept.values())


def test_a_deploy_file_that_is_wrong_is_one_line_naming_the_setting(tmp_path: Path) -> None:
    bad = tmp_path / "deploy.json"
    bad.write_text('{"read_bucket": "a"}')
    with pytest.raises(ValueError, match=r"^deploy file deploy\.json: unknown setting 'read_bucket'"):
        stack_of(bad)
    bad.write_text('{"read_buckets": "a",}')
    with pytest.raises(ValueError, match=r"^deploy file deploy\.json: not JSON"):
        stack_of(bad)
    with pytest.raises(ValueError, match=r"^context deploy_file: .* does not exist; copy config/deploy\.example\.json"):
        stack_of(tmp_path / "missing.json")


def test_a_flag_wins_over_the_deploy_file_and_the_cli_finds_the_stack_in_its_region(tmp_path: Path) -> None:
    deploy = tmp_path / "deploy.json"
    shutil.copy(ROOT / "config/deploy.example.json", deploy)
    assert stack_of(deploy, region="us-west-2").region == "us-west-2"
    assert deploy_file_defaults(deploy) == {"region": read_deploy_file(deploy)["region"]}
    assert deploy_file_defaults(tmp_path / "absent.json") == {}


@pytest.mark.skipif((ROOT / "deploy.json").exists(), reason="a deploy.json of the developer's own is beside app.py")
def test_the_app_as_the_cdk_cli_runs_it_says_what_is_missing_in_one_line(tmp_path: Path) -> None:
    """`npx cdk deploy` before step 1: the CLI runs app.py with its context in CDK_CONTEXT_JSON, and no deploy.json."""
    env = {**os.environ, "CDK_CONTEXT_JSON": "{}", "CDK_OUTDIR": str(tmp_path), "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"}
    proc = subprocess.run([sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 1 and proc.stderr.strip().splitlines()[-1] == (
        "s3bulk: context read_buckets: empty; pass -c read_buckets=bucket-a,bucket-b (the buckets jobs may read)"
    )


def test_a_destroy_data_deploy_passes_cdk_nag_and_cfn_lint(tmp_path: Path) -> None:
    """The emptying custom resource brings a function and a role of CDK's own: they pass the same checks as the stack."""
    deploy = tmp_path / "deploy.json"
    deploy.write_text(json.dumps({**json.loads((ROOT / "config/deploy.example.json").read_text()), "destroy_data": True}))
    app = build_app({"deploy_file": str(deploy)})
    assembly = app.synth()  # cdk-nag's findings fail synth unless acknowledged with a reason
    report = json.loads((Path(assembly.directory) / "validation-report.json").read_text())
    [nag] = [r for r in report["pluginReports"] if r["pluginName"] == "AwsSolutions"]
    assert (nag["conclusion"], nag["violations"]) == ("success", [])
    template = tmp_path / "S3Bulk.template.json"
    stack = app.node.find_child("S3Bulk")
    assert isinstance(stack, S3BulkStack)
    template.write_text(json.dumps(Template.from_stack(stack).to_json()))
    lint = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), str(template)], capture_output=True, text=True, timeout=300, check=False
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr


@pytest.mark.parametrize("list_shards", [40, 41])
@pytest.mark.parametrize("account", [None, "123456789012"])
def test_the_documented_deploy_file_synthesizes_past_40_shards_with_its_region_and_the_deployers_account(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, list_shards: int, account: str | None
) -> None:
    """docs/deploy.md's deploy.json names a Region, and `cdk deploy` sets CDK_DEFAULT_ACCOUNT: cdk-nag then prints both
    literally, and an acknowledgment written with <AWS::Region> failed synth past 40 shards (issue 51)."""
    deploy = tmp_path / "deploy.json"
    shutil.copy(ROOT / "config/deploy.example.json", deploy)
    if account is None:
        monkeypatch.delenv("CDK_DEFAULT_ACCOUNT", raising=False)
    else:
        monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", account)
    app = build_app({"deploy_file": str(deploy), "list_shards": str(list_shards)})
    stack = app.node.find_child("S3Bulk")
    assert isinstance(stack, S3BulkStack) and stack.region == read_deploy_file(deploy)["region"]
    assembly = app.synth()  # raises ValidationFailed on any finding not acknowledged
    report = json.loads((Path(assembly.directory) / "validation-report.json").read_text())
    [nag] = [r for r in report["pluginReports"] if r["pluginName"] == "AwsSolutions"]
    assert (nag["conclusion"], nag["violations"]) == ("success", [])
