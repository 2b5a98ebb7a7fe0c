"""A listed key as the server named it: url-decoded when the answer says it was encoded and the claim was checked,
refused when it cannot be known.

s3bulk asks every listing for `encoding-type=url`, because XML 1.0 cannot carry most control characters. A server that
ignores the request (versitygw) sends such a key with U+FFFD in place of the character: `p/\\x0b` is listed as `p/\\ufffd`,
a key that does not exist. Acting on it would be a silent wrong result: a delete of the listed name succeeds (S3 deletes
a missing key without error), counts one deleted, and leaves the real object. So a key with U+FFFD in an answer that
was not url-encoded is an error; a real U+FFFD in a name is refused on such a server too, loudly, rather than guessed.

A server may also say `<EncodingType>url</EncodingType>` and send its keys raw: decoded, `fx/x%2Fy.bin` reads as
`fx/x/y.bin`, another object, which a delete then deletes. So the claim is checked before s3bulk relies on it
(EncodingClaims): the first page whose keys decoding would change is asked once more without `encoding-type`, and the
keys the server sends then say which reading names its objects.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote_plus
from xml.etree import ElementTree

from s3bulk.store import StoreError

REPLACEMENT = "\ufffd"
# The botocore listings whose keys a store reads raw (EncodingType=url asked explicitly, so botocore decodes nothing).
LISTINGS = ("ListObjectsV2", "ListObjectVersions", "ListMultipartUploads")
_RESULTS = ("ListBucketResult", "ListVersionsResult", "ListMultipartUploadsResult")


def unreadable(bucket: str, key: str) -> StoreError:
    return StoreError(
        "UnreadableKey",
        f"s3://{bucket} listed {key!a} without the url encoding s3bulk asked for, with U+FFFD where its XML could not "
        "carry a character (a control character): the object's real name cannot be known, so s3bulk stopped rather "
        "than act on a name that does not exist. Rename such keys, or use a server that honours encoding-type=url",
        400,
    )


def inconsistent(bucket: str, call: str, listed: str, decoded: str) -> StoreError:
    return StoreError(
        "InconsistentEncoding",
        f"s3://{bucket} answers {call} with EncodingType url, but the same page asked without encoding-type names "
        f"neither its keys url-decoded nor its keys as sent (it listed {listed!a}, which decodes to {decoded!a}): "
        "s3bulk cannot know which objects the server holds, so it stopped before acting on any",
        400,
    )


def key_reader(encoding_type: str | None, bucket: str) -> Callable[[str], str]:
    """How to read the keys (and prefixes, markers) of one listing answer, from its EncodingType element."""
    if encoding_type == "url":
        return unquote_plus

    def as_sent(key: str) -> str:
        if REPLACEMENT in key:
            raise unreadable(bucket, key)
        return key

    return as_sent


def check_sent(encoding_type: str | None, bucket: str, keys: list[str]) -> None:
    """For answers botocore already decoded: only an unencoded answer can have lost a character."""
    if encoding_type != "url":
        read = key_reader(encoding_type, bucket)
        for key in keys:
            read(key)


# What XML 1.0 cannot carry, raw or as a character reference: below U+0020 but tab, LF and CR; U+FFFE and U+FFFF;
# surrogates (as references: UTF-8 cannot hold them).
_RAW_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]|\xef\xbf[\xbe\xbf]")
_CONTROL_REF = re.compile(
    rb"&#(?:x0*(?:[0-8bBcCeEfF]|1[0-9a-fA-F]|[fF]{3}[eEfF]|[dD][89a-fA-F][0-9a-fA-F]{2})|0*(?:[0-8]|1[1-2]|1[4-9]|2[0-9]|3[01]|6553[45]));"
)


class Unparseable(Exception):
    """An answer asked without encoding-type that does not parse even with U+FFFD for what XML cannot carry."""


def legible(body: bytes) -> bytes:
    """An answer asked without encoding-type, with U+FFFD where it sent a character XML 1.0 cannot carry: S3 sends
    such keys as they are, and the parse must not fail on the page the claim is checked with."""
    if b"&#" in body:
        body = _CONTROL_REF.sub(b"&#xFFFD;", body)
    return _RAW_CONTROL.sub(REPLACEMENT.encode(), body)


_UNCARRIED = re.compile("[\x00-\x08\x0a-\x1f\ufffe\uffff\ud800-\udfff]")


def _comparable(key: str) -> str:
    """A key as an unencoded answer can carry it: XML turns CR into LF, and what legible replaces is lost."""
    return _UNCARRIED.sub(REPLACEMENT, key)


def _decoding_changes(keys: list[str]) -> bool:
    return any(("%" in k or "+" in k) and unquote_plus(k) != k for k in keys)


class EncodingClaims:
    """Whether each bucket's `EncodingType: url` is true, per listing call, checked once per store.

    Until a page has a key that decoding would change, both readings agree and nothing is asked. The first such page
    is asked again without encoding-type (`ask(False)`): keys equal to the decoded ones prove the claim, keys equal to
    those sent prove the server sends raw keys, and they are read as sent from then on, for that bucket and call.
    Anything else is asked once more, both ways (a write in between may have changed the page), then stops with
    InconsistentEncoding. Shared by a store's scoped views, so a job pays one request per bucket and call kind.
    """

    def __init__(self) -> None:
        self._encodes: dict[tuple[str, str], bool] = {}
        self._lock = threading.Lock()

    def encodes(self, bucket: str, call: str) -> bool | None:
        """What was found for this bucket and call: True the claim holds, False raw keys, None not checked yet."""
        return self._encodes.get((bucket, call))

    def reader(
        self, bucket: str, call: str, encoding_type: str | None, sent: list[str], ask: Callable[[bool], list[str]]
    ) -> Callable[[str], str]:
        """How to read the keys of one answer. `sent`: its keys and prefixes as sent; `ask(encoded)`: the same page's
        keys and prefixes as sent, asked again with (True) or without (False) encoding-type."""
        if encoding_type != "url":
            return key_reader(None, bucket)
        encodes = self._encodes.get((bucket, call))
        if encodes is None and _decoding_changes(sent):
            encodes = self._check(bucket, call, sent, ask)
        return key_reader("url" if encodes is not False else None, bucket)

    def _check(self, bucket: str, call: str, sent: list[str], ask: Callable[[bool], list[str]]) -> bool:
        with self._lock:  # one check per bucket and call, however many listers meet the first such page at once
            known = self._encodes.get((bucket, call))
            if known is not None:
                return known
            for again in (False, True):
                if again:
                    sent = ask(True)
                try:
                    plain = [_comparable(k) for k in ask(False)]
                except Unparseable:
                    if not again:
                        continue  # once more: a body cut in transit does not happen twice
                    # The encoded answer parses and the same page unencoded never does: only encoding explains it.
                    self._encodes[(bucket, call)] = True
                    return True
                if plain == [_comparable(unquote_plus(k)) for k in sent]:
                    verdict = True
                elif plain == [_comparable(k) for k in sent]:
                    verdict = False
                else:
                    continue
                if _decoding_changes(sent):  # else both readings agreed: nothing was learnt
                    self._encodes[(bucket, call)] = verdict
                return verdict
            odd = next((k for k in sent if _comparable(unquote_plus(k)) not in plain and _comparable(k) not in plain), sent[0])
            raise inconsistent(bucket, call, odd, unquote_plus(odd))


_PLAIN = threading.local()


@contextmanager
def unencoded() -> Iterator[None]:
    """botocore listings made inside this (on this thread) go without encoding-type, and their answers are parsed
    with U+FFFD where XML could not carry a character (legible): the request EncodingClaims checks a claim with."""
    _PLAIN.on = True
    try:
        yield
    finally:
        _PLAIN.on = False


def _drop_encoding(params: dict[str, Any], context: dict[str, Any], **kwargs: Any) -> None:
    if getattr(_PLAIN, "on", False):
        params.pop("EncodingType", None)  # botocore's own handler, which ran before this one, added it
        context.pop("encoding_type_auto_set", None)  # so botocore decodes nothing a server claims it encoded


def _legible_body(response_dict: dict[str, Any], **kwargs: Any) -> None:
    if not getattr(_PLAIN, "on", False) or not isinstance(response_dict.get("body"), bytes):
        return
    body = response_dict["body"] = legible(response_dict["body"])
    if response_dict.get("status_code") not in (200, 500):
        return
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError:
        if b"<Error" in body[:512]:
            return  # a server's error, botocore's to read
        raise Unparseable from None
    if response_dict["status_code"] == 500 and root.tag.rpartition("}")[2] in _RESULTS:
        # botocore's _handle_200_error (which runs first) made the 200 a 500 because the raw control character did not
        # parse, as for a body cut short; a body that parses now, as a listing's result, was a whole 200.
        response_dict["status_code"] = 200


def allow_unencoded(client: Any) -> None:
    """Let `unencoded()` ask this client's listings without encoding-type. botocore's own handler adds it to every
    listing; registered on the client after the session's handlers, this one runs after it."""
    for call in LISTINGS:
        client.meta.events.register(f"before-parameter-build.s3.{call}", _drop_encoding, unique_id=f"s3bulk-unencoded-{call}")
        client.meta.events.register(f"before-parse.s3.{call}", _legible_body, unique_id=f"s3bulk-legible-{call}")
