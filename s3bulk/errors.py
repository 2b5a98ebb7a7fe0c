"""Classify what happened to each object, so nothing is silently dropped."""

from __future__ import annotations

import enum

from s3bulk.store import StoreError


class TemporaryFailure(Exception):
    """Raise from a process function when a retry may succeed; the object gets another round, like a throttled request."""


class PermanentFailure(Exception):
    """Raise from a process function when a retry cannot help; the object fails with this message (so does any other exception)."""


class Outcome(enum.Enum):
    SUCCEEDED = "succeeded"
    SKIPPED = "skipped"
    FAILED = "failed"


class ErrorKind(enum.Enum):
    RETRYABLE = "retryable"  # throttling, 5xx, timeouts: retried (bounded, backoff) by the client
    PERMANENT = "permanent"  # retrying cannot help: reported with key and code


# Codes botocore's standard retry mode retries; seeing one here means retries ran out.
RETRYABLE_CODES = frozenset(
    {
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "TransactionInProgressException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "LimitExceededException",
        "RequestTimeout",
        "RequestTimeoutException",
        "PriorRequestNotComplete",
        "InternalError",
        "ServiceUnavailable",
        "ConnectionError",
        "ReadTimeout",
        "ConnectTimeout",
        "KMS.ThrottlingException",
        "IncompleteBody",  # a ranged GET cut short
        "BadDigest",  # a body changed on the way (Content-MD5)
        "TemporaryFailure",  # a process function or Batch Operations Lambda asked for a retry
    }
)

# Retrying these cannot succeed; each names what the user must change.
PERMANENT_HINTS = {
    "AccessDenied": "check the credentials' permissions and bucket policy",
    "AllAccessDisabled": "the bucket is disabled",
    "NoSuchKey": "the object vanished after listing",
    "NoSuchBucket": "check the bucket name",
    "InvalidObjectState": "restore needed: the object is archived (Glacier/Deep Archive)",
    "ObjectNotInActiveTierError": "restore needed: the object is archived (Glacier/Deep Archive)",
    "PreconditionFailed": "the source changed during the copy; rerun to pick up the new version",
    "KeyTooLongError": "the destination key is over 1,024 bytes; shorten destination.prefix",
    "EntityTooLarge": "object is too large for a single copy; lower options.multipart_threshold",
    "InvalidRequest": "the server refused the request",
    "MethodNotAllowed": "the operation is not allowed on this object",
    "AccessControlListNotSupported": (
        "the bucket has ACLs disabled (Object Ownership: bucket owner enforced), so objects take no ACL but "
        "bucket-owner-full-control; grant access with a bucket policy, or set Object Ownership to allow ACLs"
    ),
    "MissingDestination": "verify: the copy is missing; rerun the copy",
    "SizeMismatch": "verify: the copy differs; rerun the copy with if_exists overwrite",
    "ChecksumMismatch": "verify: the copy differs; rerun the copy with if_exists overwrite",
    "ContentMismatch": "verify: the copy differs; rerun the copy with if_exists overwrite",
    "CopyContentMismatch": (
        "the server's copy holds other bytes than the source (it copied another object, or its ETags are not content "
        "MD5s): a move keeps its source; check the copy with a verify job, and the server's copy-source handling"
    ),
    "NotImplemented": (
        "the server does not implement this call (501, permanent): use a server that does, or leave out the job field that needs it"
    ),
    "CopyNotConfirmed": "the server's copy is not the source's size: a move keeps its source; rerun, or check the server",
}


def classify(exc: BaseException) -> ErrorKind:
    """Retryable errors are throttling, server faults and timeouts; everything else is permanent."""
    if isinstance(exc, StoreError):
        if exc.code in RETRYABLE_CODES:
            return ErrorKind.RETRYABLE
        if exc.status == 501 or exc.code == "NotImplemented":  # the server lacks the call: asking again cannot help
            return ErrorKind.PERMANENT
        if exc.status is not None and (exc.status >= 500 or exc.status == 429):
            return ErrorKind.RETRYABLE
        return ErrorKind.PERMANENT
    if isinstance(exc, (TimeoutError, ConnectionError, TemporaryFailure)):
        return ErrorKind.RETRYABLE
    return ErrorKind.PERMANENT


def error_code(exc: BaseException) -> str:
    if isinstance(exc, StoreError):
        return exc.code
    return type(exc).__name__


def error_message(exc: BaseException) -> str:
    """A message for the report: the server's words, plus a hint on what to change."""
    if isinstance(exc, StoreError):
        hint = PERMANENT_HINTS.get(exc.code)
        if classify(exc) is ErrorKind.RETRYABLE:
            hint = "gave up after the client's bounded retries; rerun later or lower options.concurrency"
        return f"{exc.message} ({hint})" if hint and hint not in exc.message else exc.message
    return str(exc) or type(exc).__name__
