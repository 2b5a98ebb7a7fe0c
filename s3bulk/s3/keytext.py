"""A listed key as the server named it: url-decoded when the answer says it was encoded, refused when it cannot be known.

s3bulk asks every listing for `encoding-type=url`, because XML 1.0 cannot carry most control characters. A server that
ignores the request (versitygw) sends such a key with U+FFFD in place of the character: `p/\\x0b` is listed as `p/\\ufffd`,
a key that does not exist. Acting on it would be a silent wrong result: a delete of the listed name succeeds (S3 deletes
a missing key without error), counts one deleted, and leaves the real object. So a key with U+FFFD in an answer that
was not url-encoded is an error; a real U+FFFD in a name is refused on such a server too, loudly, rather than guessed.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote_plus

from s3bulk.store import StoreError

REPLACEMENT = "\ufffd"


def unreadable(bucket: str, key: str) -> StoreError:
    return StoreError(
        "UnreadableKey",
        f"s3://{bucket} listed {key!a} without the url encoding s3bulk asked for, with U+FFFD where its XML could not "
        "carry a character (a control character): the object's real name cannot be known, so s3bulk stopped rather "
        "than act on a name that does not exist. Rename such keys, or use a server that honours encoding-type=url",
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
