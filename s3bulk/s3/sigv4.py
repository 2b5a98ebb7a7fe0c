"""AWS Signature Version 4 for S3, as botocore's S3SigV4Auth signs (tests compare the two byte for byte)."""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import quote

# Characters a key keeps unquoted in a request path, as botocore quotes them.
SAFE = "-._~/"
UNSIGNED = "UNSIGNED-PAYLOAD"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


@dataclass(frozen=True, slots=True)
class Credentials:
    access_key: str
    secret_key: str
    token: str | None = None


class SigV4Signer:
    """AWS Signature Version 4 for S3 (no path normalisation), with the signing key cached per day."""

    def __init__(self, credentials: Callable[[], Credentials], region: str, service: str = "s3") -> None:
        self._credentials = credentials
        self.region = region
        self.service = service
        self._key: tuple[str, str, bytes] | None = None  # (date, secret, key)
        self._lock = threading.Lock()

    def _signing_key(self, date: str, secret: str) -> bytes:
        cached = self._key
        if cached is not None and cached[0] == date and cached[1] == secret:
            return cached[2]
        k = hmac.new(("AWS4" + secret).encode(), date.encode(), hashlib.sha256).digest()
        for part in (self.region, self.service, "aws4_request"):
            k = hmac.new(k, part.encode(), hashlib.sha256).digest()
        with self._lock:
            self._key = (date, secret, k)
        return k

    def sign(
        self, method: str, host: str, path: str, query: str, headers: dict[str, str], payload_hash: str, now: datetime
    ) -> dict[str, str]:
        """Return headers with x-amz-date, x-amz-content-sha256, the session token and Authorization added."""
        creds = self._credentials()
        stamp = now.strftime("%Y%m%dT%H%M%SZ")
        out = dict(headers)
        out["host"] = host
        out["x-amz-date"] = stamp
        out["x-amz-content-sha256"] = payload_hash
        if creds.token:
            out["x-amz-security-token"] = creds.token
        names = sorted(k.lower() for k in out if k.lower() not in {"user-agent", "expect", "x-amzn-trace-id"})
        lowered = {k.lower(): " ".join(str(v).split()) for k, v in out.items()}
        canonical_headers = "".join(f"{n}:{lowered[n]}\n" for n in names)
        signed = ";".join(names)
        canonical = "\n".join([method, path, query, canonical_headers, signed, payload_hash])
        scope = f"{stamp[:8]}/{self.region}/{self.service}/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        signature = hmac.new(self._signing_key(stamp[:8], creds.secret_key), to_sign.encode(), hashlib.sha256).hexdigest()
        out["Authorization"] = f"AWS4-HMAC-SHA256 Credential={creds.access_key}/{scope}, SignedHeaders={signed}, Signature={signature}"
        del out["host"]  # urllib3 sends Host itself, with the same value
        return out


def canonical_query(params: Mapping[str, str]) -> str:
    """A canonical query string (sorted, RFC 3986 quoted): the request's and the signature's alike."""
    return "&".join(f"{quote(k, safe='-_.~')}={quote(v.encode(), safe='-_.~')}" for k, v in sorted(params.items()))
