"""A run's private staging folder in ``out_dir``, and the lock that makes it the only run.

Everything a run writes goes into ``out_dir/.sitemap-staging-<pid>-<random>/`` and is
fsynced there; only the publish step touches the published set. A second writer on the
same folder is refused through ``fcntl.flock`` on ``out_dir/.sitemap.lock``; the kernel
drops that lock when its holder dies, so a killed run never blocks the next one, which
also deletes the killed run's staging folder.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from sitemap_out import locks
from sitemap_out.errors import WriterLockedError
from sitemap_out.manifest import LOCK_NAME, MANIFEST_NAME, STAGING_PREFIX, fsync_dir

__all__ = ["Staging"]


class Staging:
    """The lock is taken first, so leftovers found are a dead run's, never a live one's."""

    def __init__(self, out_dir: Path) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        self._lock_fd: int | None = _acquire_lock(out_dir)
        try:
            _remove_leftovers(out_dir)
            self.path = Path(
                tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=out_dir)
            )
        except BaseException:
            self.unlock()
            raise

    def fsync(self) -> None:
        fsync_dir(self.path)

    def discard(self) -> None:
        """Delete the staging folder and release the lock; the published set is as was."""
        shutil.rmtree(self.path, ignore_errors=True)
        self.unlock()

    def unlock(self) -> None:
        if self._lock_fd is not None:
            locks.release(self._lock_fd)
            self._lock_fd = None


def _acquire_lock(out_dir: Path) -> int:
    try:
        return locks.take(out_dir / LOCK_NAME)
    except locks.LockHeld as held:
        raise WriterLockedError(
            f"{out_dir} is being written by another run{held.who}; "
            "wait for it to finish, it holds the lock until it publishes or aborts"
        ) from None


def _remove_leftovers(out_dir: Path) -> None:
    """Only called with the lock held, so no live run owns any of these."""
    for path in out_dir.glob(STAGING_PREFIX + "*"):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
    (out_dir / (MANIFEST_NAME + ".tmp")).unlink(missing_ok=True)
