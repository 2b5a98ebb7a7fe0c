"""CPU per failure line when Finalize assembles failures.jsonl (aws/assembly.py): parse, digest, hold.

    python -m bench.failure_lines            # prints microseconds of CPU per line

bench/cost_model.py's FAILURE_LINE_US comes from this; docs/cost-model.md ("Finalize at 100 M objects")
multiplies it by the lines of a giant job.
"""

from __future__ import annotations

import argparse
import json
import time

from s3bulk.report import FailureDigest

# A failure as a worker writes it: a dated key, an error code, and the message S3bulk gives with it (162 bytes).
LINE = json.dumps(
    {
        "key": "in/2026/11/20/device-00042/frame-000123.jpg",
        "error": "AccessDenied",
        "message": "Access Denied (check the credentials' permissions and bucket policy)",
    }
).encode()


def per_line_us(parts: int = 2000, per_part: int = 100) -> float:
    """Process CPU per line, over `parts` parts of `per_part` lines, as assemble() handles them."""
    body = b"\n".join([LINE] * per_part) + b"\n"
    digest = FailureDigest()
    held = bytearray()
    started = time.process_time()
    for _ in range(parts):
        for line in body.splitlines():
            if line.strip():
                digest.add(json.loads(line))
                held += line + b"\n"
        if len(held) >= 8 << 20:
            held.clear()
    return (time.process_time() - started) / (parts * per_part) * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--parts", type=int, default=2000)
    args = parser.parse_args(argv)
    print(f"{per_line_us(args.parts):.2f} us of CPU per failure line ({len(LINE)} bytes), over {args.parts * 100:,} lines")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
