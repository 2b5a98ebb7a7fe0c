"""The job file: the user's contract, validated before anything is touched.

Every rule here exists so a bad job fails in one clear line (exit 2) instead of
half-running. The JSON Schema in docs/ is generated from these models.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from s3bulk.store import RequestOptions

MiB = 1024 * 1024
GiB = 1024 * MiB
MAX_KEY_BYTES = 1024
MIN_PART_SIZE = 5 * MiB
MAX_PART_SIZE = 5 * GiB
MAX_COPY_OBJECT_SIZE = 5 * GiB

Operation = Literal[
    "copy",
    "move",
    "delete",
    "tag",
    "set-storage-class",
    "restore",
    "verify",
    "process",
    "set-retention",
    "set-legal-hold",
    "set-acl",
    "add-checksum",
    "set-encryption",
    "abort-uploads",
    "rewind",
]
ChecksumAlgorithm = Literal["CRC64NVME", "CRC32", "CRC32C", "SHA1", "SHA256"]
# Operations that act on the source objects themselves: they take no destination.
IN_PLACE = frozenset(
    {
        "delete",
        "tag",
        "set-storage-class",
        "restore",
        "set-retention",
        "set-legal-hold",
        "set-acl",
        "add-checksum",
        "set-encryption",
        "abort-uploads",
        "rewind",
    }
)
# Operations that write to (or delete from) the source bucket's objects (abort-uploads touches uploads, no object).
WRITES_SOURCE = frozenset(
    {
        "move",
        "delete",
        "tag",
        "set-storage-class",
        "restore",
        "set-retention",
        "set-legal-hold",
        "set-acl",
        "add-checksum",
        "set-encryption",
        "rewind",
    }
)
CannedAcl = Literal[
    "private", "public-read", "public-read-write", "authenticated-read", "aws-exec-read", "bucket-owner-read", "bucket-owner-full-control"
]
ARCHIVED = frozenset({"GLACIER", "DEEP_ARCHIVE"})
MAX_TAGS = 10
StorageClass = Literal[
    "STANDARD",
    "REDUCED_REDUNDANCY",
    "STANDARD_IA",
    "ONEZONE_IA",
    "INTELLIGENT_TIERING",
    "GLACIER",
    "DEEP_ARCHIVE",
    "GLACIER_IR",
    "OUTPOSTS",
    "SNOW",
    "EXPRESS_ONEZONE",
]

_ACCOUNT = r"^[0-9]{12}$"
Encryption = Literal["AES256", "aws:kms", "aws:kms:dsse"]

# A content_type filter: type/subtype or type/* (RFC 6838's restricted names); no parameters, no */*.
_MEDIA_NAME = r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}"
_MEDIA_PATTERN = re.compile(rf"^{_MEDIA_NAME}/({_MEDIA_NAME}|\*)$")
_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_BUCKET_FIX = "use 3-63 lowercase letters, digits, dots or hyphens, starting and ending with a letter or digit"


class JobError(ValueError):
    """A job the engine refuses to run; str() is the one-line message for the user."""


class _FieldProblem(ValueError):
    """A rule broken by a combination of fields; `field` names the one to fix."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


# The validation context key that carries "now" into the rules only a new job can break (see parse_job).
_NOW = "now"


def _now_of(info: ValidationInfo) -> datetime | None:
    """The time a new job is checked against, or None when a stored job is re-read (its dates may have passed since)."""
    context = info.context
    now = context.get(_NOW) if isinstance(context, dict) else None
    return now if isinstance(now, datetime) else None


def _check_bucket(name: str) -> str:
    if not _BUCKET_RE.match(name) or ".." in name or ".-" in name or "-." in name:
        raise ValueError(f"{name!r} is not a valid S3 bucket name; {_BUCKET_FIX}")
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        pass
    else:
        raise ValueError(f"{name!r} is formatted as an IP address; {_BUCKET_FIX}")
    if name.startswith(("xn--", "sthree-")) or name.endswith(("-s3alias", "--ol-s3")):
        raise ValueError(f"{name!r} uses a prefix or suffix S3 reserves; choose another bucket name")
    return name


def _check_prefix(prefix: str) -> str:
    size = len(prefix.encode("utf-8"))
    if size > MAX_KEY_BYTES:
        raise ValueError(f"prefix is {size} UTF-8 bytes; S3 keys are at most {MAX_KEY_BYTES}, so shorten it")
    return prefix


class Manifest(_Strict):
    """Where a job's object list comes from when it is not a listing (docs/manifests.md)."""

    bucket: str = Field("", description="Bucket holding the manifest (and, for inventory, its data files); none with path.")
    key: str = Field("", description="csv, jsonl, parquet: the object list itself; inventory: the report's manifest.json; none with path.")
    path: str | None = Field(
        None,
        min_length=1,
        description=(
            "s3bulk run only: a CSV, JSONL or Parquet manifest on this machine's disk instead of bucket and key "
            "(s3bulk run --retry-failed writes one); a deployed job reads its manifest from S3."
        ),
    )
    format: Literal["csv", "inventory", "jsonl", "parquet"] = Field(
        "csv",
        description=(
            "csv: rows of bucket,key[,version_id] with URL-encoded keys, as S3 Batch Operations reads them; "
            "inventory: an S3 Inventory manifest.json with CSV, ORC or Parquet data files (its fileFormat); "
            'jsonl: one JSON object per line, {"bucket", "key"[, "version_id"]} with keys as they are (Distributed Map\'s '
            '"Bucket", "Key", "VersionId" too); '
            "parquet: a Parquet file with columns bucket, key and optionally version_id (or Bucket, Key, VersionId), keys as they are."
        ),
    )
    header: bool = Field(False, description="csv: the first line names the columns (bucket, key, version_id, any order) and is skipped.")
    delimiter: str = Field(",", min_length=1, max_length=1, description="csv: the character between fields (a tab for TSV).")

    _bucket = field_validator("bucket")(classmethod(lambda cls, v: _check_bucket(v) if v else v))

    @model_validator(mode="after")
    def _where(self) -> Manifest:
        if self.format != "csv" and (self.header or self.delimiter != ","):
            field = "header" if self.header else "delimiter"
            raise _FieldProblem(field, f'{field} describes a CSV, and this manifest is {self.format!r}; drop {field} or give format "csv"')
        if self.delimiter in {"\n", "\r", '"'}:
            raise _FieldProblem("delimiter", "a line break or a quote cannot separate fields; give another character")
        if self.path is not None:
            if self.bucket or self.key:
                raise _FieldProblem("path", "a manifest is a local path or a bucket and key, not both; drop one of them")
            if self.format == "inventory":
                raise _FieldProblem("path", "a local manifest is a CSV, JSONL or Parquet file; put the inventory in S3")
        elif not self.bucket or not self.key:
            missing = "bucket" if not self.bucket else "key"
            raise _FieldProblem(missing, f"a manifest needs its bucket and key (or, for s3bulk run, a local path); add {missing}")
        return self


_URL = r"^https?://[^\s/?#]+/?$"  # scheme, host and port: no path (bucket and key go in the job)
_REGION = r"^[a-z0-9-]{2,32}$"
SECRET_ARN = r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+$"


class _Endpoint(_Strict):
    """Where a side of the job lives, when not where the CLI points (another provider, account or Region)."""

    endpoint_url: str | None = Field(
        None, pattern=_URL, description="S3 endpoint of this side (MinIO, Ceph, R2, ...); default: the CLI's --endpoint-url, else AWS."
    )
    region: str | None = Field(None, pattern=_REGION, description="Signing Region of this side; default: the CLI's.")
    profile: str | None = Field(None, min_length=1, description="Named AWS profile whose credentials this side uses; default: the CLI's.")
    credentials_secret: str | None = Field(
        None,
        pattern=SECRET_ARN,
        description=(
            "ARN of a Secrets Manager secret holding this side's keys as JSON "
            '{"aws_access_key_id", "aws_secret_access_key", "aws_session_token"?}; read with the runner\'s own credentials '
            "(on the stack: allow-listed at deploy with -c credentials_secrets=ARN). Never logged."
        ),
    )

    @model_validator(mode="after")
    def _one_credential_source(self) -> _Endpoint:
        if self.profile is not None and self.credentials_secret is not None:
            raise _FieldProblem("credentials_secret", "a side takes its keys from a profile or a secret, not both; drop one of them")
        return self


class AsOf(_Strict):
    """`"versions": {"as_of": TIME}`: the point in time written as a choice of versions (the same as source.as_of)."""

    as_of: datetime


class Source(_Endpoint):
    """Which objects a job selects; globs match the key relative to `prefix`."""

    bucket: str = Field(description="Source bucket name.")
    manifest: Manifest | None = Field(
        None,
        description="Act on the objects a manifest lists instead of listing the bucket; prefix and the filters still apply to its rows.",
    )
    prefix: str = Field("", description="Only keys starting with this prefix (byte-exact, no normalisation).")
    all: bool = Field(False, description="Must be true to delete a whole bucket (no prefix).")
    include: list[str] = Field(default_factory=list, description="Glob patterns (fnmatch, `*` crosses `/`); a key must match one.")
    exclude: list[str] = Field(default_factory=list, description="Glob patterns; a key matching any is left out.")
    min_size: int = Field(0, ge=0, description="Smallest object size in bytes, inclusive.")
    max_size: int | None = Field(None, ge=0, description="Largest object size in bytes, inclusive.")
    modified_after: datetime | None = Field(None, description="ISO 8601 with a timezone; LastModified >= this.")
    modified_before: datetime | None = Field(
        None, description="ISO 8601 with a timezone; LastModified < this (abort-uploads: required, the upload's Initiated < this)."
    )
    tags: dict[str, str] | None = Field(
        None,
        description=(
            'Only objects carrying every one of these tags, each with exactly this value (case-sensitive; "*" as a value: '
            "the tag with any value). Listing does not return tags, so each listed object costs one GetObjectTagging, made "
            "by the worker before it acts; objects it leaves out are counted as skipped. At most 10, as S3 allows per object."
        ),
    )
    content_type: str | list[str] | None = Field(
        None,
        description=(
            'Only objects whose Content-Type is this media type ("image/png") or in this family ("image/*"), or any of a list; '
            'matched case-insensitively and without the object\'s parameters (text/html matches "text/html; charset=utf-8"). '
            "Listing does not return it, so each listed object costs one HEAD (none extra where the operation HEADs the "
            "object anyway), made by the worker before it acts; objects it leaves out are counted as skipped."
        ),
    )
    expected_owner: str | None = Field(
        None,
        pattern=_ACCOUNT,
        description="12-digit account that must own the source bucket; every request carries it (ExpectedBucketOwner / ExpectedSourceBucketOwner).",
    )
    as_of: datetime | None = Field(
        None,
        description=(
            "A point in time (ISO 8601 with a timezone), read from ListObjectVersions: each key as it was then, its newest "
            "version at or before it. copy: copies that version of each key that existed then (not one deleted or not yet "
            "written). rewind (which needs it): makes every key under the prefix what it was then, in place. Also written "
            'as "versions": {"as_of": ...}.'
        ),
    )
    versions: Literal["current", "all", "noncurrent", "delete-markers"] | AsOf = Field(
        "current",
        description=(
            "current: the objects a listing shows. all and noncurrent list every version with ListObjectVersions (delete "
            "markers too): delete removes each listed version by its id (all empties a versioned prefix); copy with all "
            "copies each key's whole history, oldest first, into a versioned destination; tag, set-retention, set-legal-hold, "
            "set-acl and restore act on each listed version. noncurrent leaves every key's current version alone. "
            "delete-markers (undelete): only the delete markers that are their key's newest version; delete removes them, "
            "so each key's previous version is current again."
        ),
    )

    _bucket = field_validator("bucket")(classmethod(lambda cls, v: _check_bucket(v)))
    _prefix = field_validator("prefix")(classmethod(lambda cls, v: _check_prefix(v)))

    @field_validator("modified_after", "modified_before", "as_of")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("timestamp has no timezone; write it like 2024-01-01T00:00:00Z")
        return value

    @model_validator(mode="after")
    def _as_of_in_versions(self) -> Source:
        """`"versions": {"as_of": T}` is `"as_of": T` with the current versions listed as the rest of the job sees them."""
        if isinstance(self.versions, AsOf):
            if self.as_of is not None:
                raise _FieldProblem("as_of", "as_of is given twice (here and in versions); keep one")
            if self.versions.as_of.tzinfo is None:
                raise _FieldProblem("versions.as_of", "timestamp has no timezone; write it like 2026-11-20T00:00:00Z")
            object.__setattr__(self, "as_of", self.versions.as_of)  # frozen: set once, while the model is built
            object.__setattr__(self, "versions", "current")
        return self

    @field_validator("as_of")
    @classmethod
    def _past(cls, value: datetime | None, info: ValidationInfo) -> datetime | None:
        now = _now_of(info)
        if value is not None and now is not None and value > now:
            raise ValueError("as_of is in the future, where every key is as it is now; give a past time")
        return value

    @field_validator("tags")
    @classmethod
    def _tag_filter(cls, tags: dict[str, str] | None) -> dict[str, str] | None:
        if tags is None:
            return None
        if not tags:
            raise ValueError('an empty tag filter would match every object; give a tag like {"team": "data"} or drop tags')
        if len(tags) > MAX_TAGS:
            raise ValueError(f"{len(tags)} tags; S3 objects carry at most {MAX_TAGS}, so no object could match; drop some")
        for k, v in tags.items():
            if not 1 <= len(k) <= 128:
                raise ValueError(f"tag key {k[:40]!r} must be 1-128 characters, as S3's are; fix it")
            if len(v) > 256:
                raise ValueError(f"tag {k!r} has a {len(v)}-character value; S3 allows 256, so no object could match; shorten it")
        return tags

    @field_validator("content_type")
    @classmethod
    def _media_types(cls, value: str | list[str] | None) -> str | list[str] | None:
        patterns = [value] if isinstance(value, str) else value
        if patterns is None:
            return None
        if not patterns:
            raise ValueError('an empty list would match no object; give a media type like "image/*" or drop content_type')
        for pattern in patterns:
            if not _MEDIA_PATTERN.match(pattern):
                raise ValueError(f'{pattern[:60]!r} is not a media type or family; write it like "image/png" or "image/*" (no parameters)')
        return value

    @model_validator(mode="after")
    def _ranges(self) -> Source:
        if self.max_size is not None and self.max_size < self.min_size:
            raise _FieldProblem(
                "max_size", f"max_size ({self.max_size}) is below min_size ({self.min_size}); raise max_size or lower min_size"
            )
        if self.modified_after and self.modified_before and self.modified_after >= self.modified_before:
            raise _FieldProblem("modified_after", "modified_after is not before modified_before; widen the time window")
        if self.all and self.prefix:
            raise _FieldProblem("all", "all=true selects the whole bucket, so prefix must be empty; drop one of them")
        if self.manifest is not None and self.manifest.format in {"csv", "jsonl", "parquet"}:
            for name in ("min_size", "max_size", "modified_after", "modified_before"):
                if getattr(self, name) not in (None, 0):
                    raise _FieldProblem(
                        name,
                        f'{name} needs sizes and dates, which a CSV, JSONL or Parquet object list does not carry; use format "inventory" or drop {name}',
                    )
        return self


class Destination(_Endpoint):
    """Where copies land: destination key = prefix + (source key without source.prefix)."""

    bucket: str = Field(description="Destination bucket name.")
    prefix: str = Field(
        "",
        description=(
            "copy, move, verify: prepended to each key relative to source.prefix; process: prepended to the key "
            "obj.write() is given, exactly as given (obj.relative_key gives copy's layout)."
        ),
    )
    storage_class: StorageClass | None = Field(None, description="Storage class of the copies; null keeps S3's default (STANDARD).")
    expected_owner: str | None = Field(
        None, pattern=_ACCOUNT, description="12-digit account that must own the destination bucket; every request carries it."
    )
    sse: Encryption | None = Field(None, description="Server-side encryption of the copies; null uses the bucket's default encryption.")
    kms_key_id: str | None = Field(None, min_length=1, description='KMS key id, ARN or alias for sse "aws:kms" or "aws:kms:dsse".')
    acl: CannedAcl | None = Field(
        None,
        description=(
            "Canned ACL of every object the job writes (x-amz-acl on each copy and upload), e.g. bucket-owner-full-control "
            "when another account owns the destination bucket and its policy demands it; null sends none (S3 copies never keep "
            "the source's ACL). A bucket with ACLs disabled takes only bucket-owner-full-control."
        ),
    )

    _bucket = field_validator("bucket")(classmethod(lambda cls, v: _check_bucket(v)))
    _prefix = field_validator("prefix")(classmethod(lambda cls, v: _check_prefix(v)))

    @model_validator(mode="after")
    def _kms(self) -> Destination:
        if self.kms_key_id is not None and self.sse not in {"aws:kms", "aws:kms:dsse"}:
            raise _FieldProblem("kms_key_id", 'kms_key_id needs sse "aws:kms" (or "aws:kms:dsse"); set destination.sse or drop the key')
        return self


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
_JOB_ID_PATTERN = r"^[A-Za-z0-9._-]{1,80}$"

# What each `pattern=` of the models asks for, in words: a user should never be shown the regex itself.
_PATTERN_FIXES = {
    _ACCOUNT: "give a 12-digit AWS account id, like 111122223333",
    _URL: "give an http:// or https:// URL with a host and no path, like https://s3.example.com",
    _REGION: "give a Region name (2-32 lowercase letters, digits or hyphens), like eu-west-1",
    SECRET_ARN: "give a Secrets Manager secret ARN, like arn:aws:secretsmanager:eu-west-1:111122223333:secret:NAME",
    _CALLABLE: "give module:callable, like my_tools:run",
    _LAMBDA_ARN: "give a Lambda function ARN, like arn:aws:lambda:eu-west-1:111122223333:function:NAME",
    _JOB_ID_PATTERN: "use 1-80 letters, digits, dots, underscores or hyphens",
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


class FailureBreaker(_Strict):
    """Stop a job whose objects fail systematically (a destination that refuses every write, a source of archived
    objects) before it fails them all: S3 Batch Operations' rule, more than half of at least 1,000 (s3bulk/breakers/failure.py)."""

    after: int = Field(1000, ge=1, description="Objects that must have finished before the breaker may trip.")
    rate: float = Field(0.5, gt=0, le=1, description="The share of finished objects that must have failed (more than this) to trip it.")


class Options(_Strict):
    """How a job runs; every default is a measured choice documented in docs/architecture.md."""

    dry_run: bool = Field(False, description="List and count what would be done; change nothing.")
    if_exists: Literal["overwrite", "skip", "skip-unchanged"] = Field(
        "overwrite",
        description=(
            "overwrite: replace existing destination objects; skip: leave any existing one (and, for move, its source) untouched; "
            "skip-unchanged: copy only objects that are new or changed (size and ETag; multipart ETags: size and checksum, "
            "else a newer destination)."
        ),
    )
    delete_extraneous: bool = Field(
        False, description="copy only: delete destination objects under destination.prefix that no source object maps to (honours dry_run)."
    )
    concurrency: int | None = Field(
        None, ge=1, le=1024, description="Worker threads (and HTTP connections); null picks the measured default."
    )
    multipart_threshold: int = Field(
        128 * MiB,
        ge=MIN_PART_SIZE,
        le=MAX_COPY_OBJECT_SIZE,
        description="Objects larger than this are copied with parallel UploadPartCopy.",
    )
    part_size: int = Field(
        64 * MiB,
        ge=MIN_PART_SIZE,
        le=MAX_PART_SIZE,
        description="Multipart copy part size; grown if an object would need over 10,000 parts.",
    )
    batch_size: int = Field(1000, ge=1, le=1000, description="Keys per batch (a DeleteObjects request holds at most 1,000).")
    list_workers: int = Field(
        16, ge=1, le=64, description="Sub-prefixes (one level below source.prefix) listed at once; output order is unchanged."
    )
    object_retries: int = Field(
        3,
        ge=0,
        le=10,
        description="Rounds an object gets, after a pause, once the client's own retries give up on throttling or a server error.",
    )
    adaptive_rate: bool = Field(
        False,
        description="After S3 throttles (503 SlowDown), pace all requests with one adaptive rate (shared by all workers on AWS) that settles just under the prefix limit, instead of retrying at full speed.",
    )
    tolerated_failures: int = Field(
        0,
        ge=0,
        description="The job counts as failed (exit 1 locally, a FAILED execution on AWS) only when more objects than this fail; each failure is still reported.",
    )
    allow_empty_source: bool = Field(
        False,
        description=(
            "With delete_extraneous: run even when the source selects nothing, which deletes every destination object under "
            "destination.prefix. Without it such a sync is refused before anything is deleted (a typo in source.prefix)."
        ),
    )
    requester_pays: bool = Field(
        False, description="Accept requester-pays charges (x-amz-request-payer) on every request; needed for requester-pays buckets."
    )
    transfer: Literal["auto", "server-side", "relay"] = Field(
        "auto",
        description=(
            "copy and move: server-side copies where both sides share an endpoint and credentials; relay streams each object "
            "through this process (GET, then PUT) with bounded memory; auto picks relay only when the sides differ."
        ),
    )
    max_delete: int | None = Field(
        None,
        ge=0,
        description=(
            "Delete guard for delete, move, sync (delete_extraneous) and rewind (the keys it hides under a delete marker): "
            "the selection is counted first, and a job that would delete more objects than this stops before its first "
            "delete (exit 2), saying how many it found."
        ),
    )
    canary: int | None = Field(
        None,
        ge=1,
        le=10_000,
        description=(
            "Run the job first on this many objects sampled across the key range, check each one (a verify for copy and "
            "move, a read-back for in-place operations), and stop with the result; `s3bulk run --resume` then does the "
            "rest without redoing them. CLI only."
        ),
    )
    confirm: bool = Field(
        False,
        description=(
            "Stack only: hold the job once its listing is planned (and, with max_delete, its deletes counted) until "
            "`s3bulk confirm JOB_ID`; nothing is changed before. `s3bulk stop JOB_ID` drops it instead."
        ),
    )
    failure_breaker: FailureBreaker | Literal[False] = Field(
        default_factory=FailureBreaker,
        description=(
            "Once `after` objects have finished and more than `rate` of them failed (throttling and outages aside), stop "
            "taking new work (exit 4 locally, the execution fails FailureBreaker on AWS; resumable) and say which errors; "
            "false turns it off."
        ),
    )
    outage_seconds: float = Field(
        60.0,
        ge=1,
        le=86_400,
        description=(
            "Stop the job (exit 3, resumable) once every request to an endpoint has failed to connect for this long; "
            "objects tried during the outage stay not done instead of failed."
        ),
    )


# What each operation can do with source.versions other than "current" (docs/versions.md).
VERSIONED_OPS = {
    "all": frozenset({"delete", "copy", "tag", "set-retention", "set-legal-hold", "set-acl", "restore"}),
    "noncurrent": frozenset({"delete", "tag", "set-retention", "set-legal-hold", "set-acl", "restore"}),
    "delete-markers": frozenset({"delete"}),
}
# The operations that act on the version a manifest row (or a listing) names; the others act on current objects only.
# verify compares the named version with the destination's current object (a copy of that version).
ACTS_ON_VERSIONS = frozenset({"delete", "copy", "verify", "tag", "set-retention", "set-legal-hold", "set-acl", "restore", "rewind"})

# The operations source.as_of works with: copy takes each key as it was then, verify compares a copy of it with that
# version, rewind makes it so in place.
AS_OF_OPS = frozenset({"copy", "verify", "rewind"})

# Each operation-specific field, and the operation it belongs to.
OPERATION_FIELDS = (
    ("tagging", "tag"),
    ("storage_class", "set-storage-class"),
    ("restore", "restore"),
    ("process", "process"),
    ("retention", "set-retention"),
    ("legal_hold", "set-legal-hold"),
    ("acl", "set-acl"),
    ("checksum_algorithm", "add-checksum"),
    ("encryption", "set-encryption"),
)

# The fields an operation cannot do without, with an example for the error that asks for one.
REQUIRED_FIELDS = (
    ("tagging", "tag", '{"mode": "merge", "tags": {"team": "data"}}'),
    ("storage_class", "set-storage-class", '"STANDARD_IA"'),
    ("process", "process", '{"function": "my_tools:run"}'),
    ("retention", "set-retention", '{"mode": "GOVERNANCE", "until": "2027-01-01T00:00:00Z"}'),
    ("legal_hold", "set-legal-hold", '"ON"'),
    ("acl", "set-acl", '"bucket-owner-full-control"'),
    ("encryption", "set-encryption", '{"sse": "aws:kms", "kms_key_id": "arn:aws:kms:...:key/..."}'),
)


class Job(_Strict):
    """A bulk operation over every object a listing selects."""

    operation: Operation = Field(
        description=(
            "copy, move, delete; tag (tagging), set-storage-class (storage_class: an in-place copy keeping metadata and tags), "
            "restore (restore: GLACIER and DEEP_ARCHIVE objects), verify (compare each object with its destination copy), "
            "process (process: your code on each object, writing to an optional destination), "
            "set-retention (retention: Object Lock mode and date), set-legal-hold (legal_hold), set-acl (acl: a canned ACL), "
            "add-checksum (checksum_algorithm: an in-place copy that has S3 compute and keep an additional checksum), "
            "set-encryption (encryption: S3's UpdateObjectEncryption where it applies, else an in-place copy keeping everything), "
            "abort-uploads (abort the incomplete multipart uploads under source.prefix initiated before source.modified_before), "
            "rewind (source.as_of: every key under the prefix made what it was then, in place, keeping every version)."
        )
    )
    source: Source
    destination: Destination | None = Field(
        None,
        description="Required for copy, move and verify; optional for process (where obj.write() puts outputs); forbidden for the in-place operations (delete, tag, set-storage-class, restore, set-retention, set-legal-hold, set-acl).",
    )
    tagging: Tagging | None = Field(None, description="Required for operation 'tag'.")
    storage_class: StorageClass | None = Field(None, description="Required for operation 'set-storage-class': the class objects move to.")
    restore: Restore | None = Field(None, description="For operation 'restore'; defaults to 7 days, Standard tier.")
    process: Process | None = Field(None, description="Required for operation 'process': the code to run on each object.")
    retention: Retention | None = Field(None, description="Required for operation 'set-retention': mode and retain-until date.")
    legal_hold: Literal["ON", "OFF"] | None = Field(None, description="Required for operation 'set-legal-hold': put it on or take it off.")
    acl: CannedAcl | None = Field(None, description="Required for operation 'set-acl': the canned ACL each object gets.")
    checksum_algorithm: ChecksumAlgorithm | None = Field(
        None, description="For operation 'add-checksum': the checksum S3 computes and keeps (default CRC64NVME)."
    )
    encryption: SetEncryption | None = Field(None, description="Required for operation 'set-encryption': the encryption objects end under.")
    options: Options = Field(default_factory=Options)
    job_id: str | None = Field(None, pattern=_JOB_ID_PATTERN, description="Optional id; one is generated when absent.")

    @model_validator(mode="after")
    def _shape(self) -> Job:
        op = self.operation
        for name, wanted in OPERATION_FIELDS:
            if getattr(self, name) is not None and op != wanted:
                raise _FieldProblem(name, f"{name} is for operation {wanted!r}, not {op!r}; remove it")
        for name, wanted, example in REQUIRED_FIELDS:
            if op == wanted and getattr(self, name) is None:
                raise _FieldProblem(name, f"operation {wanted!r} needs {name}, like {example}; add it")
        if self.options.max_delete is not None and op not in {"delete", "move", "rewind"} and not self.options.delete_extraneous:
            raise _FieldProblem(
                "options.max_delete",
                f"max_delete guards deletes (delete, move, rewind, or copy with delete_extraneous), not {op!r}; remove it",
            )
        self._versions_fit()
        self._uploads_fit()
        self._as_of_fits()
        self._filters_fit()
        if self.options.allow_empty_source and not self.options.delete_extraneous:
            raise _FieldProblem("options.allow_empty_source", "allow_empty_source only matters with delete_extraneous (a sync); remove it")
        if self.options.canary is not None and (self.options.dry_run or self.options.delete_extraneous):
            which = "dry_run" if self.options.dry_run else "delete_extraneous"
            raise _FieldProblem(
                "options.canary",
                f"a canary acts on a sample, and {which} needs the whole listing (a dry run acts on nothing); remove one of them",
            )
        if self.options.transfer != "auto" and op not in {"copy", "move"}:
            raise _FieldProblem("options.transfer", f"transfer chooses how copy and move write, not {op!r}; remove it")
        if op not in {"copy", "move"} and self.options.if_exists != "overwrite":
            raise _FieldProblem("options.if_exists", f"if_exists works with copy and move, not {op!r}; remove it")
        if op in IN_PLACE:
            if self.destination is not None:
                raise _FieldProblem("destination", f"destination is not allowed for operation {op!r}, which acts in place; remove it")
            if self.options.delete_extraneous:
                raise _FieldProblem(
                    "options.delete_extraneous", f"delete_extraneous works with operation 'copy' (a sync), not {op!r}; remove it"
                )
            if not self.source.prefix and not self.source.all and self.source.manifest is None:
                raise _FieldProblem(
                    "source.prefix", f'source.prefix is empty, which would {op} the whole bucket; give a prefix or set "all": true'
                )
            return self
        dst = self.destination
        if dst is None and op == "process":
            if self.options.delete_extraneous:
                raise _FieldProblem(
                    "options.delete_extraneous", "delete_extraneous works with operation 'copy' (a sync), not 'process'; remove it"
                )
            return self  # a processor that writes nothing needs no destination; obj.write() then says so
        if dst is None:
            raise _FieldProblem("destination", f'destination is required for operation {self.operation!r}; add {{"bucket": ...}}')
        if self.options.delete_extraneous and self.source.manifest is not None:
            raise _FieldProblem(
                "options.delete_extraneous",
                "delete_extraneous compares two listings, and this job reads a manifest; drop source.manifest or delete_extraneous",
            )
        if self.options.delete_extraneous and self.operation != "copy":
            raise _FieldProblem(
                "options.delete_extraneous", f"delete_extraneous works with operation 'copy' (a sync), not {self.operation!r}; remove it"
            )
        src = self.source
        if op not in {"copy", "move", "verify"}:
            for side, name in ((src, "source"), (dst, "destination")):
                if side.endpoint_url or side.profile:
                    raise _FieldProblem(
                        f"{name}.endpoint_url",
                        f"a separate endpoint or profile per side works with copy, move and verify, not {op!r}; remove it",
                    )
        if self.options.transfer == "server-side" and differ(src, dst):
            raise _FieldProblem(
                "options.transfer",
                'source and destination use different endpoints or profiles, so S3 cannot copy between them; use "relay" or "auto"',
            )
        if differ(src, dst):
            return self  # two different stores: the same bucket name is two buckets, and neither listing chases the other
        if dst.bucket == src.bucket and (dst.prefix.startswith(src.prefix) or src.prefix.startswith(dst.prefix)):
            raise _FieldProblem(
                "destination.prefix",
                f"destination s3://{dst.bucket}/{dst.prefix} overlaps source s3://{src.bucket}/{src.prefix}, "
                "so the listing would chase its own output; use a destination prefix outside the source prefix",
            )
        return self

    def _uploads_fit(self) -> None:
        """abort-uploads lists uploads, not objects: it needs a cutoff (an upload still being written is newer), and the
        filters and options that describe objects mean nothing to it."""
        if self.operation != "abort-uploads":
            return
        src = self.source
        if src.modified_before is None:
            raise _FieldProblem(
                "source.modified_before",
                'abort-uploads needs a cutoff so uploads still in progress are kept; add one, like "2026-11-01T00:00:00Z"',
            )
        if src.manifest is not None:
            raise _FieldProblem("source.manifest", "abort-uploads lists the bucket's open uploads, not objects; drop source.manifest")
        for name in ("min_size", "max_size"):
            if getattr(src, name) not in (None, 0):
                raise _FieldProblem(f"source.{name}", f"an open upload has no size in its listing, so {name} cannot apply; drop it")
        if self.options.canary is not None:
            raise _FieldProblem("options.canary", "a canary samples objects, and abort-uploads acts on uploads; remove it")

    def _as_of_fits(self) -> None:
        """source.as_of reads each key's history with ListObjectVersions: copy takes each key as it was, verify compares
        a copy with it, rewind makes it so in place."""
        src, op = self.source, self.operation
        if src.as_of is None:
            if op == "rewind":
                raise _FieldProblem("source.as_of", 'rewind needs the time to go back to; add "as_of": "2026-11-20T00:00:00Z"')
            return
        if op not in AS_OF_OPS:
            raise _FieldProblem("source.as_of", f"as_of works with copy, verify and rewind, not {op!r}; remove it")
        if src.versions != "current":
            raise _FieldProblem("source.versions", f'as_of picks each key\'s version itself; drop versions "{src.versions}"')
        if src.manifest is not None:
            raise _FieldProblem(
                "source.manifest", "as_of reads each key's history from ListObjectVersions, not a manifest; drop one of them"
            )
        if self.options.delete_extraneous:
            raise _FieldProblem("options.delete_extraneous", "a sync compares the current objects; drop as_of or delete_extraneous")

    def _filters_fit(self) -> None:
        """source.tags and source.content_type judge each object the job would act on, so there must be one to judge."""
        src = self.source
        if src.tags is None and src.content_type is None:
            return
        field = "source.tags" if src.tags is not None else "source.content_type"
        if self.operation == "abort-uploads":
            raise _FieldProblem(field, "an open upload has no tags or content type yet; drop the filter")
        if src.versions == "delete-markers":
            raise _FieldProblem(field, "a delete marker has no tags or content type, so nothing could match; drop the filter")
        if src.versions == "all" and self.operation == "copy":
            raise _FieldProblem(
                field, 'a copy of all versions copies each key\'s whole history, and the filter judges one object; use versions "current"'
            )

    def _versions_fit(self) -> None:
        """source.versions other than "current" works with the operations VERSIONED_OPS names, and only on a listing."""
        versions, op = self.source.versions, self.operation
        if versions == "current" or isinstance(versions, AsOf):  # an AsOf is source.as_of once the source is built
            return
        if op not in VERSIONED_OPS[versions]:
            ops = ", ".join(sorted(VERSIONED_OPS[versions]))
            raise _FieldProblem("source.versions", f'versions "{versions}" works with {ops}, not {op!r}; use "current"')
        if self.source.manifest is not None:
            raise _FieldProblem(
                "source.versions", "a manifest names its own versions (a version_id column); drop source.versions or the manifest"
            )
        if op == "copy":
            dst = self.destination
            if self.options.if_exists != "overwrite" or self.options.delete_extraneous:
                field = "options.if_exists" if self.options.if_exists != "overwrite" else "options.delete_extraneous"
                raise _FieldProblem(
                    field, "a copy of all versions compares each key's version history with the destination's itself; remove it"
                )
            if dst is not None and (self.options.transfer == "relay" or differ(self.source, dst)):
                raise _FieldProblem(
                    "source.versions", 'a copy of all versions is server-side, so both sides must share an endpoint; use "current"'
                )


def differ(source: Source, destination: Destination) -> bool:
    """Whether the two sides need two clients: another endpoint or other credentials (a Region alone does not)."""
    return (source.endpoint_url, source.profile, source.credentials_secret) != (
        destination.endpoint_url,
        destination.profile,
        destination.credentials_secret,
    )


def relays(job: Job) -> bool:
    """Whether copy and move stream each object through this process instead of asking S3 to copy it."""
    dst = job.destination
    if job.operation not in {"copy", "move"} or dst is None:
        return False
    return job.options.transfer == "relay" or (job.options.transfer == "auto" and differ(job.source, dst))


def _describe(err: dict[str, Any]) -> str:
    """Turn one pydantic error into 'job.field.path: problem; fix'."""
    loc = [str(p) for p in err.get("loc", ())]
    kind = err.get("type", "")
    msg = str(err.get("msg", ""))
    if kind == "value_error":
        cause = err.get("ctx", {}).get("error")
        msg = str(cause) if cause is not None else msg.removeprefix("Value error, ")
        if isinstance(cause, _FieldProblem):
            loc = [*loc, *cause.field.split(".")]
    elif kind == "extra_forbidden":
        msg = "unknown field; remove it or fix its spelling (see docs/job.schema.json)"
    elif kind == "missing":
        msg = "required field is missing; add it"
    elif kind in {"int_type", "string_type", "bool_type", "list_type", "model_type", "datetime_type", "dict_type"}:
        msg = f"{msg.rstrip('.')}; got {json.dumps(err.get('input'), default=str)[:60]}"
    elif kind == "string_pattern_mismatch":
        fix = _PATTERN_FIXES.get(str(err.get("ctx", {}).get("pattern")), "see docs/job.schema.json for the form it takes")
        msg = f"got {json.dumps(err.get('input'))[:60]}; {fix}"
    elif kind.startswith("datetime"):
        msg = f"{msg.rstrip('.')}; write it like 2024-01-01T00:00:00Z"
    path = ".".join(["job", *loc])
    return f"{path}: {msg}"


def parse_job(text: str | bytes, *, now: datetime | None = None) -> Job:
    """Validate a job document; raise JobError with a one-line message naming the field.

    `now` also applies the rules only a new job can break (a retention date already past). Leave it
    out to re-read a stored job (a resume's ledger, the stack's items): it must still parse after
    its dates have passed.
    """
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JobError(f"job: not valid JSON at line {exc.lineno} column {exc.colno} ({exc.msg}); fix the syntax") from None
    if not isinstance(raw, dict):
        raise JobError('job: the file must hold a JSON object like {"operation": ..., "source": ...}')
    try:
        return Job.model_validate_json(text, context={_NOW: now} if now is not None else None)
    except ValidationError as exc:
        errors = [dict(e) for e in exc.errors()]
        first, rest = _first_problem(errors)
        more = f" (and {rest} more problem{'s' if rest > 1 else ''})" if rest else ""
        raise JobError(first + more) from None


def _branch(part: object) -> bool:
    """A union's branch in an error's location (pydantic names it by type: str, list[str], literal[...], or a model of
    this module, AsOf), not a field or a map's key (a tag key such as "Env" is one)."""
    if not isinstance(part, str):
        return False
    model = globals().get(part)
    is_model = isinstance(model, type) and issubclass(model, BaseModel)
    return "[" in part or part in {"str", "int", "bool", "float", "dict", "list"} or is_model


def _first_problem(errors: list[dict[str, Any]]) -> tuple[str, int]:
    """The first problem as one line, and how many others there are. A field that takes one of several forms (a union)
    fails once per form: said once, as the form the input was meant to be when it went into one (an object with a bad
    field), else as the forms it may take."""
    loc = list(errors[0].get("loc", ()))
    cut = next((n for n, part in enumerate(loc) if _branch(part)), None)
    if cut is None:
        return _describe(errors[0]), len(errors) - 1
    field = loc[:cut]
    same = [e for e in errors if list(e.get("loc", ()))[:cut] == field and len(e.get("loc", ())) > cut and _branch(e["loc"][cut])]
    others = len(errors) - len(same)
    # A misspelt field of an object is the likelier cause of its "missing" one: said first.
    deeper = sorted((e for e in same if len(e["loc"]) > cut + 1), key=lambda e: e.get("type") != "extra_forbidden")
    if deeper:  # it went into a form (an object) and a field of it is wrong: say that one, at its real path
        e = deeper[0]
        return _describe({**e, "loc": [p for p in e["loc"] if not _branch(p)]}), others + len(deeper) - 1
    forms = []
    for e in same:
        msg = str(e.get("msg", "")).removeprefix("Input should be ").rstrip(".")
        forms.append("an object (see docs/job.schema.json)" if e.get("type") in {"model_type", "dict_type"} else msg)
    path = ".".join(["job", *(str(p) for p in field)])
    got = json.dumps(same[0].get("input"), default=str)[:60]
    return f"{path}: should be {', or '.join(forms)}; got {got}", others


def load_job(path: str | Path, *, now: datetime | None = None) -> Job:
    """Read and validate a job file: a new job, so checked against `now` (default: the clock) as well."""
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        raise JobError(f"job file {str(path)!r}: {exc.strerror}; check the path") from None
    return parse_job(text, now=now or datetime.now(UTC))


def json_schema() -> dict[str, Any]:
    """The published schema (docs/job.schema.json) for editors and other tools."""
    schema = Job.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "s3bulk job"
    return schema


def request_options(job: Job) -> RequestOptions:
    """The options every S3 request of this job carries."""
    owners = {}
    if job.source.expected_owner:
        owners[job.source.bucket] = job.source.expected_owner
    dst = job.destination
    if dst is not None and dst.expected_owner:
        owners[dst.bucket] = dst.expected_owner
    return RequestOptions(
        owners=owners,
        requester_pays=job.options.requester_pays,
        sse=dst.sse if dst else None,
        kms_key_id=dst.kms_key_id if dst else None,
        acl=dst.acl if dst else None,
    )


_JOB_ID = re.compile(_JOB_ID_PATTERN)


def new_job_id(job: Job, execution: str | None = None) -> str:
    """The job's own id; else one derived from the execution that runs it; else one that sorts by start time.

    On the stack the id follows from the execution's name, so whoever sees only the
    execution (the handler of its status-change event) finds the job's ledger entry.
    """
    if job.job_id:
        return job.job_id
    if execution:
        derived = f"{job.operation}-{execution}"
        if _JOB_ID.match(derived):
            return derived
        return f"{job.operation}-{hashlib.sha256(execution.encode()).hexdigest()[:32]}"
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{job.operation}-{stamp}-{uuid.uuid4().hex[:8]}"
