"""Where a job's objects come from: the listing (sharded, in key order), manifests (CSV, S3 Inventory, Parquet, ORC,
JSONL), the selection rules that pick objects from either, and the merge-join of two listings a sync compares."""
