"""Property on a real HTTP server: any key set survives listing -> message JSON -> copy -> listing (moto keeps keys as S3 does)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from s3bulk.s3.faststore import FastS3Store
from s3bulk.s3.stores import S3Store
from tests.integration.conftest import client_for
from tests.roundtrip import KEY_CHARS, copied, keys, roundtrip

pytestmark = pytest.mark.moto

# moto's HTTP router cannot take a line feed in a path; SeaweedFS and the fake store cover it.
ROUTABLE = KEY_CHARS.filter(lambda c: c != "\n")


@pytest.mark.parametrize("path", ["fast", "botocore"])
def test_any_key_set_survives_the_wire_byte_exact(moto_endpoint: str, path: str) -> None:
    client = client_for(moto_endpoint)

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(names=keys(ROUTABLE), page=st.integers(1, 5), batch_items=st.integers(1, 6))
    def check(names: set[str], page: int, batch_items: int) -> None:
        src, dst = f"src-{uuid.uuid4().hex[:12]}", f"dst-{uuid.uuid4().hex[:12]}"
        client.create_bucket(Bucket=src)
        client.create_bucket(Bucket=dst)
        for key in names:
            client.put_object(Bucket=src, Key=key, Body=key.encode("utf-8"))
        store: Any = FastS3Store(client, 8, max_keys=page) if path == "fast" else S3Store(client, max_keys=page)
        tally = roundtrip(store, src, dst, batch_items)
        assert (tally.succeeded, tally.failed) == (len(names), 0), list(tally.failures())
        assert copied(store, dst) == names
        for key in names:
            assert client.get_object(Bucket=dst, Key="copy/" + key)["Body"].read() == key.encode("utf-8")

    check()
