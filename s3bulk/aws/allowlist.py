"""Buckets a deployment may touch, checked at run time as well as granted in IAM."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from s3bulk.job import WRITES_SOURCE, Job, JobError


def _split(value: str | None) -> frozenset[str]:
    return frozenset(b.strip() for b in (value or "").split(",") if b.strip())


def endpoint_key(url: str) -> str:
    """An endpoint as the allow-list compares it: scheme and host (with any port) in lower case, path without a
    trailing slash; a URL without both a scheme and a host is returned as given (and matches nothing listed)."""
    parts = urlsplit(url.strip())
    if not parts.scheme or not parts.netloc:
        return url
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}"


def paired(items: Iterable[str], *, urls: bool = True) -> frozenset[tuple[str, str]]:
    """(secret, endpoint) pairs from SECRET=URL items (S3BULK_SECRET_ENDPOINTS; deploy: -c credentials_secrets=ARN=URL@SIDE),
    or with urls=False (bucket, account) pairs from BUCKET=ACCOUNT items (S3BULK_BUCKET_OWNERS)."""
    out = set()
    for item in items:
        name, _, value = item.partition("=")
        if value:
            out.add((name.strip(), endpoint_key(value) if urls else value.strip()))
    return frozenset(out)


def sides(items: Iterable[str]) -> frozenset[tuple[str, str]]:
    """(secret, side) pairs from SECRET=SIDE items (S3BULK_SECRET_SIDES; deploy: -c credentials_secrets=ARN[=URL]@SIDE),
    "both" as its two sides."""
    return frozenset(
        (secret, one) for secret, side in paired(items, urls=False) for one in (("source", "destination") if side == "both" else (side,))
    )


@dataclass(frozen=True, slots=True)
class AllowList:
    read: frozenset[str]
    write: frozenset[str]
    delete: frozenset[str]
    lambdas: frozenset[str] = frozenset()  # Batch Operations functions a process job may invoke
    secrets: frozenset[str] = frozenset()  # Secrets Manager secrets a side's keys may come from (relay jobs)
    bypass_governance: bool = False  # set-retention jobs may send x-amz-bypass-governance-retention
    object_lock: bool = False  # the deployment granted PutObjectRetention/PutObjectLegalHold (-c allow_object_lock=true)
    acl: bool = False  # the deployment granted PutObjectAcl (-c allow_acl=true)
    version_delete: bool = False  # the deployment granted DeleteObjectVersion (-c allow_version_delete=true)
    reports: str = ""  # the deployment's report bucket: a retry's manifest is kept there (s3bulk retry)
    kms_keys: frozenset[str] = frozenset()  # KMS key ARNs the workers were granted (-c kms_keys)
    # (secret, endpoint) pairs: the endpoint each secret's keys are for (-c credentials_secrets=ARN=URL@SIDE), the only one
    # a side naming that secret may name; so a job cannot send a bucket's objects to, or fetch them from, a host the
    # deployer did not pair with those keys.
    endpoints: frozenset[tuple[str, str]] = frozenset()
    # (bucket, account) pairs: the account that must own each pinned bucket (-c bucket_owner). Every request of the
    # deployment's own store on it carries the account (ExpectedBucketOwner), and a job naming another is refused.
    owners: frozenset[tuple[str, str]] = frozenset()
    # (secret, side) pairs: the side of a job ("source", "destination") each secret's keys may serve, so keys a deployer
    # paired to pull from a partner cannot push this account's readable buckets to it.
    sides: frozenset[tuple[str, str]] = frozenset()

    @property
    def owner_of(self) -> dict[str, str]:
        return dict(self.owners)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AllowList:
        return cls(
            _split(env.get("S3BULK_READ_BUCKETS")),
            _split(env.get("S3BULK_WRITE_BUCKETS")),
            _split(env.get("S3BULK_DELETE_BUCKETS")),
            _split(env.get("S3BULK_PROCESS_LAMBDAS")),
            _split(env.get("S3BULK_CREDENTIALS_SECRETS")),
            env.get("S3BULK_ALLOW_BYPASS_GOVERNANCE", "").lower() == "true",
            object_lock=env.get("S3BULK_ALLOW_OBJECT_LOCK", "").lower() == "true",
            acl=env.get("S3BULK_ALLOW_ACL", "").lower() == "true",
            version_delete=env.get("S3BULK_ALLOW_VERSION_DELETE", "").lower() == "true",
            reports=env.get("S3BULK_REPORT_BUCKET", ""),
            kms_keys=_split(env.get("S3BULK_KMS_KEYS")),
            endpoints=paired(_split(env.get("S3BULK_SECRET_ENDPOINTS"))),
            owners=paired(_split(env.get("S3BULK_BUCKET_OWNERS")), urls=False),
            sides=sides(_split(env.get("S3BULK_SECRET_SIDES"))),
        )

    def check(self, job: Job) -> None:
        """Raise JobError naming the field, the bucket and how to allow it."""
        src = job.source.bucket
        if src not in self.read:
            raise JobError(_denied("job.source.bucket", src, "read", self.read))
        manifest = job.source.manifest
        retry_manifest = manifest is not None and bool(self.reports) and manifest.bucket == self.reports and is_retry_manifest(manifest.key)
        if manifest is not None and manifest.bucket not in self.read and not retry_manifest:
            raise JobError(_denied("job.source.manifest.bucket", manifest.bucket, "read", self.read))
        # abort-uploads deletes no object, but the parts it drops are gone for good: a delete bucket's, as a delete's.
        if job.operation in {"delete", "move", "abort-uploads", "rewind"} and src not in self.delete:  # rewind: delete markers
            raise JobError(_denied("job.source.bucket", src, "delete", self.delete))
        if job.operation in WRITES_SOURCE - {"move", "delete"} and src not in self.write:
            raise JobError(_denied("job.source.bucket", src, "write", self.write))
        for needed, granted, flag in self._opt_ins(job):
            if not granted:
                raise JobError(f"{needed}: this deployment was not granted it (least privilege); redeploy with -c {flag}=true")
        if job.retention is not None and job.retention.bypass_governance and not self.bypass_governance:
            raise JobError(
                "job.retention.bypass_governance: this deployment may not bypass governance retention; "
                "redeploy with -c allow_bypass_governance=true, or drop bypass_governance"
            )
        arn = job.process.batchops_lambda if job.process is not None else None
        if arn is not None and arn not in self.lambdas:
            shown = ", ".join(sorted(self.lambdas)) or "none"
            raise JobError(
                f"job.process.batchops_lambda: {arn!r} is not in this deployment's allow-list ({shown}); "
                f"redeploy with -c process_lambdas={','.join(sorted(self.lambdas | {arn}))}"
            )
        for name, side in (("source", job.source), ("destination", job.destination)):
            secret = side.credentials_secret if side is not None else None
            if secret is not None and secret not in self.secrets:
                shown = ", ".join(sorted(self.secrets)) or "none"
                raise JobError(
                    f"job.{name}.credentials_secret: {secret!r} is not in this deployment's allow-list ({shown}); "
                    f"redeploy with {secret}@{name} added to -c credentials_secrets"
                )
            if secret is not None and (secret, name) not in self.sides:
                serves = " and ".join(sorted(w for s, w in self.sides if s == secret))
                use = "read from, list and delete on" if name == "source" else "write to"
                said = (
                    f"lets {secret!r} serve the {serves} side of a job, not the {name}" if serves else f"names no side {secret!r} may serve"
                )
                raise JobError(
                    f"job.{name}.credentials_secret: this deployment {said}: its keys may not {use} that endpoint here; if they "
                    f"may, redeploy with -c credentials_secrets={secret}[=URL]@{'both' if serves else name}"
                )
            url = side.endpoint_url if side is not None else None
            if url is not None and (secret or "", endpoint_key(url)) not in self.endpoints:
                shown = ", ".join(sorted(e for s, e in self.endpoints if s == secret)) or "none"
                raise JobError(
                    f"job.{name}.endpoint_url: {url!r} is not the endpoint this deployment pairs with {secret!r} ({shown}); "
                    f"redeploy with -c credentials_secrets={secret}={endpoint_key(url)}@{name} if those keys are for it"
                )
        for label, key in (
            ("job.encryption.kms_key_id", job.encryption.kms_key_id if job.encryption is not None else None),
            ("job.destination.kms_key_id", job.destination.kms_key_id if job.destination is not None else None),
        ):
            # An alias names no key ARN that could be compared with the grant (KMS resolves it, and refuses if ungranted).
            if key is not None and "alias/" not in key and not any(k == key or k.endswith("/" + key) for k in self.kms_keys):
                shown = ", ".join(sorted(self.kms_keys)) or "none"
                raise JobError(
                    f"{label}: {key!r} is not among the keys this deployment's workers may use ({shown}); "
                    "redeploy with the key's ARN in -c kms_keys (and let the key's policy allow the WorkerRoleArn output)"
                )
        self._check_owners(job)
        dst = job.destination
        if dst is not None:
            needed, allowed = ("read", self.read | self.write) if job.operation == "verify" else ("write", self.write)
            if dst.bucket not in allowed:
                raise JobError(_denied("job.destination.bucket", dst.bucket, needed, allowed))
            if job.options.delete_extraneous and dst.bucket not in self.delete:
                raise JobError(_denied("job.destination.bucket", dst.bucket, "delete", self.delete))

    def _check_owners(self, job: Job) -> None:
        """A side's expected_owner may only repeat the account the deployment pins its bucket to (a side reached with
        other keys or at another endpoint is not the deployment's own bucket, and keeps its own)."""
        pins = self.owner_of
        for name, side in (("source", job.source), ("destination", job.destination)):
            if side is None or side.endpoint_url or side.credentials_secret:
                continue
            pinned = pins.get(side.bucket)
            if side.expected_owner and pinned and side.expected_owner != pinned:
                raise JobError(
                    f"job.{name}.expected_owner: {side.expected_owner!r}, but this deployment pins {side.bucket!r} to account "
                    f"{pinned} (-c bucket_owner); drop expected_owner, or redeploy with -c bucket_owner={side.bucket}={side.expected_owner}"
                )

    def _opt_ins(self, job: Job) -> list[tuple[str, bool, str]]:
        """(what the job asks, whether the deployment granted it, the flag that grants it) for each opt-in permission."""
        out = []
        if job.operation in {"set-retention", "set-legal-hold"}:
            out.append((f"job.operation {job.operation!r} writes Object Lock settings", self.object_lock, "allow_object_lock"))
        if job.operation == "set-acl":
            out.append(("job.operation 'set-acl' writes object ACLs", self.acl, "allow_acl"))
        if job.destination is not None and job.destination.acl is not None:
            out.append(("job.destination.acl writes an ACL on every copy", self.acl, "allow_acl"))
        if job.operation == "delete" and job.source.versions == "delete-markers":
            out.append(
                ("job.source.versions 'delete-markers' removes delete markers by version", self.version_delete, "allow_version_delete")
            )
        elif job.operation == "delete" and job.source.versions != "current":
            out.append(
                (
                    f"job.source.versions {job.source.versions!r} deletes object versions, for good",
                    self.version_delete,
                    "allow_version_delete",
                )
            )
        return out


def is_retry_manifest(key: str) -> bool:
    """A retry's manifest in the report bucket (reportbucket.retry_manifest_key): the one object there a job may read."""
    return key.startswith("jobs/") and key.endswith(f"/{RETRY_MANIFEST}") and key.count("/") == 2


# The name of a retry's manifest under its job's prefix in the report bucket.
RETRY_MANIFEST = "retry-manifest.csv"


def _denied(field: str, bucket: str, kind: str, allowed: frozenset[str]) -> str:
    shown = ", ".join(sorted(allowed)) or "none"
    wanted = ",".join(sorted(allowed | {bucket}))
    return f"{field}: {bucket!r} is not in this deployment's {kind} allow-list ({shown}); redeploy with -c {kind}_buckets={wanted}"
