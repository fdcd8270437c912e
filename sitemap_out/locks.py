"""One exclusive lock per file, held for a whole run: the folder a sitemap is written to,
and the crawler's own output folder and state file all use this.

``fcntl.flock`` on a lock file beside what it guards: released by the OS when the process
dies, so a killed run never leaves a stale lock. The holder's pid is written into the file
for the refusal message only. The file itself stays after release: unlinking a flock file
lets a third run lock a fresh inode while a second still holds the old one, and both would
believe they own what it guards.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

__all__ = ["LockHeld", "release", "take"]


class LockHeld(Exception):
    """Another live process holds the lock. `holder`: its pid when it wrote one."""

    def __init__(self, path: Path, holder: str | None) -> None:
        super().__init__(f"{path} is held" + (f" by pid {holder}" if holder else ""))
        self.path = path
        self.holder = holder

    @property
    def who(self) -> str:
        """' (pid N)' for a message, or ''."""
        return f" (pid {self.holder})" if self.holder else ""


def take(path: Path) -> int:
    """Lock `path` (created if missing) or raise LockHeld; other failures raise OSError.
    Returns the descriptor to pass to release()."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        os.close(fd)
        raise LockHeld(path, holder if holder.isdigit() else None) from None
    except OSError:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    return fd


def release(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
    os.close(fd)  # the only descriptor: closing it releases the flock
