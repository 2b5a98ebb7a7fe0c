"""The sharded listing: a source cut into key ranges of about equal size, each listed on its own.

The planner probes the key space with listings of two keys at most and no delimiter (a few requests, not a full
listing), estimates each piece's size, and balances the pieces into ranges (`plan_ranges`); `Shard` is a range, paged by
start_after up to its end (`list_shard_page`, as the stack's listers page theirs); `iter_objects_parallel` lists the
ranges at once and yields their keys in order, as one listing. Every plan is contiguous from its start to the prefix's
end, and no key is ever taken from a delimiter answer (treeranges), so a server's CommonPrefixes cannot hide keys.
"""

from __future__ import annotations

import bisect
import collections
import itertools
import queue
import threading
from collections.abc import Generator, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import cast

from s3bulk.source.listing import Lister, iter_objects
from s3bulk.source.treeranges import TOP as _TOP
from s3bulk.source.treeranges import Range, ShardPage, page_range, range_pages, tree_ranges
from s3bulk.store import ObjectInfo

_DONE = object()
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


def below(key: str) -> str:
    """The greatest string worth naming below a key: between the two lie only strings that go on with more U+10FFFF.

    A boundary just below a real key names no folder that holds keys (they would sort between the two),
    so SeaweedFS, which reads start-after="logs/a" as the folder "logs/a/" and skips it, lists the same
    keys after it as S3 does. Every result is UTF-8 encodable: the surrogates are stepped over.
    """
    last = ord(key[-1])
    if last == 0:
        return key[:-1]  # nothing sorts between "ab" and "ab\x00"
    prev = 0xD7FF if last == 0xE000 else last - 1  # U+D800-U+DFFF have no UTF-8
    return key[:-1] + chr(prev) + _TOP


def boundary(cut: str, first: str) -> str:
    """Where to end a range at `cut`, given `first`, the first key after it: any string in [cut, first) splits the keys alike.

    The probes' cuts are stems ("logs/a"); the boundary is moved up to just below the next real key.
    """
    return max(cut, below(first))


@dataclass(frozen=True)
class Sized:
    """A planned range and its estimated size, in no unit: only the ratios between ranges mean anything."""

    shard: Shard
    size: float
    final: bool = False  # no further level of cuts would split it


class _Prober:
    """Probes (LISTs of two keys at most) that split key ranges at the next character of their shared stem, a level at a time."""

    def __init__(self, store: Lister, bucket: str, prefix: str, pool: ThreadPoolExecutor, sample: Sequence[str]) -> None:
        self.store, self.bucket, self.prefix, self.pool = store, bucket, prefix, pool
        self.chars = sorted({c for key in sample for c in key[len(prefix) :]}) or _SPLIT_CHARS
        # Keys sharing as long a prefix as the first page's hold about a page; one character shorter, about
        # ten. A shard's last page runs past its end, so shards stay several pages long: cut no finer.
        page_stem = _shared(sample[0], sample[-1]) if len(sample) > 1 else len(prefix) + 2
        self.coarsest = page_stem - 1

    def first_after(self, start: str) -> str | None:
        """The first key after `start`, asked from just below it: SeaweedFS would skip a folder `start` names."""
        objs = self.store.list_page(self.bucket, self.prefix, start_after=below(start) if start else None, max_keys=2).objects
        return next((o.key for o in objs if o.key > start), None)  # `start` itself may be a key

    def split(self, shards: Sequence[Shard]) -> list[tuple[list[Shard], bool]]:
        """Each shard's non-empty pieces, in order (the shard alone when it cannot be cut), and whether they are final.

        Pieces cut one character before `coarsest` are final: each holds keys of one stem as long as
        `coarsest` (or only characters the cuts do not know), so a further level would find no cut.
        """
        prefix, coarsest = self.prefix, self.coarsest
        # 1. The longest shared prefix per shard (the stem's subtree holds every key of the range).
        # Only stems that could still be cut matter: longer than what the range's ends share, at most `coarsest`.
        stems = [
            [s.after[:n] for n in range(max(len(prefix), _shared(s.after, s.upto or "")) + 1, min(len(s.after), coarsest) + 1)]
            for s in shards
        ]
        flat = [stem for group in stems for stem in group]
        past = dict(zip(flat, self.pool.map(lambda st: self.first_after(st + _TOP), flat), strict=True))
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
            [common + c for c in self.chars if s.after < common + c and (s.upto is None or common + c < s.upto)]
            if len(common) < coarsest
            else []
            for s, common in zip(shards, commons, strict=True)
        ]
        probes = [s.after for s, group in zip(shards, cuts, strict=True) if group] + [c for group in cuts for c in group]
        firsts = dict(zip(probes, self.pool.map(self.first_after, probes), strict=True))
        out: list[tuple[list[Shard], bool]] = []
        for s, common, group in zip(shards, commons, cuts, strict=True):
            pieces: list[Shard] = []
            lo, lo_end = s.after, s.after  # the last cut taken, and the boundary that stands for it
            for cut in group:
                lo_first, first = firsts[lo], firsts[cut]
                if lo_first is not None and lo_first <= cut:  # (lo, cut] holds at least one key
                    # Past the range's end (or no key at all) the piece is replaced below: keep the cut.
                    end = cut if first is None or (s.upto is not None and first > s.upto) else boundary(cut, first)
                    pieces.append(Shard(lo_end, end))
                    lo, lo_end = cut, end
            rest = firsts[lo] if pieces else None
            if pieces and (rest is None or (s.upto is not None and rest > s.upto)):
                pieces[-1] = Shard(pieces[-1].after, s.upto)  # the rest is empty: the last piece keeps the range's end
            else:
                pieces.append(Shard(lo_end, s.upto))
            out.append((pieces, len(pieces) == 1 or len(common) + 1 >= coarsest))
        return out

    def refine(self, pieces: list[Sized], which: Iterable[int]) -> tuple[list[Sized], bool]:
        """Split the pieces at `which` one level; a piece of estimated size w cut into m shares w equally.

        A piece that does not split is marked final (the same probes would give the same answer), and so
        are pieces no further level could cut (see split): neither is probed again.
        """
        chosen = sorted({i for i in which if not pieces[i].final})
        if not chosen:
            return pieces, False
        split = dict(zip(chosen, self.split([pieces[i].shard for i in chosen]), strict=True))
        out: list[Sized] = []
        for i, piece in enumerate(pieces):
            if i not in split:
                out.append(piece)
                continue
            parts, final = split[i]
            out += [Sized(p, piece.size / len(parts), final) for p in parts]
        return out, len(out) > len(pieces)


def plan_shards(
    store: Lister,
    bucket: str,
    prefix: str,
    after: str,
    pool: ThreadPoolExecutor,
    *,
    sample: Sequence[str] = (),
    target: int = 64,
    levels: int = 3,
) -> list[Shard]:
    """Split the keys after `after` into contiguous ranges by sampling with probes of two keys at most.

    Any boundaries give a correct, gap-free cover (each shard starts after the previous
    one's end), so the probes only decide balance. Each level finds, per range, the
    longest prefix all its keys share, then probes one cut per character at the next
    position (characters seen in `sample`, the first page, so numeric keys cost ~10
    probes, not ~95) and drops the empty ranges. Levels repeat until there are
    `target` shards (one per list worker), or until a range is about ten pages (a
    shard's last page runs past its end, so finer shards would list more than they
    yield). Each boundary sits just below the first key after its cut (see `below`).
    The shared read-ahead budget lets every shard list at once.
    """
    return [p.shard for p in _plan(_Prober(store, bucket, prefix, pool, sample), after, target, levels)]


@dataclass
class _Node:
    """A range of the plan and the pieces it was cut into (none: it is a piece of the plan)."""

    shard: Shard
    final: bool = False
    parts: list[_Node] = field(default_factory=list)


def _plan(prober: _Prober, after: str, target: int, levels: int) -> list[Sized]:
    """Whole levels of cuts over every range, until there are `target` pieces or nothing more splits.

    Sizes come from the plan's shape, as if ranges at one depth were alike: a piece of the last
    level weighs 1, a range weighs what its pieces weigh, and a piece the probes could not cut
    further weighs what the ranges that were cut at its depth weigh on average. So "in/0" cut in
    ten and "in/1" cut in three weigh 10:3, and a dense run that cannot be cut (flat keys at the
    ten-page floor) is not taken for one piece of a deeper tree beside it.
    """
    root = _Node(Shard(after, None))
    depths, leaves = [[root]], 1
    for _ in range(levels):
        todo = [n for n in depths[-1] if not n.final]
        deeper: list[_Node] = []
        for node, (parts, final) in zip(todo, prober.split([n.shard for n in todo]), strict=True):
            if len(parts) == 1:
                node.final = True
            else:
                node.parts = [_Node(p, final) for p in parts]
                deeper += node.parts
                leaves += len(parts) - 1
        if not deeper:
            break
        depths.append(deeper)
        if leaves >= target:
            break
    size: dict[int, float] = {}
    for level in reversed(depths):
        cut = [sum(size[id(p)] for p in n.parts) for n in level if n.parts]
        alike = sum(cut) / len(cut) if cut else 1.0
        for n in level:
            size[id(n)] = sum(size[id(p)] for p in n.parts) if n.parts else alike

    def pieces(n: _Node) -> Iterator[Sized]:
        if n.parts:
            for p in n.parts:
                yield from pieces(p)
        else:
            yield Sized(n.shard, size[id(n)], n.final)

    return list(pieces(root))


def _edges(sizes: Sequence[float], n: int) -> list[int]:
    """Where n contiguous groups of pieces start: each edge at the piece boundary nearest an n-th of the total size."""
    cum = [0.0, *itertools.accumulate(sizes)]
    m, total, edges = len(sizes), cum[-1], [0]
    for i in range(1, n):
        q = total * i / n
        e = bisect.bisect_left(cum, q)
        if e > 0 and (e > m or q - cum[e - 1] <= cum[e] - q):
            e -= 1
        edges.append(min(max(e, edges[-1] + 1), m - (n - i)))  # every group keeps at least one piece
    return [*edges, m]


def _straddling(pieces: Sequence[Sized], n: int, tolerance: float) -> list[int]:
    """The pieces a group edge falls inside, further than `tolerance` of a group's size from either end."""
    cum = [0.0, *itertools.accumulate(p.size for p in pieces)]
    out = []
    for i in range(1, n):
        q = cum[-1] * i / n
        j = bisect.bisect_right(cum, q) - 1  # cum[j] <= q < cum[j + 1]: piece j holds the edge
        if j < len(pieces) and min(q - cum[j], cum[j + 1] - q) > tolerance * cum[-1] / n:
            out.append(j)
    return out


def balance(pieces: Sequence[Sized], n: int) -> list[Shard]:
    """At most n ranges of about equal estimated size, each a run of neighbouring pieces: (a, b] + (b, c] = (a, c]."""
    if len(pieces) <= n:
        return [p.shard for p in pieces]
    edges = _edges([p.size for p in pieces], n)
    return [Shard(pieces[a].shard.after, pieces[b - 1].shard.upto) for a, b in itertools.pairwise(edges)]


# Whole levels of cuts go on until there are this many pieces per range asked for, so that no range
# rests on one piece's guessed size; then the pieces are counted as equal (see plan_ranges).
_PIECES_PER_RANGE = 2
# A group edge may fall this far inside a piece (as a share of a group's size) before that piece is cut finer.
_TOLERANCE = 0.02
# Rounds of cutting the pieces the group edges fall in: each makes those pieces about ten times finer.
_REFINE_ROUNDS = 3


def plan_ranges(store: Lister, bucket: str, prefix: str, target: int, *, threads: int = 16) -> list[Shard]:
    """At most `target` contiguous key ranges of about equal size covering every key under prefix, for parallel listers.

    The rest after the first page is cut by the probes of plan_shards from the first page's
    last key (as the engine's parallel listing does), and the first range takes the first
    page too: starting from "" would give the probes nothing to go on where keys share more
    than the prefix ("logs/2026/..."), and the whole source would be one range.

    Probes cannot count keys, so sizes are estimates: whole levels of cuts run until there
    are twice `target` pieces, sized by the plan's shape (see _plan: "in/0" and "in/1" of
    100 M and 23 M keys, cut in ten and in three, come out 10:3, not 1:1). Runs of
    neighbouring pieces are then merged into `target` ranges of about equal size.
    Only the pieces a range's edge falls inside are cut finer (their size shared equally by
    their pieces), a few rounds, so balance costs about ten probes per edge and round, not a
    level over every piece. Balance is all the estimates decide: any edges cover the keys
    exactly once. A source of one page is one range.
    """
    first = store.list_page(bucket, prefix)
    if target <= 1 or first.next_token is None or not first.objects:
        return [Shard("", None)]
    last = first.objects[-1].key
    with ThreadPoolExecutor(threads, thread_name_prefix="s3bulk-plan") as pool:
        prober = _Prober(store, bucket, prefix, pool, [o.key for o in first.objects])
        pieces = _plan(prober, last, _PIECES_PER_RANGE * target, 3)
        for _ in range(_REFINE_ROUNDS):
            if len(pieces) <= target:
                break  # every piece is its own range
            pieces, grew = prober.refine(pieces, _straddling(pieces, target, _TOLERANCE))
            if not grew:
                break
        rest = balance(pieces, target)
    return [Shard("", rest[0].upto), *rest[1:]]  # the first range takes the first page too


def list_shard_page(store: Lister, bucket: str, prefix: str, shard: Shard, token: str | None) -> ShardPage:
    """The next page of a shard (keys k with after < k <= upto): from its start, or from `token`.

    A page that runs past the shard's end keeps only the shard's keys and ends the shard,
    so shards cut anywhere cover the keys exactly once. The engine's parallel listing and
    the stack's listers both page shards through here.
    """
    return page_range(store, bucket, prefix, shard.after, shard.upto, token)


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


def _going_on(ranges: Iterator[Range], last: str, token: str) -> Iterator[Range]:
    """The ranges, the first going on from the first page's cursor where it starts at that page's last key, outside a core."""
    r = next(ranges, None)
    if r is None:
        return
    yield replace(r, token=token) if r.after == last and (r.core is None or last < r.core) else r
    yield from ranges


def iter_objects_parallel(
    store: Lister,
    bucket: str,
    prefix: str,
    workers: int,
    *,
    delimiter: str = "/",
    pages_ahead: int = 4,
    start_after: str | None = None,
) -> Generator[ObjectInfo, None, None]:
    """Every object under prefix in exactly iter_objects' order, with up to `workers` ranges listed at once.

    Every key comes from a listing without a delimiter, in contiguous ranges from the start to the prefix's end, so
    a sub-prefix a server leaves out of its CommonPrefixes is still listed, once (see treeranges). The first page is
    yielded as it comes; where its keys nest, the level's delimiter answers choose the cuts past its last key, one
    range per sub-prefix; where they do not (or the answers name nothing), plan_shards cuts the rest by probes. With
    start_after (a resumed job) the rest is cut by probes, whatever its shape. Ranges ahead of the consumer share a
    budget of workers x pages_ahead pages, so memory is bounded whatever the bucket holds, and a long range keeps
    listing while earlier ones drain.
    """
    if workers <= 1:
        yield from iter_objects(store, bucket, prefix, start_after=start_after)
        return
    stop = threading.Event()
    budget = _Budget(workers * pages_ahead)
    pool = ThreadPoolExecutor(workers, thread_name_prefix="s3bulk-list")
    # Requests nothing waits behind (the plan's probes, a range's head probe): producers wait on them, so never in `pool`.
    probes = ThreadPoolExecutor(workers, thread_name_prefix="s3bulk-probe")

    def produce(index: int, r: Range, out: queue.Queue[object]) -> None:
        try:
            for objs in range_pages(store, bucket, prefix, r, probes):
                out.put((budget.take(index, out, stop), objs))
                if stop.is_set():
                    break
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which re-raises
            out.put(exc)
        finally:
            out.put(_DONE)

    def planned(after: str, sample: Sequence[str] = (), target: int = 4 * workers, levels: int = 3) -> Iterator[Range]:
        for s in plan_shards(store, bucket, prefix, after, probes, sample=sample, target=target, levels=levels):
            yield Range(s.after, s.upto)

    try:
        ranges: Iterator[Range]
        if start_after is not None:
            ranges = planned(start_after, target=workers, levels=1)
        else:
            first = store.list_page(bucket, prefix)
            yield from first.objects
            while not first.objects and first.next_token is not None:  # a view's page may hold none (source.as_of)
                first = store.list_page(bucket, prefix, token=first.next_token)
                yield from first.objects
            if first.next_token is None:
                return
            last, sample = first.objects[-1].key, [o.key for o in first.objects]
            if any(delimiter in key[len(prefix) :] for key in sample):
                # From the level's start, not from `last`: a start-after beside a delimiter is where servers differ most
                # (moto fails on one it cannot echo); the sub-prefixes the first page covered are passed over.
                answer = store.list_page(bucket, prefix, delimiter=delimiter)
                ranges = tree_ranges(store, bucket, prefix, delimiter, last, answer, lambda lo: planned(lo, sample))
            else:
                ranges = planned(last, sample)
            ranges = _going_on(ranges, last, first.next_token)
        pending: collections.deque[tuple[int, queue.Queue[object]]] = collections.deque()
        exhausted = False
        started = 0
        while True:
            while not exhausted and len(pending) < workers:  # read ahead only to start range producers
                r = next(ranges, None)
                if r is None:
                    exhausted = True
                    break
                q: queue.Queue[object] = queue.Queue()  # bounded by the shared budget, not per queue
                pool.submit(produce, started, r, q)
                pending.append((started, q))
                started += 1
            if not pending:
                return
            index, hq = pending.popleft()
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
        probes.shutdown(wait=True, cancel_futures=True)
