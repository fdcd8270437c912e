"""The C heap's thresholds, set once for the whole run (#26).

Every page's parse (lexbor's tree), its response and its strings take from the C library's
malloc and give back, a few hundred KB a page on the bench site, megabytes on a big page.
With glibc's defaults, free() returns the top of the heap to the kernel as soon as 128 KB
of it is free (M_TRIM_THRESHOLD), and blocks from 128 KB up are mapped and unmapped on
their own (M_MMAP_THRESHOLD): the next page takes it all back, each 4 KB faulted in and
zeroed again by the kernel. glibc slides both thresholds up itself, but only after freeing
a block it had mapped, and only as far as that block, so a process's behaviour depends on
which large blocks it happened to free first. On the 20,000-page bench site some runs
churned (33,575 `brk` calls a crawl, up to 210,000 minor faults, 10% of the CPU) and others
did not (bench/README.md, "the C heap"). Set here where that rule ends, glibc's ceiling for
it (32 MB on 64-bit) and twice that for the trim: no page up to --max-page-bytes is mapped
on its own, and the heap's top is kept for the next page, in every run. Peak memory is
about the same: the top kept is memory the run had in use at its peak anyway, reused before
the heap grows.

Only glibc has these knobs (musl, macOS and Windows have other allocators, left as they
are). A user who sets one of them, or one they interact with, through glibc's environment
variables keeps their settings. Python's own small objects live in its arenas, which this
does not touch.
"""

from __future__ import annotations

import os
from typing import Final

#: mallopt's parameter numbers (glibc's malloc.h)
_M_TRIM_THRESHOLD: Final = -1
_M_MMAP_THRESHOLD: Final = -3

#: The knobs this sets or interacts with, as glibc reads them from the environment (its
#: older variables and GLIBC_TUNABLES' names): a user's own setting of one wins.
_USER_KNOBS: Final = (
    "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_",
)  # fmt: skip
_USER_TUNABLES: Final = (
    "glibc.malloc.trim_threshold", "glibc.malloc.mmap_threshold", "glibc.malloc.top_pad",
    "glibc.malloc.mmap_max",
)  # fmt: skip


def _glibc() -> bool:
    """Whether the C library is glibc, asked of it (no scan of the executable)."""
    try:
        return bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (AttributeError, ValueError, OSError):  # not POSIX, or no glibc to answer
        return False


def keep_heap() -> bool:
    """Set glibc's mmap and trim thresholds for this process and the workers it forks.
    False where nothing was set: another C library, no ctypes, malloc tuned by the user, or
    a value glibc refused."""
    if not _glibc():
        return False
    if any(name in os.environ for name in _USER_KNOBS):
        return False
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if any(name in tunables for name in _USER_TUNABLES):
        return False
    try:
        import ctypes  # here: the one user of it, 1 to 2 ms to import
    except ImportError:  # a Python built without libffi
        return False
    mallopt = ctypes.CDLL(None).mallopt  # glibc: dlopen(NULL) is the process itself
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # glibc's ceiling for its sliding threshold (DEFAULT_MMAP_THRESHOLD_MAX): 4 MB a byte of
    # a long, 32 MB on 64-bit, 16 MB on 32-bit; the trim at twice the threshold, as its rule
    ceiling = 4 * 1024 * 1024 * ctypes.sizeof(ctypes.c_long)
    # mallopt answers 1 when it took the value, 0 when it refused it (a threshold over its
    # ceiling on some versions): the trim is set only with the threshold it goes with
    return bool(mallopt(_M_MMAP_THRESHOLD, ceiling) and mallopt(_M_TRIM_THRESHOLD, 2 * ceiling))
