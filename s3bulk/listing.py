"""Streams listings into batches so memory stays flat for any number of keys."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

from s3bulk.store import ObjectInfo, ObjectStore

T = TypeVar("T")


def iter_objects(store: ObjectStore, bucket: str, prefix: str, start_after: str | None = None) -> Iterator[ObjectInfo]:
    """Every object under prefix, in S3's (UTF-8 byte) order, one page in memory at a time."""
    token: str | None = None
    while True:
        page = store.list_page(bucket, prefix, token=token, start_after=start_after)
        yield from page.objects
        if page.next_token is None:
            return
        token = page.next_token


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def mark_existing(selected: Iterable[tuple[ObjectInfo, str]], existing: Iterator[ObjectInfo]) -> Iterator[tuple[ObjectInfo, str, bool]]:
    """Merge-join source (object, destination key) pairs with a destination listing.

    Both streams are sorted the same way because every destination key is the
    same prefix plus an order-preserving suffix, so this needs O(1) memory and
    one listing instead of a HEAD per object.
    """
    current = next(existing, None)
    for obj, dst_key in selected:
        while current is not None and current.key < dst_key:
            current = next(existing, None)
        yield obj, dst_key, current is not None and current.key == dst_key
