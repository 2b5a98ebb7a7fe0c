"""The job file: the user's contract, validated before anything is touched.

Every rule here exists so a bad job fails in one clear line (exit 2) instead of
half-running. The JSON Schema in docs/ is generated from these models. By part: `base` (limits, operations,
errors), `sides` (source, destination, manifest), `operations` (each operation's settings), `options`, `model`
(the Job and its cross-field rules) and `parse` (text to Job, schema, ids).
"""

from __future__ import annotations

from s3bulk.job.base import (
    ARCHIVED,
    IN_PLACE,
    MAX_COPY_OBJECT_SIZE,
    MAX_KEY_BYTES,
    MAX_PART_SIZE,
    MAX_TAGS,
    MIN_PART_SIZE,
    WRITES_SOURCE,
    CannedAcl,
    ChecksumAlgorithm,
    Encryption,
    GiB,
    JobError,
    MiB,
    Operation,
    StorageClass,
)
from s3bulk.job.model import ACTS_ON_VERSIONS, AS_OF_OPS, OPERATION_FIELDS, REQUIRED_FIELDS, VERSIONED_OPS, Job, differ, relays
from s3bulk.job.operations import _PATTERN_FIXES, Process, Restore, Retention, SetEncryption, Tagging
from s3bulk.job.options import FailureBreaker, Options
from s3bulk.job.parse import json_schema, load_job, new_job_id, parse_job, request_options
from s3bulk.job.sides import SECRET_ARN, AsOf, Destination, Manifest, Source

__all__ = [
    "ACTS_ON_VERSIONS",
    "ARCHIVED",
    "AS_OF_OPS",
    "IN_PLACE",
    "MAX_COPY_OBJECT_SIZE",
    "MAX_KEY_BYTES",
    "MAX_PART_SIZE",
    "MAX_TAGS",
    "MIN_PART_SIZE",
    "OPERATION_FIELDS",
    "REQUIRED_FIELDS",
    "SECRET_ARN",
    "VERSIONED_OPS",
    "WRITES_SOURCE",
    "_PATTERN_FIXES",
    "AsOf",
    "CannedAcl",
    "ChecksumAlgorithm",
    "Destination",
    "Encryption",
    "FailureBreaker",
    "GiB",
    "Job",
    "JobError",
    "Manifest",
    "MiB",
    "Operation",
    "Options",
    "Process",
    "Restore",
    "Retention",
    "SetEncryption",
    "Source",
    "StorageClass",
    "Tagging",
    "differ",
    "json_schema",
    "load_job",
    "new_job_id",
    "parse_job",
    "relays",
    "request_options",
]
