"""BatchRun: whichever thread closes a batch, a closing step that raises reaches the runner, never a lost future."""

from __future__ import annotations

import threading

import pytest

from s3bulk.ops.batchrun import BatchRun


class CommitFailed(Exception):
    pass


def _failing_commit() -> None:
    raise CommitFailed("disk full")


def test_a_commit_that_raises_on_the_thread_that_seals_the_batch_is_reported_not_raised() -> None:
    errors: list[Exception] = []
    run = BatchRun(None, _failing_commit, errors.append)
    run.add()
    run.finish()  # the only task ended before the seal: the seal closes the batch on this thread
    run.seal(all_submitted=True)
    assert [str(e) for e in errors] == ["disk full"] and run.wait(0)


def test_a_commit_that_raises_on_a_task_thread_is_reported_too() -> None:
    errors: list[Exception] = []
    run = BatchRun(None, _failing_commit, errors.append)
    run.add()
    run.seal(all_submitted=True)
    task = threading.Thread(target=run.finish)  # the last task closes the batch on its own thread
    task.start()
    task.join()
    assert [type(e) for e in errors] == [CommitFailed] and run.wait(0)


def test_without_an_error_sink_the_closing_error_is_raised_where_it_happens() -> None:
    run = BatchRun(None, _failing_commit)
    run.add()
    run.finish()
    with pytest.raises(CommitFailed):
        run.seal(all_submitted=True)
