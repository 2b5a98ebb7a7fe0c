"""The CloudWatch names the Lambda handlers emit and the dashboard and alarms read: one list, so they cannot drift."""

from __future__ import annotations

NAMESPACE = "S3Bulk"
# The only dimension: per-job or per-key dimensions would make a metric per job (cost, cardinality).
SERVICE = "s3bulk"

OBJECTS_SUCCEEDED = "ObjectsSucceeded"
OBJECTS_FAILED = "ObjectsFailed"
OBJECTS_SKIPPED = "ObjectsSkipped"
BYTES = "Bytes"
RETRIES = "Retries"  # requests the S3 client retried, summed per batch
BATCHES_RETURNED = "BatchesReturned"  # SQS gets the batch back (time ran out, or an error); it is redone whole
DEAD_LETTERED_BATCHES = "DeadLetteredBatches"
DUPLICATE_BATCHES = "DuplicateBatches"  # a redelivered batch the ledger had already counted
LISTED_PAGES = "ListedPages"
# An execution that timed out, or was stopped by anything but its owner's s3bulk stop or cancel: the alarm's, since an
# end its owner asked for is no trouble.
UNASKED_ENDS = "ExecutionsEndedUnasked"
