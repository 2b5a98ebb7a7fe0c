"""Where a distributed job's failures and report land: an S3 bucket, one JSONL part per batch."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import tempfile
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any

from botocore.exceptions import ClientError

from s3bulk.aws.allowlist import RETRY_MANIFEST
from s3bulk.aws.intents import PageIntent
from s3bulk.report import FailureDigest, write_report

# Which try of each batch its counted numbers came from: ledger.counted_attempts(job_id, batch_ids).
CountedAttempts = Callable[[str, Sequence[str]], Mapping[str, str]]
# Key-log parts carry this tag: S3 lifecycle filters take a prefix, not jobs/*/keys/, so the expiry rule matches the tag.
KEY_LOG_TAG = "s3bulk-part=keys"
# Key-log parts are gzip'd JSON lines: level 6 stores a copied object's 520-byte line in about 43 bytes (level 9: 41, at
# twice the CPU; level 1: 47), so the key logs, once s3bulk's largest cost at scale, store at a twelfth.
KEYS_SUFFIX = ".jsonl.gz"
KEYS_GZIP_LEVEL = 6
ATTEMPT = "~"  # a worker's part is named BATCH~ATTEMPT.jsonl; a lister's (rows, extraneous) has no attempt
JSONL = "application/x-ndjson"


class ReportBucket:
    """One JSONL part per batch, named by the try that wrote it.

    Two tries of one batch (a duplicate delivery, a redo after a worker died) may both finish; the
    ledger counts one and remembers which. The report reads only that try's failures, and a try
    that lost the count empties its parts, so a failure that was not counted never reaches the report.
    """

    def __init__(self, client: Any, bucket: str, readers: int = 6) -> None:
        self.client = client
        self.bucket = bucket
        self.readers = readers  # parallel part reads; the client's pool also serves failures.jsonl's upload (4 more)

    @staticmethod
    def _name(part: str, attempt: str, suffix: str = ".jsonl") -> str:
        return f"{part}{ATTEMPT}{attempt}{suffix}" if attempt else f"{part}{suffix}"

    def put_failures(self, job_id: str, part: str, failures: Iterable[dict[str, str]], attempt: str = "") -> int:
        lines = [json.dumps(f, ensure_ascii=False) for f in failures]
        if lines:
            body = ("\n".join(lines) + "\n").encode("utf-8")
            self.client.put_object(
                Bucket=self.bucket, Key=f"jobs/{job_id}/failures/{self._name(part, attempt)}", Body=body, ContentType=JSONL
            )
        return len(lines)

    def put_keys(self, job_id: str, part: str, lines: IO[str], attempt: str = "") -> None:
        """The batch's per-key log part (docs/key-log.md), named by the try that wrote it: gzip'd JSON lines, about 43
        bytes an object where the lines are 520 (bench/cost_model.py measures it), which Athena and DuckDB read as
        they are (by the .gz name)."""
        lines.seek(0)
        text = lines.read()
        if text:
            self.client.put_object(
                Bucket=self.bucket,
                Key=f"jobs/{job_id}/keys/{self._name(part, attempt, KEYS_SUFFIX)}",
                Body=gzip.compress(text.encode("utf-8"), KEYS_GZIP_LEVEL, mtime=0),
                ContentType="application/gzip",
                Tagging=KEY_LOG_TAG,  # the bucket's lifecycle rule expires key-log parts by this tag (-c keep_key_logs_days)
            )

    def put_intent(self, job_id: str, intent: PageIntent) -> None:
        """The page a listing shard is about to send (aws/intents.py); one object per shard, overwritten page by page."""
        self.client.put_object(Bucket=self.bucket, Key=self._intent_key(job_id, intent.shard), Body=intent.dump())

    def intent(self, job_id: str, shard: int) -> PageIntent | None:
        """The shard's last stored intent, None if it never stored one."""
        body = self._get(self._intent_key(job_id, shard))
        return None if body is None else PageIntent.load(body)

    @staticmethod
    def _intent_key(job_id: str, shard: int) -> str:
        return f"jobs/{job_id}/intents/{shard:04d}.json.gz"

    def discard(self, job_id: str, part: str, attempt: str) -> None:
        """A try that lost the count: its parts are emptied (best effort; the report skips them anyway). Emptied, not
        deleted, so a worker needs no delete permission anywhere a copy-only deployment does not grant one."""
        with contextlib.suppress(Exception):
            for kind, suffix in (("failures", ".jsonl"), ("keys", KEYS_SUFFIX)):
                self.client.put_object(Bucket=self.bucket, Key=f"jobs/{job_id}/{kind}/{self._name(part, attempt, suffix)}", Body=b"")

    # -- a stopped job's batches, parked here until its resume (aws/held.py) ------------------------
    def park(self, job_id: str, batch_id: str, body: str) -> None:
        self.client.put_object(Bucket=self.bucket, Key=f"jobs/{job_id}/parked/{batch_id}.json", Body=body.encode("utf-8"))

    def wait(self, job_id: str, batch_id: str, body: str) -> None:
        """A capped job's batch waits here for room (ledger/parking.py names it); parked again, it is written again."""
        self.client.put_object(Bucket=self.bucket, Key=f"jobs/{job_id}/waiting/{batch_id}.json", Body=body.encode("utf-8"))

    def waiting(self, job_id: str, batch_id: str) -> str | None:
        """A waiting batch's body (None: not there)."""
        body = self._get(f"jobs/{job_id}/waiting/{batch_id}.json")
        return body.decode("utf-8") if body else None

    def empty_parked(self, job_id: str, batch_id: str) -> None:
        """A parked batch its worker sent again itself (the job resumed meanwhile): emptied, as a worker deletes nothing."""
        self.client.put_object(Bucket=self.bucket, Key=f"jobs/{job_id}/parked/{batch_id}.json", Body=b"")

    def parked(self, job_id: str, page: int = 100) -> Iterator[list[tuple[str, str]]]:
        """The parked batches (key, body) still to send, `page` keys listed at a time (emptied ones passed over)."""
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=f"jobs/{job_id}/parked/", PaginationConfig={"PageSize": page}
        )
        with ThreadPoolExecutor(self.readers, thread_name_prefix="parked") as pool:
            for listed in pages:
                full = [str(o["Key"]) for o in listed.get("Contents", []) if o.get("Size")]
                bodies = list(pool.map(self._read, full))
                yield [(k, b.decode("utf-8")) for k, b in zip(full, bodies, strict=True)]

    def empty(self, keys: Sequence[str]) -> None:
        """Empty these objects (parked batches sent again): emptied, not deleted, as no function of a copy-only
        deployment may delete anything; a parked batch's listing passes over them."""
        with ThreadPoolExecutor(self.readers, thread_name_prefix="unpark") as pool:
            list(pool.map(lambda k: self.client.put_object(Bucket=self.bucket, Key=k, Body=b""), keys))

    def failure_part_keys(self, job_id: str, after: str = "") -> Iterator[list[str]]:
        """The keys of the job's failures parts that hold any, a listing page at a time, in key order after `after`."""
        paginator = self.client.get_paginator("list_objects_v2")
        pages = paginator.paginate(Bucket=self.bucket, Prefix=f"jobs/{job_id}/failures/", **({"StartAfter": after} if after else {}))
        for page in pages:
            yield [str(o["Key"]) for o in page.get("Contents", ()) if o.get("Size", 1)]

    def read(self, key: str) -> bytes:
        return self._read(key)

    def keys_part(self, job_id: str, part: str, attempt: str) -> bytes:
        """A try's key-log part's lines, empty when it wrote none (or one written before parts were gzip'd, as is)."""
        body = self._get(f"jobs/{job_id}/keys/{self._name(part, attempt, KEYS_SUFFIX)}")
        if body:
            return gzip.decompress(body)
        return self._get(f"jobs/{job_id}/keys/{self._name(part, attempt)}") or b""

    def iter_parts(
        self, job_id: str, counted: CountedAttempts | None = None, after: str | None = None
    ) -> Generator[tuple[str, bytes], None, None]:
        """Each failures part (key, body) in key order after `after`, read `readers` at a time (a 100 M-object job with
        10% failed has up to a million parts: one GET after another would take hours); with `counted`, a worker's
        part only if its try is the one counted. Emptied parts (tries that lost the count) are not read."""
        paginator = self.client.get_paginator("list_objects_v2")
        prefix = f"jobs/{job_id}/failures/"
        window = self.readers * 4
        with ThreadPoolExecutor(self.readers, thread_name_prefix="failure-parts") as pool:
            for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix, **({"StartAfter": after} if after else {})):
                keys = [str(obj["Key"]) for obj in page.get("Contents", ()) if obj.get("Size", 1)]
                tries = {k: k[len(prefix) :].removesuffix(".jsonl").rpartition(ATTEMPT) for k in keys}
                winners = counted(job_id, [b for b, sep, _ in tries.values() if sep]) if counted is not None else {}
                wanted = [k for k in keys if not (tries[k][1] and counted is not None and winners.get(tries[k][0]) != tries[k][2])]
                for start in range(0, len(wanted), window):
                    chunk = wanted[start : start + window]
                    yield from zip(chunk, pool.map(self._read, chunk), strict=True)

    def iter_failures(self, job_id: str, counted: CountedAttempts | None = None) -> Iterator[dict[str, str]]:
        """Every failure in the job's parts (see iter_parts)."""
        for _, body in self.iter_parts(job_id, counted):
            for line in body.splitlines():
                if line.strip():
                    yield json.loads(line)

    def _read(self, key: str) -> bytes:
        return bytes(self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read())

    # -- failures.jsonl and report.json (aws/assembly.py puts them together) -----------------------
    def _failures_file(self, job_id: str) -> str:
        return f"jobs/{job_id}/failures.jsonl"

    def start_failures_upload(self, job_id: str) -> str:
        answer = self.client.create_multipart_upload(Bucket=self.bucket, Key=self._failures_file(job_id), ContentType=JSONL)
        return str(answer["UploadId"])

    def upload_failures_part(self, job_id: str, upload_id: str, number: int, body: bytes) -> str:
        answer = self.client.upload_part(
            Bucket=self.bucket, Key=self._failures_file(job_id), UploadId=upload_id, PartNumber=number, Body=body
        )
        return str(answer["ETag"])

    def complete_failures_upload(self, job_id: str, upload_id: str, parts: Sequence[tuple[int, str]]) -> None:
        self.client.complete_multipart_upload(
            Bucket=self.bucket,
            Key=self._failures_file(job_id),
            UploadId=upload_id,
            MultipartUpload={"Parts": [{"PartNumber": n, "ETag": etag} for n, etag in parts]},
        )

    def abort_failures_upload(self, job_id: str, upload_id: str) -> None:
        with contextlib.suppress(ClientError):  # already completed or aborted
            self.client.abort_multipart_upload(Bucket=self.bucket, Key=self._failures_file(job_id), UploadId=upload_id)

    def put_failures_file(self, job_id: str, body: bytes) -> None:
        """failures.jsonl whole, when it is smaller than one part."""
        self.client.put_object(Bucket=self.bucket, Key=self._failures_file(job_id), Body=body, ContentType=JSONL)

    def assembly(self, job_id: str, writer: str) -> bytes | None:
        """Where `writer`'s assembly of failures.jsonl stands (aws/assembly.py), None before it starts."""
        return self._get(f"jobs/{job_id}/assembly/{writer}.json")

    def put_assembly(self, job_id: str, writer: str, state: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=f"jobs/{job_id}/assembly/{writer}.json", Body=state)

    def put_report(self, job_id: str, summary: Mapping[str, Any], digest: FailureDigest) -> str:
        """report.json (report.write_report, as the CLI writes it): the summary, failures by code, the first failures."""
        text = io.StringIO()
        write_report(text, summary, digest, None if digest.complete else "failures.jsonl")
        body = text.getvalue().encode("utf-8")
        self.client.put_object(Bucket=self.bucket, Key=f"jobs/{job_id}/report.json", Body=body, ContentType="application/json")
        return f"s3://{self.bucket}/jobs/{job_id}/report.json"

    def _get(self, key: str) -> bytes | None:
        """An object's body, None if there is none (S3 says so with a 404 to a caller allowed to list the bucket)."""
        try:
            return bytes(self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read())
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in {"NoSuchKey", "404"}:
                return None
            raise

    def failures(self, job_id: str) -> Iterator[dict[str, Any]]:
        """failures.jsonl's entries, streamed (a job's failures may be millions); none when it has none."""
        try:
            body = self.client.get_object(Bucket=self.bucket, Key=self._failures_file(job_id))["Body"]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in {"NoSuchKey", "404"}:
                return
            raise
        for line in body.iter_lines():
            if line.strip():
                yield dict(json.loads(line))

    def put_retry_manifest(self, job_id: str, rows: Iterable[str]) -> str:
        """A retry's CSV manifest (s3bulk/job/retry.py), under the retry job's own prefix; returns its key. Spooled to disk
        past 8 MiB, so a million failed keys cost no memory."""
        key = f"jobs/{job_id}/{RETRY_MANIFEST}"
        with tempfile.SpooledTemporaryFile(8 * 1024 * 1024) as spool:
            for row in rows:
                spool.write(row.encode("utf-8", "surrogatepass"))
            spool.seek(0)
            self.client.upload_fileobj(spool, self.bucket, key, ExtraArgs={"ContentType": "text/csv"})
        return key

    def read_report(self, job_id: str) -> dict[str, Any]:
        body = self.client.get_object(Bucket=self.bucket, Key=f"jobs/{job_id}/report.json")["Body"].read()
        return dict(json.loads(body))
