"""The job as a whole, and the rules across its parts (which operation takes which field, what versions allow)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from s3bulk.job.base import IN_PLACE, CannedAcl, ChecksumAlgorithm, Operation, StorageClass, _FieldProblem, _Strict
from s3bulk.job.operations import _JOB_ID_PATTERN, Process, Restore, Retention, SetEncryption, Tagging
from s3bulk.job.options import Options
from s3bulk.job.sides import AsOf, Destination, Source

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
