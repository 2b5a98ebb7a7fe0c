"""First contact: an endpoint that has never answered fails in seconds, and a missing bucket in one line.

The outage breaker (breakers/outage.py) rides out an endpoint that answered and then went away for
options.outage_seconds, so a short outage costs a started job nothing. An endpoint that has never
answered is another case: a wrong port, a misspelled host, https against http or a Region that does
not exist, and waiting a minute for it helps nobody. So before a run or a plan (and before any ledger
exists) one HeadBucket per bucket, with two attempts and short timeouts, tells which it is: no answer
is one line naming the endpoint and the likely fix (exit 2), and a 404 names the bucket. Any other
answer (200, 301, 403: a role without s3:ListBucket) means the endpoint is there, and the job goes on.

A resume probes too, but its endpoint answered the run that started it, so no answer there is left
to the breaker (an outage, resumable), and only a missing bucket is refused.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import BotoCoreError, ClientError

from s3bulk.local.preflight import UsageError
from s3bulk.s3.clients import S3Clients

# Two tries of up to 3 s each to connect: a refused port or an unknown host fails in well under a second, a
# silent firewall in about 7 s; a HeadBucket needs no longer than READ_TIMEOUT once connected.
ATTEMPTS = 2
CONNECT_TIMEOUT = 3.0
READ_TIMEOUT = 10.0
# What every AWS Region name looks like (us-east-1, us-gov-west-1, eu-isoe-west-1, ap-southeast-7): a Region newer
# than the pinned botocore still matches, so only names that cannot be one are refused without asking the network.
REGION_SHAPE = re.compile(r"^[a-z]{2,5}(-[a-z]+)+-\d{1,2}$")
# Names botocore accepts for S3 that do not look like a Region.
SPECIAL_REGIONS = frozenset({"aws-global", "s3-external-1"})


@dataclass(frozen=True, slots=True)
class Side:
    """One bucket to look at: the clients of its side, the job field naming it, and what named its endpoint."""

    clients: S3Clients
    bucket: str
    field: str  # job.source.bucket / job.destination.bucket
    endpoint_name: str  # --endpoint-url, $AWS_ENDPOINT_URL_S3, job.source.endpoint_url, --region ...


@functools.cache
def known_regions() -> frozenset[str]:
    """Every Region the installed botocore knows for S3, in every partition (read only when a message needs it)."""
    import botocore.session

    session = botocore.session.Session()
    return frozenset(r for p in session.get_available_partitions() for r in session.get_available_regions("s3", p))


def _suggest(region: str) -> str:
    """The known Regions closest to `region`, all of them on a tie (us-est-1: us-east-1 or us-west-1)."""
    scored = [(difflib.SequenceMatcher(None, region.lower(), known).ratio(), known) for known in known_regions()]
    best = max((score for score, _ in scored), default=0.0)
    close = sorted(known for score, known in scored if score >= max(best, 0.6))
    return f"; did you mean {' or '.join(close[:3])}?" if close else ""


def region_problem(region: str | None) -> str | None:
    """Why `region` cannot be an AWS Region name (checked offline, for AWS endpoints only), or None."""
    if region is None or region in SPECIAL_REGIONS or REGION_SHAPE.match(region):
        return None
    return f"{region!r} is not an AWS Region name (like us-east-1){_suggest(region)}"


def check_region(region: str | None, name: str) -> None:
    """The Region of an AWS endpoint, by its shape: one line (exit 2) for a name no Region can have."""
    if problem := region_problem(region):
        raise UsageError(f"{name}: {problem}")


def _why(exc: BaseException, url: str, *, aws: bool = False) -> str:
    """What the failed connection says, and the likely fix, for one line."""
    inner = exc.kwargs.get("error") if isinstance(exc, BotoCoreError) else None
    text = f"{exc} {inner!r}" if inner is not None else str(exc)
    parts = urlsplit(url)
    where = f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
    if "Connection refused" in text:
        return f"connection refused: nothing listens on {where}; check the port, and that the server is running"
    if "resolve" in text or "Name or service not known" in text or "nodename nor servname" in text:
        if aws:
            return f"the host {parts.hostname} does not resolve; check the Region's spelling, and this machine's network and DNS"
        return f"the host {parts.hostname} does not resolve; check its spelling"
    if "WRONG_VERSION_NUMBER" in text or "wrong version number" in text or "record layer failure" in text:
        return f"TLS failed: the server at {where} speaks plain HTTP; write http:// instead of https://"
    if "CERTIFICATE_VERIFY_FAILED" in text:
        return "its TLS certificate is not trusted here; point AWS_CA_BUNDLE at the CA that signed it"
    if "SSL" in text:
        return f"TLS failed ({type(inner or exc).__name__}); check http:// or https:// for {where}"
    if "Connection reset" in text or "closed" in text.lower() or "RemoteDisconnected" in text:
        other = "https://" if parts.scheme == "http" else "http://"
        return f"{where} closed the connection without an answer; is it an {other} endpoint?"
    if "Read timeout" in text:
        return f"{where} took the connection and sent no answer in {READ_TIMEOUT:.0f} s; check that it is an S3 endpoint"
    if "timed out" in text.lower() or "Timeout" in text:
        return f"no answer from {where} within {CONNECT_TIMEOUT:.0f} s; check the host and port (a firewall, or another machine)"
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def _region_hint(clients: S3Clients) -> str:
    """For an AWS endpoint whose Region botocore does not know: the name, and the closest one it does."""
    region = clients.settings.region
    if clients.settings.endpoint_url is not None or region is None or region in known_regions():
        return ""
    return f"; {region} is not a Region this botocore knows{_suggest(region)}"


def probe(side: Side, *, first_contact: bool = True) -> None:
    """One HeadBucket with short timeouts: UsageError (exit 2) for no answer on first contact, or for a missing bucket."""
    quick = replace(side.clients.settings, max_attempts=ATTEMPTS, connect_timeout=CONNECT_TIMEOUT, read_timeout=READ_TIMEOUT)
    client: Any = side.clients.client(tuning=quick)
    url = str(client.meta.endpoint_url)
    try:
        client.head_bucket(Bucket=side.bucket)
    except ClientError as exc:
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        code = exc.response.get("Error", {}).get("Code")
        if status == 404 or code in {"NoSuchBucket", "404"}:
            raise UsageError(
                f"{side.field} {side.bucket!r}: no such bucket at {url} (nothing was changed); check the name"
                + (f" and {side.endpoint_name}" if side.endpoint_name else "")
            ) from None
        return  # any other answer: the endpoint is there (a 403 may be a role without s3:ListBucket)
    except BotoCoreError as exc:
        if not first_contact or not _never_answered(exc):
            return  # a resume's endpoint answered its first run: an outage is the breaker's to ride out
        raise UsageError(
            f"{side.endpoint_name or 'the endpoint'}: no answer from {url} (nothing was changed): "
            f"{_why(exc, url, aws=side.clients.settings.endpoint_url is None)}{_region_hint(side.clients)}"
        ) from None


def _never_answered(exc: BotoCoreError) -> bool:
    """A failure that says nothing serves S3 there: refused, an unknown host, TLS against plain HTTP, or no connection
    accepted at all. A reset or a read that timed out is not: a faulty network does that to a live server too, and the
    run's retries and outage breaker are what ride it out (two tries here would fail a job the run would finish)."""
    from botocore.exceptions import ConnectionError as NoConnection
    from botocore.exceptions import ConnectTimeoutError, HTTPClientError, ReadTimeoutError

    if not isinstance(exc, NoConnection | HTTPClientError) or isinstance(exc, ReadTimeoutError):
        return False
    if isinstance(exc, ConnectTimeoutError):
        return True
    inner = exc.kwargs.get("error")
    text = f"{exc} {inner!r}"
    return any(sign in text for sign in ("Connection refused", "resolve", "Name or service not known", "nodename nor servname", "SSL"))
