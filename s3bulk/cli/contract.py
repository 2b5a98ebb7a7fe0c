"""What the command promises: its exit codes, and which jobs count as destructive (asked about, held for confirm).

Exit codes: 0 every selected object succeeded (or a dry run), 1 some objects or
the listing failed (the report names each), 2 the job or arguments are invalid
(nothing was touched; also an endpoint that never answered, a missing bucket, an unreadable AWS
setup, an unfinished or running run of the same job), 3 stopped: an endpoint that had answered
unreachable for options.outage_seconds (resumable; docs/outage.md), 4 stopped by the failure breaker (resumable), 5 cancelled by
its owner (a deployed job: final), 130 interrupted.
"""

from __future__ import annotations

EXIT_OK, EXIT_FAILED, EXIT_INVALID, EXIT_STOPPED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_CANCELLED = 5  # a deployed job its owner cancelled (s3bulk cancel)
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell tool killed by it would report

# What deletes data: asked about on a terminal (local), held for s3bulk confirm when submitted (stack). abort-uploads
# deletes no object, but what the uploads' parts hold is gone for good.
DESTRUCTIVE = frozenset({"delete", "move", "abort-uploads", "rewind"})
