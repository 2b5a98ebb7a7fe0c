"""Step Functions tasks: send a resumed job's held batches again (and redo a breaker's failures); plan a job's listing shards; list one shard from its cursor, send batches, return before time runs out;
for the delete guard, count one shard's deletes, then check the total."""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.parser import BaseModel, event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from s3bulk.aws import env
from s3bulk.aws.guard import check_step, count_step, counts_first
from s3bulk.aws.held import resume_step
from s3bulk.aws.lister import list_step, plan_step
from s3bulk.metrics import LISTED_PAGES, NAMESPACE, SERVICE

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
tracer = Tracer(service=SERVICE)


class ListEvent(BaseModel):
    job_id: str
    shard: int | None = None  # absent: plan the shards
    phase: Literal["list", "count", "check", "resume"] = "list"  # count and check: the delete guard (s3bulk/aws/guard.py)
    after: str = ""  # resume: where the step's last call stopped (s3bulk/aws/held.py)
    execution: str | None = None  # the execution's ARN: past its history's bound, a shard's loop ends (s3bulk/aws/history.py)
    started: str | None = None  # its StartTime: before its history could be near that bound, no one asks


@cache
def deps() -> dict[str, Any]:
    cfg = env.AwsConfig.from_env()
    store = env.store(cfg)
    return {
        "list_shards": cfg.list_shards,
        "csv_shard_bytes": cfg.csv_shard_bytes,
        "list_margin": cfg.list_margin,
        "ledger": env.ledger(cfg),
        "store": store,
        "open_side": env.SideStores(cfg, store),
        "sender": env.sender(cfg),
        "allow": cfg.allow,
        "reports": env.reports(cfg),
        "history": env.history(cfg),
    }


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
@event_parser(model=ListEvent)
def handler(event: ListEvent, context: LambdaContext) -> dict[str, Any]:
    logger.append_keys(job_id=event.job_id, shard=event.shard)
    d = deps()
    if event.phase == "resume":
        time_left = lambda: context.get_remaining_time_in_millis() / 1000  # noqa: E731
        return resume_step(
            event.job_id, ledger=d["ledger"], reports=d["reports"], sender=d["sender"], time_left=time_left, after=event.after
        )
    if event.phase == "check":
        return {"job_id": event.job_id, "would_delete": check_step(event.job_id, ledger=d["ledger"])}
    if event.phase == "count" and event.shard is not None:
        counted = count_step(
            event.job_id,
            event.shard,
            ledger=d["ledger"],
            store=d["store"],
            allow=d["allow"],
            time_left=lambda: context.get_remaining_time_in_millis() / 1000,
            open_side=d["open_side"],
            margin=d["list_margin"],
        )
        return {"job_id": counted.job_id, "shard": counted.shard, "done": counted.done, "pages": counted.pages}
    if event.shard is None:
        shards = plan_step(
            event.job_id,
            ledger=d["ledger"],
            store=d["store"],
            allow=d["allow"],
            target=d["list_shards"],
            csv_shard_bytes=d["csv_shard_bytes"],
            open_side=d["open_side"],
        )
        spec = d["ledger"].spec(event.job_id)
        confirm = spec.options.confirm and not spec.options.dry_run  # held until s3bulk confirm JOB_ID
        return {"job_id": event.job_id, "shards": shards, "guard": counts_first(spec), "confirm": confirm}
    if d["history"].full(event.execution, event.started):  # the job goes on in a new execution, from this shard's checkpoint
        return {"job_id": event.job_id, "shard": event.shard, "done": False, "renew": True, "pages": 0}
    out = list_step(
        event.job_id,
        event.shard,
        ledger=d["ledger"],
        store=d["store"],
        sender=d["sender"],
        allow=d["allow"],
        reports=d["reports"],
        time_left=lambda: context.get_remaining_time_in_millis() / 1000,
        open_side=d["open_side"],
        margin=d["list_margin"],
    )
    metrics.add_metric(name=LISTED_PAGES, unit="Count", value=out.pages)
    return {"job_id": out.job_id, "shard": out.shard, "done": out.done, "pages": out.pages}
