"""botocore's path: a 200 to a write whose body is not that call's result is a server error, never a success.

botocore parses a DeleteObjects answer it does not recognise (an HTML page from a proxy, another call's XML) as a
result with no `Errors`, so every key would read as deleted; the fast path refuses such an answer (s3/fastxml.py).
Here the same answer becomes a 500 `UnrecognisedAnswer` before botocore parses it, as botocore itself turns a
CopyObject 200-with-`<Error>` into a 500: retried like any server error, then a per-key failure.
"""

from __future__ import annotations

import re
from typing import Any

from s3bulk.s3.fastxml import RESULTS, UNRECOGNISED

# The writes whose 200 body says what happened: their result's root element.
WATCHED = {call: RESULTS[call][0] for call in ("DeleteObjects", "CopyObject")} | {
    "CompleteMultipartUpload": "CompleteMultipartUploadResult"
}
# The first element's name, past an XML declaration, processing instructions, comments and whitespace.
_FIRST = re.compile(rb"\A(?:\s|<\?.*?\?>|<!--.*?-->)*<([A-Za-z_][\w.:-]*)", re.S)


def root_name(body: bytes) -> str | None:
    """The local name of a body's root element, or None when it holds no XML element."""
    match = _FIRST.match(body[:4096])
    return match.group(1).decode("ascii", "replace").rpartition(":")[2] if match else None


def _check(operation_model: Any = None, response_dict: dict[str, Any] | None = None, **kwargs: Any) -> None:
    if response_dict is None or operation_model is None or response_dict.get("status_code") != 200:
        return
    expected = WATCHED.get(operation_model.name)
    body = response_dict.get("body") or b""
    if expected is None or not isinstance(body, bytes):
        return
    root = root_name(body)
    if root in (expected, "Error"):  # an <Error> is botocore's own 200-error case
        return
    shown = body[:120].decode("utf-8", "replace").replace("\n", " ")
    message = f"{operation_model.name} answered 200 with no {expected} (its body began {shown!r}): not the call's result"
    response_dict["status_code"] = 500
    response_dict["body"] = (
        f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{UNRECOGNISED}</Code><Message>{_escape(message)}</Message></Error>"
    ).encode()


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def expect_results(client: Any) -> None:
    """Check every watched write's 200 body on this client (registered after botocore's own handlers)."""
    for call in WATCHED:
        client.meta.events.register(f"before-parse.s3.{call}", _check, unique_id=f"s3bulk-result-{call}")
