"""Whether a copy holds its source's bytes: the one rule every copy, move and relay applies, on both runtimes.

A server's 200 says that a copy happened, not what it copied: one CopyObject copied a same-size neighbour
(`dc/a%2Bb.bin` for `dc/a+b.bin`), and a move that checked only the size deleted the real source (issue 50).
So a copy is confirmed by content identity, from the cheapest evidence that decides:

1. the copy's own answer: its ETag equal to the listed one, or to the source's HEAD where one was read already
   (no request: the common case on S3 and its peers);
2. otherwise a HEAD of the copy (and of the source, unless the caller already read it), then
   equal ETags, or equal full-object checksums of one algorithm (ops/../source/sync.checksums_match);
3. a contradiction fails the object (COPY_MISMATCH; a move keeps its source): another size, other full-object
   checksums, or two single-part ETags that differ where both are content MD5s (neither object under SSE-KMS);
4. only where nothing decides (multipart or KMS ETags, no comparable checksums) does the size confirm it, and the
   object is counted (report.SIZE_ONLY) so the report says how many copies nothing but their size confirmed.

Multipart copies are covered by 1 and 2 as well: a copy made in the source's own part layout has the ETag
expected from the parts, which is the source's.
"""

from __future__ import annotations

from s3bulk.ops.copies import CopyDone
from s3bulk.source.sync import checksums_match
from s3bulk.store import ObjectHead, ObjectInfo, ObjectStore, StoreError

# The per-object error of a copy whose result contradicts its source's identity.
COPY_MISMATCH = "CopyContentMismatch"
# A copy of another size than its source (the code moves always used).
SIZE_MISMATCH = "CopyNotConfirmed"
# How a copy was confirmed, as the per-key log's result says it; BY_SIZE is also counted (report.SIZE_ONLY).
BY_ETAG = ""  # the norm: the log says nothing
BY_CHECKSUM = "confirmed by checksum"
BY_SIZE = "confirmed by size only"


def content_md5(head: ObjectHead) -> bool:
    """Whether an object's ETag is the MD5 of its bytes: single-part and not under SSE-KMS (whose ETags are not)."""
    return bool(head.etag) and "-" not in head.etag and not head.encrypted_kms


def confirm_copy(
    src_store: ObjectStore,
    dst_store: ObjectStore,
    src_bucket: str,
    obj: ObjectInfo,
    dst_bucket: str,
    dst_key: str,
    done: CopyDone,
    source: ObjectHead | None = None,
) -> str:
    """How the copy at dst_key was confirmed to hold `obj` (BY_ETAG, BY_CHECKSUM or BY_SIZE); raises StoreError
    (COPY_MISMATCH or SIZE_MISMATCH) when it holds something else. No request when the copy's ETag is the listed one;
    one HEAD of the source where nothing listed an ETag and the copy's equals the source's; else one HEAD of the copy
    and one of the source (none when it was read already: `source`, or the copy's `done.source`)."""
    known = source or done.source
    listed = obj.etag or (known.etag if known is not None else "")  # a listing without ETags: the HEAD's
    if listed and done.etag == listed:
        return BY_ETAG
    if not listed and known is None:  # nothing listed it (an inventory without ETags): the source's own HEAD may decide
        known = src_store.head_object(src_bucket, obj.key, version_id=obj.version_id)
        if known.etag and done.etag == known.etag:
            return BY_ETAG  # one HEAD, not two
    dst = dst_store.head_object(dst_bucket, dst_key)
    return judge(known or src_store.head_object(src_bucket, obj.key, version_id=obj.version_id), dst)


def judge(src: ObjectHead, dst: ObjectHead) -> str:
    """The rule on two HEADs: what confirms `dst` as a copy of `src`, or the StoreError saying it is not one."""
    if src.size != dst.size:
        raise StoreError(SIZE_MISMATCH, f"the copy holds {dst.size} bytes, the source {src.size}")
    if src.etag and src.etag == dst.etag:
        return BY_ETAG
    same = checksums_match(src, dst)
    if same:
        return BY_CHECKSUM
    if same is False:
        raise StoreError(COPY_MISMATCH, f"the copy's checksum {dst.checksum} is not the source's {src.checksum}")
    if content_md5(src) and content_md5(dst):
        raise StoreError(COPY_MISMATCH, f"the copy's ETag {dst.etag} is not the source's {src.etag}, and both are content MD5s")
    return BY_SIZE
