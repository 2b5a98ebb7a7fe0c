"""s3bulk: copy, move, delete or process any number of S3 objects, correctly and fast.

The core knows nothing about Lambda or the CLI; both call into it. A process
function raises the two failures exported here to say whether a retry may help.
"""

from __future__ import annotations

from s3bulk.errors import PermanentFailure, TemporaryFailure

__all__ = ["PermanentFailure", "TemporaryFailure"]
__version__ = "0.1.0"
