"""The store a job runs on: FastS3Store sends the hot calls (listing, CopyObject, DeleteObjects) on the fast request
path (fastpath.py) and the rest through botocore; open_store picks it, or the botocore store where a proxy is in use."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from botocore.utils import get_environ_proxies

from s3bulk.breakers.outage import OutageBreaker
from s3bulk.s3.clients import S3Clients
from s3bulk.s3.fastpath import FastS3
from s3bulk.s3.keyorder import check_marked
from s3bulk.s3.params import encryption_headers, request_headers
from s3bulk.s3.ratecontrol import RateControl
from s3bulk.s3.regions import BucketRegions
from s3bulk.s3.stores import S3Store
from s3bulk.store import Carried, KeyFailure, ListPage, ObjectHead, version_markers


class FastS3Store(S3Store):
    """S3Store whose CopyObject and DeleteObjects take the lighter request path (fastpath.py)."""

    def __init__(
        self,
        client: Any,
        max_connections: int,
        *,
        max_keys: int = 1000,
        rate: RateControl | None = None,
        regions: BucketRegions | None = None,
        breaker: OutageBreaker | None = None,
    ) -> None:
        super().__init__(client, max_keys=max_keys, rate=rate, regions=regions, breaker=breaker)
        self.fast = FastS3(client, max_connections, rate=self.rate, regions=regions, breaker=self.breaker, claims=self.claims)

    @property
    def retries(self) -> int:
        return self._count_retries.value + self.fast.retries

    def list_page(
        self,
        bucket: str,
        prefix: str,
        token: str | None = None,
        start_after: str | None = None,
        delimiter: str | None = None,
        max_keys: int | None = None,
    ) -> ListPage:
        page = self.fast.list_page(
            bucket, prefix, token, start_after, max_keys or self.max_keys, delimiter, request_headers(self.opts, bucket)
        )
        return self.key_order.checked(bucket, page, token=token, start_after=start_after)

    def list_versions_page(
        self,
        bucket: str,
        prefix: str,
        token: str | None = None,
        key_marker: str | None = None,
        delimiter: str | None = None,
        max_keys: int | None = None,
    ) -> ListPage:
        """On the fast path: it keeps the response's own order of versions and delete markers, which botocore's two lists lose."""
        markers = version_markers(token) if token else ({"KeyMarker": key_marker} if key_marker else {})
        page = self.fast.list_versions_page(
            bucket, prefix, markers.get("KeyMarker"), markers.get("VersionIdMarker"), max_keys or self.max_keys, delimiter,
            request_headers(self.opts, bucket),
        )  # fmt: skip
        return check_marked(bucket, page, markers.get("KeyMarker"))

    def copy_object(
        self,
        src_bucket: str,
        src_key: str,
        dst_bucket: str,
        dst_key: str,
        *,
        storage_class: str | None = None,
        src_version: str = "",
        checksum_algorithm: str = "",
        metadata: ObjectHead | None = None,
        if_match: str = "",
        carry: Carried | None = None,
    ) -> str:
        # Rare enough to take botocore's path; an in-place copy that keeps only its encryption stays on the fast one.
        if src_version or checksum_algorithm or metadata is not None or (carry is not None and carry.beyond_encryption):
            return super().copy_object(
                src_bucket,
                src_key,
                dst_bucket,
                dst_key,
                storage_class=storage_class,
                src_version=src_version,
                checksum_algorithm=checksum_algorithm,
                metadata=metadata,
                if_match=if_match,
                carry=carry,
            )
        headers = request_headers(self.opts, dst_bucket, source=src_bucket, write=True)
        if if_match:
            headers["x-amz-copy-source-if-match"] = if_match
        if carry is not None and carry.encryption is not None:  # it replaces the store's own
            own = {k: v for k, v in headers.items() if not k.startswith("x-amz-server-side-encryption")}
            headers = own | encryption_headers(carry.encryption)
        return self.fast.copy_object(src_bucket, src_key, dst_bucket, dst_key, storage_class=storage_class, headers=headers)

    def delete_objects(self, bucket: str, keys: Sequence[str], version_ids: Sequence[str] = ()) -> list[KeyFailure]:
        return self.fast.delete_objects(bucket, keys, request_headers(self.opts, bucket), version_ids)

    def delete_object(self, bucket: str, key: str, *, version_id: str = "") -> None:
        if version_id:
            super().delete_object(bucket, key, version_id=version_id)
            return
        self.fast.delete_object(bucket, key, request_headers(self.opts, bucket))


def through_proxy(client: Any) -> bool:
    """Whether botocore sends this client's requests through a proxy: its config's `proxies`, or HTTP(S)_PROXY for the
    endpoint's scheme with NO_PROXY not naming its host (botocore's own rule). Corporate networks often allow nothing else."""
    if client.meta.config.proxies:
        return True
    url = str(client.meta.endpoint_url)
    return urlsplit(url).scheme in get_environ_proxies(url)


def open_store(
    clients: S3Clients, *, fast: bool = True, max_keys: int = 1000, rate: RateControl | None = None, breaker: OutageBreaker | None = None
) -> S3Store:
    """The store a job runs on: the home client, and each bucket's requests sent to its own Region."""
    client = clients.client()
    regions = BucketRegions(client, clients.client)
    if fast and through_proxy(client):  # the fast path opens its own sockets: where botocore would use a proxy, botocore sends all
        fast = False
    if fast:
        return FastS3Store(client, clients.max_pool_connections, max_keys=max_keys, rate=rate, regions=regions, breaker=breaker)
    return S3Store(client, max_keys=max_keys, rate=rate, regions=regions, breaker=breaker)
