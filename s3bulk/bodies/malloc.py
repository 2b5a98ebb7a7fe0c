"""Give freed body buffers back to the OS at once (glibc), so RSS follows what the budget holds.

glibc serves allocations over its mmap threshold (128 KiB at start) with mmap and
returns them with munmap. But after the first such block is freed it raises the
threshold to that block's size (up to 32 MiB), so every later 8 MiB range or part
comes from a thread's heap arena, where freed memory stays mapped and fragments.
Measured relaying one 200 MiB object (SeaweedFS to moto, bench-free machine): peak
RSS 254-277 MiB with the dynamic threshold, 179 MiB with it pinned at 1 MiB; a run of
small objects alone peaks at 83-85 MiB either way. Pinning the threshold turns the
dynamic adjustment off; elsewhere (musl, macOS) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number
THRESHOLD = 1024 * 1024


@functools.cache
def pin_mmap_threshold(threshold: int = THRESHOLD) -> bool:
    """Once per process; True when glibc took the setting."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        return bool(libc.mallopt(M_MMAP_THRESHOLD, threshold))
    except (OSError, AttributeError):
        return False
