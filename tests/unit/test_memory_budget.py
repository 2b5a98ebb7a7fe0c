"""MemoryBudget: many readers and writers together stay under the budget plus one unit each, and never deadlock."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from s3bulk.bodies.budget import MemoryBudget
from s3bulk.bodies.reader import open_object
from s3bulk.bodies.writer import ObjectWriter, write_stream
from s3bulk.testing.memstore import MemoryStore

MiB = 1024 * 1024


def _store(n: int, size: int) -> MemoryStore:
    store = MemoryStore()
    store.create_bucket("b")
    store.create_bucket("out")
    for i in range(n):
        store.put_object("b", f"k{i}", size=size)
    return store


def test_eight_readers_prefetch_only_what_the_budget_allows_and_all_finish_byte_exact() -> None:
    store = _store(8, 16 * MiB)
    budget = MemoryBudget(4 * MiB)
    unbounded = MemoryBudget(1 << 40)

    def read(key: str, b: MemoryBudget) -> int:
        with open_object(store, "b", key, range_size=MiB, prefetch=4, budget=b) as f:
            return sum(len(chunk) for chunk in iter(lambda: f.read(256 * 1024), b""))

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(read, [f"k{i}" for i in range(8)], [budget] * 8)) == [16 * MiB] * 8
        assert list(pool.map(read, [f"k{i}" for i in range(8)], [unbounded] * 8)) == [16 * MiB] * 8
    assert budget.peak <= 4 * MiB + 8 * MiB  # the budget, plus the one range each reader may always hold
    assert unbounded.peak > budget.peak  # without the cap the same readers held more
    assert budget.used == unbounded.used == 0  # every reservation given back


def test_writers_wait_for_room_but_each_keeps_one_part_moving() -> None:
    store = _store(0, 0)
    budget = MemoryBudget(5 * MiB)  # room for one part in all: each writer still gets its first one

    def write(i: int) -> str:
        return write_stream(
            ObjectWriter(store, "out", f"o{i}", part_size=5 * MiB, threshold=5 * MiB, in_flight=4, budget=budget), bytes(20 * MiB)
        )

    with ThreadPoolExecutor(4) as pool:
        etags = list(pool.map(write, range(4)))
    assert all(e.endswith('-4"') for e in etags)
    assert budget.peak <= 5 * MiB + 4 * 5 * MiB
    assert budget.used == 0


def test_threads_that_read_and_write_at_once_under_a_tiny_budget_do_not_deadlock() -> None:
    store = _store(6, 12 * MiB)
    budget = MemoryBudget(1)  # nothing beyond the one unit each holder may always take
    done = threading.Event()

    def transform(i: int) -> None:
        with open_object(store, "b", f"k{i}", range_size=MiB, prefetch=3, budget=budget) as src:
            writer = ObjectWriter(store, "out", f"t{i}", part_size=5 * MiB, threshold=5 * MiB, budget=budget)
            write_stream(writer, src)

    def run() -> None:
        with ThreadPoolExecutor(6) as pool:
            list(pool.map(transform, range(6)))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(60), "readers and writers sharing the budget deadlocked"
    assert [store.get("out", f"t{i}").size for i in range(6)] == [12 * MiB] * 6
    assert budget.used == 0
