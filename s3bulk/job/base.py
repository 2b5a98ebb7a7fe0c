"""What every part of the job file's model shares: sizes and limits, the operations, and the one-line errors."""

from __future__ import annotations

import ipaddress
import re
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationInfo

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


# ... and the key that marks a stored job being re-read (a resume's ledger, the stack's items), which a rule added since
# it was written must not refuse: it runs as it was checked then.
_STORED = "stored"


# ... and the key that carries the job file's directory (absolute), which a relative source.manifest.path is read from.
_BASE_DIR = "base_dir"


def _stored(info: ValidationInfo) -> bool:
    context = info.context
    return isinstance(context, dict) and bool(context.get(_STORED))


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


RAW_PREFIX_DOC = (
    "true: prefix is a plain string, not a folder: a source selects every key starting with it (logs selects logs/..., "
    "logs-old/... and logs2024.txt), a destination prepends it as it is (backup- gives backup-000001.dat). Without it, a "
    "prefix must end in / (or be empty), as a prefix without its slash pulls in neighbours and maps logs/a to backup//a."
)


def check_folder(side: str, prefix: str, raw: bool, info: ValidationInfo) -> None:
    """A prefix is a folder (ends in `/`) unless the job says it is a plain string: `logs` under `backup/` maps
    `logs/a` to `backup//a` and selects `logs-old/` too, and `aws s3 cp` and s5cmd read such a prefix as a folder."""
    if not prefix or prefix.endswith("/") or raw or _stored(info):
        return
    meant = f"every key starting with {prefix!r}" if side == "source" else f"{prefix!r} prepended as it is"
    raise _FieldProblem(
        "prefix", f"{prefix!r} does not end in '/': write {prefix + '/'!r} for the folder, or set {side}.raw_prefix: true for {meant}"
    )
