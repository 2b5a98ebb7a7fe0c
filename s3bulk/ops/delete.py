"""DeleteObjects in batches of at most 1,000 keys, reading per-key errors from the 200 response, and a batch's deletes
with their outcomes (delete_batch: a delete, a move's sources, an undelete and its journal)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from s3bulk.errors import ErrorKind, classify, error_code, error_message
from s3bulk.ops.items import Done, Item, naming_version, undo_entry, write_outcome
from s3bulk.ops.rewind import WHAT as REWOUND
from s3bulk.ops.rewind import current_state
from s3bulk.report import Outcomes
from s3bulk.report.keylog import KeyLog
from s3bulk.store import KeyFailure, ObjectStore, StoreError, xml_safe

MAX_KEYS = 1000
PER_KEY_ATTEMPTS = 5


def delete_keys(
    store: ObjectStore,
    bucket: str,
    keys: Sequence[str],
    *,
    version_ids: Sequence[str] = (),
    attempts: int = PER_KEY_ATTEMPTS,
    sleep: Callable[[float], None] = time.sleep,
) -> list[KeyFailure]:
    """Return the keys that could not be deleted (each at its version, when `version_ids` names them).

    A 200 response may still carry per-key SlowDown/InternalError entries that
    the HTTP client never retries, so those keys are retried here, bounded,
    with jittered backoff.
    """
    if len(keys) > MAX_KEYS:
        raise ValueError(f"at most {MAX_KEYS} keys per DeleteObjects request")
    pending = list(zip(keys, version_ids or [""] * len(keys), strict=True))
    permanent: list[KeyFailure] = []
    for attempt in range(1, attempts + 1):
        errors = _delete_once(store, bucket, pending)
        retry = [e for e in errors if classify(StoreError(e.code)) is ErrorKind.RETRYABLE]
        permanent += [e for e in errors if classify(StoreError(e.code)) is ErrorKind.PERMANENT]
        if not retry or attempt == attempts:
            return permanent + retry
        pending = _sent_again(pending, retry)
        sleep(min(5.0, 0.1 * 2**attempt) * random.uniform(0.5, 1.0))
    return permanent


def _sent_again(sent: list[tuple[str, str]], retry: list[KeyFailure]) -> list[tuple[str, str]]:
    """What a retry sends: the (key, version) pairs sent that failed. A server that names no version in a failure is
    answered with every version of that key that was sent, never with the bare key (which would add a delete marker)."""
    named = {(e.key, e.version_id) for e in retry if e.version_id}
    bare = {e.key for e in retry if not e.version_id}
    return [(k, v) for k, v in sent if (k, v) in named or k in bare]


def _delete_once(store: ObjectStore, bucket: str, targets: list[tuple[str, str]]) -> list[KeyFailure]:
    """One DeleteObjects for the keys XML can carry; one DeleteObject each for the rest."""
    batch = [(k, v) for k, v in targets if xml_safe(k)]
    errors: list[KeyFailure] = []
    if batch:
        versions = [v for _, v in batch]
        try:
            errors = store.delete_objects(bucket, [k for k, _ in batch], versions if any(versions) else ())
        except StoreError as exc:
            errors = [KeyFailure(k, exc.code, exc.message, v) for k, v in batch]
    for key, version in targets:
        if not xml_safe(key):
            try:
                store.delete_object(bucket, key, version_id=version)
            except StoreError as exc:
                errors.append(KeyFailure(key, exc.code, exc.message, version))
    return errors


def delete_batch(
    store: ObjectStore,
    bucket: str,
    items: Sequence[Item],
    tally: Outcomes,
    *,
    moved: bool = False,
    keylog: KeyLog | None = None,
    submit: Callable[..., Future[Any]] | None = None,
) -> None:
    """Delete a batch's keys; for a move, a key counts as done only once its source is gone.

    An undelete (delete markers removed, `submit` given) journals each key as a rewind's: it was absent, and is now
    the version the marker hid (one HEAD each after the DeleteObjects, run on `submit`), so `s3bulk undo` puts a
    delete marker back where that version is still current."""
    failed: dict[tuple[str, str], KeyFailure] = {}
    for start in range(0, len(items), 1000):
        chunk = items[start : start + 1000]
        keys, versions = [i.obj.key for i in chunk], [i.obj.version_id for i in chunk]
        for key_failure in delete_keys(store, bucket, keys, version_ids=versions if any(versions) else ()):
            failed[key_failure.key, key_failure.version_id] = key_failure
    # A server that does not echo a failed version's id fails every version of that key sent: never a false success.
    outcomes = [(item, failed.get((item.obj.key, item.obj.version_id)) or failed.get((item.obj.key, ""))) for item in items]
    revealed: dict[str, Future[dict[str, object]]] = {}
    if submit is not None and keylog is not None:
        revealed = {i.obj.key: submit(current_state, store, bucket, i.obj.key) for i, f in outcomes if f is None}
    for item, refused in outcomes:
        if refused is None:
            tally.succeed(max(item.obj.size, 0))
            undo = None
            if item.obj.key in revealed:
                try:
                    undo = undo_entry(bucket, REWOUND, "", revealed[item.obj.key].result())
                except Exception as exc:  # noqa: BLE001 - the marker is gone (done); only its journal entry is missing, and said so
                    note = f"not journaled: {error_code(exc)}: {error_message(exc)}"
                    write_outcome(keylog, item, "succeeded", Done(True, item.dst_etag), attempts=item.attempts or 1, message=note)
                    continue
            write_outcome(keylog, item, "succeeded", Done(True, item.dst_etag, undo=undo), attempts=item.attempts or 1)
        else:
            note = "copied, but the source could not be deleted: " if moved else ""
            tally.fail(item.obj.key, refused.code, naming_version(item.obj, note + refused.message))
            write_outcome(keylog, item, "failed", attempts=item.attempts or 1, error=refused.code, message=note + refused.message)
