"""Every sample in events/ is valid for what consumes it: jobs for the CLI and state machine, handler events for their handlers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import pytest

from functions.batches import SqsBatchRecord
from functions.finalize.handler import FinalizeEvent
from functions.lister.handler import ListEvent
from s3bulk.job import Operation, parse_job

JOBS = sorted(p for p in Path("events").glob("*.json"))


@pytest.mark.parametrize("path", JOBS, ids=[p.name for p in JOBS])
def test_each_sample_job_is_valid(path: Path) -> None:
    parse_job(path.read_bytes())


def test_there_is_a_sample_job_for_every_operation() -> None:
    assert {parse_job(p.read_bytes()).operation for p in JOBS} == set(get_args(Operation))


def test_validate_sample_is_a_job() -> None:
    assert parse_job(Path("events/handlers/validate.json").read_bytes()).operation == "copy"


def test_lister_and_finalize_samples_parse() -> None:
    assert ListEvent.model_validate_json(Path("events/handlers/lister.json").read_text()).job_id
    assert FinalizeEvent.model_validate_json(Path("events/handlers/finalize.json").read_text()).job_id


def test_worker_sample_is_an_sqs_event_carrying_a_batch() -> None:
    event = json.loads(Path("events/handlers/worker-sqs-batch.json").read_text())
    record = SqsBatchRecord.model_validate(event["Records"][0])
    assert len(record.body.items) == 2
    assert record.body.objects()[0].size == 52431
