"""The C heap's thresholds, set once for the whole run (#26).

Every page's parse (lexbor's tree) and its response take a few hundred KB from the C
library's malloc and give them back. With glibc's defaults, free() returns the top of the
heap to the kernel as soon as 128 KB of it is free (M_TRIM_THRESHOLD), and the next page
takes it back: a `brk` pair a page (33,575 calls on the 20,000-page bench site), and every
4 KB of it faulted in and zeroed again by the kernel (55,000 to 210,000 minor faults a
crawl). glibc raises the threshold itself only after freeing a block it had mapped on its
own (M_MMAP_THRESHOLD, 128 KB), which a crawl never does. Set here: the top is given back
only past TRIM_THRESHOLD, and blocks under MMAP_THRESHOLD come from the heap, as glibc's
own rule would have them after one such block (setting one threshold turns that rule
off). Then 19,000 faults a crawl, and 8 to 12% less CPU on the bench site; peak memory
the same (the heap's top is reused, not grown). bench/README.md has the figures.

Only glibc has these knobs (musl, macOS and Windows have other allocators, left as they
are), and a user who tunes malloc through its environment variables keeps their settings.
Python's own small objects live in its arenas, which this does not touch.
"""

from __future__ import annotations

import os
import platform
from typing import Final

#: mallopt's parameter numbers (glibc's malloc.h)
M_TRIM_THRESHOLD: Final = -1
M_MMAP_THRESHOLD: Final = -3

#: Free memory the heap's top keeps before it is given back: above one page's churn (a
#: few hundred KB; 2 MB measured as good as 64 MB), small beside a crawl's memory.
TRIM_THRESHOLD: Final = 8 << 20
#: Blocks from this size up are mapped on their own, not taken from the heap.
MMAP_THRESHOLD: Final = 1 << 20

#: Environment variables through which glibc's malloc is tuned: a user's own settings win.
_USER_KNOBS: Final = (
    "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_ARENA_MAX",
)  # fmt: skip


def keep_heap() -> bool:
    """Set glibc's trim and mmap thresholds for this process and the workers it forks.
    False where nothing was set: another C library, or malloc tuned by the environment."""
    if platform.libc_ver()[0] != "glibc":
        return False
    if any(name in os.environ for name in _USER_KNOBS):
        return False
    if "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    import ctypes  # here: 4 ms of import, for a command that keeps the heap only

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # mallopt answers 1 on success, 0 on a value out of range
    return bool(
        mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
