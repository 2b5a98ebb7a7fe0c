"""An SQS event source mapping as Lambda runs it: pollers, batches of up to BatchSize, partial batch responses."""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass
from typing import Any

from s3bulk.testing.stack.aws import sqs_event
from s3bulk.testing.stack.faults import Faults, draw
from s3bulk.testing.stack.iam import acting_as
from s3bulk.testing.stack.lambdas import Function, Throttled, TimedOut
from s3bulk.testing.stack.recursion import lineage_of, merged, stopped


@dataclass
class SourceStats:
    invocations: int = 0
    records: int = 0
    deleted: int = 0
    returned: int = 0  # records the handler reported as failed, or all of an invocation that raised
    crashed: int = 0
    throttled: int = 0  # invocations refused for want of concurrency: their records come back after the visibility timeout
    timed_out: int = 0
    killed: int = 0
    duplicated: int = 0
    loop_stopped: int = 0  # records Lambda would not deliver: a recursive loop past 16 hops (stack/recursion.py)
    max_hops: int = 0  # the most times one function had been invoked along a delivered record's chain
    over_limit: int = 0  # receives SQS refused with OverLimit: the queue held its in-flight limit of messages


# AWS asks an event source's queue for a visibility timeout of at least six times its function's Timeout.
VISIBILITY_RATIO = 6

# A standard queue holds at most about 120,000 messages in flight (received, not yet deleted nor visible again); past it
# ReceiveMessage answers OverLimit, for every consumer of the queue (SQS quotas, "Messages in flight").
IN_FLIGHT_LIMIT = 120_000


class SqsEventSource:
    """An event source mapping on an SQS queue, as Lambda runs it: pollers, batches, partial batch responses."""

    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        queue_arn: str,
        fn: Function,
        props: dict[str, Any],
        faults: Faults,
        pollers: int,
        in_flight_limit: int = IN_FLIGHT_LIMIT,
    ) -> None:
        self.sqs, self.queue_url, self.queue_arn, self.fn, self.faults = sqs, queue_url, queue_arn, fn, faults
        self.in_flight_limit = in_flight_limit  # a test scales it down to reach it
        self.batch_size = int(props.get("BatchSize", 10))
        self.partial = "ReportBatchItemFailures" in props.get("FunctionResponseTypes", [])
        limit = int(props.get("ScalingConfig", {}).get("MaximumConcurrency", pollers))
        self.pollers = max(1, min(pollers, limit))
        self.stats = SourceStats()
        self._stop = threading.Event()
        self._running = threading.Event()  # cleared: pollers receive nothing (pause/resume)
        self._running.set()
        self._lock = threading.Lock()  # moto's SQS is not thread-safe; one receive at a time, as one queue would serve them
        self._threads: list[threading.Thread] = []
        self._duplicated: set[str] = set()
        self._kills_taken = 0
        self._visibility: int | None = None  # the queue's own (scaled) VisibilityTimeout, read at the first crash

    @property
    def hold_s(self) -> int:
        """How long a received record stays invisible: six times its function's Timeout, as the stack sets its queues'
        visibility (AWS's rule for an event source's queue), so a record never reappears while its invocation, cold
        start and delete included, still works it (Timeout + 1 s was not enough on a loaded machine). The harness scales visibility timeouts down for test time but runs the
        functions on their template timeouts; without this hold a 40-second invocation's records came back to a
        second poller mid-run (a batch worked twice at once, and the first invocation's delete, holding an old
        receipt handle, left the message on the queue)."""
        return min(43_200, VISIBILITY_RATIO * math.ceil(self.fn.timeout_s))

    def start(self) -> None:
        for i in range(self.pollers):
            t = threading.Thread(target=self._poll, name=f"esm-{self.fn.name}-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout)
        alive = [t.name for t in self._threads if t.is_alive()]
        assert not alive, f"pollers still running after {timeout}s: {alive}"

    def pause(self) -> None:
        """Receive nothing more (a batch already received still finishes), as when the mapping is disabled."""
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def _poll(self) -> None:
        with acting_as(self.fn.name):  # Lambda polls the queue with the function's own role
            self._polling()

    def _polling(self) -> None:
        while not self._stop.is_set():
            if not self._running.is_set():
                self._stop.wait(0.05)
                continue
            with self._lock:
                if self._over_limit():
                    self.stats.over_limit += 1
                    got = {}
                else:
                    got = self.sqs.receive_message(
                        QueueUrl=self.queue_url,
                        MaxNumberOfMessages=min(self.batch_size, 10),
                        AttributeNames=["All"],
                        WaitTimeSeconds=0,
                        VisibilityTimeout=max(self.hold_s, self._queue_visibility()),
                    )
            messages: list[dict[str, Any]] = got.get("Messages", [])
            if not messages:
                self._stop.wait(0.05)
                continue
            self._deliver(messages)

    def _over_limit(self) -> bool:
        """SQS's in-flight limit reached: it answers ReceiveMessage with OverLimit (the caller holds the lock)."""
        if self.in_flight_limit >= IN_FLIGHT_LIMIT and self.stats.records - self.stats.deleted < self.in_flight_limit:
            return False  # cannot be reached: fewer records were ever received and not deleted (one less call per receive)
        with acting_as(None):
            attrs = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"])
        return int(attrs["Attributes"]["ApproximateNumberOfMessagesNotVisible"]) >= self.in_flight_limit

    def _deliver(self, messages: list[dict[str, Any]]) -> None:
        messages = self._past_loop_detection(messages)
        if not messages:
            return
        lineage = merged([lineage_of(m) for m in messages])
        with self._lock:
            self.stats.max_hops = max(self.stats.max_hops, max(lineage.values(), default=0))
            self.stats.invocations += 1
            ordinal = self.stats.invocations
            self.stats.records += len(messages)
        for m in messages:
            self._maybe_duplicate(m)
        killed = ordinal in self.faults.kill_invocations
        dies_after = self.faults.kill_after if killed or self.faults.kill_first else None
        try:
            response = self.fn.invoke(
                sqs_event(messages, self.queue_arn), dies_after, may_die=None if killed else self._take_kill, lineage=lineage
            )
        except Exception as exc:  # noqa: BLE001 - as Lambda: a failed invocation returns every record, after its visibility timeout
            with self._lock:
                self._return_after_visibility(messages)
                self.stats.crashed += 1
                self.stats.throttled += isinstance(exc, Throttled)
                self.stats.timed_out += isinstance(exc, TimedOut)
                self.stats.returned += len(messages)
            return
        failed = {f["itemIdentifier"] for f in (response or {}).get("batchItemFailures", [])} if self.partial else set()
        done = [m for m in messages if m["MessageId"] not in failed]
        for start in range(0, len(done), 10):
            entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done[start : start + 10])]
            with self._lock:
                self.sqs.delete_message_batch(QueueUrl=self.queue_url, Entries=entries)
        with self._lock:
            self.stats.killed += killed
            self.stats.deleted += len(done)
            self.stats.returned += len(messages) - len(done)

    def _queue_visibility(self) -> int:
        """The queue's VisibilityTimeout as provisioned (scaled for test time); the caller holds the lock."""
        if self._visibility is None:
            with acting_as(None):
                attrs = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["VisibilityTimeout"])
            self._visibility = int(attrs["Attributes"]["VisibilityTimeout"])
        return self._visibility

    def _return_after_visibility(self, messages: list[dict[str, Any]]) -> None:
        """A failed invocation's records reappear the queue's (scaled) visibility timeout after it ended, not after the
        hold that kept them from a second poller while it ran (the caller holds the lock)."""
        with acting_as(None):  # Lambda's own doing, not the function's role
            for start in range(0, len(messages), 10):
                entries = [
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": self._queue_visibility()}
                    for i, m in enumerate(messages[start : start + 10])
                ]
                self.sqs.change_message_visibility_batch(QueueUrl=self.queue_url, Entries=entries)

    def _past_loop_detection(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The records Lambda delivers; one whose chain has invoked this function 16 times already, unless the function
        allows recursive loops, is not delivered but sent to the queue's dead-letter queue, as Lambda does."""
        stop = [m for m in messages if stopped(self.fn.name, lineage_of(m), self.fn.recursive_loop)]
        if not stop:
            return messages
        with self._lock, acting_as(None):  # SQS and Lambda move it, not the function's role
            policy = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["RedrivePolicy"])["Attributes"].get(
                "RedrivePolicy"
            )
            for m in stop:
                if policy:
                    dlq = self.sqs.get_queue_url(QueueName=json.loads(policy)["deadLetterTargetArn"].rsplit(":", 1)[1])["QueueUrl"]
                    self.sqs.send_message(QueueUrl=dlq, MessageBody=m["Body"])
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])
            self.stats.loop_stopped += len(stop)
        return [m for m in messages if m not in stop]

    def _take_kill(self) -> bool:
        """One of the `kill_first` deaths, if any is left (counted as the invocation's kill)."""
        with self._lock:
            if self._kills_taken >= self.faults.kill_first:
                return False
            self._kills_taken += 1
            self.stats.killed += 1
            return True

    def _maybe_duplicate(self, m: dict[str, Any]) -> None:
        rate = self.faults.duplicate_rate
        body = m["Body"]
        if not rate or m["Attributes"]["ApproximateReceiveCount"] != "1" or draw(self.faults.seed, "dup", body) >= rate:
            return
        with self._lock:
            if body in self._duplicated:
                return
            self._duplicated.add(body)
            self.stats.duplicated += 1
            self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=body)
