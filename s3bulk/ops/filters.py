"""source.tags and source.content_type: filters on what a listing does not return, judged per object by the worker.

A listing gives key, size, date, ETag and class; an object's tags take a GetObjectTagging and its Content-Type a
HEAD. So these filters run in the worker's lanes, just before the operation (parallel and bounded like it), never in
the lister, which must stay one request per 1,000 keys. Each object costs only the calls its filters need, the
cheaper-to-decide one first and the second not made once the first has left the object out, and the HEAD is handed
to the operation so one that reads it anyway (a multipart or relayed copy, an in-place copy, a manifest row's size)
makes no second one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from s3bulk.job import Source
from s3bulk.store import ObjectHead, ObjectInfo, ObjectStore

ANY_VALUE = "*"  # as a tag filter's value: the tag with any value (S3 allows no "*" in tag values, so none is meant)


def media_type(content_type: str | None) -> str:
    """The media type a Content-Type names, lowercased, without its parameters ("" for none)."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def type_matches(content_type: str | None, patterns: tuple[str, ...]) -> bool:
    """Whether a Content-Type is one of `patterns` (type/subtype, or type/* for the family), as MIME compares them:
    case-insensitive, parameters ignored. An object with no Content-Type matches none."""
    found = media_type(content_type)
    if not found:
        return False
    family = found.split("/", 1)[0] + "/*"
    return any(p in (found, family) for p in patterns)


def tags_match(tags: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    """Whether an object's tags hold every wanted key with exactly its value ("*": any value). Case-sensitive, as S3's."""
    return all(k in tags and (v == ANY_VALUE or tags[k] == v) for k, v in wanted.items())


@dataclass(frozen=True, slots=True)
class Verdict:
    """A filter's answer for one object: `reason` says why it was left out ("" when it matched); `head` is the HEAD
    read to judge it, for the operation to use instead of its own."""

    reason: str = ""
    head: ObjectHead | None = None

    @property
    def matches(self) -> bool:
        return not self.reason


class ObjectFilter:
    """The job's tags and content_type filters; `judge` makes the calls, `None` from `of` when the job has neither."""

    def __init__(self, source: Source) -> None:
        self.bucket = source.bucket
        self.tags: dict[str, str] = dict(source.tags or {})
        patterns = [source.content_type] if isinstance(source.content_type, str) else list(source.content_type or ())
        self.types = tuple(p.lower() for p in patterns)

    @classmethod
    def of(cls, source: Source) -> ObjectFilter | None:
        return cls(source) if source.tags is not None or source.content_type is not None else None

    def judge(self, store: ObjectStore, obj: ObjectInfo, *, head_first: bool = False) -> Verdict:
        """Read what the filters need and decide. A delete marker has neither tags nor a type: left out, no request.
        `head_first`: the operation HEADs the object anyway, so the HEAD (which it reuses) decides first and the tags
        are read only for an object it kept; otherwise the tags first (GetObjectTagging is the call a tag filter
        cannot do without), then the HEAD. Errors (a 403, a throttle) are the caller's: the object fails or is retried.
        """
        if obj.delete_marker:
            return Verdict("filtered out: a delete marker has no tags or content type")
        head: ObjectHead | None = None
        order = ("type", "tags") if head_first else ("tags", "type")
        for check in order:
            if check == "type" and self.types:
                head = store.head_object(self.bucket, obj.key, version_id=obj.version_id)
                if not type_matches(head.content_type, self.types):
                    found = media_type(head.content_type) or "none"
                    return Verdict(f"filtered out: content type {found}", head)
            elif check == "tags" and self.tags:
                tags = store.get_tags(self.bucket, obj.key, version_id=obj.version_id)
                if not tags_match(tags, self.tags):
                    missing = next(k for k, v in self.tags.items() if k not in tags or (v != ANY_VALUE and tags[k] != v))
                    shown = f"{tags[missing]!r}" if missing in tags else "absent"
                    return Verdict(f"filtered out: tag {missing!r} is {shown}", head)
        return Verdict("", head)
