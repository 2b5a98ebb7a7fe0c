"""How a job runs: concurrency, multipart sizes, if-exists, guards, the breakers' settings."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from s3bulk.job.base import MAX_COPY_OBJECT_SIZE, MAX_PART_SIZE, MIN_PART_SIZE, MiB, _Strict


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
            "skip-unchanged: copy only objects that are new or changed (size and ETag; multipart ETags, or a listing "
            "without ETags: both objects' ETags and checksums from a HEAD, else for multipart a newer destination; a pair "
            "nothing decides is copied and counted)."
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
        16,
        ge=1,
        le=64,
        description=(
            "Key ranges listed at once, cut at the sub-prefixes one level below source.prefix (a range covers every key "
            "up to the next, so a folder a server leaves out of CommonPrefixes is still listed); output order is unchanged."
        ),
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
