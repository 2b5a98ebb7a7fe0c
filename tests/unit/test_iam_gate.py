"""The stack harness's IAM check decides as AWS does: the actions a call needs, and Deny over Allow over nothing."""

from __future__ import annotations

from typing import Any

import pytest

from s3bulk.testing.stack.iam import Need, Unmapped, allowed, requested

R, A, SM = "us-east-1", "123456789012", "arn:aws:states:us-east-1:123456789012:stateMachine:S3Bulk-jobs"


def needs(service: str, op: str, **params: Any) -> list[tuple[str, str]]:
    return [(n.action, n.resource) for n in requested(service, op, params, region=R, account=A, state_machine=SM)]


def test_a_transaction_is_authorized_item_by_item() -> None:
    items = [{"Put": {"TableName": "Ledger"}}, {"Update": {"TableName": "Ledger"}}, {"ConditionCheck": {"TableName": "Ledger"}}]
    table = f"arn:aws:dynamodb:{R}:{A}:table/Ledger"
    assert needs("dynamodb", "TransactWriteItems", TransactItems=items) == [
        ("dynamodb:PutItem", table),
        ("dynamodb:UpdateItem", table),
        ("dynamodb:ConditionCheckItem", table),
    ]


def test_a_copy_reads_its_source_and_writes_its_destination() -> None:
    assert needs("s3", "CopyObject", Bucket="dst", Key="k", CopySource={"Bucket": "src", "Key": "a/b", "VersionId": "v1"}) == [
        ("s3:GetObjectVersion", "arn:aws:s3:::src/a/b"),
        ("s3:PutObject", "arn:aws:s3:::dst/k"),
    ]
    assert needs("s3", "UploadPartCopy", Bucket="dst", Key="k", CopySource="src/a%20b")[0] == ("s3:GetObject", "arn:aws:s3:::src/a b")
    assert ("s3:PutObjectRetention", "arn:aws:s3:::d/k") in needs(
        "s3", "CopyObject", Bucket="d", Key="k", CopySource="s/k", ObjectLockMode="GOVERNANCE"
    )


def test_deletes_are_authorized_per_key_and_batch_sends_as_their_single_form() -> None:
    objects = [{"Key": "a"}, {"Key": "b", "VersionId": "v"}]
    assert needs("s3", "DeleteObjects", Bucket="b", Delete={"Objects": objects}) == [
        ("s3:DeleteObject", "arn:aws:s3:::b/a"),
        ("s3:DeleteObjectVersion", "arn:aws:s3:::b/b"),
    ]
    url = f"https://sqs.{R}.amazonaws.com/{A}/Work"
    assert needs("sqs", "SendMessageBatch", QueueUrl=url, Entries=[]) == [("sqs:SendMessage", f"arn:aws:sqs:{R}:{A}:Work")]


def test_an_operation_nobody_mapped_is_not_allowed() -> None:
    with pytest.raises(Unmapped, match="s3:PutBucketPolicy"):
        needs("s3", "PutBucketPolicy", Bucket="b", Policy="{}")


def test_deny_wins_allow_needs_a_match_and_conditions_must_hold() -> None:
    allow_get = {"Effect": "Allow", "Action": "s3:Get*", "Resource": "arn:aws:s3:::src/*"}
    deny_secret = {"Effect": "Deny", "Action": "s3:*", "Resource": "arn:aws:s3:::src/secret/*"}
    list_jobs = {
        "Effect": "Allow",
        "Action": "s3:ListBucket",
        "Resource": "arn:aws:s3:::r",
        "Condition": {"StringLike": {"s3:prefix": ["jobs/*"]}},
    }
    policy: list[dict[str, Any]] = [allow_get, deny_secret, list_jobs]
    assert allowed(policy, Need("S3:GETOBJECT", "arn:aws:s3:::src/a"))  # actions are case-insensitive
    assert not allowed(policy, Need("s3:GetObject", "arn:aws:s3:::src/secret/x"))
    assert not allowed(policy, Need("s3:PutObject", "arn:aws:s3:::src/a"))  # nothing allows it
    assert allowed(policy, Need("s3:ListBucket", "arn:aws:s3:::r", (("s3:prefix", "jobs/j1/"),)))
    assert not allowed(policy, Need("s3:ListBucket", "arn:aws:s3:::r", (("s3:prefix", "other/"),)))
    secret = {"Effect": "Allow", "Action": "secretsmanager:GetSecretValue", "Resource": "arn:aws:secretsmanager:r:1:secret:k-??????"}
    assert allowed([secret], Need("secretsmanager:GetSecretValue", "arn:aws:secretsmanager:r:1:secret:k-AbC123"))
    assert not allowed([secret], Need("secretsmanager:GetSecretValue", "arn:aws:secretsmanager:r:1:secret:k-AbC1234"))
