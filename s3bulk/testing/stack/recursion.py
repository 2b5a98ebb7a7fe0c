"""Lambda's recursive loop detection, as AWS runs it (on by default since 2023).

Inside Lambda, the SDK sends the invocation's X-Ray trace header with every request, and SQS keeps it on each message it
sends as the AWSTraceHeader system attribute. The header's Lineage field counts, per function, how many times that
function has been invoked along the chain of events. When an event would invoke a function whose count is already
MAX_HOPS, and the function's RecursiveLoop is not `Allow`, Lambda does not invoke it: an SQS message goes to the queue's
dead-letter queue. Here a message a function sends carries its invocation's lineage (stack/iam.py stamps it on
SendMessage and SendMessageBatch), and the event source (stack/event_source.py) reads it back and applies the rule.
"""

from __future__ import annotations

import hashlib
from typing import Any

MAX_HOPS = 16
ATTRIBUTE = "AWSTraceHeader"
SENDS = {"SendMessage", "SendMessageBatch"}


def _tag(function: str) -> str:
    return hashlib.sha256(function.encode()).hexdigest()[:8]


def header(lineage: dict[str, int]) -> str:
    """An X-Ray header whose Lineage lists each function's hop count (`tag:count`, joined by `|`)."""
    return "Root=1-00000000-000000000000000000000000;Sampled=0;Lineage=" + "|".join(f"{t}:{n}" for t, n in sorted(lineage.items()))


def lineage_of(message: dict[str, Any]) -> dict[str, int]:
    """The lineage a received message carries: function tag -> hops (empty for a message nothing in Lambda sent)."""
    text = str(message.get("Attributes", {}).get(ATTRIBUTE, ""))
    for field in text.split(";"):
        name, _, value = field.partition("=")
        if name == "Lineage" and value:
            return {t: int(n) for t, _, n in (part.partition(":") for part in value.split("|"))}
    return {}


def merged(lineages: list[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for lineage in lineages:
        for tag, hops in lineage.items():
            out[tag] = max(out.get(tag, 0), hops)
    return out


def invoked(function: str, incoming: dict[str, int]) -> dict[str, int]:
    """The lineage of an invocation of `function` by an event that carried `incoming`."""
    tag = _tag(function)
    return {**incoming, tag: incoming.get(tag, 0) + 1}


def stopped(function: str, incoming: dict[str, int], recursive_loop: str) -> bool:
    """Whether Lambda refuses to invoke `function` for an event that carried `incoming`."""
    return recursive_loop != "Allow" and incoming.get(_tag(function), 0) >= MAX_HOPS


def stamp(operation: str, params: dict[str, Any], lineage: dict[str, int] | None) -> dict[str, Any]:
    """The request as the SDK inside an invocation sends it: its messages carry the invocation's trace header."""
    if operation not in SENDS or not lineage:
        return params
    attr = {ATTRIBUTE: {"DataType": "String", "StringValue": header(lineage)}}
    if operation == "SendMessage":
        return {**params, "MessageSystemAttributes": attr}
    return {**params, "Entries": [{**e, "MessageSystemAttributes": attr} for e in params.get("Entries", ())]}
