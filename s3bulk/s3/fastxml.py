"""The fast path's reading of S3's XML answers, as botocore reads them: elements matched by their local name whatever
their namespace, and an answer that is not the call's result an error, never an empty page or an empty error list.

A server answering `<ListBucketResult xmlns="another">` read as an empty listing when elements were matched only with
S3's namespace or none: every job listed nothing and exited 0, and per-key DeleteObjects errors read as deleted.
tests/unit/test_fastpath_xml.py feeds these readers and botocore's parser the same bodies and compares what they read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from xml.etree import ElementTree

from s3bulk.s3.keytext import Unparseable, legible
from s3bulk.store import StoreError

UNRECOGNISED = "UnrecognisedAnswer"

# Each call's result: its root element, the children S3 always sends in it, and its repeated entries.
RESULTS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "ListObjectsV2": ("ListBucketResult", ("IsTruncated",), ("Contents",)),
    "ListObjectVersions": ("ListVersionsResult", ("IsTruncated",), ("Version", "DeleteMarker")),
    "DeleteObjects": ("DeleteResult", (), ("Error", "Deleted")),
    "CopyObject": ("CopyObjectResult", (), ()),
}


# Tag -> local name: a page repeats a few tags thousands of times, and a dict read is cheaper than splitting each.
_LOCAL: dict[str, str] = {}
_LOCAL_MAX = 512  # a server inventing tags cannot grow it past this

# An entry's fields by local name; None (or absent) where the answer has no such element.
Fields = Mapping[str, str | None]
# The fields read from each kind of entry.
ENTRY_FIELDS: dict[str, tuple[str, ...]] = {
    "Contents": ("Key", "Size", "ETag", "LastModified", "StorageClass"),
    "Version": ("Key", "VersionId", "IsLatest", "LastModified", "ETag", "Size", "StorageClass"),
    "DeleteMarker": ("Key", "VersionId", "IsLatest", "LastModified"),
    "Error": ("Key", "VersionId", "Code", "Message"),
    "Deleted": ("Key", "VersionId"),
}


def local(tag: str) -> str:
    """An element's name without its namespace (`{ns}Key` -> `Key`), as botocore matches names."""
    name = _LOCAL.get(tag)
    if name is None:
        name = tag.rpartition("}")[2]
        if len(_LOCAL) < _LOCAL_MAX:
            _LOCAL[tag] = name
    return name


def fields(element: ElementTree.Element) -> dict[str, str]:
    """Each child's text by local name (the first of a name wins, as findtext's does)."""
    out: dict[str, str] = {}
    known = _LOCAL
    for child in element:
        tag = child.tag
        name = known.get(tag) or local(tag)
        if name not in out:
            out[name] = child.text or ""
    return out


@dataclass(frozen=True, slots=True)
class Answer:
    """One call's result: its single elements' text, its entries (kind, fields) in the answer's order, and its
    CommonPrefixes."""

    top: dict[str, str]
    entries: list[tuple[str, Fields]]
    prefixes: list[str]

    def keys(self) -> list[str]:
        """Every entry's key, then every common prefix, as sent: what an encoding claim is checked on."""
        return [e.get("Key") or "" for _, e in self.entries] + self.prefixes


def unrecognised(call: str, why: str, status: int | None = 500) -> StoreError:
    """Retried like a body cut in transit (status 500), and stops the call when it persists (status None)."""
    root = RESULTS[call][0]
    return StoreError(
        UNRECOGNISED,
        f"the server answered {call} with {why}, not S3's <{root}>: s3bulk cannot read it as the call's result, so "
        "it stopped rather than take it for an empty one",
        status,
    )


def read(call: str, body: bytes, *, tolerant: bool = False) -> Answer:
    """The call's result in `body`; `tolerant` reads a character XML cannot carry as U+FFFD (keytext.legible).

    ParseError for a body that is not XML (cut off in transit; Unparseable when `tolerant`); UnrecognisedAnswer for XML that is not this call's
    result: another root element, or without an element S3 always sends.
    """
    try:
        root = ElementTree.fromstring(legible(body) if tolerant else body)
    except ElementTree.ParseError:
        if tolerant:
            raise Unparseable from None  # not retried: EncodingClaims asks once more itself
        raise
    name, required, kinds = RESULTS[call]
    if local(root.tag) != name:
        raise unrecognised(call, f"<{root.tag}>")
    ns = _one_namespace(root, body)
    top, entries, prefixes = _by_local_name(root, kinds) if ns is None else _in_namespace(root, kinds, ns)
    missing = [r for r in required if r not in top]
    if missing:
        raise unrecognised(call, f"a <{name}> without {', '.join(f'<{m}>' for m in missing)}")
    return Answer(top, entries, prefixes)


def _one_namespace(root: ElementTree.Element, body: bytes) -> str | None:
    """The one namespace every element of the answer is in, as ElementTree writes it ("{uri}", "" for none), or None
    when they may differ: what every S3 answer is, read with C's findtext at the speed of the element helpers it
    replaced. A declaration anywhere else (or "xmlns" in a key) takes the general path."""
    count = body.count(b"xmlns")
    if count == 0:
        return ""
    if count == 1 and b"xmlns:" not in body and root.tag.startswith("{"):
        return root.tag[: root.tag.index("}") + 1]
    return None


def _in_namespace(root: ElementTree.Element, kinds: tuple[str, ...], ns: str) -> tuple[dict[str, str], list[tuple[str, Fields]], list[str]]:
    """An answer whose elements are all in namespace `ns`: each entry's own fields read with findtext."""
    wanted = {kind: [(f, ns + f) for f in ENTRY_FIELDS[kind]] for kind in kinds}
    common, prefix = ns + "CommonPrefixes", ns + "Prefix"
    cut = len(ns)
    top: dict[str, str] = {}
    entries: list[tuple[str, Fields]] = []
    prefixes: list[str] = []
    for child in root:
        tag = child.tag
        if tag == common:
            prefixes.append(child.findtext(prefix) or "")
            continue
        tag = tag[cut:]
        pairs = wanted.get(tag)
        if pairs is not None:
            find = child.findtext
            entries.append((tag, {f: find(q) for f, q in pairs}))
        elif tag not in top:
            top[tag] = child.text or ""
    return top, entries, prefixes


def _by_local_name(root: ElementTree.Element, kinds: tuple[str, ...]) -> tuple[dict[str, str], list[tuple[str, Fields]], list[str]]:
    """Any answer, each element matched by its local name whatever its namespace (as botocore does)."""
    top: dict[str, str] = {}
    entries: list[tuple[str, Fields]] = []
    prefixes: list[str] = []
    for child in root:
        tag = _LOCAL.get(child.tag) or local(child.tag)
        if tag in kinds:
            entries.append((tag, fields(child)))
        elif tag == "CommonPrefixes":
            prefixes.append(fields(child).get("Prefix", ""))
        elif tag not in top:
            top[tag] = child.text or ""
    return top, entries, prefixes


def error_of(body: bytes) -> tuple[str, str] | None:
    """Code and message of an S3 <Error> document in any namespace (including CopyObject's 200-with-error)."""
    if b"Error" not in body:
        return None
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError:
        return ("InternalError", "unparseable error response") if b"<Error" in body else None
    if local(root.tag) != "Error":
        return None
    f = fields(root)
    return f.get("Code") or "Unknown", f.get("Message", "")
