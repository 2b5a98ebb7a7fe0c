"""Streams listings into batches so memory stays flat for any number of keys."""

from __future__ import annotations

import collections
import queue
import threading
from collections.abc import Generator, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar, cast

from s3bulk.store import ListPage, ObjectInfo, ObjectStore

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


def _tree_entries(store: ObjectStore, bucket: str, prefix: str, delimiter: str, first: ListPage) -> Iterator[ObjectInfo | str]:
    """One level of the tree in S3 order: direct objects and sub-prefixes (str), merged."""
    page = first
    while True:
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
        page = store.list_page(bucket, prefix, token=page.next_token, delimiter=delimiter)


_DONE = object()
# Past every key that starts with a given string: U+10FFFF is the largest code point, so its UTF-8 is S3's largest too.
_TOP = "\U0010ffff"
# Shard boundaries are tried at these characters; keys with other characters still land in a shard (the last one).
_SPLIT_CHARS = [chr(c) for c in range(0x20, 0x7F)]


def _shared(a: str, b: str) -> int:
    """Length of the common prefix of two keys (characters, not path components)."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


@dataclass(frozen=True)
class Shard:
    """Keys k with after < k <= upto (no upper bound when upto is None), listed by start_after."""

    after: str
    upto: str | None


def plan_shards(
    store: ObjectStore,
    bucket: str,
    prefix: str,
    after: str,
    pool: ThreadPoolExecutor,
    *,
    sample: Sequence[str] = (),
    target: int = 64,
    levels: int = 3,
) -> list[Shard]:
    """Split the keys after `after` into contiguous ranges by sampling with one-key probes.

    Any boundaries give a correct, gap-free cover (each shard starts after the previous
    one's end), so the probes only decide balance. Each level finds, per range, the
    longest prefix all its keys share, then probes one cut per character at the next
    position (characters seen in `sample`, the first page, so numeric keys cost ~10
    probes, not ~95) and drops the empty ranges. Levels repeat until there are
    `target` shards (one per list worker), or until a range is about ten pages (a
    shard's last page runs past its end, so finer shards would list more than they
    yield). The shared read-ahead budget lets every shard list at once.
    """
    chars = sorted({c for key in sample for c in key[len(prefix) :]}) or _SPLIT_CHARS
    # Keys sharing as long a prefix as the first page's hold about a page; one character shorter, about
    # ten. A shard's last page runs past its end, so shards stay several pages long: cut no finer.
    page_stem = _shared(sample[0], sample[-1]) if len(sample) > 1 else len(prefix) + 2
    coarsest = page_stem - 1

    def first_after(start: str) -> str | None:
        objs = store.list_page(bucket, prefix, start_after=start, max_keys=1).objects
        return objs[0].key if objs else None

    def level(shards: list[Shard]) -> list[Shard]:
        # 1. The longest shared prefix per shard (the stem's subtree holds every key of the range).
        # Only stems that could still be cut matter: longer than what the range's ends share, at most `coarsest`.
        stems = [
            [s.after[:n] for n in range(max(len(prefix), _shared(s.after, s.upto or "")) + 1, min(len(s.after), coarsest) + 1)]
            for s in shards
        ]
        flat = [stem for group in stems for stem in group]
        past = dict(zip(flat, pool.map(lambda st: first_after(st + _TOP), flat), strict=True))
        commons = []
        for s, group in zip(shards, stems, strict=True):
            # Every string between two strings shares their common prefix.
            common = max(prefix, s.after[: _shared(s.after, s.upto)] if s.upto is not None else prefix, key=len)
            for stem in group:
                nxt = past[stem]
                if nxt is None or (s.upto is not None and nxt > s.upto):
                    common = stem
            commons.append(common)
        # 2. One probe per cut inside each range; keep the cuts that leave a non-empty range behind them.
        cuts = [
            [common + c for c in chars if s.after < common + c and (s.upto is None or common + c < s.upto)]
            if len(common) < coarsest
            else []
            for s, common in zip(shards, commons, strict=True)
        ]
        probes = [s.after for s in shards] + [c for group in cuts for c in group]
        firsts = dict(zip(probes, pool.map(first_after, probes), strict=True))
        out: list[Shard] = []
        for s, group in zip(shards, cuts, strict=True):
            lo, split = s.after, False
            for cut in group:
                lo_first = firsts[lo]
                if lo_first is not None and lo_first <= cut:  # (lo, cut] holds at least one key
                    out.append(Shard(lo, cut))
                    lo, split = cut, True
            rest = firsts[lo]
            if split and (rest is None or (s.upto is not None and rest > s.upto)):
                out[-1] = Shard(out[-1].after, s.upto)  # the rest is empty: the last piece keeps the range's end
            else:
                out.append(Shard(lo, s.upto))
        return out

    shards = [Shard(after, None)]
    for _ in range(levels):
        finer = level(shards)
        grew = len(finer) > len(shards)
        shards = finer
        if not grew or len(shards) >= target:
            break
    return shards


def at_most(shards: list[Shard], n: int) -> list[Shard]:
    """Merge neighbouring shards into at most n, by count: (a, b] + (b, c] = (a, c]."""
    if len(shards) <= n:
        return shards
    size = -(-len(shards) // n)
    return [Shard(shards[i].after, shards[min(i + size, len(shards)) - 1].upto) for i in range(0, len(shards), size)]


def plan_ranges(store: ObjectStore, bucket: str, prefix: str, target: int, *, threads: int = 16) -> list[Shard]:
    """At most `target` contiguous key ranges covering every key under prefix, for listers working in parallel.

    The rest after the first page is cut by plan_shards from the first page's last key (as
    the engine's parallel listing does), and the first range takes the first page too:
    starting from "" would give
    the probes nothing to go on where keys share more than the prefix ("logs/2026/..."),
    and the whole source would be one range. A source of one page is one range.
    """
    first = store.list_page(bucket, prefix)
    if target <= 1 or first.next_token is None or not first.objects:
        return [Shard("", None)]
    last = first.objects[-1].key
    with ThreadPoolExecutor(min(threads, target), thread_name_prefix="s3bulk-plan") as pool:
        rest = at_most(plan_shards(store, bucket, prefix, last, pool, sample=[o.key for o in first.objects], target=target), target)
    return [Shard("", rest[0].upto), *rest[1:]]  # the first range takes the first page too


@dataclass(frozen=True, slots=True)
class ShardPage:
    """One page of a shard: its keys, the cursor to continue from, and whether the shard is done."""

    objects: list[ObjectInfo]
    next_token: str | None
    done: bool


def list_shard_page(store: ObjectStore, bucket: str, prefix: str, shard: Shard, token: str | None) -> ShardPage:
    """The next page of a shard (keys k with after < k <= upto): from its start, or from `token`.

    A page that runs past the shard's end keeps only the shard's keys and ends the shard,
    so shards cut anywhere cover the keys exactly once. The engine's parallel listing and
    the stack's listers both page shards through here.
    """
    page = store.list_page(bucket, prefix, token=token, start_after=None if token else shard.after or None)
    objs, done = page.objects, page.next_token is None
    if shard.upto is not None and objs and objs[-1].key > shard.upto:
        upto = shard.upto
        objs, done = [o for o in objs if o.key <= upto], True
    return ShardPage(objs, None if done else page.next_token, done)


class _Budget:
    """Pages listed ahead of the consumer, shared by every range: a range that is ahead waits for
    a permit, while the range the consumer is reading (the head) never waits, so it cannot deadlock."""

    def __init__(self, pages: int) -> None:
        self._free = pages
        self._head = -1
        self._cv = threading.Condition()

    def take(self, index: int, out: queue.Queue[object], stop: threading.Event) -> bool:
        """True when a permit was taken (the consumer gives it back); False for a page the consumer is waiting on."""
        with self._cv:
            while not stop.is_set():
                if self._free > 0:
                    self._free -= 1
                    return True
                if self._head == index and out.empty():
                    return False
                self._cv.wait(0.1)
        return False

    def give(self) -> None:
        with self._cv:
            self._free += 1
            self._cv.notify_all()

    def waiting(self) -> None:
        """The consumer has drained the head's queue: wake its producer."""
        with self._cv:
            self._cv.notify_all()

    def set_head(self, index: int) -> None:
        with self._cv:
            self._head = index
            self._cv.notify_all()


def iter_objects_parallel(
    store: ObjectStore,
    bucket: str,
    prefix: str,
    workers: int,
    *,
    delimiter: str = "/",
    pages_ahead: int = 4,
    start_after: str | None = None,
) -> Generator[ObjectInfo, None, None]:
    """Every object under prefix in exactly iter_objects' order, with up to `workers` ranges listed at once.

    A tree is split at its sub-prefixes; a flat prefix (a truncated first page and no
    sub-prefixes) is split into StartAfter shards by plan_shards. With start_after (a
    resumed job) the rest is sharded the same way, whatever its shape. Ranges ahead of
    the consumer share a budget of workers x pages_ahead pages, so memory is bounded
    whatever the bucket holds, and a long shard keeps listing while earlier ones drain.
    """
    if workers <= 1:
        yield from iter_objects(store, bucket, prefix, start_after=start_after)
        return
    stop = threading.Event()
    budget = _Budget(workers * pages_ahead)

    def produce(index: int, sub: str, shard: Shard | None, out: queue.Queue[object]) -> None:
        try:
            token: str | None = None
            while not stop.is_set():
                page = list_shard_page(store, bucket, sub, shard or Shard("", None), token)
                out.put((budget.take(index, out, stop), page.objects))
                if page.done:
                    break
                token = page.next_token
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which re-raises
            out.put(exc)
        finally:
            out.put(_DONE)

    ranges: Iterator[ObjectInfo | str | Shard]
    pool = ThreadPoolExecutor(workers, thread_name_prefix="s3bulk-list")
    try:
        first = store.list_page(bucket, prefix, delimiter=delimiter) if start_after is None else ListPage([], None)
        if start_after is not None:
            ranges = iter(plan_shards(store, bucket, prefix, start_after, pool, target=workers, levels=1))
        elif not first.prefixes and first.next_token is not None and first.objects:
            yield from first.objects
            ranges = iter(
                plan_shards(store, bucket, prefix, first.objects[-1].key, pool, sample=[o.key for o in first.objects], target=4 * workers)
            )
        else:
            ranges = _tree_entries(store, bucket, prefix, delimiter, first)
        pending: collections.deque[ObjectInfo | tuple[int, queue.Queue[object]]] = collections.deque()
        open_ranges = 0
        waiting_objects = 0
        exhausted = False
        started = 0
        while True:
            # Read ahead only to start range producers; stop at the first direct object, so a
            # mixed level streams its own objects page by page exactly like serial paging.
            while not exhausted and open_ranges < workers and waiting_objects == 0:
                entry = next(ranges, None)
                if entry is None:
                    exhausted = True
                elif isinstance(entry, ObjectInfo):
                    pending.append(entry)
                    waiting_objects += 1
                else:
                    q: queue.Queue[object] = queue.Queue()  # bounded by the shared budget, not per queue
                    if isinstance(entry, Shard):
                        pool.submit(produce, started, prefix, entry, q)
                    else:
                        pool.submit(produce, started, entry, None, q)
                    pending.append((started, q))
                    started += 1
                    open_ranges += 1
            if not pending:
                return
            head = pending.popleft()
            if isinstance(head, ObjectInfo):
                waiting_objects -= 1
                yield head
                continue
            open_ranges -= 1
            index, hq = head
            budget.set_head(index)
            while True:
                try:
                    item = hq.get_nowait()
                except queue.Empty:
                    budget.waiting()
                    item = hq.get()
                if item is _DONE:
                    break
                if isinstance(item, BaseException):
                    raise item
                permitted, objs = cast(tuple[bool, list[ObjectInfo]], item)
                if permitted:
                    budget.give()
                yield from objs
    finally:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
