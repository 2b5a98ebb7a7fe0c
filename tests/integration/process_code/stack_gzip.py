"""A process function: gzip each object into the destination, streaming both ways."""

from __future__ import annotations

import gzip
import shutil
from typing import Any


def run(obj: Any) -> str:
    level = int(obj.arguments.get("level", 6))
    with (
        obj.open() as src,
        obj.writer(obj.key + ".gz", content_type="application/gzip") as out,
        gzip.GzipFile(fileobj=out, mode="wb", compresslevel=level, mtime=0) as gz,
    ):
        shutil.copyfileobj(src, gz, 1024 * 1024)
    return f"{obj.size} bytes in"
