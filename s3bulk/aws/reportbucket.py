"""Where a distributed job's failures and report land: an S3 bucket, one JSONL part per batch."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import IO, Any

from s3bulk.report import write_report

# Which try of each batch its counted numbers came from: ledger.counted_attempts(job_id, batch_ids).
CountedAttempts = Callable[[str, Sequence[str]], Mapping[str, str]]
# Key-log parts carry this tag: S3 lifecycle filters take a prefix, not jobs/*/keys/, so the expiry rule matches the tag.
KEY_LOG_TAG = "s3bulk-part=keys"
ATTEMPT = "~"  # a worker's part is named BATCH~ATTEMPT.jsonl; a lister's (rows, extraneous) has no attempt


class ReportBucket:
    """One JSONL part per batch, named by the try that wrote it.

    Two tries of one batch (a duplicate delivery, a redo after a worker died) may both finish; the
    ledger counts one and remembers which. The report reads only that try's failures, and a try
    that lost the count empties its parts, so a failure that was not counted never reaches the report.
    """

    def __init__(self, client: Any, bucket: str) -> None:
        self.client = client
        self.bucket = bucket

    @staticmethod
    def _name(part: str, attempt: str) -> str:
        return f"{part}{ATTEMPT}{attempt}.jsonl" if attempt else f"{part}.jsonl"

    def put_failures(self, job_id: str, part: str, failures: Iterable[dict[str, str]], attempt: str = "") -> int:
        lines = [json.dumps(f, ensure_ascii=False) for f in failures]
        if lines:
            body = ("\n".join(lines) + "\n").encode("utf-8")
            self.client.put_object(
                Bucket=self.bucket, Key=f"jobs/{job_id}/failures/{self._name(part, attempt)}", Body=body, ContentType="application/x-ndjson"
            )
        return len(lines)

    def put_keys(self, job_id: str, part: str, lines: IO[str], attempt: str = "") -> None:
        """The batch's per-key log part (docs/key-log.md), named by the try that wrote it."""
        lines.seek(0)
        body = lines.read().encode("utf-8")
        if body:
            self.client.put_object(
                Bucket=self.bucket,
                Key=f"jobs/{job_id}/keys/{self._name(part, attempt)}",
                Body=body,
                ContentType="application/x-ndjson",
                Tagging=KEY_LOG_TAG,  # the bucket's lifecycle rule expires key-log parts by this tag (-c keep_key_logs_days)
            )

    def discard(self, job_id: str, part: str, attempt: str) -> None:
        """A try that lost the count: its parts are emptied (best effort; the report skips them anyway). Emptied, not
        deleted, so a worker needs no delete permission anywhere a copy-only deployment does not grant one."""
        with contextlib.suppress(Exception):
            for kind in ("failures", "keys"):
                self.client.put_object(Bucket=self.bucket, Key=f"jobs/{job_id}/{kind}/{self._name(part, attempt)}", Body=b"")

    def iter_failures(self, job_id: str, counted: CountedAttempts | None = None) -> Iterator[dict[str, str]]:
        """Every failure in the job's parts; with `counted`, a worker's part only if its try is the one counted."""
        paginator = self.client.get_paginator("list_objects_v2")
        prefix = f"jobs/{job_id}/failures/"
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            keys = [str(obj["Key"]) for obj in page.get("Contents", ())]
            tries = {k: k[len(prefix) :].removesuffix(".jsonl").rpartition(ATTEMPT) for k in keys}
            winners = counted(job_id, [b for b, sep, _ in tries.values() if sep]) if counted is not None else {}
            for key in keys:
                batch, sep, attempt = tries[key]
                if sep and counted is not None and winners.get(batch) != attempt:
                    continue  # a try the ledger did not count (its own cleanup did not happen)
                body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"]
                for line in body.iter_lines():
                    if line:
                        yield json.loads(line)

    def write_report(self, job_id: str, summary: dict[str, Any], counted: CountedAttempts | None = None) -> str:
        """report.json (report.write_report, as the CLI writes it) and failures.jsonl; spooled, not held in memory."""
        with tempfile.TemporaryFile("w+b") as report_bin, tempfile.TemporaryFile("w+b") as jsonl_bin:
            report = io.TextIOWrapper(report_bin, encoding="utf-8")
            jsonl = io.TextIOWrapper(jsonl_bin, encoding="utf-8")

            def tee(failures: Iterable[dict[str, str]]) -> Iterator[dict[str, str]]:
                for failure in failures:
                    jsonl.write(json.dumps(failure, ensure_ascii=False) + "\n")
                    yield failure

            write_report(report, summary, tee(self.iter_failures(job_id, counted)))
            for text, name, ctype in ((jsonl, "failures.jsonl", "application/x-ndjson"), (report, "report.json", "application/json")):
                # Detach (which flushes) before the upload: over real HTTP, upload_fileobj closes the file it
                # is given, and a wrapper still attached would then fail on it. The with block closes the rest.
                binary = text.detach()
                binary.seek(0)
                self.client.upload_fileobj(binary, self.bucket, f"jobs/{job_id}/{name}", ExtraArgs={"ContentType": ctype})
        return f"s3://{self.bucket}/jobs/{job_id}/report.json"

    def read_report(self, job_id: str) -> dict[str, Any]:
        body = self.client.get_object(Bucket=self.bucket, Key=f"jobs/{job_id}/report.json")["Body"].read()
        return dict(json.loads(body))
