"""The hostile-key corpus: each case is a key S3 accepts, why it is hard, and what a job must do with it.

Every case must come out of copy, move and delete exactly (same key bytes,
same body), except where `under_prefix` names the per-key error a copy under
the 2-byte destination prefix "x/" must report instead of crashing the job.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Case:
    key: str
    why: str
    moto: bool = True  # moto's HTTP router answers 404 for a few keys real S3 and SeaweedFS keep
    under_prefix: str = "ok"  # outcome when copied under "x/": "ok" or the per-key error code


CASES = [
    Case("space in key", "URL quoting: space is %20, never +"),
    Case("plus+sign", "+ must not decode to a space"),
    Case("percent%", "a bare % is not an escape"),
    Case("percent-encoded%2Fslash", "must not be decoded twice into a slash"),
    Case("literal%20space", "must not be decoded twice into a space"),
    Case("ünïcödé/文件.txt", "multi-byte UTF-8"),
    Case("emoji-🚀-✨", "4-byte UTF-8"),
    Case("double//slash", "no path normalisation"),
    Case("/leading-slash", "no path normalisation"),
    Case("trailing-space ", "no trimming"),
    Case("  leading-spaces", "no trimming"),
    Case("dots/../up", "dot segments must not be resolved"),
    Case("./dot-segment", "dot segments must not be resolved"),
    Case("question?mark", "must not start a query string"),
    Case("hash#tag", "must not start a fragment"),
    Case("amp&eq=semi;", "query-string delimiters"),
    Case("xml<tag>&amp;", "must be escaped in the DeleteObjects XML"),
    Case("quote\"apostrophe'", "quotes in XML and headers"),
    Case("tilde~star*", "glob and unreserved characters"),
    Case("[brackets]{braces}", "glob character classes are literal in keys"),
    Case("back\\slash", "not a path separator in S3"),
    Case("dir/", "a folder marker is an ordinary object"),
    Case("dir/zero-byte", "an empty body"),
    Case("cr\rkey", "XML turns a raw CR into LF: must be sent as &#13;"),
    Case("lf\nkey", "newline in the URL path", moto=False),
    Case("crlf\r\nkey", "CR LF pair", moto=False),
    Case("tab\tkey", "whitespace a header would fold"),
    Case("ctrl\x01key", "XML 1.0 cannot carry it: DeleteObject, not DeleteObjects"),
    Case("esc\x1b[0mkey", "terminal escape sequence"),
    Case("bell\x07", "XML-illegal control character at the end"),
    Case("del\x7fkey", "DEL is legal XML but not printable"),
    Case("nonchar\uffff", "a Unicode noncharacter XML forbids"),
    Case("nel\u0085key", "C1 control, legal in XML 1.0"),
    Case("line-sep\u2028key", "Unicode line separator"),
    Case("bom\ufeffkey", "byte-order mark inside a key"),
    Case("zero\u200bwidth", "zero-width space"),
    Case("rtl\u202eoverride", "right-to-left override"),
    Case("caf\u00e9-nfc", "precomposed é"),
    Case("cafe\u0301-nfc", "decomposed é: a different key, never normalised into the one above"),
    Case("full\uff0fwidth-slash", "fullwidth solidus is not a slash"),
    Case("k" * 1024, "the longest key S3 allows", under_prefix="KeyTooLongError"),
    Case("é" * 511 + "k", "1,023 UTF-8 bytes: fits alone, too long under a prefix", under_prefix="KeyTooLongError"),
]

MOTO_CASES = [c for c in CASES if c.moto]


def body_of(case: Case) -> bytes:
    """Each object's body names its key, so a swapped or normalised key shows as a wrong body."""
    return b"" if case.key.endswith(("/", "zero-byte")) else case.key.encode("utf-8")
