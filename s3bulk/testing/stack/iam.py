"""AWS's authorization on the in-process stack: every AWS call a function or the state machine makes is checked
against the role the synthesized template gives it, as AWS would, before moto (which authorizes nothing) answers.

- Who calls: a thread running a function's invocation carries that function's name, and threads it starts inherit
  it (the worker's object pools); the state machine's own SDK calls come from moto's interpreter, whose clients use
  the access key "ak". Calls with neither are the harness's own (setup and inspection) and are not checked.
- What AWS authorizes: `requested` maps each operation to the IAM actions and resource ARNs AWS checks for it
  (a transaction's items by their own actions; CopyObject as GetObject on the source and PutObject on the
  destination; DeleteObjects per key). An operation it does not know fails the call by name: nothing is
  allowed by default.
- The decision: an explicit Deny wins, then an Allow whose Action, Resource and Condition all match, else denied.
  moto's own evaluator (moto/iam/access_control.py) is not used: it treats an Allow whose Condition does not hold
  as an explicit Deny, matches actions case-sensitively and knows no `?` wildcard.

A denied call raises AccessDenied, as AWS answers it, and is recorded; the harness fails the test naming each.

- S3's own checks after IAM's: a wrong ExpectedBucketOwner, and an explicit Deny in the bucket's policy (put with
  PutBucketPolicy while the gate is on; Principal "*" only). A policy's refusal is counted apart, not recorded as a
  denial: it is what a test set up (a destination that refuses writes), not a role the stack got wrong.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import json
import re
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast
from unittest import mock
from urllib.parse import unquote, urlsplit

from botocore.client import BaseClient
from botocore.exceptions import ClientError

from s3bulk.testing.stack.recursion import stamp

STATE_MACHINE = "StateMachine"  # the principal name of the state machine's own service integrations
_MOTO_SFN_KEY = "ak"  # moto's ASL interpreter builds its clients with this access key
# IAM's service prefix where it differs from botocore's service name.
PREFIX = {"stepfunctions": "states", "monitoring": "cloudwatch"}
# What AWSLambdaBasicExecutionRole (every function's managed policy here) allows.
BASIC_EXECUTION = [{"Effect": "Allow", "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"], "Resource": "*"}]
MANAGED = {"AWSLambdaBasicExecutionRole": BASIC_EXECUTION}


# Reads whose "no such key" answer AWS gives only to a caller that may list the bucket (else 403).
MISSING_NEEDS_LIST = frozenset({"GetObject", "HeadObject"})


class Unmapped(Exception):
    """An operation whose IAM actions this module does not know: a call nobody can vouch for is not allowed."""


@dataclass(frozen=True, slots=True)
class Need:
    action: str
    resource: str
    context: tuple[tuple[str, str], ...] = ()


# -- who is calling ------------------------------------------------------------------------------
_ATTR = "_s3bulk_principal"
_INVOCATION = "_s3bulk_invocation"


class Killed(BaseException):
    """Raised by every AWS call of an invocation Lambda has ended (timeout, memory): its sandbox is gone, so nothing
    it would still do reaches AWS. A BaseException, so the handler's own `except Exception` cannot carry on."""


class Invocation:
    """One invocation of a function: ended by Lambda with `kill(reason)`, after which its threads' calls raise Killed."""

    def __init__(self, function: str, lineage: dict[str, int] | None = None) -> None:
        self.function = function
        self.killed: str | None = None
        self.lineage = lineage or {}  # hops per function along the chain of events (stack/recursion.py)

    def kill(self, reason: str) -> None:
        self.killed = reason


def principal_of_thread() -> str | None:
    return getattr(threading.current_thread(), _ATTR, None)


def invocation_of_thread() -> Invocation | None:
    return getattr(threading.current_thread(), _INVOCATION, None)


@contextmanager
def acting_as(name: str | None, invocation: Invocation | None = None) -> Iterator[None]:
    """The current thread runs `name` (a function's invocation) until the block ends; None: AWS itself (unchecked)."""
    me = threading.current_thread()
    before = getattr(me, _ATTR, None), getattr(me, _INVOCATION, None)
    setattr(me, _ATTR, name)
    setattr(me, _INVOCATION, invocation)
    try:
        yield
    finally:
        setattr(me, _ATTR, before[0])
        setattr(me, _INVOCATION, before[1])


def _submitter_runs(real: Callable[..., Any]) -> Callable[..., Any]:
    """Work handed to a thread pool runs for whoever handed it over: a warm container's pool threads were started
    by an earlier invocation, but each task belongs to the invocation (and role) that submitted it."""

    def submit(pool: Any, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        principal, invocation = principal_of_thread(), invocation_of_thread()
        if principal is None and invocation is None:
            return real(pool, fn, *args, **kwargs)

        def run(*a: Any, **kw: Any) -> Any:
            with acting_as(principal or "", invocation) if principal else contextlib.nullcontext():
                return fn(*a, **kw)

        return real(pool, run, *args, **kwargs)

    return submit


def _inheriting_start(real: Callable[[threading.Thread], None]) -> Callable[[threading.Thread], None]:
    def start(self: threading.Thread) -> None:
        setattr(self, _ATTR, principal_of_thread())  # a thread a function starts works for that function
        setattr(self, _INVOCATION, invocation_of_thread())  # and dies with its invocation
        real(self)

    return start


# -- what AWS authorizes --------------------------------------------------------------------------
def _s3_object(bucket: str, key: str) -> str:
    return f"arn:aws:s3:::{bucket}/{key}"


def copy_source(src: Any) -> tuple[str, str, str]:
    if isinstance(src, dict):
        return str(src["Bucket"]), str(src["Key"]), str(src.get("VersionId") or "")
    text = str(src).lstrip("/")
    path, _, query = text.partition("?versionId=")
    bucket, _, key = path.partition("/")
    return bucket, unquote(key), unquote(query)


def _object_writes(params: dict[str, Any], resource: str) -> list[Need]:
    """What a write that sets more than the body also needs (tags, ACL, Object Lock)."""
    needs = [Need("s3:PutObject", resource)]
    if params.get("Tagging") and params.get("TaggingDirective", "REPLACE") == "REPLACE":
        needs.append(Need("s3:PutObjectTagging", resource))
    if any(k in params for k in ("ACL", "GrantFullControl", "GrantRead", "GrantReadACP", "GrantWriteACP")):
        needs.append(Need("s3:PutObjectAcl", resource))
    if params.get("ObjectLockMode") or params.get("ObjectLockRetainUntilDate"):
        needs.append(Need("s3:PutObjectRetention", resource))
    if params.get("ObjectLockLegalHoldStatus"):
        needs.append(Need("s3:PutObjectLegalHold", resource))
    return needs


_S3_BUCKET = {
    "ListObjectsV2": "s3:ListBucket",
    "ListObjects": "s3:ListBucket",
    "HeadBucket": "s3:ListBucket",
    "ListObjectVersions": "s3:ListBucketVersions",
    "GetBucketVersioning": "s3:GetBucketVersioning",
    "GetBucketOwnershipControls": "s3:GetBucketOwnershipControls",
    "GetBucketLocation": "s3:GetBucketLocation",
    "ListMultipartUploads": "s3:ListBucketMultipartUploads",
    "GetBucketEncryption": "s3:GetEncryptionConfiguration",
    "GetObjectLockConfiguration": "s3:GetBucketObjectLockConfiguration",
}
# Object operations whose action gains "Version" when they name a version: (plain, versioned).
_S3_OBJECT = {
    "GetObject": ("s3:GetObject", "s3:GetObjectVersion"),
    "HeadObject": ("s3:GetObject", "s3:GetObjectVersion"),
    "GetObjectTagging": ("s3:GetObjectTagging", "s3:GetObjectVersionTagging"),
    "PutObjectTagging": ("s3:PutObjectTagging", "s3:PutObjectVersionTagging"),
    "DeleteObjectTagging": ("s3:DeleteObjectTagging", "s3:DeleteObjectVersionTagging"),
    "GetObjectAcl": ("s3:GetObjectAcl", "s3:GetObjectVersionAcl"),
    "PutObjectAcl": ("s3:PutObjectAcl", "s3:PutObjectVersionAcl"),
    "GetObjectRetention": ("s3:GetObjectRetention", "s3:GetObjectRetention"),
    "PutObjectRetention": ("s3:PutObjectRetention", "s3:PutObjectRetention"),
    "GetObjectLegalHold": ("s3:GetObjectLegalHold", "s3:GetObjectLegalHold"),
    "PutObjectLegalHold": ("s3:PutObjectLegalHold", "s3:PutObjectLegalHold"),
    "RestoreObject": ("s3:RestoreObject", "s3:RestoreObject"),
    "DeleteObject": ("s3:DeleteObject", "s3:DeleteObjectVersion"),
    "AbortMultipartUpload": ("s3:AbortMultipartUpload", "s3:AbortMultipartUpload"),
    "ListParts": ("s3:ListMultipartUploadParts", "s3:ListMultipartUploadParts"),
}


def _s3(op: str, p: dict[str, Any], region: str = "us-east-1") -> list[Need]:
    bucket = str(p.get("Bucket", ""))
    if op in _S3_BUCKET:
        context = (("s3:prefix", str(p.get("Prefix", ""))),) if op in {"ListObjectsV2", "ListObjects", "ListObjectVersions"} else ()
        return [Need(_S3_BUCKET[op], f"arn:aws:s3:::{bucket}", context)]
    if op in _S3_OBJECT:
        plain, versioned = _S3_OBJECT[op]
        needs = [Need(versioned if p.get("VersionId") else plain, _s3_object(bucket, str(p["Key"])))]
        if op == "PutObjectRetention" and p.get("BypassGovernanceRetention"):
            needs.append(Need("s3:BypassGovernanceRetention", _s3_object(bucket, str(p["Key"]))))
        return needs
    if op in {"PutObject", "CreateMultipartUpload"}:
        return _object_writes(p, _s3_object(bucket, str(p["Key"])))
    if op in {"UploadPart", "CompleteMultipartUpload"}:
        return [Need("s3:PutObject", _s3_object(bucket, str(p["Key"])))]
    if op in {"CopyObject", "UploadPartCopy"}:
        sb, sk, sv = copy_source(p["CopySource"])
        read = Need("s3:GetObjectVersion" if sv else "s3:GetObject", _s3_object(sb, sk))
        dst = _s3_object(bucket, str(p["Key"]))
        return [read, *(_object_writes(p, dst) if op == "CopyObject" else [Need("s3:PutObject", dst)])]
    if op == "UpdateObjectEncryption":  # S3 re-wraps the data key under the new key: the caller must be allowed that key
        key = str(p["ObjectEncryption"]["SSEKMS"]["KMSKeyArn"])
        obj = Need("s3:UpdateObjectEncryption", _s3_object(bucket, str(p["Key"])))
        via = (("kms:ViaService", f"s3.{region}.amazonaws.com"),)  # S3 calls KMS for the caller
        return [obj, *(Need(a, key, via) for a in ("kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey", "kms:ReEncryptTo"))]
    if op == "DeleteObjects":
        needs = [
            Need("s3:DeleteObjectVersion" if o.get("VersionId") else "s3:DeleteObject", _s3_object(bucket, str(o["Key"])))
            for o in p["Delete"]["Objects"]
        ]
        if p.get("BypassGovernanceRetention"):
            needs.append(Need("s3:BypassGovernanceRetention", f"arn:aws:s3:::{bucket}/*"))
        return needs
    raise Unmapped(f"s3:{op}")


_DDB_PLAIN = {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan", "DescribeTable"}
_DDB_ITEMS = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}


def _dynamodb(op: str, p: dict[str, Any], region: str, account: str) -> list[Need]:
    def table(name: str, index: str | None = None) -> str:
        arn = name if name.startswith("arn:") else f"arn:aws:dynamodb:{region}:{account}:table/{name}"
        return f"{arn}/index/{index}" if index else arn

    if op in _DDB_PLAIN:
        return [Need(f"dynamodb:{op}", table(str(p["TableName"]), p.get("IndexName")))]
    if op in {"BatchGetItem", "BatchWriteItem"}:
        return [Need(f"dynamodb:{op}", table(name)) for name in p["RequestItems"]]
    if op == "TransactWriteItems":  # each item by its own action: there is no TransactWriteItems permission
        return [Need(_DDB_ITEMS[kind], table(str(body["TableName"]))) for item in p["TransactItems"] for kind, body in item.items()]
    if op == "TransactGetItems":
        return [Need("dynamodb:GetItem", table(str(item["Get"]["TableName"]))) for item in p["TransactItems"]]
    raise Unmapped(f"dynamodb:{op}")


def _queue_arn(url: str, region: str, account: str) -> str:
    parts = urlsplit(url).path.strip("/").split("/")
    return f"arn:aws:sqs:{region}:{parts[-2] if len(parts) > 1 else account}:{parts[-1]}"


_SQS = {
    "SendMessage": "sqs:SendMessage",
    "SendMessageBatch": "sqs:SendMessage",  # batch calls are authorized as their single forms
    "ReceiveMessage": "sqs:ReceiveMessage",
    "DeleteMessage": "sqs:DeleteMessage",
    "DeleteMessageBatch": "sqs:DeleteMessage",
    "ChangeMessageVisibility": "sqs:ChangeMessageVisibility",
    "ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility",
    "GetQueueAttributes": "sqs:GetQueueAttributes",
    "PurgeQueue": "sqs:PurgeQueue",
}


def _sqs(op: str, p: dict[str, Any], region: str, account: str) -> list[Need]:
    if op == "GetQueueUrl":
        return [Need("sqs:GetQueueUrl", f"arn:aws:sqs:{region}:{p.get('QueueOwnerAWSAccountId', account)}:{p['QueueName']}")]
    if op in _SQS:
        return [Need(_SQS[op], _queue_arn(str(p["QueueUrl"]), region, account))]
    raise Unmapped(f"sqs:{op}")


def requested(service: str, op: str, params: dict[str, Any], *, region: str, account: str, state_machine: str) -> list[Need]:
    """The IAM actions and resources AWS authorizes for one call."""
    if service == "s3":
        return _s3(op, params, region)
    if service == "dynamodb":
        return _dynamodb(op, params, region, account)
    if service == "sqs":
        return _sqs(op, params, region, account)
    if service == "lambda" and op == "Invoke":
        name = str(params["FunctionName"])
        return [Need("lambda:InvokeFunction", name if name.startswith("arn:") else f"arn:aws:lambda:{region}:{account}:function:{name}")]
    if service == "secretsmanager" and op == "GetSecretValue":
        return [Need("secretsmanager:GetSecretValue", str(params["SecretId"]))]
    if service == "states":
        if op in {"SendTaskSuccess", "SendTaskFailure", "SendTaskHeartbeat"}:
            return [Need(f"states:{op}", state_machine)]  # a task token is authorized against the machine that issued it
        if op in {"StartExecution", "ListExecutions"}:
            return [Need(f"states:{op}", str(params["stateMachineArn"]))]
        if op in {"DescribeExecution", "StopExecution", "GetExecutionHistory"}:
            return [Need(f"states:{op}", str(params["executionArn"]))]
    if service == "events" and op == "PutEvents":
        buses = {str(e.get("EventBusName") or "default") for e in params["Entries"]}
        return [Need("events:PutEvents", b if b.startswith("arn:") else f"arn:aws:events:{region}:{account}:event-bus/{b}") for b in buses]
    if service == "cloudwatch" and op == "PutMetricData":
        return [Need("cloudwatch:PutMetricData", "*")]
    if service == "sts" and op == "GetCallerIdentity":
        return []  # needs no permission
    raise Unmapped(f"{service}:{op}")


# -- the decision ---------------------------------------------------------------------------------
def _listed(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


@functools.lru_cache(maxsize=4096)
def _compiled(pattern: str, case: bool) -> re.Pattern[str]:
    return re.compile(fnmatch.translate(pattern.replace("[", "[[]")), 0 if case else re.IGNORECASE)  # IAM has * and ?; [ is literal


def _wild(pattern: str, value: str, *, case: bool) -> bool:
    return _compiled(pattern, case).match(value) is not None


_CONDITIONS: dict[str, Callable[[str, str], bool]] = {
    "StringEquals": lambda want, got: want == got,
    "StringLike": lambda want, got: _wild(want, got, case=True),
    "ArnEquals": lambda want, got: want == got,
    "ArnLike": lambda want, got: _wild(want, got, case=True),
    "Bool": lambda want, got: want.lower() == got.lower(),
}


def _condition_holds(block: dict[str, Any], context: dict[str, str]) -> bool:
    for operator, tests in block.items():
        if_exists = operator.endswith("IfExists")
        negated = operator.startswith("StringNot") or operator.startswith("ArnNot")
        base = operator.removesuffix("IfExists").replace("StringNot", "String").replace("ArnNot", "Arn")
        check = _CONDITIONS.get(base)
        if check is None:
            return False  # an operator not emulated: the statement does not apply
        for key, wanted in tests.items():
            got = context.get(key)
            if got is None:
                if if_exists:
                    continue
                return False
            matched = any(check(w, got) for w in _listed(wanted))
            if matched == negated:
                return False
    return True


def _applies(statement: dict[str, Any], need: Need) -> bool:
    if "Action" in statement:
        if not any(_wild(a, need.action, case=False) for a in _listed(statement["Action"])):
            return False
    elif any(_wild(a, need.action, case=False) for a in _listed(statement.get("NotAction", []))):
        return False
    if "Resource" in statement:
        if not any(_wild(r, need.resource, case=True) for r in _listed(statement["Resource"])):
            return False
    elif any(_wild(r, need.resource, case=True) for r in _listed(statement.get("NotResource", []))):
        return False
    return _condition_holds(statement.get("Condition", {}), dict(need.context))


def allowed(statements: list[dict[str, Any]], need: Need) -> bool:
    """IAM's rule for one identity policy set: an explicit Deny wins, else an Allow must apply."""
    applying = [s for s in statements if _applies(s, need)]
    return not any(s["Effect"] == "Deny" for s in applying) and any(s["Effect"] == "Allow" for s in applying)


# -- the gate ------------------------------------------------------------------------------------
@dataclass
class IamGate:
    """Each principal's statements (resolved from the template), and what it was refused."""

    statements: dict[str, list[dict[str, Any]]]
    region: str
    account: str
    state_machine: str = ""
    denied: list[str] = field(default_factory=list)
    after_kill: list[str] = field(default_factory=list)  # calls a killed invocation still tried (refused, as AWS never sees them)
    checked: int = 0
    # Buckets another account owns (bucket -> account); every other bucket is the stack's account's. S3 gives a
    # statement's s3:ResourceAccount this account, and refuses a request whose ExpectedBucketOwner names another.
    owners: dict[str, str] = field(default_factory=dict)
    # Each S3 request a principal made: (principal, operation, bucket, ExpectedBucketOwner or "", source bucket or "",
    # ExpectedSourceBucketOwner or ""), so a test can show every request on a pinned bucket carried its owner.
    s3_requests: list[tuple[str, str, str, str, str, str]] = field(default_factory=list)
    # Further needs of an S3 call that depend on S3's state, not the call alone: the KMS actions S3 asks for an
    # SSE-KMS object (stack/kms.py); the harness sets it.
    extra_needs: Callable[[str, dict[str, Any]], list[Need]] | None = None
    # Bucket policies (bucket -> statements), as put with PutBucketPolicy through any client while inside `enforced`:
    # S3 refuses what a statement of its bucket's policy explicitly denies, whatever the caller's role allows. Those
    # refusals are the test's setup (a destination that refuses writes), so they are kept apart from `denied`.
    bucket_policies: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    policy_refused: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def owner(self, bucket: str) -> str:
        return self.owners.get(bucket, self.account)

    def _with_owner(self, need: Need) -> Need:
        """S3 evaluates s3:ResourceAccount as the account owning the bucket a need's resource is in."""
        if not need.resource.startswith("arn:aws:s3:::"):
            return need
        bucket = need.resource.removeprefix("arn:aws:s3:::").split("/", 1)[0]
        return Need(need.action, need.resource, (*need.context, ("s3:ResourceAccount", self.owner(bucket))))

    def _policy_denies(self, needs: list[Need]) -> bool:
        """An explicit Deny in the policy of a bucket a need's resource is in (only Deny: the stack's roles carry every
        Allow they use, and an Allow in a bucket policy adds nothing to a same-account caller's)."""
        if not self.bucket_policies:
            return False
        for need in needs:
            if need.resource.startswith("arn:aws:s3:::"):
                bucket = need.resource.removeprefix("arn:aws:s3:::").split("/", 1)[0]
                if any(s["Effect"] == "Deny" and _applies(s, need) for s in self.bucket_policies.get(bucket, ())):
                    return True
        return False

    def learn_policy(self, op: str, params: dict[str, Any]) -> None:
        """Keep a bucket policy S3 now holds (PutBucketPolicy) or forget one it dropped (DeleteBucketPolicy). A statement
        whose Principal is not everyone is refused by name: the harness knows roles by function, not by ARN."""
        bucket = str(params.get("Bucket", ""))
        if op == "DeleteBucketPolicy":
            self.bucket_policies.pop(bucket, None)
            return
        statements = _listed_statements(json.loads(str(params["Policy"])))
        for st in statements:
            if st.get("Principal") not in ("*", {"AWS": "*"}):
                raise Unmapped(f'bucket policy Principal {st.get("Principal")!r} (only "*" is emulated)')
        self.bucket_policies[bucket] = statements

    def _owner_refusals(self, principal: str, op: str, params: dict[str, Any]) -> list[str]:
        """S3's own check, after IAM's: ExpectedBucketOwner (and a copy's ExpectedSourceBucketOwner) must name the
        account that owns the bucket, else 403 AccessDenied. Each request is logged with what it carried."""
        bucket = str(params.get("Bucket", ""))
        source = copy_source(params["CopySource"])[0] if "CopySource" in params else ""
        expected, expected_source = str(params.get("ExpectedBucketOwner") or ""), str(params.get("ExpectedSourceBucketOwner") or "")
        with self._lock:
            self.s3_requests.append((principal, op, bucket, expected, source, expected_source))
        out = []
        if expected and expected != self.owner(bucket):
            out.append(f"{principal}: {op} on {bucket} expected owner {expected}, but {self.owner(bucket)} owns it")
        if source and expected_source and expected_source != self.owner(source):
            out.append(f"{principal}: {op} from {source} expected source owner {expected_source}, but {self.owner(source)} owns it")
        return out

    @classmethod
    def from_template(cls, template: dict[str, Any], resolve: Callable[[Any], Any], *, region: str, account: str) -> IamGate:
        resources = template["Resources"]
        by_role: dict[str, list[dict[str, Any]]] = {}
        for logical, r in resources.items():
            if r["Type"] == "AWS::IAM::Role":
                props = r.get("Properties", {})
                own = by_role.setdefault(logical, [])
                for arn in resolve(props.get("ManagedPolicyArns", [])):
                    name = str(arn).rsplit("/", 1)[-1]
                    if name not in MANAGED:
                        raise Unmapped(f"managed policy {name}: add its statements to stack/iam.py MANAGED")
                    own += MANAGED[name]
                for inline in props.get("Policies", []):
                    own += _listed_statements(resolve(inline["PolicyDocument"]))
        for r in resources.values():
            if r["Type"] == "AWS::IAM::Policy":
                doc = _listed_statements(resolve(r["Properties"]["PolicyDocument"]))
                for role in r["Properties"].get("Roles", []):
                    by_role.setdefault(role["Ref"], []).extend(doc)
        principals: dict[str, list[dict[str, Any]]] = {}
        for logical, r in resources.items():
            props = r.get("Properties", {})
            if r["Type"] == "AWS::Lambda::Function":
                principals[logical] = by_role[props["Role"]["Fn::GetAtt"][0]]
            elif r["Type"] == "AWS::StepFunctions::StateMachine":
                principals[STATE_MACHINE] = by_role[props["RoleArn"]["Fn::GetAtt"][0]]
        return cls(principals, region, account)

    def check(self, principal: str, service: str, op: str, params: dict[str, Any]) -> None:
        """Raise AccessDenied (and record it) unless the principal's policies allow every action the call needs."""
        statements = self.statements.get(principal)
        if statements is None:
            return  # not the stack's (a deployer's own Batch Operations function)
        try:
            needs = requested(service, op, params, region=self.region, account=self.account, state_machine=self.state_machine)
        except Unmapped as exc:
            refused = [f"{principal}: {exc} is not mapped to IAM actions (s3bulk/testing/stack/iam.py)"]
        else:
            if service == "s3":
                needs = [self._with_owner(n) for n in needs] + (self.extra_needs(op, params) if self.extra_needs is not None else [])
            refused = [f"{principal}: {n.action} on {n.resource} ({service}:{op})" for n in needs if not allowed(statements, n)]
            if service == "s3" and not refused:
                refused = self._owner_refusals(principal, op, params)
            if service == "s3" and not refused and self._policy_denies(needs):
                with self._lock:
                    self.policy_refused += 1
                by_policy: Any = {
                    "Error": {"Code": "AccessDenied", "Message": "Access Denied (an explicit deny in the bucket's policy)"},
                    "ResponseMetadata": {"HTTPStatusCode": 403},
                }
                raise ClientError(by_policy, op)
        with self._lock:
            self.checked += 1
            self.denied += [r for r in refused if r not in self.denied]
        if refused:
            answer: Any = {
                "Error": {"Code": "AccessDenied", "Message": f"not authorized: {refused[0]}"},
                "ResponseMetadata": {"HTTPStatusCode": 403},
            }
            raise ClientError(answer, op)

    def missing_object(self, principal: str, op: str, params: dict[str, Any], exc: ClientError) -> None:
        """S3 says an object is missing (404) only to a caller allowed s3:ListBucket on its bucket; anyone else gets
        403 AccessDenied, so code that reads "absent" from a 404 needs that permission."""
        statements = self.statements.get(principal)
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if statements is None or status != 404:
            return
        bucket = str(params.get("Bucket", ""))
        need = self._with_owner(Need("s3:ListBucket", f"arn:aws:s3:::{bucket}"))  # the GET's own context: no s3:prefix
        if allowed(statements, need):
            return
        refused = f"{principal}: {op} of a missing key in {bucket} answers 403 without s3:ListBucket on the bucket"
        with self._lock:
            if refused not in self.denied:
                self.denied.append(refused)
        answer: Any = {
            "Error": {"Code": "AccessDenied", "Message": f"not authorized: {refused}"},
            "ResponseMetadata": {"HTTPStatusCode": 403},
        }
        raise ClientError(answer, op) from exc

    @contextmanager
    def enforced(self, limits: Any = None) -> Iterator[IamGate]:
        """Check every botocore call made on behalf of a principal while inside, and then (`limits`, stack/limits.py)
        every call to AWS against AWS's service limits, as AWS authorizes a request before it validates it."""
        real_call = cast(Any, BaseClient)._make_api_call
        gate = self

        def call(client: Any, operation_name: str, api_params: dict[str, Any]) -> Any:
            invocation = invocation_of_thread()
            if invocation is not None and invocation.killed:
                gate.after_kill.append(f"{invocation.function}: {operation_name} after the invocation was {invocation.killed}")
                raise Killed(f"{invocation.function}'s invocation was {invocation.killed}; {operation_name} never reached AWS")
            if invocation is not None:  # the SDK inside Lambda sends the invocation's trace header (stack/recursion.py)
                api_params = stamp(operation_name, api_params, invocation.lineage)
            principal = principal_of_thread()
            creds = client._request_signer._credentials
            if creds is not None and creds.access_key == _MOTO_SFN_KEY:
                principal = STATE_MACHINE
            endpoint = client.meta.endpoint_url or ""
            if "amazonaws.com" in endpoint:  # another provider's endpoint (a relay's far side) is not AWS
                service = client.meta.service_model.service_name
                if principal is None and service == "s3" and operation_name in {"PutBucketPolicy", "DeleteBucketPolicy"}:
                    answered = real_call(client, operation_name, api_params)
                    gate.learn_policy(operation_name, api_params)
                    return answered
                if principal is not None:
                    gate.check(principal, PREFIX.get(service, service), operation_name, api_params)
                if limits is not None:
                    limits.check(PREFIX.get(service, service), operation_name, api_params, retries=_retries(client), principal=principal)
                if principal is not None and service == "s3" and operation_name in MISSING_NEEDS_LIST:
                    try:
                        return real_call(client, operation_name, api_params)
                    except ClientError as exc:
                        gate.missing_object(principal, operation_name, api_params, exc)
                        raise
                if limits is not None and service == "dynamodb":  # a read is charged by what it returned
                    answer = real_call(client, operation_name, api_params)
                    limits.partitions.charge_read(operation_name, api_params, answer)
                    return answer
            return real_call(client, operation_name, api_params)

        with (
            mock.patch.object(BaseClient, "_make_api_call", call),
            mock.patch.object(threading.Thread, "start", _inheriting_start(threading.Thread.start)),
            mock.patch.object(ThreadPoolExecutor, "submit", _submitter_runs(ThreadPoolExecutor.submit)),
        ):
            yield self


def _retries(client: Any) -> int:
    """The retries botocore makes of a throttled call on this client (its config's; botocore's legacy default else)."""
    cfg = client.meta.config.retries or {}
    if "total_max_attempts" in cfg:
        return max(0, int(cfg["total_max_attempts"]) - 1)
    return int(cfg.get("max_attempts", 4))


def _listed_statements(doc: dict[str, Any]) -> list[dict[str, Any]]:
    st = doc["Statement"]
    return list(st) if isinstance(st, list) else [st]
