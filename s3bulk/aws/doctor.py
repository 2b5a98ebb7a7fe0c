"""`s3bulk doctor`: what a deployed stack needs from its account that a deploy cannot check.

A new account's Lambda concurrency may be 10 (AWS raises it with use or on request), while
one job of the default stack runs up to 16 listers and 50 workers at once, which the Lister and
the Worker reserve (a deploy with reserve_concurrency false reserves nothing). Throttled steps
and batches are retried, but a job crawls, and a listing shard refused past its retrier stops
its job: say so before it is submitted, with the number to request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from s3bulk.aws.remote import DeploymentError
from s3bulk.s3.clients import ClientSettings, make_client

LAMBDA_CONCURRENCY_QUOTA = "L-B99A9384"  # Service Quotas: AWS Lambda, Concurrent executions
# Lambda keeps this much of the account's concurrency unreserved whatever functions reserve.
LAMBDA_UNRESERVED_FLOOR = 100


@dataclass(frozen=True, slots=True)
class ConcurrencyCheck:
    needed: int  # what one job may run at once (the stack's LambdaConcurrencyNeeded output)
    unreserved: int  # the account's concurrency left to functions without reserved concurrency
    total: int  # the account's concurrent executions quota in this Region
    region: str
    reserved: int = 0  # of `needed`, what the Lister and the Worker reserve (already out of `unreserved`)

    @property
    def ok(self) -> bool:
        return self.unreserved >= self.needed - self.reserved

    def lines(self) -> list[str]:
        head = (
            f"Lambda concurrency in {self.region}: {self.unreserved:,} unreserved of {self.total:,}; "
            f"one job of this stack runs up to {self.needed:,} at once"
        )
        if self.reserved:
            head += f", {self.reserved:,} of them reserved by its Lister and Worker"
        if self.ok:
            return [head, "ok: jobs run at full speed (jobs at the same time share it)"]
        ask = self.total - self.unreserved + self.needed - self.reserved
        return [
            head,
            "short: listers and workers will be throttled and retried, so jobs run slower; a listing shard refused for "
            "about 25 minutes stops its job (s3bulk resume goes on)",
            f"request at least {max(ask, LAMBDA_UNRESERVED_FLOOR + self.needed):,}: aws service-quotas request-service-quota-increase "
            f"--service-code lambda --quota-code {LAMBDA_CONCURRENCY_QUOTA} --desired-value "
            f"{max(ask, LAMBDA_UNRESERVED_FLOOR + self.needed)} --region {self.region}",
            "or deploy with a smaller worker_max_concurrency and list_concurrency in deploy.json",
        ]


def stack_outputs(settings: ClientSettings, stack: str) -> dict[str, str]:
    try:
        stacks = make_client("cloudformation", settings).describe_stacks(StackName=stack)["Stacks"]
    except Exception as exc:  # noqa: BLE001 - any failure here has the same remedy
        raise DeploymentError(f"--stack {stack}: could not read the stack ({exc}); deploy it, or pass --stack and --region") from None
    return {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}


def check_concurrency(settings: ClientSettings, stack: str, *, outputs: dict[str, str] | None = None) -> ConcurrencyCheck:
    outputs = stack_outputs(settings, stack) if outputs is None else outputs
    if "LambdaConcurrencyNeeded" not in outputs:
        raise DeploymentError(f"--stack {stack}: output LambdaConcurrencyNeeded is missing; redeploy it with this version")
    lam: Any = make_client("lambda", settings)
    limit = lam.get_account_settings()["AccountLimit"]
    region = str(lam.meta.region_name)
    return ConcurrencyCheck(
        int(outputs["LambdaConcurrencyNeeded"]),
        int(limit["UnreservedConcurrentExecutions"]),
        int(limit["ConcurrentExecutions"]),
        region,
        int(outputs.get("LambdaConcurrencyReserved") or 0),  # a stack from before reservations has none
    )
