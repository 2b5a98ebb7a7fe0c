"""Each in-place operation's own settings: tags, retention, restore, process and encryption."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from s3bulk.job.base import _ACCOUNT, MAX_TAGS, Encryption, _FieldProblem, _now_of, _Strict
from s3bulk.job.sides import _REGION, _URL, SECRET_ARN


class Tagging(_Strict):
    """What operation 'tag' writes: the whole tag set, these tags merged over each object's own, or named tags removed."""

    mode: Literal["replace", "merge", "remove"] = Field(
        "replace",
        description=(
            "replace: the object's tags become exactly `tags`; merge: `tags` are added to (and override) its own; "
            "remove: the tags named in `keys` are taken off, the others kept."
        ),
    )
    tags: dict[str, str] = Field(
        default_factory=dict, description="Tag keys (1-128 characters) and values (0-256 characters); at most 10 per object."
    )
    keys: list[str] = Field(default_factory=list, description="For mode remove: the tag keys to take off each object.")

    @model_validator(mode="after")
    def _mode_fields(self) -> Tagging:
        if self.mode == "remove":
            if not self.keys:
                raise _FieldProblem("keys", 'mode remove needs keys, the tag keys to take off, like ["temp"]; add them')
            if self.tags:
                raise _FieldProblem("tags", "mode remove takes keys, not tags; move the tag names into keys")
        elif self.keys:
            raise _FieldProblem("keys", f'keys is for mode "remove", not {self.mode!r}; remove it or set mode "remove"')
        elif self.mode == "merge" and not self.tags:
            raise _FieldProblem("tags", 'mode merge needs at least one tag, like {"team": "data"}; add it')
        elif self.mode == "replace" and "tags" not in self.model_fields_set:
            raise _FieldProblem("tags", "mode replace needs tags, the whole new tag set (write {} to remove every tag); add it")
        return self

    @field_validator("tags")
    @classmethod
    def _limits(cls, tags: dict[str, str]) -> dict[str, str]:
        if len(tags) > MAX_TAGS:
            raise ValueError(f"{len(tags)} tags; S3 allows {MAX_TAGS} per object, so drop some")
        for k, v in tags.items():
            if not 1 <= len(k) <= 128 or k.startswith("aws:"):
                raise ValueError(f"tag key {k[:40]!r} must be 1-128 characters and not start with 'aws:'; rename it")
            if len(v) > 256:
                raise ValueError(f"tag {k!r} has a {len(v)}-character value; S3 allows 256, so shorten it")
        return tags


class Retention(_Strict):
    """What operation 'set-retention' puts on each object (the bucket must have Object Lock enabled)."""

    mode: Literal["GOVERNANCE", "COMPLIANCE"] = Field(
        description="GOVERNANCE: users with s3:BypassGovernanceRetention may lift it; COMPLIANCE: no one can, until the date."
    )
    until: datetime = Field(
        description=(
            "ISO 8601 with a timezone: the object cannot be deleted or overwritten before this. A new job file must give "
            "a future date (S3 refuses a past one); a run resumed by its id (--resume JOB_ID) is not checked again."
        )
    )
    bypass_governance: bool = Field(
        False,
        description="Send x-amz-bypass-governance-retention, to shorten or lift a GOVERNANCE retention (on the stack, allow-listed at deploy).",
    )

    @field_validator("until")
    @classmethod
    def _aware_and_ahead(cls, value: datetime, info: ValidationInfo) -> datetime:
        """A past date is refused only in a new job (parse_job's `now`): a stored one must still parse on resume."""
        if value.tzinfo is None:
            raise ValueError("timestamp has no timezone; write it like 2027-01-01T00:00:00Z")
        now = _now_of(info)
        if now is not None and value <= now:
            raise ValueError(
                f"{value.isoformat().replace('+00:00', 'Z')} has already passed; S3 takes only a future retain-until date, "
                "so give a later one"
            )
        return value


class Restore(_Strict):
    """What operation 'restore' asks of S3 for each GLACIER or DEEP_ARCHIVE object."""

    days: int = Field(7, ge=1, le=30000, description="How long the restored copy stays readable.")
    tier: Literal["Standard", "Bulk", "Expedited"] = Field(
        "Standard", description="Retrieval tier: Bulk is cheapest; Expedited is not available for DEEP_ARCHIVE."
    )


_CALLABLE = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$"
_LAMBDA_ARN = r"^arn:aws[a-zA-Z-]*:lambda:[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d:\d{12}:function:[a-zA-Z0-9_-]+(:(\$LATEST|[a-zA-Z0-9_-]+))?$"
# Not starting with a dot: a job's report and parts live under `jobs/ID/`, and an id of "." or ".." makes keys that
# tools which normalise paths (the S3 console, some SDKs) read as another folder.
_JOB_ID_PATTERN = r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,79}$"

# What each `pattern=` of the models asks for, in words: a user should never be shown the regex itself.
_PATTERN_FIXES = {
    _ACCOUNT: "give a 12-digit AWS account id, like 111122223333",
    _URL: "give an http:// or https:// URL with a host and no path, like https://s3.example.com",
    _REGION: "give a Region name (2-32 lowercase letters, digits or hyphens), like eu-west-1",
    SECRET_ARN: "give a Secrets Manager secret ARN, like arn:aws:secretsmanager:eu-west-1:111122223333:secret:NAME",
    _CALLABLE: "give module:callable, like my_tools:run",
    _LAMBDA_ARN: "give a Lambda function ARN, like arn:aws:lambda:eu-west-1:111122223333:function:NAME",
    _JOB_ID_PATTERN: "use 1-80 letters, digits, dots, underscores or hyphens, not starting with a dot",
}


class Process(_Strict):
    """What operation 'process' runs on each object: your function, or an S3 Batch Operations Lambda (docs/process.md)."""

    function: str | None = Field(
        None,
        pattern=_CALLABLE,
        description="module:callable, called as run(obj) per object; imported with the job file's directory and the current one on sys.path.",
    )
    batchops_handler: str | None = Field(
        None,
        pattern=_CALLABLE,
        description="module:lambda_handler of an S3 Batch Operations function, run in-process with invocation schema 2.0 events.",
    )
    batchops_lambda: str | None = Field(
        None,
        pattern=_LAMBDA_ARN,
        description="ARN of a deployed S3 Batch Operations function, invoked with invocation schema 2.0 events.",
    )
    arguments: dict[str, Any] = Field(
        default_factory=dict,
        description="Passed to your function as obj.arguments; for Batch Operations functions, job.userArguments (at most 10 strings).",
    )
    tasks_per_invocation: int = Field(
        1, ge=1, le=1000, description="Batch Operations functions: objects per invocation (Batch Operations itself sends 1)."
    )

    @model_validator(mode="after")
    def _one(self) -> Process:
        given = [n for n in ("function", "batchops_handler", "batchops_lambda") if getattr(self, n) is not None]
        if len(given) != 1:
            raise _FieldProblem(
                "function",
                f"give exactly one of function, batchops_handler or batchops_lambda (got {', '.join(given) or 'none'}); keep one",
            )
        if self.function is not None and self.tasks_per_invocation != 1:
            raise _FieldProblem("tasks_per_invocation", "tasks_per_invocation is for Batch Operations functions; remove it")
        if self.function is None:
            if len(self.arguments) > 10:
                raise _FieldProblem("arguments", f"{len(self.arguments)} arguments; Batch Operations userArguments hold at most 10")
            for k, v in self.arguments.items():
                if not isinstance(v, str) or not 1 <= len(k) <= 64 or len(v) > 1024:
                    raise _FieldProblem(
                        "arguments", f"argument {k[:40]!r}: userArguments are strings (keys 1-64, values up to 1,024 characters); fix it"
                    )
        return self


# A KMS key as set-encryption takes it: a key ARN or a bare key id, which HEAD's SSEKMSKeyId (always the ARN) can be
# compared with; an alias cannot be, so an object already under the key could not be told apart and would be redone.
_KMS_KEY = re.compile(r"^(arn:aws[-a-z]*:kms:[-a-z0-9]+:\d{12}:key/)?[-A-Za-z0-9]{1,128}$")


class SetEncryption(_Strict):
    """The server-side encryption each object ends under (operation set-encryption)."""

    sse: Encryption = Field(description="AES256 (SSE-S3), aws:kms (SSE-KMS) or aws:kms:dsse (DSSE-KMS).")
    kms_key_id: str | None = Field(
        None,
        min_length=1,
        description=(
            'For "aws:kms" and "aws:kms:dsse": the key\'s ARN (which lets S3 change the encryption in place with '
            "UpdateObjectEncryption, no data moved) or its id; none: the account's AWS managed key (aws/s3). Not an alias."
        ),
    )
    bucket_key: bool = Field(False, description='For "aws:kms": use an S3 Bucket Key (fewer KMS requests).')

    @model_validator(mode="after")
    def _fits(self) -> SetEncryption:
        if self.kms_key_id is not None and self.sse == "AES256":
            raise _FieldProblem("kms_key_id", 'kms_key_id needs sse "aws:kms" or "aws:kms:dsse"; set encryption.sse or drop the key')
        if self.kms_key_id is not None and not _KMS_KEY.match(self.kms_key_id):
            raise _FieldProblem(
                "kms_key_id",
                f"{self.kms_key_id!r} is not a KMS key ARN or key id (aliases cannot be compared with what S3 reports); give the key's ARN",
            )
        if self.bucket_key and self.sse != "aws:kms":
            raise _FieldProblem("bucket_key", 'S3 Bucket Keys work with sse "aws:kms" only; drop bucket_key or use "aws:kms"')
        return self
