"""Which listed objects a job touches, and where each one lands.

Keys are opaque: nothing here normalises `//`, `./`, `%`, `+` or unicode.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

from s3bulk.job import Destination, Job, Source
from s3bulk.store import UNKNOWN_SIZE, ObjectInfo


class Selector:
    """Applies source filters; globs see the key relative to source.prefix, `*` crosses `/`."""

    def __init__(self, source: Source, operation: str = "") -> None:
        self.prefix = source.prefix
        self._versions = source.versions if isinstance(source.versions, str) and source.versions != "current" else None
        self._operation = operation
        self._include = tuple(source.include)
        self._exclude = tuple(source.exclude)
        self._min = source.min_size
        self._max = source.max_size
        self._after = source.modified_after
        self._before = source.modified_before

    def relative(self, key: str) -> str:
        return key[len(self.prefix) :]

    def matches(self, obj: ObjectInfo) -> bool:
        if self._versions is not None and not version_selected(self._versions, self._operation, obj):
            return False
        # An unknown size (a CSV manifest row) meets no size filter; jobs that set one cannot read such rows.
        if obj.size != UNKNOWN_SIZE and (obj.size < self._min or (self._max is not None and obj.size > self._max)):
            return False
        if self._after is not None or self._before is not None:
            stamp = obj.last_modified
            if stamp is None:
                return False
            if self._after is not None and stamp < self._after:
                return False
            if self._before is not None and stamp >= self._before:
                return False
        return self.key_matches(obj.key)

    def key_matches(self, key: str) -> bool:
        """The include/exclude globs alone: all a key can be judged by when its object is absent."""
        if self._include or self._exclude:
            rel = self.relative(key)
            if self._include and not any(fnmatchcase(rel, p) for p in self._include):
                return False
            if any(fnmatchcase(rel, p) for p in self._exclude):
                return False
        return True


def version_selected(versions: str, operation: str, obj: ObjectInfo) -> bool:
    """Which entries of a ListObjectVersions listing a job acts on (the filters then judge them like objects).

    delete takes every version and delete marker listed (noncurrent: all but each key's current one);
    copy takes each key once, at its newest entry, and copies the key's whole history from there
    (ops/versions.py); the in-place operations take versions, never delete markers, which have no object;
    delete-markers (undelete) takes the delete markers that are their key's newest version.
    """
    if versions == "delete-markers":  # undelete: a key whose newest version is a delete marker
        return obj.delete_marker and obj.latest
    if versions == "noncurrent" and obj.latest:
        return False
    if operation == "delete":
        return True
    if operation == "copy":
        return obj.latest
    return not obj.delete_marker


class KeyMapper:
    """destination key = destination.prefix + (source key without source.prefix)."""

    def __init__(self, source: Source, destination: Destination) -> None:
        self._strip = len(source.prefix)
        self._prefix = destination.prefix

    def __call__(self, key: str) -> str:
        return self._prefix + key[self._strip :]

    def source_of(self, dst_key: str, source_prefix: str) -> str:
        """The source key a destination key would have come from."""
        return source_prefix + dst_key[len(self._prefix) :]


def folder_key(src_key: str, dst_key: str) -> str | None:
    """Why an object may not be written at its mapped key, else None: a key that is empty or ends in `/` where its source
    key does not is a folder's name (SeaweedFS keeps no bytes there, versitygw refuses it), so the bytes would be lost.

    It happens when source.prefix is one whole key (a raw_prefix): `single/precious.dat` under destination.prefix
    `archive/` maps to `archive/`. The fix is a destination.prefix that names the object, as `aws s3 mv` would name it.
    """
    if src_key.endswith("/") or (dst_key and not dst_key.endswith("/")):
        return None
    base = src_key.rsplit("/", 1)[-1]
    return (
        f"source key {src_key!r} maps to the destination key {dst_key!r}, a folder's name, since source.prefix is the "
        f"whole key; set destination.prefix to {dst_key + base!r} with destination.raw_prefix: true"
    )


# The operations whose objects have a destination key; process writes where its code says.
MAPS_KEYS = frozenset({"copy", "move", "verify"})


def key_mapper(job: Job) -> KeyMapper | None:
    """The job's source-to-destination key rule, or None when its objects have no destination key."""
    if job.destination is None or job.operation not in MAPS_KEYS:
        return None
    return KeyMapper(job.source, job.destination)


# The operations options.max_delete guards: what a delete or a move removes, and the delete markers a rewind places.
GUARDED_OPS = frozenset({"delete", "move", "rewind"})


def as_it_was(obj: ObjectInfo) -> bool:
    """A rewind's entry for a key already as it was at as_of: that version current, or absent then and now."""
    return obj.replaces is not None and obj.version_id == obj.replaces


def hides(obj: ObjectInfo) -> bool:
    """A rewind's entry for a key it hides under a delete marker: no version at as_of, and not absent now."""
    return not obj.version_id and not as_it_was(obj)


def deletes(operation: str, objects: Iterable[ObjectInfo]) -> int:
    """How many of these selected objects the operation deletes: every one for delete and move; for a rewind, the keys
    it hides under a delete marker. A key a rewind gives back an older version, or leaves as it is, is no delete."""
    if operation == "rewind":
        return sum(1 for o in objects if hides(o))
    return sum(1 for _ in objects) if operation in GUARDED_OPS else 0
