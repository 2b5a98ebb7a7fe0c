"""Property: for any set of keys, listing -> message JSON -> copy -> listing gives the same keys and bytes (fake store)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from s3bulk.testing.memstore import MemoryStore
from tests.roundtrip import copied, keys, roundtrip


@settings(max_examples=300, deadline=None)
@given(names=keys(), page=st.integers(1, 7), batch_items=st.integers(1, 9))
def test_any_key_set_survives_listing_the_queue_and_the_copy_byte_exact(names: set[str], page: int, batch_items: int) -> None:
    store = MemoryStore(page_size=page)
    store.create_bucket("src")
    store.create_bucket("dst")
    for key in names:
        store.put_object("src", key, key.encode("utf-8"))
    tally = roundtrip(store, "src", "dst", batch_items)
    assert (tally.succeeded, tally.failed) == (len(names), 0)
    assert copied(store, "dst") == names
    assert all(store.get_body("dst", "copy/" + k) == k.encode("utf-8") for k in names)
