"""Operation 'tag': one object's tag set replaced, merged with what it has, or named tags removed (read, then write)."""

from __future__ import annotations

from s3bulk.job import MAX_TAGS, Tagging
from s3bulk.store import ObjectStore, StoreError


def tag_object(store: ObjectStore, bucket: str, key: str, tagging: Tagging) -> bool:
    """Returns False (nothing written) when a merge or remove would not change the tags, so a rerun costs reads only."""
    tags = dict(tagging.tags)
    if tagging.mode == "remove":
        current = store.get_tags(bucket, key)
        kept = {k: v for k, v in current.items() if k not in set(tagging.keys)}
        if kept == current:
            return False
        store.put_tags(bucket, key, kept)
        return True
    if tagging.mode == "merge":
        current = store.get_tags(bucket, key)
        merged = {**current, **tags}
        if merged == current:
            return False
        if len(merged) > MAX_TAGS:
            raise StoreError(
                "BadRequest", f"merging gives {len(merged)} tags; S3 allows {MAX_TAGS} per object (use mode replace or fewer tags)", 400
            )
        tags = merged
    store.put_tags(bucket, key, tags)
    return True
