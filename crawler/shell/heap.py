"""The C heap's thresholds, and the cycle collector's, set once for the whole run (#26).

Every page's parse (lexbor's tree), its response and its strings take from the C library's
malloc and give back, a few hundred KB a page on the bench site, megabytes on a big page.
With glibc's defaults, free() returns the top of the heap to the kernel as soon as 128 KB
of it is free (M_TRIM_THRESHOLD), and blocks from 128 KB up are mapped and unmapped on
their own (M_MMAP_THRESHOLD): the next page takes it all back, each 4 KB faulted in and
zeroed again by the kernel. glibc slides both thresholds up itself, but only after freeing
a block it had mapped, and only to the largest such block freed so far: how a process
behaves depends on its heap's layout and what it happened to free. On the 20,000-page bench
site the console command churned in every run (33,575 `brk` calls a crawl, up to 240,000
minor faults, 10 to 18% of the CPU), `python -m crawler.cli` in some series only
(bench/README.md, "the C heap").

keep_heap fixes both, in every run: blocks under MMAP_THRESHOLD come from the heap, whose
top is given back only past TRIM_THRESHOLD. A page's churn on the bench site stays in the
heap, and a big page's blocks (over 1 MB) are mapped on their own as at glibc's defaults:
keeping those in the heap too (glibc's own ceiling, 32 MB) took 12% less CPU on pages of
1.5 to 3 MB, but 11 MB more peak memory, which a crawler's users would rather keep.

Only 64-bit glibc is tuned (musl, macOS and Windows have other allocators, left as they
are). A user who sets one of these thresholds, the top pad or the mmap maximum through
glibc's environment variables keeps their settings. Python's own small objects live in its
arenas, which this does not touch.

fewer_collections sets Python's cycle collector to GC_THRESHOLDS: a run allocates millions
of short-lived objects and almost no reference cycles, so the youngest generation is
collected every 50,000 allocations instead of 700. The crawl's loop also freezes the heap
it starts with (crawler.shell.loop.fewer_gc_pauses); the command sets the thresholds for
its whole run, since the setting up and the publish, at the default, made 104 collections
on an unchanged night of 20,000 pages, 24 ms of its 1.5 CPU-s (3 ms with these).
"""

from __future__ import annotations

import gc
import os
from typing import Final

#: mallopt's parameter numbers (glibc's malloc.h)
_M_TRIM_THRESHOLD: Final = -1
_M_MMAP_THRESHOLD: Final = -3

#: Blocks from this size up are mapped on their own: above a page's churn on most sites (a
#: few hundred KB, the 256 KB pipe reads), below a big page's blocks
MMAP_THRESHOLD: Final = 1 << 20
#: Free memory the heap's top keeps before it is given back: room for a page's churn (512 KB
#: measured too small on the bench site; 1, 2, 8 and 64 MB the same)
TRIM_THRESHOLD: Final = 8 << 20

#: The cycle collector's thresholds of a run (gc.set_threshold): see the module doc
GC_THRESHOLDS: Final = (50_000, 20, 20)

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
    """Set glibc's mmap and trim thresholds for this process, before the crawl forks its
    workers so that they inherit them (a spawned worker sets them itself: pool.spawned_main).
    False where nothing was set: another C library, a 32-bit build (glibc refuses an mmap
    threshold over 512 KB there), no ctypes, these knobs tuned by the user, or a value glibc
    refused."""
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
    if ctypes.sizeof(ctypes.c_void_p) < 8:
        return False
    mallopt = ctypes.CDLL(None).mallopt  # glibc: dlopen(NULL) is the process itself
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # mallopt answers 1 when it took the value, 0 when it refused it (on some versions, a
    # threshold over glibc's ceiling): the trim is set only with the threshold. Both, as
    # setting one turns glibc's sliding rule off: the trim alone would map every block
    # from 128 KB up anew (the pipe reads: 15,447 `mmap` a crawl).
    return bool(
        mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )


def fewer_collections() -> None:
    """Set the cycle collector's thresholds to GC_THRESHOLDS for this process (the command
    sets them before main; a worker sets its own, as a spawned one inherits nothing)."""
    gc.set_threshold(*GC_THRESHOLDS)
