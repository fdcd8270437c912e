"""Every path a crawl writes, checked before its first request, and its output folder held.

A crawl that could not write its report would find out after hours of fetching, and two runs
publishing to one folder would race; so before anything is fetched each output path is
checked (the output folder and the state's created when missing) and the output folder is
locked for the whole run; a run that fails leaves no output folder it made and published
nothing in. What is
wrong is said in one line naming the path (ConfigError: exit 2, nothing fetched, the
published sitemap untouched).

Checked: the output folder is a folder (created if missing) that a file can be written in;
each other file (`OUTPUT_FILES`) is not a folder and its folder exists (the state's: or can
be created);
it is not, nor makes beside itself, a file the publish would replace or delete or the crawl
uses in the output folder (`sitemap.xml`, `sitemap-2.xml.gz`, the manifest, the locks...);
it can be written: a file written in place (the decisions file, and a report or metrics file
that exists and is not a regular file: a device, a FIFO, a symlink) is opened for append,
else a file is written in its folder (a report or metrics file replaces its file through a
temporary one; the state makes SQLite's files and a lock beside its own); the state file,
when it exists, is a regular file; no two of them are the same file; no other run holds the
output folder (else BusyError: exit 75, nothing fetched, that run untouched). Not knowable
in advance: a disk that fills up during the crawl (exit 5).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Final

from crawler.config import Config
from crawler.core.report import Tally
from crawler.errors import BusyError, ConfigError, OutputError
from crawler.shell.state_file import discard_unused
from sitemap_out import PublishResult, locks
from sitemap_out.changes import ChangeLog
from sitemap_out.manifest import LOCK_NAME as WRITER_LOCK
from sitemap_out.manifest import is_reserved

__all__ = [
    "LOCK_NAME",
    "OUTPUT_FILES",
    "check_files",
    "ensure_free",
    "held_outputs",
    "output_files",
    "written_in_place",
]

#: The lock file in the output folder, held by the run writing there. Never deleted: a run
#: deleting it while a second one waits would let a third lock a fresh file beside them.
LOCK_NAME: Final = ".sitemap-crawler.lock"

#: The config keys naming files a crawl writes besides the sitemap: one line for a new one.
OUTPUT_FILES: Final = ("report", "decisions", "changes", "state", "metrics")


#: The names each file makes beside its own: a report is written to `<report>.tmp`, renamed
#: over it; a state file has SQLite's companions and its lock.
_BESIDE: Final = {
    "report": ("", ".tmp"),
    "metrics": ("", ".tmp"),
    "decisions": ("",),
    "changes": ("", ".tmp"),
    "state": ("", "-wal", "-shm", "-journal", ".lock"),
}


def written_in_place(path: Path) -> bool:
    """Whether a report (or an audit's file) at path is written in place rather than through
    a temporary file renamed over it: when it exists and is not a regular file (a device,
    a FIFO, a symlink), which a rename would replace."""
    try:
        return not stat.S_ISREG(path.lstat().st_mode)
    except FileNotFoundError:
        return False


def output_files(config: Config) -> list[tuple[str, Path]]:
    """(key, path) of each file the crawl will write besides the sitemap."""
    named = ((key, getattr(config, key)) for key in OUTPUT_FILES)
    return [(key, Path(path)) for key, path in named if path is not None]


@contextlib.contextmanager
def held_outputs(config: Config) -> Iterator[None]:
    """Check every output path and hold the output folder until the block ends; raise
    ConfigError naming the first path that cannot be used."""
    folder = config.output
    made = [f for f in (folder, *folder.parents) if not f.exists()]  # made here, deepest first
    state = config.state if config.state is not None and not config.state.exists() else None
    _make_folder(folder, f"output folder {folder}", itself=True)
    try:
        _probe(folder, f"output folder {folder}")
        fd = _lock(folder)
        try:
            _check_files(config)
            yield
        finally:
            _unlock(fd)
    except BaseException:
        if made:
            _remove_if_unused(made)
        if state is not None:  # a state file this run made (not one a resume needs)
            discard_unused(state)
        raise


def ensure_free(folder: Path) -> None:
    """Raise BusyError when another run holds the output folder now: for a caller that
    says what it is about to do, so that it does not say it before being refused."""
    if (folder / LOCK_NAME).exists():
        _unlock(_lock(folder))


def _remove_if_unused(made: list[Path]) -> None:
    """A failed run leaves no output folder it made and published nothing in (nor the
    folders it made to hold it): only the locks in it, which nothing else holds once this
    run, the folder's maker, lets go."""
    with contextlib.suppress(OSError):
        names = {path.name for path in made[0].iterdir()}
        if names <= {LOCK_NAME, WRITER_LOCK}:
            for name in names:
                (made[0] / name).unlink()
            for folder in made:
                folder.rmdir()  # OSError when not empty: then it is another's, kept


def _check_files(config: Config) -> None:
    seen: dict[Path, str] = {}
    for key, path in output_files(config):
        _check_file(key, path, seen, config.output)


def check_files(files: Sequence[tuple[str, Path]]) -> None:
    """Check the output files of a command without an output folder (the audit's reports)
    as a crawl checks its own, before its first request: a path that cannot be written is
    found now, not after hours of requests whose results it would lose. `files`: (the
    option, its path)."""
    seen: dict[Path, str] = {}
    for key, path in files:
        _check_file(key, path, seen, None, kind="report")  # written whole, as a report


def _check_file(
    key: str,
    path: Path,
    seen: dict[Path, str],
    output: Path | None,
    *,
    kind: str | None = None,
) -> None:
    """`output`: the output folder a file must not clash with; `kind`: the key whose
    writing it shares (how it is probed), when not its own."""
    what = f"{key} file {path}"
    if path.is_dir():
        raise ConfigError(f"{what} is a folder, not a file")
    if output is not None:
        _check_clash(key, path, output, what)
    # a file is where a user asked for it: a folder that does not exist is more likely a
    # typo than a wish (the job makes its own folders under --data before this)
    _make_folder(path.parent, what, create=False)
    _check_writable(kind or key, path, what)
    same = path.resolve()
    if same in seen:
        raise ConfigError(f"{what} is also the {seen[same]} file; name two different files")
    seen[same] = key


def _check_clash(key: str, path: Path, output: Path, what: str) -> None:
    """Refuse a file that is, or makes beside itself, one that the publish replaces or
    deletes, or that the crawl uses, in the output folder (other names there are fine)."""
    out, resolved = output.resolve(), path.resolve()
    for suffix in _BESIDE[key]:
        made = resolved.with_name(resolved.name + suffix)
        if made == out or not made.is_relative_to(out):
            continue
        name = made.relative_to(out).parts[0]
        if name == LOCK_NAME or is_reserved(name):
            raise ConfigError(
                f"{what} clashes with {name} in the output folder {output}: the crawl "
                "publishes or uses that name there; name another file"
            )


def _check_writable(key: str, path: Path, what: str) -> None:
    """Probe where the file will be written: the file itself when it exists and is written
    in place, else its folder. A state file must be a regular file (SQLite's)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise ConfigError(f"{what}: cannot use it: {exc.strerror or exc}") from None
    if mode is not None and key == "state" and not stat.S_ISREG(mode):
        raise ConfigError(f"{what} is not a regular file; a state file is an SQLite database")
    in_place = key == "decisions" or (
        key in ("report", "metrics", "changes") and written_in_place(path)
    )
    if mode is not None and in_place:
        _probe_file(path, mode, what)
    else:
        _probe(path.parent, what)


def _probe_file(path: Path, mode: int, what: str) -> None:
    """Open an existing file for append, writing nothing; a FIFO is only asked whether it
    may be written: closing its write end would end the stream of a reader waiting on it."""
    if stat.S_ISFIFO(mode):
        if not os.access(path, os.W_OK):
            raise ConfigError(f"{what}: cannot write it: permission denied")
        return
    flags = os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        os.close(os.open(path, flags))
    except OSError as exc:
        raise ConfigError(f"{what}: cannot write it: {exc.strerror or exc}") from None


def _make_folder(folder: Path, what: str, *, itself: bool = False, create: bool = True) -> None:
    """Create folder if missing (unless not to `create`: refuse it); refuse a file in its
    place or in its way. `what`: the file to be written in folder, or (`itself`) the folder."""
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
    if not create:  # a typo in a path is not a folder to make
        raise ConfigError(f"{what}: no folder {folder}; create it, or name another")
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


def change_log(config: Config) -> ChangeLog:
    """The crawl's log of changes. The lists of URLs are kept only when --changes FILE.json
    is asked for, because that file (report_changes writes it) is their one reader; the
    report needs only the counts, and --feed its newest few (#26: a JSON line for every URL,
    which nobody read, was half of the writer's time)."""
    return ChangeLog(urls=config.changes is not None)


def report_changes(
    published: PublishResult,
    changes: ChangeLog,
    tally: Tally,
    path: Path | None,
    log: Callable[[str], None],
) -> None:
    """The changes into the tally, and into --changes FILE.json when asked for."""
    counts = published.changes
    if counts is not None and counts.layout:
        log(counts.layout)
    if counts is not None:
        tally.changes = {
            "added": counts.added, "removed": counts.removed, "changed": counts.changed,
        }  # fmt: skip
    tally.feed_url = published.feed_url
    if published.groups:
        tally.groups = {group.name: group.to_json() for group in published.groups}
    tally.llms_url = published.llms_url
    if path is None:
        return
    extra: dict[str, object] = {"sitemap_url": published.sitemap_url}
    if published.feed_url is not None:
        extra["feed_url"] = published.feed_url
    try:
        changes.write_json(path, extra, in_place=written_in_place(path))
    except OSError as exc:
        raise OutputError(
            f"the sitemap is published, but cannot write the changes file {path}: "
            f"{exc.strerror or exc}"
        ) from None
