"""A store that generates its listing on the fly, so a 1,000,000-key job measures the engine, not the fake.

    python -m bench.synthetic --keys 1000000 --operation copy
prints one JSON line: keys, seconds, peak RSS (MB) of this process.
"""

from __future__ import annotations

import argparse
import bisect
import json
import resource
import sys
import time
from collections.abc import Iterator, Mapping, Sequence

from s3bulk.breakers.outage import OutageBreaker
from s3bulk.job import parse_job
from s3bulk.local.engine import Engine
from s3bulk.store import Body, Carried, CopiedPart, Encryption, KeyFailure, ListedPart, ListPage, ObjectHead, ObjectInfo


class GeneratedStore:
    """Keys in/0000000..in/N-1 of 1 KiB; copies and deletes succeed at once and keep no state."""

    def __init__(self, keys: int, page: int = 1000) -> None:
        self.n = keys
        self.page = page
        self.retries = 0
        self.breaker = OutageBreaker()  # every request answers

    def list_page(
        self,
        bucket: str,
        prefix: str,
        token: str | None = None,
        start_after: str | None = None,
        delimiter: str | None = None,
        max_keys: int | None = None,
    ) -> ListPage:
        if token:
            start = int(token)
        elif start_after is not None and start_after >= "in/":
            start = bisect.bisect_right(range(self.n), start_after, key=lambda i: f"in/{i:09d}")
        else:
            start = 0
        end = min(self.n, start + (max_keys or self.page))
        objs = [ObjectInfo(f"in/{i:09d}", 1024, '"0f343b0931126a20f133d67c2b018a3b"') for i in range(start, end)]
        return ListPage(objs, str(end) if end < self.n else None)

    def bucket_versioning(self, bucket: str) -> str:
        return ""

    def object_ownership(self, bucket: str) -> str:
        return "BucketOwnerEnforced"

    def list_versions_page(self, *a: object, **k: object) -> ListPage:
        raise NotImplementedError  # the bench lists current objects only

    def list_uploads_page(self, *a: object, **k: object) -> ListPage:
        raise NotImplementedError  # the bench lists objects only

    def copy_object(
        self,
        src_bucket: str,
        src_key: str,
        dst_bucket: str,
        dst_key: str,
        *,
        storage_class: str | None = None,
        src_version: str = "",
        checksum_algorithm: str = "",
        metadata: ObjectHead | None = None,
        if_match: str = "",
        carry: Carried | None = None,
    ) -> str:
        return '"0f343b0931126a20f133d67c2b018a3b"'

    def delete_objects(self, bucket: str, keys: Sequence[str], version_ids: Sequence[str] = ()) -> list[KeyFailure]:
        return []

    def delete_object(self, bucket: str, key: str, *, version_id: str = "") -> None:
        return None

    def scoped(self, options: object) -> GeneratedStore:
        return self

    def head_object(self, bucket: str, key: str, *, version_id: str = "") -> ObjectHead:
        return ObjectHead(1024, '"0f343b0931126a20f133d67c2b018a3b"')

    def get_tags(self, bucket: str, key: str, *, version_id: str = "") -> dict[str, str]:
        return {}

    def put_tags(self, bucket: str, key: str, tags: Mapping[str, str], *, version_id: str = "") -> None:
        return None  # generated objects keep no tags

    def restore_object(self, bucket: str, key: str, days: int, tier: str, *, version_id: str = "") -> bool:
        return False  # generated objects are never archived

    def read_object(self, bucket: str, key: str, start: int = 0, *, version_id: str = "") -> Iterator[bytes]:
        yield bytes(max(0, 1024 - start))

    def read_range(self, bucket: str, key: str, first: int, last: int, if_match: str = "", *, version_id: str = "") -> Body:
        return bytes(max(0, min(last, 1023) - first + 1))

    def put_retention(self, *a: object, **k: object) -> None:
        raise NotImplementedError

    def put_legal_hold(self, *a: object, **k: object) -> None:
        raise NotImplementedError

    def get_legal_hold(self, *a: object, **k: object) -> str:
        raise NotImplementedError

    def updates_encryption(self, bucket: str) -> bool:
        return False

    def default_encryption(self, bucket: str) -> Encryption | None:
        return None

    def update_object_encryption(self, *a: object, **k: object) -> None:
        raise NotImplementedError

    def put_acl(self, *a: object, **k: object) -> None:
        raise NotImplementedError

    def get_acl(self, *a: object, **k: object) -> dict[str, object]:
        raise NotImplementedError

    def write_object(self, *a: object, **k: object) -> str:
        raise NotImplementedError

    def upload_part(self, *a: object, **k: object) -> str:
        raise NotImplementedError

    def create_multipart_upload(self, *a: object, **k: object) -> str:
        raise NotImplementedError

    def upload_part_copy(self, *a: object, **k: object) -> CopiedPart:
        raise NotImplementedError

    def complete_multipart_upload(self, *a: object, **k: object) -> str:
        raise NotImplementedError

    def abort_multipart_upload(self, *a: object, **k: object) -> None:
        raise NotImplementedError

    def list_parts(self, *a: object, **k: object) -> list[ListedPart]:
        raise NotImplementedError


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--keys", type=int, default=1_000_000)
    p.add_argument("--operation", default="copy", choices=("copy", "move", "delete"))
    args = p.parse_args(argv)
    doc: dict[str, object] = {"operation": args.operation, "source": {"bucket": "synthetic-src", "prefix": "in/"}}
    if args.operation != "delete":
        doc["destination"] = {"bucket": "synthetic-dst", "prefix": "out/"}
    t0 = time.perf_counter()
    report = Engine(parse_job(json.dumps(doc)), GeneratedStore(args.keys)).run()
    seconds = time.perf_counter() - t0
    s = report.summary()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"keys": s["succeeded"], "failed": s["failed"], "seconds": round(seconds, 2), "peak_rss_mb": round(peak_mb, 1)}))
    return 0 if s["succeeded"] == args.keys else 1


if __name__ == "__main__":
    sys.exit(main())
