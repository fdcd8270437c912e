"""Every path a crawl writes, checked before its first request, and its output folder held.

A crawl that could not write its report would find out after hours of fetching, and two runs
publishing to one folder would race; so before anything is fetched each output path is
checked (missing folders created) and the output folder is locked for the whole run. What is
wrong is said in one line naming the path (ConfigError: exit 2, nothing fetched, the
published sitemap untouched).

Checked: the output folder is a folder (created if missing) that a file can be written in;
each other file (`OUTPUT_FILES`) is not a folder and its folder exists or can be created,
and a file can be written there; no two of them are the same file; no other run holds the
output folder (else BusyError: exit 75, nothing fetched, that run untouched). Not knowable
in advance: a disk that fills up during the crawl (exit 5).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from crawler.config import Config
from crawler.errors import BusyError, ConfigError
from sitemap_out import locks

__all__ = ["LOCK_NAME", "OUTPUT_FILES", "held_outputs", "output_files"]

#: The lock file in the output folder, held by the run writing there. Never deleted: a run
#: deleting it while a second one waits would let a third lock a fresh file beside them.
LOCK_NAME: Final = ".sitemap-crawler.lock"

#: The config keys naming files a crawl writes besides the sitemap: one line for a new one.
OUTPUT_FILES: Final = ("report", "decisions", "state")


def output_files(config: Config) -> list[tuple[str, Path]]:
    """(key, path) of each file the crawl will write besides the sitemap."""
    named = ((key, getattr(config, key)) for key in OUTPUT_FILES)
    return [(key, Path(path)) for key, path in named if path is not None]


@contextlib.contextmanager
def held_outputs(config: Config) -> Iterator[None]:
    """Check every output path and hold the output folder until the block ends; raise
    ConfigError naming the first path that cannot be used."""
    folder = config.output
    _make_folder(folder, f"output folder {folder}", itself=True)
    _probe(folder, f"output folder {folder}")
    fd = _lock(folder)
    try:
        _check_files(config)
        yield
    finally:
        _unlock(fd)


def _check_files(config: Config) -> None:
    seen: dict[Path, str] = {}
    for key, path in output_files(config):
        what = f"{key} file {path}"
        if path.is_dir():
            raise ConfigError(f"{what} is a folder, not a file")
        _make_folder(path.parent, what)
        _probe(path.parent, what)
        same = path.resolve()
        if same in seen:
            raise ConfigError(f"{what} is also the {seen[same]} file; name two different files")
        seen[same] = key


def _make_folder(folder: Path, what: str, *, itself: bool = False) -> None:
    """Create folder if missing; refuse a file in its place or in its way. `what`: the file
    to be written in folder, or (`itself`) the folder."""
    if folder.is_dir():
        return
    if folder.exists() or folder.is_symlink():
        blocker: Path | None = folder
    else:
        blocker = next((p for p in folder.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        if itself and blocker == folder:
            raise ConfigError(f"{what} is a file, not a folder")
        raise ConfigError(f"{what}: {blocker} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{what}: cannot create {folder}: {exc.strerror or exc}") from None


def _probe(folder: Path, what: str) -> None:
    """Write a byte to an unnamed file in folder: permissions alone do not tell (root
    ignores them, a read-only mount does not show in them)."""
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".sitemap-crawler-probe-") as probe:
            probe.write(b"\n")
            probe.flush()
    except OSError as exc:
        raise ConfigError(f"{what}: cannot write in {folder}: {exc.strerror or exc}") from None


def _lock(folder: Path) -> int:
    path = folder / LOCK_NAME
    try:
        return locks.take(path)
    except locks.LockHeld as held:
        raise BusyError(
            f"another sitemap-crawler run is writing to {folder}{held.who}; wait for it to "
            "end, or publish to another folder"
        ) from None
    except OSError as exc:
        raise ConfigError(f"output folder {folder}: cannot lock {path}: {exc.strerror}") from None


def _unlock(fd: int) -> None:
    locks.release(fd)
