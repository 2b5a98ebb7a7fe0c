"""A sync's extraneous destination objects (delete_extraneous): destination keys no source object maps to.

A delete must never follow from an empty or failed selection: a typo in source.prefix
selects nothing, and every destination object would then look extraneous. So a run
first asks whether the source selects anything (`first_selected`), and the local engine
spools what the join finds to disk and deletes it only once the whole listing ended
without an error (rclone's rule: no deletes after errors). Memory stays bounded either way.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from typing import IO

from s3bulk.job import Job
from s3bulk.ops.delete import MAX_KEYS as DELETE_BATCH
from s3bulk.ops.delete import delete_keys
from s3bulk.report import Tally
from s3bulk.source.listing import iter_objects, lister
from s3bulk.source.selection import KeyMapper, Selector
from s3bulk.store import ObjectInfo, ObjectStore


def first_selected(job: Job, store: ObjectStore) -> ObjectInfo | None:
    """The first object the job's source selects, listing no further than it (one page for a plain prefix)."""
    src = job.source
    selector = Selector(src, job.operation)
    for obj in iter_objects(lister(store, src), src.bucket, src.prefix):
        if selector.matches(obj):
            return obj
    return None


def empty_source_message(job: Job) -> str:
    """The one line that refuses a sync whose source selects nothing."""
    dst = job.destination
    assert dst is not None
    return (
        f"source s3://{job.source.bucket}/{job.source.prefix} selects no object, so options.delete_extraneous would delete "
        f"every object under s3://{dst.bucket}/{dst.prefix}; nothing was deleted. Check source.prefix and the filters, "
        "or set options.allow_empty_source: true to empty the destination on purpose"
    )


class Extraneous:
    """Destination objects no source object maps to, deleted 1,000 per DeleteObjects.

    Without `spool`, each 1,000 found are deleted at once (the stack's lister, one listing page at a
    time). With `spool`, they go to a temporary file and `flush` deletes them all, which the caller
    does only after its listing finished without an error.
    """

    def __init__(
        self, job: Job, store: ObjectStore, tally: Tally, selector: Selector, mapper: KeyMapper | None, *, spool: bool = False
    ) -> None:
        self.job, self.store, self.tally, self.selector, self.mapper = job, store, tally, selector, mapper
        self._keys: list[str] = []
        self._spool: IO[str] | None = tempfile.TemporaryFile("w+", encoding="utf-8") if spool else None  # noqa: SIM115 - close()
        self.found = 0

    def add(self, obj: ObjectInfo) -> None:
        assert self.mapper is not None
        # A key the include/exclude globs would leave out is not the job's to delete (rclone's rule too).
        if not self.selector.key_matches(self.mapper.source_of(obj.key, self.job.source.prefix)):
            return
        self.found += 1
        if self._spool is not None:
            self._spool.write(json.dumps(obj.key) + "\n")  # JSON: a key may hold a newline
            return
        self._keys.append(obj.key)
        if len(self._keys) >= DELETE_BATCH:
            self.flush()

    def flush(self, stop: Callable[[], bool] = lambda: False) -> None:
        """Delete what was found (all of the spool); `stop` is asked between two DeleteObjects."""
        if self._spool is None:
            keys, self._keys = self._keys, []
            self._delete(keys)
            return
        for keys in self._spooled():
            if stop():
                return
            self._delete(keys)

    def _spooled(self) -> Iterator[list[str]]:
        assert self._spool is not None
        self._spool.flush()
        self._spool.seek(0)
        keys: list[str] = []
        for line in self._spool:
            keys.append(json.loads(line))
            if len(keys) >= DELETE_BATCH:
                yield keys
                keys = []
        if keys:
            yield keys
        self._spool.seek(0)
        self._spool.truncate()

    def _delete(self, keys: list[str]) -> None:
        if not keys:
            return
        if self.job.options.dry_run:
            self.tally.extraneous(len(keys))
            return
        assert self.job.destination is not None
        failed = {f.key: f for f in delete_keys(self.store, self.job.destination.bucket, keys)}
        self.tally.extraneous(len(keys) - len(failed))
        for f in failed.values():
            self.tally.fail(f.key, f.code, f"extraneous destination object not deleted: {f.message}")

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()
