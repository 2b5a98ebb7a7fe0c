"""ListObjectVersions in S3's own order: botocore parses a page's versions and delete markers into two lists, and
a key's history must be read newest first, versions and markers interleaved, as S3 sent them."""

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
    """botocore parses a page's versions and delete markers into two lists; put them back in S3's order.

    Each list is in the page's order, so the page's sequence of entry kinds (keep_version_order)
    interleaves them exactly. Without it, they are sorted by key and LastModified, which cannot
    order a version and a marker of one key written in the same second (some servers send whole seconds).
    """
    if not markers or not versions:
        return versions or markers
    if len(kinds) == len(versions) + len(markers) and kinds.count("D") == len(markers):
        v, m = iter(versions), iter(markers)
        return [next(v) if kind == "V" else next(m) for kind in kinds]
    rank = {id(o): (o.key.encode("utf-8", "surrogatepass"), -(o.last_modified.timestamp() if o.last_modified else 0.0), not o.latest)
            for o in versions + markers}  # fmt: skip
    return sorted(versions + markers, key=lambda o: rank[id(o)])
