"""The per-object operations and the batch runner: what both runtimes do to each object.

One module per operation (copies, delete, move, tagging, restore, verify, extraneous),
the bounded executor they run on, and `batch.BatchRunner`, which the local engine and
the Lambda worker share. Nothing here knows how batches arrive.
"""
