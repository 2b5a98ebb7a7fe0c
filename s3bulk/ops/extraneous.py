"""A sync's extraneous destination objects (delete_extraneous): deleted 1,000 at a time as the join finds them."""

from __future__ import annotations

from s3bulk.job import Job
from s3bulk.ops.delete import MAX_KEYS as DELETE_BATCH
from s3bulk.ops.delete import delete_keys
from s3bulk.report import Tally
from s3bulk.selection import KeyMapper, Selector
from s3bulk.store import ObjectInfo, ObjectStore


class Extraneous:
    """Destination objects no source object maps to, deleted 1,000 at a time as the join finds them."""

    def __init__(self, job: Job, store: ObjectStore, tally: Tally, selector: Selector, mapper: KeyMapper | None) -> None:
        self.job, self.store, self.tally, self.selector, self.mapper = job, store, tally, selector, mapper
        self._keys: list[str] = []

    def add(self, obj: ObjectInfo) -> None:
        assert self.mapper is not None
        # A key the include/exclude globs would leave out is not the job's to delete (rclone's rule too).
        if not self.selector.key_matches(self.mapper.source_of(obj.key, self.job.source.prefix)):
            return
        self._keys.append(obj.key)
        if len(self._keys) >= DELETE_BATCH:
            self.flush()

    def flush(self) -> None:
        keys, self._keys = self._keys, []
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
