"""s3bulk: copy, move and delete any number of S3 objects, correctly and fast.

The core knows nothing about Lambda or the CLI; both call into it.
"""

from __future__ import annotations

__version__ = "0.1.0"
