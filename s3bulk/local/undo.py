"""`s3bulk undo LOG.jsonl`: put back what a job changed, from the undo journal in its per-key log.

A line whose `undo` entry says {"bucket", "what", "before", "after"} is reversed only
where the object still has `after`: an object changed again since the job is skipped and
reported, never clobbered. Lines are read from the end of the log backwards, and all of a
key's entries go to one thread, so when a log holds several jobs' changes to a key, the
latest is undone first and each undo finds the state the next one expects. Memory stays
bounded: the log is streamed, and at most `4 x concurrency` entries wait for a thread.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any

from s3bulk.errors import error_code, error_message
from s3bulk.job import JobError, Options
from s3bulk.ops.acl import AclsEnabled, acl_doc
from s3bulk.ops.copies import CopySettings, copy_in_place
from s3bulk.ops.encryption import already, encryption_doc, encryption_from_doc, set_encryption
from s3bulk.ops.lock import retention_doc
from s3bulk.ops.pools import part_pool
from s3bulk.ops.rewind import WHAT as REWOUND
from s3bulk.ops.rewind import current_state, restore_state
from s3bulk.report.keylog import readable
from s3bulk.store import ObjectStore

# Each undo journal entry's `what` (ops/batch.py's undo_entry calls) and the operation that writes it: what undo puts back.
UNDOES = {
    "tags": "tag",
    "storage_class": "set-storage-class",
    "legal_hold": "set-legal-hold",
    "retention": "set-retention",
    "acl": "set-acl",
    "encryption": "set-encryption",
    REWOUND: "rewind",
}
UNDOABLE = tuple(UNDOES)
SHOWN = 20  # skipped and failed keys listed by name; the rest are counted
_COPY = Options()  # a class change is undone with the job defaults' multipart threshold and part size
# The fields every key-log line has (s3bulk/report/keylog.py KeyRecord): a file with no line holding them is not a key log.
RECORD_FIELDS = ("key", "outcome")


@dataclass
class UndoResult:
    restored: int = 0
    changed_since: int = 0  # the object no longer has what the job set: left alone
    failed: int = 0
    unreadable: int = 0  # lines that are not JSON (a run killed mid-write leaves one cut off): skipped
    records: int = 0  # key-log lines read (with an undo entry or not)
    examples: list[str] = field(default_factory=list)  # "key: why", for the first SHOWN skips and failures
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def note(self, kind: str, line: str = "") -> None:
        with self._lock:
            setattr(self, kind, getattr(self, kind) + 1)
            if line and len(self.examples) < SHOWN:
                self.examples.append(line)


def lines_backwards(f: IO[bytes], block: int = 1 << 16) -> Iterator[str]:
    """The file's lines, last first, reading `block` bytes at a time from the end."""
    f.seek(0, os.SEEK_END)
    at, tail = f.tell(), b""
    while at > 0:
        step = min(block, at)
        at -= step
        f.seek(at)
        chunk = f.read(step) + tail
        parts = chunk.split(b"\n")
        tail = parts[0]
        for raw in reversed(parts[1:]):
            if raw.strip():
                yield raw.decode("utf-8", "replace")  # a key log is ASCII; other bytes make a line that is not one
    if tail.strip():
        yield tail.decode("utf-8", "replace")


def entries(f: IO[bytes], result: UndoResult) -> Iterator[tuple[str, dict[str, Any]]]:
    """(key, undo entry) of each succeeded change the journal can reverse, latest first; unreadable lines are counted."""
    for text in lines_backwards(f):
        try:
            doc = json.loads(text)
        except ValueError:
            result.note("unreadable", f"a line that is not JSON: {text[:60]!r}")
            continue
        if not isinstance(doc, dict) or any(name not in doc for name in RECORD_FIELDS):
            result.note("unreadable", f"a line that is not a key-log record: {text[:60]!r}")
            continue
        result.records += 1
        undo = doc.get("undo")
        if doc.get("outcome") == "succeeded" and isinstance(undo, dict) and undo.get("what") in UNDOABLE:
            yield str(doc["key"]), undo


def current(store: ObjectStore, bucket: str, key: str, what: str, version: str = "") -> Any:
    """The state the journal entry is about now: of the version it names (a job on versions), else of the current object."""
    if what == "tags":
        return store.get_tags(bucket, key, version_id=version)
    if what == "legal_hold":
        return store.get_legal_hold(bucket, key, version_id=version)
    if what == "retention":
        return retention_doc(store.head_object(bucket, key, version_id=version).retention)
    if what == "acl":
        return acl_doc(store.get_acl(bucket, key, version_id=version))
    if what == "encryption":
        return encryption_doc(store.head_object(bucket, key).encryption)
    if what == REWOUND:
        return current_state(store, bucket, key)
    return store.head_object(bucket, key).storage_class or "STANDARD"


def restore(
    store: ObjectStore, parts: Any, bucket: str, key: str, what: str, before: Any, version: str = "", acls: AclsEnabled | None = None
) -> None:
    if what == "tags":
        store.put_tags(bucket, key, before, version_id=version)
    elif what == "legal_hold":
        store.put_legal_hold(bucket, key, before, version_id=version)
    elif what == "acl":
        store.put_acl(bucket, key, "", version_id=version, policy=before)
    elif what == "retention":
        # Back to an earlier date, or to none: S3 allows it for GOVERNANCE with the bypass, never for COMPLIANCE (that key fails).
        mode, until = (before["mode"], datetime.fromisoformat(before["until"])) if before else ("", None)
        store.put_retention(bucket, key, mode, until, bypass_governance=True, version_id=version)
    elif what == REWOUND:  # the version current before the rewind, made current again (or a delete marker again)
        settings = CopySettings(_COPY.multipart_threshold, _COPY.part_size)
        restore_state(store, parts, bucket, key, str(before or ""), settings, keep_acl=(acls or AclsEnabled(store))(bucket))
    elif what == "encryption":  # S3's UpdateObjectEncryption where it can (back to another KMS key), else an in-place copy
        head = store.head_object(bucket, key)
        keep = (acls or AclsEnabled(store))(bucket)
        settings = CopySettings(_COPY.multipart_threshold, _COPY.part_size, head.storage_class)
        back = encryption_from_doc(before)
        if back is None:  # it had none: a copy that names none takes the bucket's default, as any new object does
            copy_in_place(store, parts, bucket, head.info(key), settings, head, keep_acl=keep, always=True, encryption=None)
        else:
            set_encryption(store, parts, bucket, head.info(key), back, settings, keep_acl=keep)
    else:  # an in-place copy back to the class it had, keeping body, metadata, tags and encryption
        head = store.head_object(bucket, key)
        settings = CopySettings(_COPY.multipart_threshold, _COPY.part_size, before)
        copy_in_place(store, parts, bucket, head.info(key), settings, head, keep_acl=(acls or AclsEnabled(store))(bucket))


def _still(what: str, now: Any, after: Any) -> bool:
    """The object still has what the job set. An encryption is compared as set-encryption compares it: HEAD names a
    KMS key by its ARN where the job may have named it by its id."""
    if what == "encryption":
        wanted = encryption_from_doc(after)
        return wanted is not None and already(encryption_from_doc(now), wanted)
    return bool(now == after)


def undo_one(
    store: ObjectStore, parts: Any, key: str, entry: dict[str, Any], result: UndoResult, dry_run: bool, acls: AclsEnabled | None = None
) -> None:
    bucket, what, version = str(entry["bucket"]), str(entry["what"]), str(entry.get("version_id", ""))
    try:
        now = current(store, bucket, key, what, version)
        if not _still(what, now, entry["after"]):
            result.note("changed_since", f"{key}: {what} is {json.dumps(now)}, not what the job set; left alone")
            return
        if not dry_run:
            restore(store, parts, bucket, key, what, entry["before"], version, acls)
        result.note("restored")
    except Exception as exc:  # noqa: BLE001 - each key's failure is reported, the others go on
        result.note("failed", f"{key}: {error_code(exc)}: {error_message(exc)}")


def undo_log(log: IO[bytes], store: ObjectStore, *, concurrency: int = 16, dry_run: bool = False) -> UndoResult:
    """Reverse every journaled change in `log` where the object still has what the job set.

    A file with lines but not one key-log line (a report, the job file) is a JobError: the wrong
    file passed, not a log with nothing to undo. Nothing was undone then, as no line had an entry.
    An empty file, or a key log with no undo entries, is a log with nothing to undo.
    """
    name = getattr(log, "name", None)
    try:
        log = readable(log)  # a --key-log PATH.gz, or the stack's gzip'd parts, read as they are
    except (EOFError, OSError, zlib.error) as exc:  # gzip's first bytes, then a cut or corrupt stream: nothing done
        shown = name if isinstance(name, str) else "LOG"
        raise JobError(f"{shown}: not a key log (gzip'd, but unreadable: {exc}); pass the file written by s3bulk run --key-log") from None
    result = UndoResult()
    queues: list[queue.Queue[tuple[str, dict[str, Any]] | None]] = [queue.Queue(maxsize=4) for _ in range(concurrency)]
    parts = part_pool()
    acls = AclsEnabled(store)  # one question per bucket, for the in-place copies that put a storage class back

    def drain(q: queue.Queue[tuple[str, dict[str, Any]] | None]) -> None:
        while (got := q.get()) is not None:
            undo_one(store, parts, got[0], got[1], result, dry_run, acls)

    threads = [threading.Thread(target=drain, args=(q,), name=f"s3bulk-undo-{i}", daemon=True) for i, q in enumerate(queues)]
    for t in threads:
        t.start()
    try:
        for key, entry in entries(log, result):
            queues[zlib.crc32(key.encode("utf-8", "surrogatepass")) % concurrency].put((key, entry))  # one key, one thread
    finally:
        for q in queues:
            q.put(None)
        for t in threads:
            t.join()
        parts.shutdown()
    if result.unreadable and not result.records:
        fields = " and ".join(f'"{f}"' for f in RECORD_FIELDS)
        raise JobError(
            f"{name if isinstance(name, str) else 'LOG'}: not a key log (no line has the {fields} fields of one); "
            "pass the file written by s3bulk run --key-log"
        )
    return result
