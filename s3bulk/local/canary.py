"""A canary (options.canary, `--canary N`): the job on a sample of objects first, each one checked, then stop.

The sample is spread over the whole key range: shards.plan_ranges cuts the selection into
N ranges of about equal size with a few probes, and the first selected object of each range
is taken (a manifest gives its first N selected rows). The engine works the sample like any
batch and the ledger remembers it, so `s3bulk run --resume` lists the whole selection and
skips exactly the sample's objects: every object is done once.

Each sampled object is then checked the way its operation can be: a copy is verified against
its source, a move by its destination and its source's absence, a delete by the object's
absence, a rewind by comparing the key with the version it had at as_of (or its absence), and
the in-place operations by reading back what they set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from botocore.httpchecksum import BaseChecksum, Crc32Checksum, CrtCrc32cChecksum, CrtCrc64NvmeChecksum, Sha1Checksum, Sha256Checksum

from s3bulk.errors import error_code, error_message
from s3bulk.job import Job
from s3bulk.ops.items import Item
from s3bulk.ops.verify import verify_object
from s3bulk.ops.versions import key_versions
from s3bulk.source.listing import lister
from s3bulk.source.manifest import ManifestReader
from s3bulk.source.selection import Selector, key_mapper
from s3bulk.source.shards import list_shard_page, plan_ranges
from s3bulk.store import ObjectInfo, ObjectStore, StoreError

# Pages read from each range when there are fewer ranges than objects to sample (a small selection: the
# planner cuts no range much shorter than ten pages), so the sample still spreads over it.
RANGE_PAGES = 20
MISSING = frozenset({"NoSuchKey", "NoSuchVersion", "404", "NotFound"})


def sample(job: Job, store: ObjectStore, n: int) -> list[Item]:
    """Up to n objects of the job's selection, one from each of n ranges of about equal size (fewer when it holds fewer)."""
    src, selector, mapper = job.source, Selector(job.source, job.operation), key_mapper(job)
    picked: list[Item] = []
    if src.manifest is not None:
        for row in ManifestReader(store, src).rows():
            if row.obj is not None and row.obj.key.startswith(src.prefix) and selector.matches(row.obj):
                picked.append(Item(row.obj, mapper(row.obj.key) if mapper else "", pos=row.pos))
                if len(picked) >= n:
                    break
        return picked
    listing = lister(store, src, job.operation)
    ranges = plan_ranges(listing, src.bucket, src.prefix, n)
    per = -(-n // len(ranges))  # a selection of few pages is cut into few ranges: several objects from each
    pages = 1 if per == 1 else RANGE_PAGES
    for shard in ranges:
        token: str | None = None
        found: list[ObjectInfo] = []
        for _ in range(pages):  # pick from the range's first pages, keys evenly apart
            page = list_shard_page(listing, src.bucket, src.prefix, shard, token)
            found += [o for o in page.objects if selector.matches(o)]
            if page.done or (per == 1 and found):
                break
            token = page.next_token
        take = min(per, len(found), n - len(picked))
        picked += [Item(o, mapper(o.key) if mapper else "") for o in (found[i * len(found) // take] for i in range(take))]
        if len(picked) >= n:
            break
    return picked


@dataclass
class CanaryCheck:
    """What the checks found: objects checked, and one line per object that did not come out as the job meant."""

    checked: int = 0
    problems: list[str] = field(default_factory=list)


def _gone(store: ObjectStore, bucket: str, key: str, version: str = "") -> bool:
    try:
        store.head_object(bucket, key, version_id=version)
    except StoreError as exc:
        if exc.code in MISSING:
            return True
        raise
    return False


def check_one(job: Job, store: ObjectStore, dst_store: ObjectStore, item: Item) -> str | None:
    """None when the object is as the job meant; else what is wrong. Operations with nothing to read back are taken as done."""
    op, bucket, obj, version = job.operation, job.source.bucket, item.obj, item.obj.version_id
    dst = job.destination
    if op == "copy" and dst is not None and job.source.versions == "all":
        src_history = key_versions(store, bucket, obj.key)
        dst_history = key_versions(dst_store, dst.bucket, item.dst_key)
        if len(src_history) != len(dst_history):
            return f"{len(dst_history)} of its {len(src_history)} versions are at s3://{dst.bucket}/{item.dst_key}"
        return None
    if op == "copy" and dst is not None:
        if job.options.if_exists == "skip" or version:  # a skip keeps what was there; a version is not the current object
            there = dst_store.head_object(dst.bucket, item.dst_key)
            src = store.head_object(bucket, obj.key, version_id=version)
            same = there.size == src.size and (job.options.if_exists == "skip" or there.etag == src.etag or "-" in src.etag)
            return None if same else f"the destination is {there.size} bytes ({there.etag}), the source {src.size} ({src.etag})"
        verify_object(store, bucket, obj, dst.bucket, item.dst_key, dst_store)
        return None
    if op == "move" and dst is not None:
        head = dst_store.head_object(dst.bucket, item.dst_key)
        if obj.size >= 0 and head.size != obj.size:
            return f"the destination is {head.size} bytes, the source was {obj.size}"
        return None if _gone(store, bucket, obj.key) else "the source is still there"
    if op == "delete":
        return None if _gone(store, bucket, obj.key, version) else "it is still there"
    if op == "rewind":  # the key is what it was at as_of: that version's bytes current, or no object at all
        if not version:
            return None if _gone(store, bucket, obj.key) else "it is there, and it did not exist at as_of"
        verify_object(store, bucket, obj, bucket, obj.key)  # that version against the current object, as verify compares
        return None
    if op == "tag" and job.tagging is not None:
        tags, t = store.get_tags(bucket, obj.key, version_id=version), job.tagging
        ok = {
            "replace": tags == dict(t.tags),
            "merge": all(tags.get(k) == v for k, v in t.tags.items()),
            "remove": not set(t.keys) & set(tags),
        }[t.mode]
        return None if ok else f"its tags are {tags}"
    if op == "add-checksum":
        algorithm = job.checksum_algorithm or "CRC64NVME"
        checksum = store.head_object(bucket, obj.key).checksum
        if checksum.split(":", 1)[0] != algorithm:
            return f"it has no {algorithm} checksum (it has {checksum or 'none'})"
        return _stored_checksum_wrong(store, bucket, obj.key, checksum)
    if op == "set-storage-class":
        now = store.head_object(bucket, obj.key).storage_class or "STANDARD"
        return None if now == job.storage_class else f"its storage class is {now}"
    if op == "set-legal-hold":
        hold = store.get_legal_hold(bucket, obj.key, version_id=version)
        return None if hold == job.legal_hold else f"its legal hold is {hold}"
    if op == "set-retention" and job.retention is not None:
        kept = store.head_object(bucket, obj.key, version_id=version).retention
        want = (job.retention.mode, job.retention.until)
        return None if kept is not None and _same_retention(kept, want) else f"its retention is {kept}"
    return None  # restore (started), set-acl (a canned ACL is not read back as one), verify and process (their own outcome)


# The checksums a canary computes from the bytes to compare with the one the server stored (botocore's, the CRCs of
# CRC32C and CRC64NVME from awscrt).
_COMPUTE: dict[str, Callable[[], BaseChecksum]] = {
    "CRC32": Crc32Checksum,
    "CRC32C": CrtCrc32cChecksum,
    "CRC64NVME": CrtCrc64NvmeChecksum,
    "SHA1": Sha1Checksum,
    "SHA256": Sha256Checksum,
}


def _stored_checksum_wrong(store: ObjectStore, bucket: str, key: str, stored: str) -> str | None:
    """Read the object and compute its checksum: a server may store a wrong one (versitygw kept all zeros), and a
    later verify that trusts it would pass different bytes. A composite (multipart) checksum is a checksum of its
    parts' checksums, which the whole body cannot give: only its algorithm is checked."""
    algorithm, value = stored.split(":", 1)
    if "-" in value:
        return None
    computing = _COMPUTE[algorithm]()
    for chunk in store.read_object(bucket, key):
        computing.update(chunk)
    computed = computing.b64digest()
    return None if computed == value else f"the server stored {algorithm} {value}, but its bytes give {computed}"


def _same_retention(kept: tuple[str, datetime], want: tuple[str, datetime]) -> bool:
    """S3 keeps retain-until dates to the second."""
    return kept[0] == want[0] and abs((kept[1] - want[1]).total_seconds()) < 1


def check(job: Job, store: ObjectStore, dst_store: ObjectStore, items: list[Item], failed: set[str]) -> CanaryCheck:
    """Check every sampled object that did not fail (a failure is already reported with its key and code)."""
    out = CanaryCheck()
    for item in items:
        if item.obj.key in failed:
            continue
        out.checked += 1
        try:
            problem = check_one(job, store, dst_store, item)
        except StoreError as exc:
            problem = f"{error_code(exc)}: {error_message(exc)}"
        if problem is not None:
            out.problems.append(f"{item.obj.key}: {problem}")
    return out
