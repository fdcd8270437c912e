"""Putting a staged set in place: the index, then the manifest and the renames.

Only :func:`install` touches the published set, in this order:

1. the manifest (``.sitemap-manifest.json``, the names this tool owns in ``out_dir``) is
   rewritten as *old set plus new set*, so a file is on record before it is placed;
2. the new part files are renamed into place (``os.replace``), the entry point last,
   and ``out_dir`` is fsynced;
3. files of the old set that are not in the new one are deleted;
4. the manifest is rewritten as the new set.

A run that raises or is killed before step 2 leaves the published files byte-for-byte as
they were. A kill during step 2 leaves every file that the *current* entry point names
present and valid: parts are replaced by complete new parts, never truncated, and old
parts that the old index still lists are deleted only after the new entry point is in
place (the set may briefly mix old and new parts, which a reader accepts). A kill during
step 3 leaves extra, unlisted files that the manifest still records, so the next publish
deletes them. Only names that match the sitemap naming pattern are ever deleted, so an
unrelated file in ``out_dir`` is never touched, even with a tampered manifest.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sitemap_out.changes import ChangeLog
from sitemap_out.errors import IndexLimitError
from sitemap_out.limits import MAX_BYTES
from sitemap_out.manifest import (
    FEED_NAME,
    LLMS_NAME,
    fsync_dir,
    read_manifest,
    write_manifest,
)
from sitemap_out.parts import COPY_CHUNK, PartInfo
from sitemap_out.stylesheet import XSL_NAME
from sitemap_out.xml import index_close, index_entry, index_open

__all__ = ["ChangeCounts", "GroupInfo", "PublishResult", "install", "write_index"]


@dataclass(frozen=True, slots=True)
class ChangeCounts:
    """What a stable run found against the set published before it: URLs added (not listed
    before), removed (listed before, not now) and changed (listed in both, with another
    ``<lastmod>``). ``layout``: a line for the summary, or "": why the part files were laid
    out afresh, and that a feed published before was left in place by a run without one."""

    added: int = 0
    removed: int = 0
    changed: int = 0
    layout: str = ""


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """One group of a grouped set (sitemap_out.groups): its URLs, its part files and, in a
    stable run, what changed in it (ChangeLog.groups says how a move between groups counts)."""

    name: str
    url_count: int
    files: tuple[str, ...]
    changes: ChangeCounts | None = None

    @classmethod
    def of(cls, name: str, parts: list[PartInfo], changes: ChangeLog | None) -> GroupInfo:
        counts = None if changes is None or changes.groups is None else changes.groups.get(name)
        return cls(
            name,
            sum(p.url_count for p in parts),
            tuple(p.name for p in parts),
            None
            if counts is None
            else ChangeCounts(counts["added"], counts["removed"], counts["changed"]),
        )

    @classmethod
    def over_sets(cls, sets: list[tuple[GroupInfo, ...]]) -> tuple[GroupInfo, ...]:
        """Each group over several sets written with one change log (one writer per host):
        its URLs and files summed, its changes the log's, which every set reports alike.
        Every writer has every configured group, in the configured order."""
        merged: dict[str, GroupInfo] = {}
        for infos in sets:
            for info in infos:
                seen = merged.get(info.name)
                if seen is not None:
                    files, changes = seen.files + info.files, info.changes or seen.changes
                    info = cls(info.name, seen.url_count + info.url_count, files, changes)
                merged[info.name] = info
        return tuple(merged.values())

    def to_json(self) -> dict[str, int]:
        figures = {"urls": self.url_count, "files": len(self.files)}
        if self.changes is not None:
            c = self.changes
            figures.update(added=c.added, removed=c.removed, changed=c.changed)
        return figures


@dataclass(frozen=True, slots=True)
class PublishResult:
    """What a publish put in place. ``files`` are final paths, the entry point last."""

    entry_point: Path
    files: list[Path]
    url_count: int
    sitemap_url: str | None
    parts: tuple[PartInfo, ...]
    is_index: bool
    changes: ChangeCounts | None = None  # stable runs only
    feed_url: str | None = None  # changes.atom, when published
    news: PartInfo | None = None  # sitemap-news.xml[.gz], listed in the index, when written
    groups: tuple[GroupInfo, ...] = ()  # each group's figures, when groups were given
    llms_url: str | None = None  # llms.txt, when published


def write_index(
    path: Path,
    base_url: str,
    parts: list[PartInfo],
    news: PartInfo | None,
    stylesheet: str | None = None,
) -> None:
    """The sitemap index at path, listing parts then news by absolute URL; fsynced.
    ``stylesheet``: the href of the XSL its header names, if any."""
    size = 0
    with open(path, "wb", buffering=COPY_CHUNK) as fh:
        size += fh.write(index_open(stylesheet).encode())
        listed = parts if news is None else [*parts, news]
        for part in listed:
            piece = index_entry(base_url + part.name, part.newest_lastmod)
            size += fh.write(piece.encode())
        size += fh.write(index_close().encode())
        fh.flush()
        os.fsync(fh.fileno())
    if size > MAX_BYTES:
        raise IndexLimitError(
            f"the index listing {len(parts)} sitemaps would be {size} bytes, "
            f"over the {MAX_BYTES}-byte limit; use a shorter base_url or fewer parts"
        )


def install(out_dir: Path, staging: Path, names: list[str], layout: dict[str, object]) -> None:
    """Steps 1 to 4 of the module docstring; ``names`` end with the entry point, and
    ``layout`` is the settings the set was made with. A name with no file in the staging
    folder is a part left as published (a stable layout); an entry point (or feed, or
    llms.txt, the stylesheet) whose bytes are those published is left untouched too, so that
    its mtime and ETag say nothing changed."""
    old = read_manifest(out_dir)
    new = set(names)
    for small in (names[-1], FEED_NAME, LLMS_NAME, XSL_NAME):
        if _same_bytes(staging / small, out_dir / small):
            (staging / small).unlink()
    write_manifest(out_dir, [*old, *(n for n in names if n not in old)])
    for name in names:  # entry point last
        staged = staging / name
        if staged.exists():
            os.replace(staged, out_dir / name)
    fsync_dir(out_dir)
    for name in old:
        if name not in new:
            (out_dir / name).unlink(missing_ok=True)
    write_manifest(out_dir, names, layout)


def _same_bytes(a: Path, b: Path) -> bool:
    """Whether two small files (an index) hold the same bytes; False if either is missing."""
    try:
        if a.stat().st_size != b.stat().st_size:
            return False
        return a.read_bytes() == b.read_bytes()
    except OSError:
        return False
