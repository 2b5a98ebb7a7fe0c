"""DeleteObjects in batches of at most 1,000 keys, reading per-key errors from the 200 response."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence

from s3bulk.errors import ErrorKind, classify
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
