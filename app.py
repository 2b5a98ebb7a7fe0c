#!/usr/bin/env python3
"""CDK entry point: `cdk deploy -c read_buckets=... -c write_buckets=... -c delete_buckets=...`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from infra.config import DeployConfig
from infra.stack import S3BulkStack


def build_app(context: dict[str, object] | None = None) -> cdk.App:
    """`context` overrides cdk.json's; under the CDK CLI, the CLI supplies cdk.json and -c values itself."""
    if "CDK_CONTEXT_JSON" not in os.environ:
        defaults = json.loads((Path(__file__).parent / "cdk.json").read_text())["context"]
        context = {**defaults, **(context or {})}
    app = cdk.App(context=context)
    config = DeployConfig.from_context(app.node.try_get_context)
    S3BulkStack(app, app.node.try_get_context("stack_name") or "S3Bulk", config=config)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    return app


if __name__ == "__main__":
    try:
        app = build_app()
    except ValueError as exc:  # a deploy setting is wrong: one line naming the context key and the fix, no traceback
        sys.exit(f"s3bulk: {exc}")
    app.synth()
