#!/usr/bin/env python3
"""CDK entry point: `cdk deploy` with the settings of deploy.json (config/deploy.example.json), or `-c key=value` flags."""

from __future__ import annotations

import json
import os
import sys

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from infra.config import DEPLOY_FILE, ROOT, DeployConfig, read_deploy_file
from infra.stack import S3BulkStack


def build_app(context: dict[str, object] | None = None) -> cdk.App:
    """`context` overrides cdk.json's; under the CDK CLI, the CLI supplies cdk.json and -c values itself.

    The deploy file (`deploy.json` beside this file under the CLI, or `-c deploy_file=PATH`) fills in every
    setting no -c flag gives, so deploy, diff and destroy run with no flags and agree; its `region` is the
    stack's Region, so bootstrap and deploy go to the same one."""
    cli = "CDK_CONTEXT_JSON" in os.environ
    if not cli:
        defaults = json.loads((ROOT / "cdk.json").read_text())["context"]
        context = {**defaults, **(context or {})}
    app = cdk.App(context=context)
    named = app.node.try_get_context("deploy_file")
    path = (ROOT / str(named)) if named else (ROOT / DEPLOY_FILE if cli else None)
    if named and path is not None and not path.is_file():
        raise ValueError(f"context deploy_file: {path} does not exist; copy config/deploy.example.json there, or leave it out")
    if path is not None and path.is_file():
        for key, value in read_deploy_file(path).items():
            if app.node.try_get_context(key) is None:
                app.node.set_context(key, value)
    config = DeployConfig.from_context(app.node.try_get_context)
    region = app.node.try_get_context("region")
    env = cdk.Environment(account=os.environ.get("CDK_DEFAULT_ACCOUNT"), region=str(region)) if region else None
    S3BulkStack(app, app.node.try_get_context("stack_name") or "S3Bulk", config=config, env=env)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    return app


if __name__ == "__main__":
    try:
        app = build_app()
    except ValueError as exc:  # a deploy setting is wrong: one line naming the context key and the fix, no traceback
        sys.exit(f"s3bulk: {exc}")
    app.synth()
