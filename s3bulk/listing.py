"""Streams listings into batches so memory stays flat for any number of keys."""

from __future__ import annotations

import collections
import queue
import threading
from collections.abc import Generator, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
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


def _tree_entries(store: ObjectStore, bucket: str, prefix: str, delimiter: str) -> Iterator[ObjectInfo | str]:
    """One level of the tree in S3 order: direct objects and sub-prefixes (str), merged."""
    token: str | None = None
    while True:
        page = store.list_page(bucket, prefix, token=token, delimiter=delimiter)
        objs, subs, i, j = page.objects, page.prefixes, 0, 0
        while i < len(objs) or j < len(subs):
            # A key not inside a sub-prefix sorts entirely before or after that prefix's subtree.
            if j >= len(subs) or (i < len(objs) and objs[i].key < subs[j]):
                yield objs[i]
                i += 1
            else:
                yield subs[j]
                j += 1
        if page.next_token is None:
            return
        token = page.next_token


_DONE = object()


def iter_objects_parallel(
    store: ObjectStore, bucket: str, prefix: str, workers: int, *, delimiter: str = "/", pages_ahead: int = 2
) -> Generator[ObjectInfo, None, None]:
    """Every object under prefix in exactly iter_objects' order, with up to `workers` sub-prefixes listed at once.

    Each sub-prefix's pages go into its own queue of `pages_ahead` pages, so memory
    is bounded by workers x pages_ahead pages whatever the tree holds.
    """
    if workers <= 1:
        yield from iter_objects(store, bucket, prefix)
        return
    stop = threading.Event()

    def produce(sub: str, out: queue.Queue[object]) -> None:
        try:
            token: str | None = None
            while not stop.is_set():
                page = store.list_page(bucket, sub, token=token)
                _put(out, page.objects, stop)
                if page.next_token is None:
                    break
                token = page.next_token
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which re-raises
            _put(out, exc, stop)
        finally:
            _put(out, _DONE, stop)

    entries = _tree_entries(store, bucket, prefix, delimiter)
    pending: collections.deque[ObjectInfo | queue.Queue[object]] = collections.deque()
    open_trees = 0
    waiting_objects = 0
    exhausted = False
    with ThreadPoolExecutor(workers, thread_name_prefix="s3bulk-list") as pool:
        try:
            while True:
                # Read ahead only to start sub-prefix producers; stop at the first direct object, so a
                # flat listing streams page by page exactly like serial paging.
                while not exhausted and open_trees < workers and waiting_objects == 0:
                    entry = next(entries, None)
                    if entry is None:
                        exhausted = True
                    elif isinstance(entry, str):
                        q: queue.Queue[object] = queue.Queue(maxsize=pages_ahead)
                        pool.submit(produce, entry, q)
                        pending.append(q)
                        open_trees += 1
                    else:
                        pending.append(entry)
                        waiting_objects += 1
                if not pending:
                    return
                head = pending.popleft()
                if isinstance(head, ObjectInfo):
                    waiting_objects -= 1
                    yield head
                    continue
                open_trees -= 1
                while (item := head.get()) is not _DONE:
                    if isinstance(item, BaseException):
                        raise item
                    yield from item  # type: ignore[misc]
        finally:
            stop.set()


def _put(out: queue.Queue[object], item: object, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            out.put(item, timeout=0.1)
            return
        except queue.Full:
            continue


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
