"""Operation 'tag': one object's tag set replaced, merged with what it has, or named tags removed (read, then write)."""

from __future__ import annotations

from dataclasses import dataclass

from s3bulk.job import MAX_TAGS, Tagging
from s3bulk.store import ObjectStore, StoreError


@dataclass(frozen=True, slots=True)
class Tagged:
    """What tag_object did: `changed` False wrote nothing; `before` is the tag set it replaced (None when not read)."""

    changed: bool
    before: dict[str, str] | None
    after: dict[str, str]


def tag_object(store: ObjectStore, bucket: str, key: str, tagging: Tagging, *, journal: bool = False, version_id: str = "") -> Tagged:
    """A merge or remove that would not change the tags writes nothing, so a rerun costs reads only.

    `journal` reads the tags a replace overwrites too (one GetObjectTagging), so the per-key
    log can say what `s3bulk undo` restores; merge and remove read them anyway.
    """
    tags = dict(tagging.tags)
    current = store.get_tags(bucket, key, version_id=version_id) if journal or tagging.mode != "replace" else None
    if tagging.mode == "remove":
        assert current is not None
        tags = {k: v for k, v in current.items() if k not in set(tagging.keys)}
    elif tagging.mode == "merge":
        assert current is not None
        tags = {**current, **tags}
        if len(tags) > MAX_TAGS and tags != current:
            raise StoreError(
                "BadRequest", f"merging gives {len(tags)} tags; S3 allows {MAX_TAGS} per object (use mode replace or fewer tags)", 400
            )
    if tags == current:  # nothing to change (a rerun, or a redo after a crash): no write, and nothing for undo
        return Tagged(False, current, tags)
    store.put_tags(bucket, key, tags, version_id=version_id)
    return Tagged(True, current, tags)
