"""An HTTP proxy in front of an S3-compatible server that answers the way other S3 implementations differ from S3.

s3bulk must never take a server's word where it can check it (issue 50). Each quirk here is one way a real server
was seen to differ, switchable on its own, so the suite can run the CLI through any combination and compare the
result with what plain boto3 sees on the server behind the proxy:

- `namespace`: XML answers in another namespace (`<ListBucketResult xmlns="...other...">`).
- `raw_keys_claim_url`: a listing asked with `encoding-type=url` is forwarded without it, and the answer claims
  `<EncodingType>url</EncodingType>` over the raw keys, so a client decodes keys that were never encoded.
- `omit_prefixes`: a delimiter listing leaves out each CommonPrefixes entry under which no object sits directly
  (`dp/2024/` for `dp/2024/01/01/x.log`): the proxy asks the upstream once per prefix to tell.
- `no_etags`: listing entries carry no ETag.
- `unsorted`: a listing page's Contents come in a shuffled order.
- `copy_neighbour`: CopyObject and UploadPartCopy copy another key (`{asked source key: key copied}`).
- `page_keys`: listings send at most this many keys a page, whatever max-keys asked (S3 may send fewer), so a
  handful of keys make the several pages a parallel listing needs before it cuts ranges.
- `not_implemented`: the named operations (`refined_operation`'s names, e.g. GetObjectTagging, PutObjectAcl, and
  ConditionalWrite: a PUT or POST with If-None-Match or If-Match) are answered 501 NotImplemented.

Signatures: the request goes upstream with its Host header and signed headers unchanged, so SigV4 still holds on a
verifying server, except where a quirk changes what was signed (raw_keys_claim_url drops a query parameter,
page_keys lowers one, copy_neighbour rewrites x-amz-copy-source) and where omit_prefixes probes the upstream with unsigned requests. The
servers the suite starts do not verify: moto server accepts any signature (and none), and SeaweedFS started without
identities (`SeaweedServer()` with no `keys`) accepts anonymous requests; tests/integration/test_quirk_proxy.py
proves each quirk on both. Against a verifying server those four quirks would be refused, not silently mis-served.
Buckets are read from the path: use path-style addressing, as every client of a loopback endpoint does.
"""

from __future__ import annotations

import random
import re
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qsl, quote, unquote, unquote_plus, urlsplit
from xml.sax.saxutils import unescape

from s3bulk.testing.faultproxy import ProxyServer, error_body, operation

S3_NAMESPACE = "http://s3.amazonaws.com/doc/2006-03-01/"
OTHER_NAMESPACE = "http://example.invalid/s3-compatible/2021/"
QUIRKS = (
    "namespace",
    "raw_keys_claim_url",
    "omit_prefixes",
    "no_etags",
    "unsorted",
    "copy_neighbour",
    "not_implemented",
    "page_keys",
)
LISTINGS = frozenset({"ListObjectsV2", "ListObjects", "ListObjectVersions"})
ENCODED_LISTINGS = LISTINGS | {"ListMultipartUploads"}  # what raw_keys_claim_url answers: every listing s3bulk asks to encode
# object subresource -> the operation's name after Get/Put/Delete
_OBJECT_SUBRESOURCES = {
    "acl": "ObjectAcl",
    "tagging": "ObjectTagging",
    "attributes": "ObjectAttributes",
    "retention": "ObjectRetention",
    "legal-hold": "ObjectLegalHold",
}
_BUCKET_SUBRESOURCES = {"versions": "ListObjectVersions", "uploads": "ListMultipartUploads", "location": "GetBucketLocation"}
_VERB = {"GET": "Get", "PUT": "Put", "DELETE": "Delete"}


@dataclass
class Quirks:
    """Which quirks are on; all off is a transparent proxy."""

    namespace: bool = False
    raw_keys_claim_url: bool = False
    omit_prefixes: bool = False
    no_etags: bool = False
    unsorted: bool = False
    copy_neighbour: Mapping[str, str] = field(default_factory=dict)  # source key asked -> source key copied
    not_implemented: frozenset[str] = frozenset()  # refined_operation names answered 501
    page_keys: int | None = None  # at most this many keys (and common prefixes) a listing page
    other_namespace: str = OTHER_NAMESPACE
    seed: int = 0  # of unsorted's shuffles


@dataclass
class QuirkStats:
    requests: Counter[str] = field(default_factory=Counter)  # by refined operation
    applied: Counter[str] = field(default_factory=Counter)  # by quirk: answers (or requests) it changed
    lock: threading.Lock = field(default_factory=threading.Lock)


def refined_operation(method: str, target: str, headers: Mapping[str, str]) -> str:
    """operation() with the subresources it folds into GetObject/ListObjects told apart, and conditional writes named
    (`headers` with lower-case names)."""
    split = urlsplit(target)
    names = {name for name, _ in parse_qsl(split.query, keep_blank_values=True)}
    has_key = len([s for s in split.path.split("/") if s]) > 1
    if method in {"PUT", "POST"} and ("if-none-match" in headers or "if-match" in headers):
        return "ConditionalWrite"
    if has_key and method in _VERB:
        for sub, name in _OBJECT_SUBRESOURCES.items():
            if sub in names:
                return _VERB[method] + name
    if has_key and method == "POST" and "restore" in names:
        return "RestoreObject"
    if not has_key and method == "GET" and "list-type" not in names:
        for sub, name in _BUCKET_SUBRESOURCES.items():
            if sub in names:
                return name
    return operation(method, target, dict(headers))


def _without_param(target: str, name: str) -> str:
    """The request target with one query parameter left out, the rest byte for byte."""
    path, _, query = target.partition("?")
    kept = [part for part in query.split("&") if part and unquote(part.split("=", 1)[0]) != name]
    return path + ("?" + "&".join(kept) if kept else "")


def _with_param(target: str, name: str, value: str) -> str:
    """The request target with one query parameter set to `value` (added last where it was absent)."""
    rest = _without_param(target, name)
    return f"{rest}{'&' if '?' in rest else '?'}{name}={quote(value, safe='')}"


def _param(target: str, name: str) -> str | None:
    for key, value in parse_qsl(urlsplit(target).query, keep_blank_values=True):
        if key == name:
            return value
    return None


def _text(xml: str, tag: str) -> str | None:
    found = re.search(rf"<{tag}>([^<]*)</{tag}>", xml)
    return unescape(found.group(1)) if found else None


_ROOT = re.compile(r"<(?!\?)([A-Za-z][\w.-]*)([^>]*?)(/?)>")
_XMLNS = re.compile(r"""\sxmlns=(["'])[^"']*\1""")


def in_namespace(xml: str, uri: str, add: bool) -> str:
    """The root element's default namespace set to `uri` (added where it declares none only if `add`)."""
    root = _ROOT.search(xml)
    if root is None or (not add and not _XMLNS.search(root.group(2))):
        return xml
    attrs = _XMLNS.sub("", root.group(2))
    return f'{xml[: root.start()]}<{root.group(1)} xmlns="{uri}"{attrs}{root.group(3)}>{xml[root.end() :]}'


def claim_url_encoding(xml: str) -> str:
    """<EncodingType>url</EncodingType> in the answer, whatever the keys are."""
    if "<EncodingType>" in xml:
        return re.sub(r"<EncodingType>[^<]*</EncodingType>", "<EncodingType>url</EncodingType>", xml)
    name = re.search(r"</Name>", xml)
    at = name.end() if name else (root.end() if (root := _ROOT.search(xml)) else 0)
    return xml[:at] + "<EncodingType>url</EncodingType>" + xml[at:]


def strip_etags(xml: str) -> str:
    return re.sub(r"<ETag>[^<]*</ETag>", "", xml)


def shuffled_contents(xml: str, rng: random.Random) -> str:
    """The page's Contents entries in another order (reversed where a shuffle happened to keep it)."""
    entries = re.findall(r"<Contents>.*?</Contents>", xml, flags=re.S)
    if len(set(entries)) < 2:
        return xml
    order = list(entries)
    rng.shuffle(order)
    if order == entries:
        order.reverse()
    it = iter(order)
    return re.sub(r"<Contents>.*?</Contents>", lambda _: next(it), xml, flags=re.S)


class QuirkProxy(ProxyServer):
    """`with QuirkProxy(upstream_port, Quirks(no_etags=True)) as p: p.endpoint_url`; `p.quirks` may change between calls."""

    thread_name = "s3bulk-quirkproxy"

    def __init__(self, upstream_port: int, quirks: Quirks | None = None, upstream_host: str = "127.0.0.1") -> None:
        self.quirks = quirks or Quirks()
        self.stats = QuirkStats()
        self._rng = random.Random(self.quirks.seed)
        super().__init__(upstream_port, upstream_host)

    def _count(self, quirk: str) -> None:
        with self.stats.lock:
            self.stats.applied[quirk] += 1

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        q = self.quirks
        headers = {k.lower(): v for k, v in h.headers.items()}
        length = int(headers.get("content-length") or 0)
        body = h.rfile.read(length) if length else b""
        op = refined_operation(h.command, h.path, headers)
        with self.stats.lock:
            self.stats.requests[op] += 1
        if op in q.not_implemented:
            self._count("not_implemented")
            message = "A header you provided implies functionality that is not implemented"
            self._reply(h, 501, error_body("NotImplemented", message))
            return
        target, sent = h.path, list(h.headers.items())
        asked_url = op in ENCODED_LISTINGS and _param(target, "encoding-type") == "url"
        if q.raw_keys_claim_url and asked_url:
            target = _without_param(target, "encoding-type")
        if q.page_keys and op in LISTINGS:
            asked = int(_param(target, "max-keys") or 1000)
            if asked > q.page_keys:
                self._count("page_keys")
                target = _with_param(target, "max-keys", str(q.page_keys))
        if q.copy_neighbour and op in {"CopyObject", "UploadPartCopy"}:
            sent = self._neighbour(sent)
        status, reply_headers, data = self._forward(h.command, target, sent, body)
        rewritten = self._rewrite(op, target, status, reply_headers, data, asked_url)
        if rewritten is not data:
            reply_headers = [(k, v) for k, v in reply_headers if k.lower() not in {"content-length", "content-md5"}]
        self._reply(h, status, rewritten, reply_headers, head=h.command == "HEAD")

    def _neighbour(self, sent: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """x-amz-copy-source naming the mapped neighbour instead (its versionId, if any, dropped: it was another key's)."""
        out = []
        for k, v in sent:
            if k.lower() == "x-amz-copy-source":
                bucket, _, key = unquote(v.split("?", 1)[0]).lstrip("/").partition("/")
                if key in self.quirks.copy_neighbour:
                    self._count("copy_neighbour")
                    v = "/" + quote(f"{bucket}/{self.quirks.copy_neighbour[key]}", safe="/~")
            out.append((k, v))
        return out

    def _rewrite(self, op: str, target: str, status: int, headers: list[tuple[str, str]], data: bytes, asked_url: bool) -> bytes:
        q = self.quirks
        xml_type = any(k.lower() == "content-type" and "xml" in v for k, v in headers)
        if not data or (op == "GetObject" and status < 300) or not (xml_type or data.lstrip().startswith(b"<?xml")):
            return data  # an object's own bytes, or not XML
        text = data.decode("utf-8", errors="surrogateescape")
        before = text
        listing = op in LISTINGS and status == 200
        steps: list[tuple[str, bool, Callable[[str], str]]] = [
            ("omit_prefixes", listing and q.omit_prefixes and "<CommonPrefixes>" in text, lambda t: self._omit(t, target)),
            ("raw_keys_claim_url", status == 200 and q.raw_keys_claim_url and asked_url, claim_url_encoding),
            ("no_etags", listing and q.no_etags and "<ETag>" in text, strip_etags),
            ("unsorted", listing and q.unsorted, lambda t: shuffled_contents(t, self._rng)),
            ("namespace", q.namespace, lambda t: in_namespace(t, q.other_namespace, add=200 <= status < 300)),
        ]
        for quirk, applies, change in steps:
            if applies:
                changed = change(text)
                if changed != text:
                    self._count(quirk)
                text = changed
        return data if text == before else text.encode("utf-8", errors="surrogateescape")

    def _omit(self, xml: str, target: str) -> str:
        """The answer without the CommonPrefixes entries no object sits directly under."""
        bucket = unquote(urlsplit(target).path).lstrip("/").split("/", 1)[0]
        delimiter = _param(target, "delimiter") or "/"
        encoded = _text(xml, "EncodingType") == "url"

        def keep(m: re.Match[str]) -> str:
            prefix = unescape(m.group(1))
            return m.group(0) if self._holds_directly(bucket, unquote_plus(prefix) if encoded else prefix, delimiter) else ""

        return re.sub(r"<CommonPrefixes>\s*<Prefix>([^<]*)</Prefix>\s*</CommonPrefixes>", keep, xml)

    def _holds_directly(self, bucket: str, prefix: str, delimiter: str) -> bool:
        """Whether an object's key is `prefix` plus a rest without `delimiter`: asked of the upstream, unsigned."""
        token: str | None = None
        while True:
            query = f"list-type=2&prefix={quote(prefix, safe='')}&delimiter={quote(delimiter, safe='')}&max-keys=1000"
            if token:
                query += f"&continuation-token={quote(token, safe='')}"
            host = f"{self._upstream[0]}:{self._upstream[1]}"
            status, _, data = self._forward("GET", f"/{quote(bucket)}?{query}", [("Host", host)], b"")
            text = data.decode("utf-8", errors="replace")
            if status != 200:
                raise RuntimeError(f"omit_prefixes: the upstream answered {status} to its probe: {text[:200]}")
            if "<Contents>" in text:
                return True
            token = _text(text, "NextContinuationToken")
            if _text(text, "IsTruncated") != "true" or not token:
                return False
