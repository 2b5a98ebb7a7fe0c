"""What every S3Store call shares: the client for a bucket's Region, the job's request options, and one call
kept going through an outage shorter than the breaker's window, with botocore's errors made the port's."""

from __future__ import annotations

import copy
import dataclasses
import threading
from collections.abc import Callable, Mapping
from typing import Any, Self, TypeVar
from urllib.parse import quote

from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, HTTPClientError, ReadTimeoutError
from botocore.exceptions import ConnectionError as BotoConnectionError

from s3bulk.breakers.outage import OutageBreaker
from s3bulk.s3.keyorder import KeyOrder
from s3bulk.s3.keytext import EncodingClaims, allow_unencoded
from s3bulk.s3.params import PARAMS, request_headers
from s3bulk.s3.ratecontrol import RateControl
from s3bulk.s3.regions import BucketRegions
from s3bulk.s3.results import expect_results
from s3bulk.s3.versionorder import keep_version_order
from s3bulk.store import ObjectHead, RequestOptions, StoreError

T = TypeVar("T")

# Headers a multipart copy must re-apply (CopyObject carries them itself).
_CHECKSUMS = ("CRC64NVME", "CRC32C", "CRC32", "SHA256", "SHA1")
READ_CHUNK = 1024 * 1024
_HEAD_HEADERS = ("CacheControl", "ContentDisposition", "ContentEncoding", "ContentLanguage", "Expires", "WebsiteRedirectLocation")
# What botocore raises when a request got no HTTP answer: EndpointConnectionError (refused, DNS), ConnectTimeoutError,
# SSLError, ProxyConnectionError (ConnectionError's), ConnectionClosedError and ReadTimeoutError (HTTPClientError's).
NO_ANSWER = (BotoConnectionError, HTTPClientError)


def _endpoint_of(client: Any) -> str:
    """The client's endpoint_url: the breaker's name for the endpoint on both request paths."""
    return str(getattr(client.meta, "endpoint_url", ""))


def watch_outages(client: Any, breaker: OutageBreaker) -> None:
    """Tell the breaker how every attempt of a botocore client went; once it has tripped, send nothing more.

    Raised from `needs-retry`, EndpointUnreachable also skips the backoff botocore would sleep
    (up to 20 s) before its next attempt.
    """
    endpoint = _endpoint_of(client)

    def sending(**kwargs: Any) -> None:
        breaker.check()

    def answered(response: Any = None, caught_exception: BaseException | None = None, **kwargs: Any) -> None:
        if response is not None:
            breaker.ok(endpoint)
        elif isinstance(caught_exception, NO_ANSWER):
            breaker.failed(endpoint, caught_exception)
            breaker.check()

    client.meta.events.register("before-send", sending, unique_id=f"s3bulk-outage-send-{id(breaker)}")
    client.meta.events.register("needs-retry", answered, unique_id=f"s3bulk-outage-answer-{id(breaker)}")


class _Count:
    """Shared by a store and its scoped views, so the report sees every retry."""

    def __init__(self) -> None:
        self.value = 0
        self._lock = threading.Lock()

    def add(self, n: int) -> None:
        with self._lock:
            self.value += n


# Elements every ListObjectsV2 / ListObjectVersions answer holds; an answer with none of them was cut short.
LISTING_ELEMENTS = ("IsTruncated", "Name", "KeyCount", "MaxKeys", "Prefix", "Contents", "Versions", "CommonPrefixes")
LISTING_ATTEMPTS = 4


class StoreBase:
    """The state every S3Store call reads (client per Region, rate control, breaker, request options) and the one
    way a call is made; S3Store's docstring says how they behave."""

    def __init__(
        self,
        client: Any,
        *,
        max_keys: int = 1000,
        rate: RateControl | None = None,
        regions: BucketRegions | None = None,
        breaker: OutageBreaker | None = None,
    ) -> None:
        self.client = client
        self.max_keys = max_keys
        self.rate = rate or RateControl()
        self.rate.attach(client)
        self.breaker = breaker or OutageBreaker()
        watch_outages(client, self.breaker)
        keep_version_order(client)
        allow_unencoded(client)
        expect_results(client)
        self.regions = regions
        if regions is not None:
            regions.prepare_clients(self.rate.attach)
            regions.prepare_clients(lambda other: watch_outages(other, self.breaker))
            regions.prepare_clients(keep_version_order)
            regions.prepare_clients(allow_unencoded)
            regions.prepare_clients(expect_results)
        self.opts = RequestOptions()
        self.pinned: Mapping[str, str] = {}  # bucket -> the account the deployment pins it to (pin_owners)
        self._count_retries = _Count()
        self.key_order = KeyOrder()
        self.claims = EncodingClaims()  # which buckets' EncodingType url was checked, and what it was found to be

    def _s3(self, bucket: str) -> Any:
        """The client for the bucket's Region: a dict read once the Region is known."""
        return self.client if self.regions is None else self.regions.client_for(bucket)

    @property
    def retries(self) -> int:
        return self._count_retries.value

    def pin_owners(self, owners: Mapping[str, str]) -> None:
        """Every request on these buckets, whatever job's view sends it, carries its owner (ExpectedBucketOwner, and
        ExpectedSourceBucketOwner as a copy's source): S3 refuses the request if another account owns the bucket."""
        self.pinned = dict(owners)
        self.opts = self._with_pins(self.opts)
        if self.regions is not None:
            self.regions.owners = self.pinned

    def _with_pins(self, options: RequestOptions) -> RequestOptions:
        return dataclasses.replace(options, owners={**options.owners, **self.pinned}) if self.pinned else options

    def scoped(self, options: RequestOptions) -> Self:
        options = self._with_pins(options)
        if options == self.opts:
            return self
        view = copy.copy(self)  # same client, pool, rate control and retry count
        view.opts = options
        return view

    def _params(self, bucket: str, *, source: str | None = None, write: bool = False) -> dict[str, str]:
        """The job's request options as botocore parameters."""
        return {PARAMS[k]: v for k, v in request_headers(self.opts, bucket, source=source, write=write).items()}

    def _call(self, fn: Callable[..., dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        """One API call (a bound method of a client), kept going through an outage shorter than the breaker's window."""
        client = getattr(fn, "__self__", None)
        endpoint = _endpoint_of(client) if client is not None else ""
        return self.breaker.guard(endpoint, lambda: self._call_once(fn, **kwargs))

    def _call_once(self, fn: Callable[..., dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        try:
            response = fn(**kwargs)
        except ClientError as exc:
            meta = exc.response.get("ResponseMetadata", {})
            self._count(meta.get("RetryAttempts", 0))
            err = exc.response.get("Error", {})
            code = str(err.get("Code") or meta.get("HTTPStatusCode") or "ClientError")
            message = str(err.get("Message") or code)
            if meta.get("HTTPStatusCode") == 501:  # which call the server lacks, for the report's one line
                message = f"{exc.operation_name}: {message}"
            raise StoreError(code, message, meta.get("HTTPStatusCode")) from exc
        except (ReadTimeoutError, ConnectTimeoutError) as exc:
            raise StoreError("ReadTimeout" if isinstance(exc, ReadTimeoutError) else "ConnectTimeout", str(exc)) from exc
        except NO_ANSWER as exc:  # refused, reset, DNS, TLS: retryable, and no answer for the breaker
            raise StoreError("ConnectionError", str(exc)) from exc
        except BotoCoreError as exc:
            raise StoreError(type(exc).__name__, str(exc)) from exc
        self._count(response.get("ResponseMetadata", {}).get("RetryAttempts", 0))
        return response

    def _count(self, retries: int) -> None:
        if retries:
            self._count_retries.add(retries)

    def _new_object(self, bucket: str, key: str, head: ObjectHead, tags: Mapping[str, str], storage_class: str | None) -> dict[str, Any]:
        """The arguments that create an object: where, with what headers, metadata, tags and class."""
        kwargs: dict[str, Any] = {
            "Bucket": bucket,
            "Key": key,
            "Metadata": head.metadata,
            **head.headers,
            **self._params(bucket, write=True),
        }
        if head.content_type:
            kwargs["ContentType"] = head.content_type
        if tags:
            kwargs["Tagging"] = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in tags.items())
        if storage_class:
            kwargs["StorageClass"] = storage_class
        return kwargs
