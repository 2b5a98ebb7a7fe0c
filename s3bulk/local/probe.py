"""`s3bulk doctor --endpoint-url URL --bucket B`: what one S3 server does where S3 implementations differ, and what
s3bulk does about it there.

Each probe writes a few scratch keys (local/scratch.py), asks the server what S3 would answer, and reads the answer the
way a job would (the same stores, claim checks and copy rule), so a row says both what the server did and what
s3bulk will then do: trust it, check it (at a cost), refuse (stop, or fail those objects), or leave it unchecked
(your keys decide). Every scratch key is deleted at the end, whatever happened.
"""

from __future__ import annotations

import base64
import hashlib
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import unquote_plus
from xml.etree import ElementTree

from botocore.compat import HAS_CRT
from botocore.exceptions import BotoCoreError, ClientError

from s3bulk.local.scratch import Scratch
from s3bulk.ops.identity import BY_CHECKSUM, BY_SIZE, COPY_MISMATCH, judge
from s3bulk.s3.keyorder import KeyOrder
from s3bulk.s3.stores import S3Store
from s3bulk.store import ListPage, ObjectInfo, StoreError, quoted_etag

TRUST, CHECK, REFUSE, UNCHECKED, NOT_USED, UNKNOWN = "trust", "check", "refuse", "unchecked", "not used", "unknown"
S3_NAMESPACE = "http://s3.amazonaws.com/doc/2006-03-01/"


@dataclass(frozen=True, slots=True)
class Finding:
    probe: str
    seen: str  # what the server did
    verdict: str  # TRUST, CHECK, REFUSE, UNCHECKED, NOT_USED or UNKNOWN
    does: str  # what s3bulk does about it on this server
    seconds: float = 0.0


@dataclass
class ProbeReport:
    endpoint: str
    bucket: str
    prefix: str
    findings: list[Finding] = field(default_factory=list)
    left_behind: list[str] = field(default_factory=list)  # scratch keys the cleanup could not delete
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "findings": [asdict(f) for f in self.findings]}


class ProbeError(Exception):
    """The server could not be probed at all (no bucket, no access, no answer): one line, exit 1."""


def _code(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        err, meta = exc.response.get("Error", {}), exc.response.get("ResponseMetadata", {})
        return f"{err.get('Code') or meta.get('HTTPStatusCode')} ({meta.get('HTTPStatusCode')})"
    if isinstance(exc, StoreError):
        return f"{exc.code} ({exc.status})"
    return type(exc).__name__


def _status(exc: BaseException) -> int | None:
    if isinstance(exc, ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return int(status) if status is not None else None
    return exc.status if isinstance(exc, StoreError) else None


def _reach(client: Any, bucket: str, endpoint: str) -> None:
    """HeadBucket first: a missing bucket, a refusal or a silent endpoint ends the probe before anything is written."""
    try:
        client.head_bucket(Bucket=bucket)
    except ClientError as exc:
        status = _status(exc)
        if status == 404:
            raise ProbeError(f"--bucket {bucket}: no such bucket at {endpoint}; create it, or name one the probe may write to") from None
        if status in (401, 403):
            raise ProbeError(
                f"--bucket {bucket}: access denied at {endpoint} ({_code(exc)}); use credentials that may list and write it"
            ) from None
        raise ProbeError(f"--bucket {bucket}: HeadBucket failed at {endpoint}: {_code(exc)}") from None
    except BotoCoreError as exc:
        raise ProbeError(f"{endpoint}: no answer ({exc}); check the URL's scheme, host and port") from None


class Probe:
    """The probes, run in order on one bucket; each row is one Finding."""

    def __init__(self, store: S3Store, fast: S3Store | None, bucket: str) -> None:
        self.store, self.fast, self.bucket = store, fast, bucket
        self.client = store._s3(bucket)  # the client for the bucket's Region, prepared as a job's (keytext.allow_unencoded)
        self.scratch = Scratch(self.client, bucket)

    def stores(self) -> list[tuple[str, S3Store]]:
        return [("botocore", self.store)] + ([("fast", self.fast)] if self.fast is not None else [])

    def rows(self) -> list[tuple[str, Callable[[], Finding]]]:
        return [
            ("key order", self.key_order),
            ("XML namespace", self.namespace),
            ("url encoding", self.encoding),
            ("control characters", self.control),
            ("delimiter", self.delimiter),
            ("'//' and leading '/'", self.slashes),
            ("copy source", self.copy_source),
            ("ETags", self.etags),
            ("checksums", self.checksums),
            ("conditional writes", self.conditional),
            ("tagging", self.tagging),
            ("ACLs", self.acls),
        ]

    def _raw_list(self, prefix: str, **kwargs: Any) -> tuple[dict[str, Any], bytes]:
        """A ListObjectsV2 answer as botocore parsed it, asked with EncodingType url so botocore decodes nothing, and its body."""
        seen: dict[str, bytes] = {}

        def keep(http_response: Any, **_: Any) -> None:
            seen["body"] = bytes(http_response.content)

        events = self.client.meta.events
        events.register("after-call.s3.ListObjectsV2", keep, unique_id="s3bulk-doctor-body")
        try:
            r = self.client.list_objects_v2(Bucket=self.bucket, Prefix=prefix, EncodingType="url", **kwargs)
        finally:
            events.unregister("after-call.s3.ListObjectsV2", unique_id="s3bulk-doctor-body")
        return r, seen.get("body", b"")

    def key_order(self) -> Finding:
        names = ["a b", "a+b", "a-b", "a/b", "a~b", "z", "é"]
        for n in names:
            self.scratch.put("o/" + n, n.encode())
        listed = self.scratch.listed(self.scratch.key("o/"))
        shown = [k.removeprefix(self.scratch.key("o/")) for k in listed]
        if sorted(shown) != sorted(names):
            return Finding("key order", f"listed {shown!r} for {names!r}", UNKNOWN, "keys came back under other names: see the rows below")
        page = ListPage([ObjectInfo(k, 0) for k in listed], None)
        try:
            KeyOrder().checked(self.bucket, page, token=None, start_after=None)
        except StoreError as exc:
            how = exc.message.rsplit("; ", 1)[-1]
            return Finding(
                "key order",
                f"lists {' < '.join(shown)}, not in S3's UTF-8 byte order",
                REFUSE,
                f"a listing page out of order stops the job (ListingOutOfOrder) before it shards, resumes or syncs by it; {how}",
            )
        return Finding("key order", "S3's UTF-8 byte order", TRUST, "shards, resumes and syncs by key order (every page is still checked)")

    def namespace(self) -> Finding:
        _, body = self._raw_list(self.scratch.key("o/"))
        try:
            tag = ElementTree.fromstring(body).tag
        except ElementTree.ParseError:
            return Finding("XML namespace", "a listing's answer did not parse as XML", UNKNOWN, "a job's listing would stop with an error")
        ns = tag[1:].partition("}")[0] if tag.startswith("{") else ""
        if ns == S3_NAMESPACE:
            return Finding("XML namespace", "S3's", TRUST, "reads answers as S3's")
        return Finding(
            "XML namespace",
            f"answers in {'no namespace' if not ns else repr(ns)}, not S3's",
            CHECK,
            "both request paths read elements by local name; an answer that is not the call's result is an error, never an empty page",
        )

    def encoding(self) -> Finding:
        names = ["p%41", "a+b", "a b", "q%2Bb", "ü"]
        for n in names:
            self.scratch.put("e/" + n, n.encode())
        prefix = self.scratch.key("e/")
        r, _ = self._raw_list(prefix)
        sent = sorted(o["Key"].removeprefix(prefix) for o in r.get("Contents", ()))
        claim = r.get("EncodingType") == "url"
        encodes = sent != sorted(names) and sorted(unquote_plus(k) for k in sent) == sorted(names)
        seen = (
            ("says EncodingType url and encodes keys" if encodes else "says EncodingType url but sends keys raw")
            if claim
            else ("ignores encoding-type=url: keys raw, and says so" if sent == sorted(names) else f"lists {sent!r}")
        )
        for path, store in self.stores():
            try:
                read = sorted(o.key.removeprefix(prefix) for o in store.list_page(self.bucket, prefix).objects)
            except StoreError as exc:
                return Finding("url encoding", seen, REFUSE, f"a listing stops ({exc.code}, {path} path): {exc.message}")
            if read != sorted(names):
                return Finding("url encoding", seen, REFUSE, f"s3bulk's {path} path reads {read!r} for {sorted(names)!r}: report this")
        if claim and encodes:
            return Finding("url encoding", seen, TRUST, "decodes keys; the claim is checked once per bucket (one more listing request)")
        if claim:
            return Finding("url encoding", seen, CHECK, "checks the claim on the first page with % or + and reads keys as sent")
        return Finding("url encoding", seen, TRUST, "reads keys as sent (the answer says they are not encoded)")

    def control(self) -> Finding:
        name = "x/a\x01b"
        try:
            self.scratch.put(name, b"control")
        except ClientError as exc:
            return Finding("control characters", f"refuses a key with U+0001 ({_code(exc)})", TRUST, "such keys cannot exist here")
        prefix = self.scratch.key("x/")
        for path, store in self.stores():
            try:
                read = [o.key for o in store.list_page(self.bucket, prefix).objects]
            except StoreError as exc:
                return Finding(
                    "control characters",
                    "lists a key with U+0001 as a name it does not hold",
                    REFUSE,
                    f"a listing that meets such a key stops ({exc.code}, {path} path): nothing is done under a name the server lacks",
                )
            if read != [self.scratch.key(name)]:
                return Finding("control characters", f"lists {read!a}", REFUSE, f"s3bulk's {path} path misreads it: report this")
        return Finding("control characters", "keeps and lists a key with U+0001", TRUST, "lists, copies and deletes such keys exactly")

    def delimiter(self) -> Finding:
        self.scratch.put("d/2024/01/x", b"nested")
        r = self.client.list_objects_v2(Bucket=self.bucket, Prefix=self.scratch.key("d/"), Delimiter="/")
        prefixes = [p.get("Prefix", "") for p in r.get("CommonPrefixes", ())]
        if self.scratch.key("d/2024/") in prefixes:
            return Finding("delimiter", "reports d/2024/ for d/2024/01/x", TRUST, "delimiter answers choose where a parallel listing cuts")
        shown = [p.removeprefix(self.scratch.key("")) for p in prefixes]
        return Finding(
            "delimiter",
            f"leaves out d/2024/ (a prefix with no object of its own): CommonPrefixes {shown!r}",
            CHECK,
            "shards are key ranges covering the whole prefix: a prefix the server leaves out is still listed, once",
        )

    def slashes(self) -> Finding:
        double, lead = self.scratch.key("s//x"), "/" + self.scratch.key("lead")
        self.scratch.put_key(double, b"double")
        self.scratch.put_key(lead, b"lead")
        under = self.scratch.listed(self.scratch.key("s/"))
        leading = self.scratch.listed("/" + self.scratch.key(""))
        lost = [what for what, kept in (("'a//b' as 'a/b'", double in under), ("'/lead' without its '/'", lead in leading)) if not kept]
        if not lost:
            return Finding("'//' and leading '/'", "keeps both exactly", TRUST, "maps keys exactly; a mapped key gains no '//'")
        return Finding(
            "'//' and leading '/'",
            f"stores {' and '.join(lost)}",
            UNCHECKED,
            "nothing tells: such a key written here lands under another name, and a later sync sees it missing; keep such keys off this server",
        )

    def copy_source(self) -> Finding:
        bodies = {"c/a+b": b"plus-0001", "c/a b": b"space-002", "c/a%2Bb": b"pct2b-003"}
        for name, body in bodies.items():
            self.scratch.put(name, body)
        src, dst = self.scratch.key("c/a+b"), self.scratch.key("c/copy")
        self.scratch.written.append(dst)
        self.client.copy_object(Bucket=self.bucket, Key=dst, CopySource={"Bucket": self.bucket, "Key": src})
        got = self.client.get_object(Bucket=self.bucket, Key=dst)["Body"].read()
        if got == bodies["c/a+b"]:
            return Finding("copy source", "CopyObject of 'a+b' copied 'a+b'", TRUST, "copies are still confirmed by content (see ETags)")
        which = next((n for n, b in bodies.items() if b == got), "other bytes")
        try:
            how = judge(self.store.head_object(self.bucket, src), self.store.head_object(self.bucket, dst))
        except StoreError as exc:
            if exc.code == COPY_MISMATCH:
                return Finding(
                    "copy source",
                    f"CopyObject of 'a+b' copied {which!r}",
                    REFUSE,
                    "such copies fail CopyContentMismatch (the ETags contradict); a move keeps its source",
                )
            raise
        said = (
            "its size alone confirms such a copy, and a move would delete its source"
            if how == BY_SIZE
            else f"the copy reads as right ({how or 'equal ETags'})"
        )
        return Finding("copy source", f"CopyObject of 'a+b' copied {which!r}", UNCHECKED, f"{said}: keep keys with '+' off this server")

    def etags(self) -> Finding:
        body = b"etag probe body\n"
        r = self.scratch.put("t/src", body)
        md5 = quoted_etag(hashlib.md5(body, usedforsecurity=False).hexdigest())
        put_md5 = quoted_etag(r.get("ETag")) == md5
        src, dst = self.scratch.key("t/src"), self.scratch.key("t/dst")
        self.scratch.written.append(dst)
        c = self.client.copy_object(Bucket=self.bucket, Key=dst, CopySource={"Bucket": self.bucket, "Key": src})
        copy_same = quoted_etag(c.get("CopyObjectResult", {}).get("ETag")) == quoted_etag(r.get("ETag"))
        seen = f"a PUT's ETag {'is' if put_md5 else 'is not'} the MD5 of its body; CopyObject's {'equals' if copy_same else 'differs from'} the source's"
        if copy_same:  # confirm_copy needs nothing more; ETags that are not MD5s only make skip-unchanged copy more
            return Finding("ETags", seen, TRUST, "a copy is confirmed by its own answer (no request); equal ETags skip unchanged objects")
        try:
            how = judge(self.store.head_object(self.bucket, src), self.store.head_object(self.bucket, dst))
        except StoreError as exc:
            return Finding("ETags", seen, REFUSE, f"a correct copy fails {exc.code} here ({exc.message}): every copy would")
        if how == BY_SIZE:
            return Finding("ETags", seen, UNCHECKED, "nothing but size confirms a copy (counted as confirmed_by_size_only in the report)")
        by = "equal checksums" if how == BY_CHECKSUM else "equal ETags"
        return Finding("ETags", seen, CHECK, f"each copy costs two HEADs, then is confirmed by {by}")

    def checksums(self) -> Finding:
        body = b"checksum probe\n"
        sums = {"CRC32": base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode()}
        if HAS_CRT:
            from botocore.httpchecksum import CrtCrc64NvmeChecksum

            crc = CrtCrc64NvmeChecksum()
            crc.update(body)
            sums["CRC64NVME"] = crc.b64digest()
        kept: list[str] = []
        lost: list[str] = []
        for alg, value in sums.items():
            try:
                self.scratch.put(f"k/{alg}", body, ChecksumAlgorithm=alg)  # botocore computes it, as for a job's uploads
                h = self.client.head_object(Bucket=self.bucket, Key=self.scratch.key(f"k/{alg}"), ChecksumMode="ENABLED")
            except ClientError as exc:
                lost.append(f"{alg} refused {_code(exc)}")
                continue
            stored = h.get(f"Checksum{alg}")
            (kept if stored == value else lost).append(alg if stored == value else f"{alg} {'not kept' if not stored else 'kept wrong'}")
        seen = "; ".join(x for x in (f"keeps {', '.join(kept)}" if kept else "", ", ".join(lost)) if x) + (
            "" if HAS_CRT else " (CRC64NVME not tried: botocore[crt] is not installed)"
        )
        if any("kept wrong" in x for x in lost):
            return Finding("checksums", seen, REFUSE, "a stored checksum that contradicts the bytes fails the copies compared by it")
        if kept:
            return Finding("checksums", seen, TRUST, "full-object checksums decide copies and skip-unchanged where ETags cannot")
        return Finding("checksums", seen, CHECK, "ETags, then sizes decide; add-checksum and checksum comparisons cannot work here")

    def conditional(self) -> Finding:
        self.scratch.put("w/x", b"first")
        try:
            self.scratch.put("w/x", b"second", IfNoneMatch="*")
        except ClientError as exc:
            if _status(exc) == 412:
                return Finding("conditional writes", "If-None-Match: * on an existing key: 412", NOT_USED, "no job relies on them")
            return Finding("conditional writes", f"not supported: {_code(exc)}", NOT_USED, "no job relies on them")
        overwrote = self.client.get_object(Bucket=self.bucket, Key=self.scratch.key("w/x"))["Body"].read() == b"second"
        what = "ignored If-None-Match: * and overwrote" if overwrote else "answered 200 and kept the object"
        return Finding("conditional writes", what, NOT_USED, "no job relies on them; other tools' create-only writes are unsafe here")

    def _optional(self, probe: str, call: str, job: str, fn: Callable[[], object]) -> Finding:
        try:
            fn()
        except (ClientError, StoreError) as exc:
            if _status(exc) == 501:
                return Finding(
                    probe, f"{call}: 501 NotImplemented", REFUSE, f"{job} fail per object naming {call} (permanent, not retried)"
                )
            return Finding(probe, f"{call}: {_code(exc)}", UNKNOWN, f"{job} may fail with {_code(exc)}")
        return Finding(probe, f"{call} works", TRUST, f"{job} run")

    def tagging(self) -> Finding:
        key = self.scratch.key("w/x")

        def both() -> None:
            self.store.put_tags(self.bucket, key, {"s3bulk-doctor": "1"})
            if self.store.get_tags(self.bucket, key) != {"s3bulk-doctor": "1"}:
                raise StoreError("TagsNotKept", "GetObjectTagging did not return the tag just put", 200)

        return self._optional("tagging", "PutObjectTagging/GetObjectTagging", "tag jobs and copies that carry tags", both)

    def acls(self) -> Finding:
        return self._optional(
            "ACLs",
            "GetObjectAcl",
            "set-acl jobs and copies that carry ACLs",
            lambda: self.client.get_object_acl(Bucket=self.bucket, Key=self.scratch.key("w/x")),
        )


def probe_server(store: S3Store, fast: S3Store | None, bucket: str, endpoint: str) -> ProbeReport:
    """Run every probe on `bucket` through `store` (and the fast path's `fast`); the scratch keys are always deleted.

    Raises ProbeError when the bucket cannot be probed at all; a probe that fails otherwise is a row saying so."""
    started = time.perf_counter()
    p = Probe(store, fast, bucket)
    _reach(p.client, bucket, endpoint)
    report = ProbeReport(endpoint, bucket, p.scratch.prefix)
    try:
        try:
            status = p.client.get_bucket_versioning(Bucket=bucket).get("Status")
            p.scratch.versioned = status in ("Enabled", "Suspended")
        except (ClientError, BotoCoreError):
            pass  # a server without versioning keeps no versions to clean
        try:
            p.scratch.put("w/x", b"first")
        except ClientError as exc:
            raise ProbeError(
                f"--bucket {bucket}: cannot write a scratch key at {endpoint} ({_code(exc)}); the probe needs s3:PutObject"
            ) from None
        for name, run in p.rows():
            t = time.perf_counter()
            try:
                found = run()
            except (ClientError, BotoCoreError, StoreError) as exc:
                found = Finding(name, f"the probe failed: {_code(exc)}", UNKNOWN, "not known")
            report.findings.append(Finding(found.probe, found.seen, found.verdict, found.does, round(time.perf_counter() - t, 3)))
    finally:
        report.left_behind = p.scratch.clean()
        report.seconds = round(time.perf_counter() - started, 3)
    return report
