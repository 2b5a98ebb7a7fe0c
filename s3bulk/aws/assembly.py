"""A job's failures.jsonl, assembled over as many invocations as it takes.

A 100 M-object job with 10% failed leaves up to a million failure parts (one per batch try that
failed something). Reading them takes longer than one Lambda invocation may run, so the
assembly checkpoints: every 8 MiB of failures becomes one part of a multipart upload of
failures.jsonl, and the state (upload id, parts, the last failure part read, and the digest
report.json needs: counts by code, the first failures) is saved beside it. The next call goes
on from there; nothing is held on /tmp, and memory holds one part and the reads in flight.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from pydantic import BaseModel

from s3bulk.aws.reportbucket import CountedAttempts, ReportBucket
from s3bulk.report import FailureDigest

# One part of failures.jsonl's multipart upload (S3 wants 5 MiB or more for every part but the last).
PART_BYTES = 8 << 20
# No new part is started with less than this left: a part is a window of reads and one 8 MiB upload.
ASSEMBLY_MARGIN_S = 60.0


class AssemblyState(BaseModel):
    """Where one writer's assembly of a job's failures.jsonl stands."""

    execution: str  # the job's execution it is for: another one (a resumed job) starts afresh
    upload_id: str | None = None
    parts: list[tuple[int, str]] = []  # (PartNumber, ETag) uploaded so far
    cursor: str | None = None  # the last failure part whose every line is in an uploaded part
    total: int = 0
    by_code: dict[str, int] = {}
    sample: list[dict[str, str]] = []
    done: bool = False

    def digest(self) -> FailureDigest:
        return FailureDigest.restore(self.total, self.by_code, self.sample)

    def keep(self, digest: FailureDigest) -> None:
        self.total, self.by_code, self.sample = digest.total, dict(digest.by_code), list(digest.sample)


def assemble(
    reports: ReportBucket,
    job_id: str,
    *,
    writer: str,
    execution: str,
    counted: CountedAttempts | None,
    time_left: Callable[[], float],
    margin: float | None = None,
) -> FailureDigest | None:
    """Go on with `writer`'s failures.jsonl for the job; its digest once the file is complete, None when time ran short
    first (call again: it goes on from the last uploaded part). Finalize and ExecutionEnded are separate writers (each
    its own state and upload), so the two may run at once."""
    saved = reports.assembly(job_id, writer)
    state = None if saved is None else AssemblyState.model_validate_json(saved)
    if state is None or state.done or state.execution != execution:
        if state is not None and not state.done and state.upload_id:
            reports.abort_failures_upload(job_id, state.upload_id)  # an older execution's, never finished
        state = AssemblyState(execution=execution)
    digest = state.digest()
    held = bytearray()
    parts = reports.iter_parts(job_id, counted, after=state.cursor)
    try:
        for key, body in parts:
            for line in body.splitlines():
                if line.strip():
                    digest.add(json.loads(line))
                    held += line + b"\n"
            if len(held) >= PART_BYTES:
                _upload(reports, job_id, state, bytes(held))
                held.clear()
                state.cursor = key
                state.keep(digest)
                reports.put_assembly(job_id, writer, state.model_dump_json().encode())
                if time_left() < (ASSEMBLY_MARGIN_S if margin is None else margin):
                    return None
    finally:
        parts.close()  # an early return leaves the reads in flight to finish, not to leak
    if state.upload_id is None:
        reports.put_failures_file(job_id, bytes(held))
    else:
        if held or not state.parts:
            _upload(reports, job_id, state, bytes(held))
        reports.complete_failures_upload(job_id, state.upload_id, state.parts)
    state.keep(digest)
    state.done = True
    reports.put_assembly(job_id, writer, state.model_dump_json().encode())
    return digest


def _upload(reports: ReportBucket, job_id: str, state: AssemblyState, body: bytes) -> None:
    if state.upload_id is None:
        state.upload_id = reports.start_failures_upload(job_id)
    number = len(state.parts) + 1
    state.parts.append((number, reports.upload_failures_part(job_id, state.upload_id, number, body)))
