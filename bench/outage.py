"""How long one call takes to fail against a dead endpoint, per request path: the measurement behind options.outage_seconds.

    python -m bench.outage --runs 5

prints one JSON line per (endpoint kind, request path): seconds per failed ListObjectsV2 with the
client's own retries. Kinds: refused (nothing listens on the port) and blackholed (the port's
accept queue is full, so a connect waits for its timeout). See docs/outage.md.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from s3bulk.breakers.outage import OutageBreaker
from s3bulk.local.server import free_ports
from s3bulk.s3.clients import ClientSettings, make_s3_client
from s3bulk.s3.fastpath import FastS3

T = TypeVar("T")


class _OneCall(OutageBreaker):
    """Hears every attempt but keeps no call going: what is timed is the client's own retries."""

    def guard(self, endpoint: str, call: Callable[[], T]) -> T:
        return call()


@contextmanager
def dead_endpoint(kind: str) -> Iterator[str]:
    """An endpoint URL that refuses connections, or one whose connects time out."""
    held: list[socket.socket] = []
    try:
        if kind == "refused":
            port = free_ports(1)[0]
        else:
            listener = socket.socket()
            listener.bind(("127.0.0.1", 0))
            listener.listen(0)
            held.append(listener)
            port = listener.getsockname()[1]
            for _ in range(4):  # fill the accept queue: later SYNs are dropped
                filler = socket.socket()
                filler.setblocking(False)
                filler.connect_ex(("127.0.0.1", port))
                held.append(filler)
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}"
    finally:
        for s in held:
            s.close()


def one_call(endpoint: str, path: str) -> tuple[float, str]:
    client = make_s3_client(ClientSettings(endpoint_url=endpoint, access_key="bench", secret_key="bench"), 8)
    started = time.monotonic()
    try:
        if path == "fast":
            FastS3(client, 8, breaker=_OneCall()).list_page("bench", "", None, None, 1000)
        else:
            client.list_objects_v2(Bucket="bench")
        error = "answered"
    except Exception as exc:  # noqa: BLE001 - the error is what is measured
        error = type(exc).__name__
    return time.monotonic() - started, error


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--kinds", default="refused,blackholed")
    args = p.parse_args()
    for kind in args.kinds.split(","):
        for path in ("botocore", "fast"):
            with dead_endpoint(kind) as endpoint:
                results = [one_call(endpoint, path) for _ in range(args.runs)]
            seconds = [r[0] for r in results]
            row = {"endpoint": kind, "path": path, "runs": args.runs, "error": results[-1][1]}
            row |= {"median_s": round(statistics.median(seconds), 1), "min_s": round(min(seconds), 1), "max_s": round(max(seconds), 1)}
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
