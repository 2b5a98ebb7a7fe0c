"""Which AWS Region each bucket lives in: found once per bucket, cached, shared by both request paths.

S3 answers a request sent to, or signed for, the wrong Region with 301
PermanentRedirect (or 400 AuthorizationHeaderMalformed naming the right Region),
so a job whose source or destination bucket lives elsewhere would fail its first
request. Before a bucket's first request, one HeadBucket (through the home client)
reads the `x-amz-bucket-region` header, which S3 sends on 200, 301, 400 and 403
alike; the answer is cached for the store's life. Servers that send no such header
(SeaweedFS, MinIO) have no Regions: their buckets are filed under the home Region,
so requests stay exactly as before. GetBucketLocation is not used as a fallback: it
needs its own permission, and every S3 answer that could carry a Region carries the
header.

A cached Region that turns out wrong (a bucket deleted and recreated elsewhere)
costs one redirected request: the fast path learns the Region from the answer and
resends once (fastpath.py); on the botocore path botocore's own S3RegionRedirectorv2
resends once (it works with a custom endpoint too: it keeps the URL and re-signs
for the new Region), and the hook registered here copies what it learned into this
cache, so both agree and later requests go straight to the right client.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

DEFAULT_REGION = "us-east-1"
REDIRECT_STATUSES = frozenset({301, 307, 400})
_REGION_ELEMENT = re.compile(rb"<Region>([a-z0-9-]+)</Region>")
_VALID = re.compile(r"^[a-z0-9-]{1,63}$")


def region_from_answer(status: int, headers: Mapping[str, str], body: bytes) -> str | None:
    """The Region a wrong-Region answer names: its x-amz-bucket-region header, else the error body's <Region>.

    None for any other answer, so callers can test every response cheaply.
    """
    if status not in REDIRECT_STATUSES:
        return None
    region = headers.get("x-amz-bucket-region")
    if region is None:
        found = _REGION_ELEMENT.search(body)
        region = found.group(1).decode() if found else None
    return region if region and _VALID.match(region) else None


class BucketRegions:
    """bucket -> Region (thread-safe), and one S3 client per Region built by the injected factory.

    `client_in(region)` must return the same client as `home`, with only the Region
    swapped (s3bulk.s3.clients.S3Clients.client does). A bucket's Region is looked
    up with one dict read once known; the first request to a bucket waits for its
    HeadBucket, and concurrent first requests share that one HeadBucket.
    """

    def __init__(self, home: Any, client_in: Callable[[str], Any]) -> None:
        self.home = home
        self.home_region: str = home.meta.region_name or DEFAULT_REGION
        self._client_in = client_in
        self._regions: dict[str, str] = {}
        self._clients: dict[str, Any] = {self.home_region: home}
        self._bucket_locks: dict[str, threading.Lock] = {}
        self._prepare: list[Callable[[Any], None]] = []
        self._lock = threading.Lock()
        self.owners: Mapping[str, str] = {}  # bucket -> its pinned owner, sent with the lookup too (S3Store.pin_owners)
        self.lookups = 0  # HeadBucket requests made
        self.learned = 0  # Regions corrected from a redirect
        self._watch(home)

    # -- Regions -------------------------------------------------------------------------------
    def region_of(self, bucket: str) -> str:
        """The bucket's Region: a dict read once known, one HeadBucket the first time."""
        region = self._regions.get(bucket)
        return region if region is not None else self._discover(bucket)

    def known(self, bucket: str) -> str | None:
        return self._regions.get(bucket)

    def learn(self, bucket: str, region: str) -> bool:
        """Record a Region named by a redirect; True when it changed what was cached."""
        with self._lock:
            if self._regions.get(bucket) == region:
                return False
            self._regions[bucket] = region
            self.learned += 1
            return True

    def _discover(self, bucket: str) -> str:
        with self._lock:
            lock = self._bucket_locks.setdefault(bucket, threading.Lock())
        with lock:
            region = self._regions.get(bucket)
            if region is None:
                # A failed lookup (a missing bucket, a server without the header) files the bucket under the
                # home Region: its own request then fails with the real error, or is redirected once and learns.
                region = self._lookup(bucket) or self.home_region
                with self._lock:
                    region = self._regions.setdefault(bucket, region)
        return region

    def _lookup(self, bucket: str) -> str | None:
        with self._lock:
            self.lookups += 1
        try:
            owner = {"ExpectedBucketOwner": self.owners[bucket]} if bucket in self.owners else {}
            headers = self.home.head_bucket(Bucket=bucket, **owner)["ResponseMetadata"]["HTTPHeaders"]
        except ClientError as exc:  # 301 / 403 carry the header too
            headers = exc.response.get("ResponseMetadata", {}).get("HTTPHeaders", {})
        except BotoCoreError:
            return None
        region = headers.get("x-amz-bucket-region")
        return str(region) if region else None

    # -- clients -------------------------------------------------------------------------------
    def client_for(self, bucket: str) -> Any:
        """The client for the bucket's Region (the home client itself when they match)."""
        region = self.region_of(bucket)
        client = self._clients.get(region)
        return client if client is not None else self.client_in(region)

    def client_in(self, region: str) -> Any:
        """The client for `region`, built once by the factory and prepared like the home client."""
        client = self._clients.get(region)
        if client is not None:
            return client
        with self._lock:
            client = self._clients.get(region)
            if client is None:
                client = self._client_in(region)
                self._watch(client)
                for prepare in self._prepare:
                    prepare(client)
                self._clients[region] = client
        return client

    def prepare_clients(self, prepare: Callable[[Any], None]) -> None:
        """Apply `prepare` (e.g. rate control) to every client built for another Region, now and later."""
        with self._lock:
            self._prepare.append(prepare)
            others = [c for r, c in self._clients.items() if r != self.home_region]
        for client in others:
            prepare(client)

    def _watch(self, client: Any) -> None:
        """Copy every Region botocore's redirector learns into this cache, so both agree."""
        client.meta.events.register("needs-retry.s3", self._learn_from_botocore, unique_id=f"s3bulk-regions-{id(self)}")

    def _learn_from_botocore(self, request_dict: Mapping[str, Any], response: Any, operation: Any, **kwargs: Any) -> None:
        if response is None or response[0] is None or response[0].status_code not in REDIRECT_STATUSES:
            return None
        if operation.name == "HeadBucket":  # the lookup itself: _discover records its answer
            return None
        parsed = response[1]
        headers = parsed.get("ResponseMetadata", {}).get("HTTPHeaders", {})
        region = headers.get("x-amz-bucket-region") or parsed.get("Error", {}).get("Region")
        bucket = request_dict.get("context", {}).get("s3_redirect", {}).get("bucket")
        if region and bucket and _VALID.match(region):
            self.learn(bucket, region)
        return None  # botocore decides whether to resend
