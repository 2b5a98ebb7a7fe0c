"""The semaphore in front of the pool caps tasks in flight, so producers block instead of buffering."""

from __future__ import annotations

import threading
import time

from s3bulk.ops.executor import BoundedExecutor


def test_in_flight_tasks_never_exceed_the_bound() -> None:
    live = peak = 0
    lock = threading.Lock()

    def task() -> None:
        nonlocal live, peak
        with lock:
            live += 1
            peak = max(peak, live)
        time.sleep(0.002)
        with lock:
            live -= 1

    submitted = 0
    with BoundedExecutor(max_workers=4, max_in_flight=6) as ex:
        for _ in range(200):
            ex.submit(task)
            submitted += 1
    assert submitted == 200
    assert peak <= 4


def test_submit_blocks_when_full_until_a_task_finishes() -> None:
    gate = threading.Event()
    ex = BoundedExecutor(max_workers=1, max_in_flight=2)
    ex.submit(gate.wait)
    ex.submit(gate.wait)
    third_submitted = threading.Event()

    def submit_third() -> None:
        ex.submit(lambda: None)
        third_submitted.set()

    t = threading.Thread(target=submit_third)
    t.start()
    assert not third_submitted.wait(0.2)
    gate.set()
    assert third_submitted.wait(2)
    t.join()
    ex.shutdown()


def test_a_failing_task_releases_its_slot() -> None:
    with BoundedExecutor(max_workers=1, max_in_flight=1) as ex:
        f = ex.submit(lambda: 1 / 0)
        assert isinstance(f.exception(), ZeroDivisionError)
        assert ex.submit(lambda: 7).result(timeout=2) == 7
