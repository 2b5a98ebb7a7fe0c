"""The one place boto3 clients are built, so every client has explicit retries, timeouts and a sized pool.

Nothing here runs at import time: callers build a client and pass it in.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, replace
from typing import Any, Literal

import boto3
import botocore.loaders
import botocore.session
from botocore.config import Config

from s3bulk.job import Destination, Source
from s3bulk.s3.credentials import SecretCredentials, secret_region


@dataclass(frozen=True, slots=True)
class ClientSettings:
    # S3's endpoint only (--endpoint-url, $AWS_ENDPOINT_URL_S3): never another service's (make_client).
    endpoint_url: str | None = None
    region: str | None = None
    profile: str | None = None
    access_key: str | None = None  # explicit keys for local servers; otherwise the standard chain
    secret_key: str | None = None
    # A Secrets Manager secret ARN holding the keys (s3/credentials.py); read with the profile's, or the default, chain.
    credentials_secret: str | None = None
    secret_field: str = "source.credentials_secret"  # the job field named in its errors
    # botocore >= 1.44 defaults to "standard" and older versions to "legacy": say which.
    retry_mode: Literal["legacy", "standard", "adaptive"] = "standard"
    # Bulk jobs meet throttling; 8 attempts with standard's capped exponential backoff ride out ~20 s of SlowDown.
    max_attempts: int = 8
    connect_timeout: float = 10.0
    # A server-side CopyObject of up to the multipart threshold must finish inside this.
    read_timeout: float = 120.0


def make_config(settings: ClientSettings, max_pool_connections: int) -> Config:
    local = settings.endpoint_url is not None
    return Config(
        retries={"mode": settings.retry_mode, "max_attempts": settings.max_attempts},
        max_pool_connections=max_pool_connections,
        connect_timeout=settings.connect_timeout,
        read_timeout=settings.read_timeout,
        tcp_keepalive=True,
        s3={"addressing_style": "path" if local else "auto"},
        # S3-compatible servers differ in checksum support; send checksums only where the API requires them.
        request_checksum_calculation="when_required" if local else "when_supported",
        response_checksum_validation="when_required" if local else "when_supported",
    )


def for_side(settings: ClientSettings, side: Source | Destination) -> ClientSettings:
    """One side's settings: its endpoint, Region, profile or credentials secret, else those of `settings`."""
    return replace(
        settings,
        endpoint_url=side.endpoint_url or settings.endpoint_url,
        region=side.region or settings.region,
        profile=side.profile or settings.profile,
        credentials_secret=side.credentials_secret,
        secret_field=f"{'source' if isinstance(side, Source) else 'destination'}.credentials_secret",
    )


@functools.cache
def _loader() -> botocore.loaders.Loader:
    """One data loader for every session of the process: each service's model and the endpoint data are read and
    parsed once, not once per client (measured: 40-150 ms a client on a session of its own, 4-45 ms on a warm loader;
    a Lambda cold start makes four or five clients). A Loader only caches what it read, so sharing it is safe."""
    return botocore.loaders.create_loader(botocore.session.Session().get_config_variable("data_path"))


def _session(settings: ClientSettings) -> boto3.session.Session:
    if settings.credentials_secret is not None:
        return _secret_session(settings, settings.credentials_secret)
    core = botocore.session.Session()
    loader = _loader()
    core.register_component("data_loader", loader)
    session = boto3.session.Session(
        aws_access_key_id=settings.access_key,
        aws_secret_access_key=settings.secret_key,
        profile_name=settings.profile,
        region_name=settings.region,
        botocore_session=core,
    )
    # boto3 appends its own data folder to the loader's search paths each session: keep one copy on the shared loader.
    paths = loader.search_paths
    if paths.count(paths[-1]) > 1:
        paths.remove(paths[-1])
    return session


def _secret_session(settings: ClientSettings, arn: str) -> boto3.session.Session:
    """A session whose keys come from the secret, read through the runner's own chain (its profile, env or role).

    The Secrets Manager client ignores the S3 endpoint (that is the other provider's) and
    talks to the secret's own Region.
    """
    reader = replace(settings, credentials_secret=None, endpoint_url=None, access_key=None, secret_key=None, region=secret_region(arn))
    secrets: list[Any] = []

    def client() -> Any:
        if not secrets:
            secrets.append(make_client("secretsmanager", reader))
        return secrets[0]

    core = botocore.session.Session()
    core.get_component("credential_provider").insert_before("env", SecretCredentials(client, arn, settings.secret_field))
    return boto3.session.Session(botocore_session=core, region_name=settings.region)


def make_s3_client(settings: ClientSettings, max_pool_connections: int) -> Any:
    """An S3 client whose connection pool holds at least one connection per worker thread."""
    return S3Clients(settings, max_pool_connections).client()


class S3Clients:
    """The job's S3 clients: the settings' own, and the same client for any other Region, on demand.

    One session serves them all, so every client shares one (refreshable) set of
    credentials. For AWS endpoints botocore resolves each Region's host; with a
    custom endpoint_url (a local server, a proxy) the endpoint stays and only the
    signing Region changes. Nothing is built until asked for.
    """

    def __init__(self, settings: ClientSettings, max_pool_connections: int) -> None:
        self.settings = settings
        self.max_pool_connections = max_pool_connections
        self._session: boto3.session.Session | None = None
        self._lock = threading.Lock()

    def client(self, region: str | None = None, *, tuning: ClientSettings | None = None) -> Any:
        """A new S3 client: for the settings' Region when region is None, otherwise for `region`, all else equal.

        `tuning` replaces the settings' retries and timeouts only (the session, and so the credentials, stay shared):
        the CLI's first look at an endpoint (local/reach.py) gives up in seconds, not after eight attempts."""
        with self._lock:  # boto3 sessions are not safe to build clients from concurrently
            if self._session is None:
                self._session = _session(self.settings)
            session = self._session
            if region is None:
                region = self.settings.region or session.region_name or ("us-east-1" if self.settings.endpoint_url else None)
            return session.client(
                "s3",
                endpoint_url=self.settings.endpoint_url,
                region_name=region,
                config=make_config(tuning or self.settings, self.max_pool_connections),
            )


def make_client(service: str, settings: ClientSettings, max_pool_connections: int = 10) -> Any:
    """Any other AWS client (DynamoDB, SQS, Step Functions, CloudFormation, Lambda, Secrets Manager) with the same
    explicit retries and timeouts.

    Its endpoint is botocore's to find, as the SDK finds it by itself: $AWS_ENDPOINT_URL_<SERVICE> (DYNAMODB, SFN,
    CLOUDFORMATION, ...), then $AWS_ENDPOINT_URL, then a profile's endpoint_url, else AWS's own. settings.endpoint_url
    is S3's (--endpoint-url, $AWS_ENDPOINT_URL_S3) and never sent here: with an S3 server named, the stack's
    DynamoDB and Step Functions calls went to it. Its Region is the settings', else the profile's or the
    environment's; with none, botocore raises NoRegionError (region_of says so first).
    """
    session = _session(settings)
    config = Config(
        retries={"mode": settings.retry_mode, "max_attempts": settings.max_attempts},
        max_pool_connections=max_pool_connections,
        connect_timeout=settings.connect_timeout,
        read_timeout=settings.read_timeout,
    )
    return session.client(service, region_name=settings.region or session.region_name, config=config)  # type: ignore[call-overload]


def region_of(settings: ClientSettings) -> str | None:
    """The Region a non-S3 client of these settings would use (the settings', else the profile's or the
    environment's), or None when none is set."""
    return settings.region or _session(settings).region_name


def has_credentials(settings: ClientSettings) -> bool:
    return _session(settings).get_credentials() is not None
