"""Each client's endpoint, the SDK's way: --endpoint-url and $AWS_ENDPOINT_URL_S3 are S3's alone; DynamoDB, Step
Functions, CloudFormation and the rest find theirs as botocore does ($AWS_ENDPOINT_URL_<SERVICE>, $AWS_ENDPOINT_URL).

Building a client sends nothing: `client.meta.endpoint_url` is where its calls would go."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from s3bulk.cli import _parser, main
from s3bulk.local import preflight
from s3bulk.s3.clients import make_client, make_s3_client

S3, ELSE, DDB = "http://127.0.0.1:8333", "http://127.0.0.1:5000", "http://127.0.0.1:8000"
SERVICES = ("dynamodb", "stepfunctions", "cloudformation", "lambda", "sqs", "secretsmanager")


@pytest.fixture(autouse=True)
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.chdir(tmp_path)  # no deploy.json here


def endpoints(argv: list[str]) -> dict[str, str]:
    settings = preflight.settings(_parser().parse_args(argv))
    out = {"s3": make_s3_client(settings, 4).meta.endpoint_url}
    out.update({service: make_client(service, settings).meta.endpoint_url for service in SERVICES})
    return out


def test_aws_endpoint_url_s3_points_only_s3_and_the_stacks_clients_follow_aws_endpoint_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", S3)
    monkeypatch.setenv("AWS_ENDPOINT_URL", ELSE)
    for argv in (["status", "job-1", "--region", "eu-west-1"], ["submit", "job.json", "--region", "eu-west-1"]):
        assert endpoints(argv) == {"s3": S3} | dict.fromkeys(SERVICES, ELSE)


def test_a_service_specific_endpoint_wins_for_its_own_service_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", S3)
    monkeypatch.setenv("AWS_ENDPOINT_URL", ELSE)
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", DDB)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SFN", "http://127.0.0.1:8083")
    found = endpoints(["watch", "job-1", "--region", "eu-west-1"])
    assert (found["s3"], found["dynamodb"], found["stepfunctions"], found["cloudformation"]) == (S3, DDB, "http://127.0.0.1:8083", ELSE)


def test_endpoint_url_flag_points_s3_elsewhere_and_leaves_dynamodb_and_step_functions_on_aws() -> None:
    found = endpoints(["cancel", "job-1", "--region", "eu-west-1", "--endpoint-url", S3])
    assert found["s3"] == S3
    assert found["dynamodb"] == "https://dynamodb.eu-west-1.amazonaws.com"
    assert found["stepfunctions"] == "https://states.eu-west-1.amazonaws.com"


def test_a_profiles_own_endpoint_url_for_a_service_is_botocores_to_follow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config"
    config.write_text(f"[default]\nregion = eu-west-1\nservices = local\n[services local]\ndynamodb =\n  endpoint_url = {DDB}\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", S3)
    found = endpoints(["status", "job-1"])
    assert (found["s3"], found["dynamodb"], found["stepfunctions"]) == (S3, DDB, "https://states.eu-west-1.amazonaws.com")


def test_aws_ignore_configured_endpoint_urls_is_obeyed_for_s3_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", S3)
    monkeypatch.setenv("AWS_ENDPOINT_URL", ELSE)
    monkeypatch.setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
    found = endpoints(["status", "job-1", "--region", "eu-west-1"])
    assert found["s3"] == "https://s3.eu-west-1.amazonaws.com" and found["dynamodb"] == "https://dynamodb.eu-west-1.amazonaws.com"
    assert endpoints(["status", "job-1", "--region", "eu-west-1", "--endpoint-url", S3])["s3"] == S3  # a flag still counts


@pytest.mark.parametrize("command", [["status", "job-1"], ["submit", "job.json"], ["watch", "job-1"], ["tune", "--max-concurrency", "5"]])
def test_a_stack_command_with_no_region_says_to_pass_region_not_to_deploy(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "job.json").write_text('{"operation": "copy", "source": {"bucket": "src-b"}, "destination": {"bucket": "dst-b"}}')
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", S3)  # an S3 endpoint is no Region for the stack's clients
    started = time.monotonic()
    assert main(command) == 2
    err = capsys.readouterr().err
    assert err == "error: --region: no AWS Region is set; pass --region REGION (the stack's) or set AWS_REGION\n"
    assert time.monotonic() - started < 5
