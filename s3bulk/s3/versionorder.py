"""ListObjectVersions in S3's own order: botocore parses a page's versions and delete markers into two lists, and
a key's history must be read newest first, versions and markers interleaved; and not every server sends that order."""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree

from s3bulk.store import ObjectInfo

KINDS = "S3bulkEntryKinds"


def _entry_kinds(response_dict: dict[str, Any], customized_response_dict: dict[str, Any], **kwargs: Any) -> None:
    """Record the order of a ListObjectVersions page's entries ("V" version, "D" delete marker), which botocore's parse loses."""
    if int(response_dict.get("status_code", 200)) >= 300:
        return
    try:
        root = ElementTree.fromstring(response_dict.get("body") or b"")
    except ElementTree.ParseError:
        return
    tags = (c.tag.rsplit("}", 1)[-1] for c in root)
    customized_response_dict[KINDS] = "".join("V" if t == "Version" else "D" for t in tags if t in ("Version", "DeleteMarker"))


def keep_version_order(client: Any) -> None:
    """Have the client's ListObjectVersions responses carry their entries' order (merge_versions puts them back in it)."""
    client.meta.events.register("before-parse.s3.ListObjectVersions", _entry_kinds, unique_id="s3bulk-version-order")


def merge_versions(versions: list[ObjectInfo], markers: list[ObjectInfo], kinds: str = "") -> list[ObjectInfo]:
    """botocore parses a page's versions and delete markers into two lists; put them back in the page's order (the
    page's sequence of entry kinds, keep_version_order, interleaves them exactly), then in S3's (in_s3s_order)."""
    if markers and versions and len(kinds) == len(versions) + len(markers) and kinds.count("D") == len(markers):
        v, m = iter(versions), iter(markers)
        return in_s3s_order([next(v) if kind == "V" else next(m) for kind in kinds])
    return in_s3s_order(versions + markers)


def in_s3s_order(entries: list[ObjectInfo]) -> list[ObjectInfo]:
    """A ListObjectVersions page in S3's documented order, whatever order the server sent it in: by key (UTF-8 bytes),
    each key's entries newest first by LastModified.

    A point-in-time answer must not depend on a server following S3's order (moto sends all versions, then all delete
    markers). Time decides; within one timestamp (S3 and moto send whole seconds) the entry marked latest comes first,
    and the server's own order breaks the remaining ties (the sort is stable).
    """
    if len(entries) < 2:
        return entries
    return sorted(entries, key=lambda o: (o.key.encode("utf-8", "surrogatepass"), -_seconds(o), not o.latest))


def _seconds(entry: ObjectInfo) -> float:
    return entry.last_modified.timestamp() if entry.last_modified is not None else float("-inf")
