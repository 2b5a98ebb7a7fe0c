"""Who may do what: each function's IAM statements, least privilege, from the deploy's allow-lists.

S3BulkStack (infra/stack.py) is a GrantingStack: it builds the functions, queue, table and report bucket, then asks
`_grant` once. Every S3 statement on an allow-listed bucket is one per owning account pinned with -c bucket_owner.
"""

from __future__ import annotations

import re

import aws_cdk as cdk
from aws_cdk import (
    aws_dynamodb as ddb,
)
from aws_cdk import (
    aws_iam as iam,
)
from aws_cdk import (
    aws_lambda as lambda_,
)
from aws_cdk import (
    aws_s3 as s3,
)
from aws_cdk import (
    aws_sqs as sqs,
)

from infra.config import MAX_INLINE_MAP, DeployConfig


def _bucket_arns(buckets: tuple[str, ...]) -> list[str]:
    return [f"arn:{cdk.Aws.PARTITION}:s3:::{b}" for b in buckets]


def _object_arns(buckets: tuple[str, ...]) -> list[str]:
    return [f"arn:{cdk.Aws.PARTITION}:s3:::{b}/*" for b in buckets]


def account_of(pinned: str) -> str:
    """A -c bucket_owner account: `self` is the account the stack is deployed in."""
    return cdk.Aws.ACCOUNT_ID if pinned == "self" else pinned


def s3_statements(
    actions: list[str], buckets: tuple[str, ...], owners: tuple[tuple[str, str], ...], *, objects: bool = True
) -> list[iam.PolicyStatement]:
    """Statements granting `actions` on the buckets (their objects, or the buckets themselves), one per owning account
    pinned with -c bucket_owner: each names its account as s3:ResourceAccount, so if a pinned bucket is deleted and its
    name taken by another account, the grant no longer reaches it. Buckets nobody pinned share one plain statement."""
    owner_of = dict(owners)
    groups: dict[str | None, list[str]] = {}
    for b in buckets:
        groups.setdefault(owner_of.get(b), []).append(b)
    arns = _object_arns if objects else _bucket_arns
    return [
        iam.PolicyStatement(
            actions=actions,
            resources=arns(tuple(group)),
            conditions={"StringEquals": {"s3:ResourceAccount": account_of(owner)}} if owner is not None else None,
        )
        for owner, group in sorted(groups.items(), key=lambda g: g[0] or "")
    ]


# The dead-letter counter's timeout: it writes a failures part and one transaction per batch, ten batches a call.


class GrantingStack(cdk.Stack):
    """The stack's grants; the resources they name are built by the stack itself."""

    table: ddb.Table
    reports: s3.Bucket
    queue: sqs.Queue
    state_machine_arn: str
    validate_fn: lambda_.Function
    lister_fn: lambda_.Function
    worker_fn: lambda_.Function
    progress_fn: lambda_.Function
    finalize_fn: lambda_.Function
    ended_fn: lambda_.Function
    dead_letters_fn: lambda_.Function

    def _grant_table(self, fn: lambda_.IFunction, *actions: str) -> None:
        """DynamoDB actions on the ledger's items only: Table.grant would add its indexes (`index/*`), which no
        function reads (only the CLI's s3bulk jobs queries the Jobs index, with the operator's own credentials)."""
        fn.add_to_role_policy(iam.PolicyStatement(actions=list(actions), resources=[self.table.table_arn]))

    def _grant(self, config: DeployConfig) -> None:
        """Least privilege: reads on sources, writes on destinations, deletes only where allowed."""
        listable = tuple(sorted(set(config.read_buckets) | set(config.write_buckets)))

        def grant(fn: lambda_.IFunction, actions: list[str], buckets: tuple[str, ...], *, objects: bool = True) -> None:
            for statement in s3_statements(actions, buckets, config.bucket_owners, objects=objects):
                fn.add_to_role_policy(statement)

        # ListBucketVersions: source.versions all|noncurrent; GetBucketVersioning: a copy of all versions checks its destination.
        grant(self.lister_fn, ["s3:ListBucket", "s3:ListBucketVersions", "s3:GetBucketVersioning"], listable, objects=False)
        # PlanListing writes the shard items with Put items in one TransactWriteItems, which AWS authorizes as PutItem.
        self._grant_table(
            self.lister_fn, "dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"
        )
        self.queue.grant_send_messages(self.lister_fn)
        # Manifests (source.manifest) are read by the lister; their bad rows go to the report bucket.
        grant(self.lister_fn, ["s3:GetObject"], config.read_buckets)
        # PutObjectTagging: key-log parts are written with their expiry tag (AWS authorizes a PutObject with Tagging as both).
        # GetObject, and ListBucket so a missing object answers 404, not 403: a lister reads back its shard's last page
        # intent (s3bulk/aws/intents.py) to redo a page it sent but did not record.
        reports_rw = ["s3:GetObject", "s3:PutObject", "s3:PutObjectTagging"]
        self.lister_fn.add_to_role_policy(iam.PolicyStatement(actions=reports_rw, resources=[self.reports.arn_for_objects("jobs/*")]))
        # No s3:prefix condition: a GET carries no prefix, so S3's is-it-missing check would not match one.
        self.lister_fn.add_to_role_policy(iam.PolicyStatement(actions=["s3:ListBucket"], resources=[self.reports.bucket_arn]))
        if config.delete_buckets:
            # A sync with delete_extraneous: the lister deletes destination objects no source maps to, as it finds them.
            grant(self.lister_fn, ["s3:DeleteObject"], config.delete_buckets)
            # abort-uploads (allowed on delete buckets only): PlanListing and ListShard list the open uploads.
            grant(self.lister_fn, ["s3:ListBucketMultipartUploads"], config.delete_buckets, objects=False)

        worker = self.worker_fn
        # ListBucket lets HEAD of a missing key answer 404 (not 403), which move confirmation relies on.
        # ListBucketVersions: a copy of all versions lists each key's versions on both sides.
        # GetBucketOwnershipControls: an in-place copy asks once whether the bucket has ACLs whose grants it must carry.
        grant(worker, ["s3:ListBucket", "s3:ListBucketVersions", "s3:GetBucketOwnershipControls"], listable, objects=False)
        grant(
            worker,
            # GetObjectLegalHold: set-legal-hold's undo journal reads the hold it replaces. The *Version* actions are
            # the same calls on a version a listing or manifest row names (source.versions, version_id columns).
            [
                "s3:GetObject",
                "s3:GetObjectTagging",
                "s3:GetObjectVersion",
                "s3:GetObjectVersionTagging",
                "s3:GetObjectLegalHold",
                "s3:GetObjectAcl",  # set-acl's undo journal reads the grants it replaces
                "s3:GetObjectVersionAcl",
                # HeadObject shows an object's retention only to a caller allowed this: set-retention's journal reads it.
                "s3:GetObjectRetention",
            ],
            config.read_buckets,
        )
        if config.write_buckets:
            grant(
                worker,
                [
                    "s3:PutObject",
                    "s3:PutObjectTagging",
                    "s3:DeleteObjectTagging",
                    "s3:AbortMultipartUpload",
                    # ListParts: a multipart copy paused at an invocation's deadline goes on from the parts it holds.
                    "s3:ListMultipartUploadParts",
                    "s3:GetObject",
                    "s3:RestoreObject",
                    "s3:PutObjectVersionTagging",
                    "s3:DeleteObjectVersionTagging",
                    # set-encryption: S3 re-wraps an object's data key under another KMS key, no data moved.
                    "s3:UpdateObjectEncryption",
                    # Object Lock and ACL writes only when the deployer opts in (-c allow_object_lock, -c allow_acl):
                    # a COMPLIANCE retention cannot be undone, even by the account's root.
                    *(["s3:PutObjectRetention", "s3:PutObjectLegalHold"] if config.allow_object_lock else []),
                    *(["s3:PutObjectAcl", "s3:PutObjectVersionAcl"] if config.allow_acl else []),
                ],
                config.write_buckets,
            )
            if config.allow_bypass_governance:
                grant(worker, ["s3:BypassGovernanceRetention"], config.write_buckets)
        if config.delete_buckets:
            # A version delete is permanent: only with -c allow_version_delete=true. AbortMultipartUpload: abort-uploads.
            grant(
                worker,
                ["s3:DeleteObject", "s3:AbortMultipartUpload", *(["s3:DeleteObjectVersion"] if config.allow_version_delete else [])],
                config.delete_buckets,
            )
        if config.process_lambdas:
            # process jobs with batchops_lambda: only the deployer's allow-listed functions.
            worker.add_to_role_policy(iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=list(config.process_lambdas)))
        if config.credentials_secrets:
            # Relay jobs: a foreign side's keys. A full ARN (ending in Secrets Manager's -XXXXXX suffix) matches itself only;
            # a partial one (the name alone) also its -XXXXXX form.
            full = re.compile(r"-[A-Za-z0-9]{6}$")
            secrets = sorted({a for arn in config.credentials_secrets for a in ((arn,) if full.search(arn) else (arn, f"{arn}-??????"))})
            read_secret = iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=secrets)
            worker.add_to_role_policy(read_secret)
            self.lister_fn.add_to_role_policy(read_secret)
        via = "s3.*.amazonaws.com"
        if config.kms_keys and config.credentials_secrets:
            # A relay's secret encrypted with one of these keys: decrypt only, only through Secrets Manager.
            decrypt_secret = iam.PolicyStatement(
                actions=["kms:Decrypt"],
                resources=list(config.kms_keys),
                conditions={"StringLike": {"kms:ViaService": "secretsmanager.*.amazonaws.com"}},
            )
            worker.add_to_role_policy(decrypt_secret)
            self.lister_fn.add_to_role_policy(decrypt_secret)
        if config.kms_keys:
            # SSE-KMS: decrypt to read a source, generate a data key to write a destination, and (set-encryption's
            # UpdateObjectEncryption) encrypt and re-encrypt a data key under another key; only these keys, only via S3.
            worker.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["kms:Decrypt", "kms:GenerateDataKey", "kms:Encrypt", "kms:ReEncryptFrom", "kms:ReEncryptTo"],
                    resources=list(config.kms_keys),
                    conditions={"StringLike": {"kms:ViaService": via}},
                )
            )
            # The lister reads manifests (source.manifest), which may sit in an SSE-KMS bucket: decrypt only.
            self.lister_fn.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["kms:Decrypt"],
                    resources=list(config.kms_keys),
                    conditions={"StringLike": {"kms:ViaService": via}},
                )
            )
        # DeleteItem: a capped job's parked batch's entry, once a release has sent it on (s3bulk/aws/ledger/parking.py).
        self._grant_table(
            worker,
            "dynamodb:GetItem",
            "dynamodb:BatchGetItem",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:Query",
            "dynamodb:DeleteItem",
        )
        worker.add_to_role_policy(
            iam.PolicyStatement(actions=["s3:PutObject", "s3:PutObjectTagging"], resources=[self.reports.arn_for_objects("jobs/*")])
        )
        # A capped job's parked batches are read back from the report bucket when room frees up; nothing else there.
        worker.add_to_role_policy(
            iam.PolicyStatement(actions=["s3:GetObject"], resources=[self.reports.arn_for_objects("jobs/*/waiting/*")])
        )
        # A batch that could not start on its last delivery is sent again instead of dead-lettered.
        self.queue.grant_send_messages(worker)
        # The dead-letter counter counts a batch as the worker does (marker, counters, failures part), and sends on the
        # rest of a batch that was split; it touches no bucket of the user's.
        counter = self.dead_letters_fn
        self._grant_table(counter, "dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query")
        counter.add_to_role_policy(iam.PolicyStatement(actions=["s3:PutObject"], resources=[self.reports.arn_for_objects("jobs/*")]))
        if config.write_buckets:  # a dead-lettered batch's paused multipart copies are aborted, not left billed
            grant(counter, ["s3:AbortMultipartUpload"], config.write_buckets)
        self.queue.grant_send_messages(counter)
        # The worker that counts a job's last batch resumes its waiting execution; so does Progress.
        # ListShard and CheckProgress ask how long their execution's history is (s3bulk/aws/history.py).
        executions = self.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{cdk.Aws.STACK_NAME}-jobs:*",
            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
        )
        for fn in (self.lister_fn, self.progress_fn):
            fn.add_to_role_policy(iam.PolicyStatement(actions=["states:GetExecutionHistory"], resources=[executions]))
        if config.list_shards > MAX_INLINE_MAP:
            # On a Distributed Map each shard's ListShard runs in a child execution (ARN `...:execution:MACHINE/LABEL:ID`)
            # and asks about that child's own history.
            children = self.format_arn(
                service="states",
                resource="execution",
                resource_name=f"{cdk.Aws.STACK_NAME}-jobs/*",
                arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
            )
            self.lister_fn.add_to_role_policy(iam.PolicyStatement(actions=["states:GetExecutionHistory"], resources=[children]))
        resume = iam.PolicyStatement(actions=["states:SendTaskSuccess"], resources=[self.state_machine_arn])
        worker.add_to_role_policy(resume)
        counter.add_to_role_policy(resume)
        self.progress_fn.add_to_role_policy(resume)
        # Progress also sends on a capped job's parked batches that have room and no one to send them (aws/held.py).
        self._grant_table(
            self.progress_fn, "dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:DeleteItem"
        )
        self.progress_fn.add_to_role_policy(
            iam.PolicyStatement(actions=["s3:GetObject"], resources=[self.reports.arn_for_objects("jobs/*/waiting/*")])
        )
        self.queue.grant_send_messages(self.progress_fn)

        # ExecutionEnded goes on with a report it could not finish in one call by invoking itself (asynchronously). In a
        # policy of its own: the function's default policy naming the function's own ARN would be a dependency cycle.
        iam.Policy(
            self,
            "ExecutionEndedContinues",
            roles=[self.ended_fn.role] if self.ended_fn.role else [],
            statements=[iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[self.ended_fn.function_arn])],
        )
        # Each finished job's status-change event, on the account's default bus (s3bulk/aws/events.py).
        default_bus = cdk.Arn.format(cdk.ArnComponents(service="events", resource="event-bus", resource_name="default"), self)
        for fn in (self.finalize_fn, self.ended_fn):
            fn.add_to_role_policy(iam.PolicyStatement(actions=["events:PutEvents"], resources=[default_bus]))
        for finalize in (self.finalize_fn, self.ended_fn):  # ExecutionEnded writes the report Finalize could not
            # BatchGetItem: which try of each batch was counted, so the report reads only its failures.
            self._grant_table(finalize, "dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:UpdateItem", "dynamodb:Query")
            # No s3:prefix condition: the report's assembly state is read with a GET, whose "missing" answer is a 404
            # only to a caller that may list the bucket (a GET carries no prefix for a condition to match).
            finalize.add_to_role_policy(iam.PolicyStatement(actions=["s3:ListBucket"], resources=[self.reports.bucket_arn]))
            finalize.add_to_role_policy(
                # failures.jsonl is a multipart upload as the parts are read; a failed one is aborted, not left billed.
                iam.PolicyStatement(
                    actions=["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload"], resources=[self.reports.arn_for_objects("jobs/*")]
                )
            )
