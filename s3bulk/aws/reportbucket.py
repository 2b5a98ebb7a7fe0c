"""Where a distributed job's failures and report land: an S3 bucket, one JSONL part per batch."""

from __future__ import annotations

import io
import json
import tempfile
from collections.abc import Iterable, Iterator
from typing import IO, Any

from s3bulk.report import write_report


class ReportBucket:
    """Parts are keyed by batch id, so a redelivered batch overwrites rather than duplicates."""

    def __init__(self, client: Any, bucket: str) -> None:
        self.client = client
        self.bucket = bucket

    def put_failures(self, job_id: str, batch_id: str, failures: Iterable[dict[str, str]]) -> int:
        lines = [json.dumps(f, ensure_ascii=False) for f in failures]
        if lines:
            body = ("\n".join(lines) + "\n").encode("utf-8")
            self.client.put_object(
                Bucket=self.bucket, Key=f"jobs/{job_id}/failures/{batch_id}.jsonl", Body=body, ContentType="application/x-ndjson"
            )
        return len(lines)

    def put_keys(self, job_id: str, batch_id: str, lines: IO[str]) -> None:
        """The batch's per-key log part (docs/key-log.md); one part per batch, so a redo overwrites it."""
        lines.seek(0)
        body = lines.read().encode("utf-8")
        if body:
            self.client.put_object(
                Bucket=self.bucket, Key=f"jobs/{job_id}/keys/{batch_id}.jsonl", Body=body, ContentType="application/x-ndjson"
            )

    def iter_failures(self, job_id: str) -> Iterator[dict[str, str]]:
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=f"jobs/{job_id}/failures/"):
            for obj in page.get("Contents", ()):
                body = self.client.get_object(Bucket=self.bucket, Key=obj["Key"])["Body"]
                for line in body.iter_lines():
                    if line:
                        yield json.loads(line)

    def write_report(self, job_id: str, summary: dict[str, Any]) -> str:
        """report.json (report.write_report, as the CLI writes it) and failures.jsonl; spooled, not held in memory."""
        with tempfile.TemporaryFile("w+b") as report_bin, tempfile.TemporaryFile("w+b") as jsonl_bin:
            report = io.TextIOWrapper(report_bin, encoding="utf-8")
            jsonl = io.TextIOWrapper(jsonl_bin, encoding="utf-8")

            def tee(failures: Iterable[dict[str, str]]) -> Iterator[dict[str, str]]:
                for failure in failures:
                    jsonl.write(json.dumps(failure, ensure_ascii=False) + "\n")
                    yield failure

            write_report(report, summary, tee(self.iter_failures(job_id)))
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
