"""Where a job reads and writes: the source (a prefix, versions or a manifest, and its filters) and the destination."""

from __future__ import annotations

import os
from datetime import datetime
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from s3bulk.job.base import (
    _ACCOUNT,
    _BASE_DIR,
    _MEDIA_PATTERN,
    MAX_TAGS,
    RAW_PREFIX_DOC,
    CannedAcl,
    Encryption,
    StorageClass,
    _check_bucket,
    _check_prefix,
    _FieldProblem,
    _now_of,
    _Strict,
    check_folder,
)


class Manifest(_Strict):
    """Where a job's object list comes from when it is not a listing (docs/manifests.md)."""

    bucket: str = Field("", description="Bucket holding the manifest (and, for inventory, its data files); none with path.")
    key: str = Field("", description="csv, jsonl, parquet: the object list itself; inventory: the report's manifest.json; none with path.")
    path: str | None = Field(
        None,
        min_length=1,
        description=(
            "s3bulk run only: a CSV, JSONL or Parquet manifest on this machine's disk instead of bucket and key, "
            "relative to the job file's directory (s3bulk run --retry-failed writes one); a deployed job reads its manifest from S3."
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

    @field_validator("path")
    @classmethod
    def _beside_the_job_file(cls, path: str | None, info: ValidationInfo) -> str | None:
        """A relative path names the job file's neighbour, not the current directory's: a job file moves with its manifest."""
        base = info.context.get(_BASE_DIR) if isinstance(info.context, dict) else None
        if path is None or not isinstance(base, str):
            return path
        mine = os.path.expanduser(path)
        return mine if os.path.isabs(mine) else os.path.normpath(os.path.join(base, mine))

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
            "(on the stack: allow-listed at deploy with -c credentials_secrets=ARN@SIDE, SIDE the side its keys may serve). Never logged."
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
    prefix: str = Field(
        "", description="Only keys under this folder (ends in /; byte-exact, no normalisation); see raw_prefix for any string."
    )
    raw_prefix: bool = Field(False, description=RAW_PREFIX_DOC)
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
    def _folder(self, info: ValidationInfo) -> Source:
        check_folder("source", self.prefix, self.raw_prefix, info)
        return self

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
            "obj.write() is given, exactly as given (obj.relative_key gives copy's layout). Ends in / unless raw_prefix."
        ),
    )
    raw_prefix: bool = Field(False, description=RAW_PREFIX_DOC)
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
    def _folder(self, info: ValidationInfo) -> Destination:
        check_folder("destination", self.prefix, self.raw_prefix, info)
        return self

    @model_validator(mode="after")
    def _kms(self) -> Destination:
        if self.kms_key_id is not None and self.sse not in {"aws:kms", "aws:kms:dsse"}:
            raise _FieldProblem("kms_key_id", 'kms_key_id needs sse "aws:kms" (or "aws:kms:dsse"); set destination.sse or drop the key')
        return self
