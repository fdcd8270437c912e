"""The names the writer owns in ``out_dir`` and the manifest that records them.

Read by the writer (which files to replace and delete) and by the stable layout
(sitemap_out.previous: the settings a set was made with), so it imports nothing above
it. Only names that match the sitemap naming pattern count as ours: an unrelated file in
``out_dir`` is never touched, even with a tampered manifest.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from sitemap_out.groups import PART_RE

__all__ = [
    "FEED_NAME",
    "LLMS_NAME",
    "LOCK_NAME",
    "MANIFEST_NAME",
    "STAGING_PREFIX",
    "fsync_dir",
    "is_reserved",
    "is_sitemap_file",
    "left_in_place",
    "read_layout",
    "read_manifest",
    "write_manifest",
]

LOCK_NAME: Final = ".sitemap.lock"
MANIFEST_NAME: Final = ".sitemap-manifest.json"
STAGING_PREFIX: Final = ".sitemap-staging-"
#: llms.txt (llmstxt.org), published with the set when the caller gives its text
LLMS_NAME: Final = "llms.txt"
#: the Atom feed of the changes (sitemap_out.feed): named here, where every publish looks for
#: it, so that a set published without a feed does not load the feed's module (#26)
FEED_NAME: Final = "changes.atom"
_OWN_NAME: Final = re.compile(
    rf"sitemap(?:-news)?\.(?:xml|txt)(?:\.gz)?|{re.escape(FEED_NAME)}|{re.escape(LLMS_NAME)}"
    r"|sitemap\.xsl"
)


def _own(name: str) -> bool:
    """A name the writer publishes: the entry point, news, the feed, llms.txt, the
    stylesheet or a part (a group's too)."""
    return _OWN_NAME.fullmatch(name) is not None or PART_RE.fullmatch(name) is not None


def is_reserved(name: str) -> bool:
    """Whether ``name`` in ``out_dir`` is one the writer publishes, replaces, deletes or
    uses there: a sitemap file, the manifest or its temporary, the lock, a staging folder.
    Another file of that name would be overwritten or deleted by a publish."""
    return (
        _own(name)
        or name in (LOCK_NAME, MANIFEST_NAME, MANIFEST_NAME + ".tmp")
        or name.startswith(STAGING_PREFIX)
    )


def is_sitemap_file(name: str) -> bool:
    """Whether ``name`` is one the writer publishes (a sitemap file or the feed): what a
    copy of the set elsewhere (publish_to) may replace or delete, and nothing else."""
    return _own(name)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_manifest(out_dir: Path) -> list[str]:
    """Names of the files this tool published last in ``out_dir`` (only well-formed names)."""
    try:
        data = json.loads((out_dir / MANIFEST_NAME).read_text("utf-8"))
    except (FileNotFoundError, ValueError, UnicodeDecodeError):
        return []
    files = data.get("files", []) if isinstance(data, dict) else []
    return [f for f in files if isinstance(f, str) and _own(f)]


def left_in_place(out_dir: Path, name: str, option: str) -> str:
    """A run without `option` leaves the file `name` it publishes in place, and says so:
    its URL may be submitted or linked, and turning an option off must not make it a 404.
    Returns the line to say ("" when no such file was published); deleting the file by
    hand withdraws it (the next run takes it off the manifest)."""
    if name not in read_manifest(out_dir) or not (out_dir / name).is_file():
        return ""
    return (
        f"{name} left as published, no longer updated (the run had no {option}); "
        "delete it to withdraw it"
    )


def read_layout(out_dir: Path) -> dict[str, object] | None:
    """The settings the published set was made with, as the manifest records them."""
    try:
        data = json.loads((out_dir / MANIFEST_NAME).read_text("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    layout = data.get("layout") if isinstance(data, dict) else None
    return layout if isinstance(layout, dict) else None


def write_manifest(
    out_dir: Path, names: Iterable[str], layout: dict[str, object] | None = None
) -> None:
    """``layout``: the settings the set was made with, written only once the set is whole,
    so that a run killed while publishing leaves a set the next run lays out afresh."""
    tmp = out_dir / (MANIFEST_NAME + ".tmp")
    data: dict[str, object] = {"version": 1, "files": list(names)}
    if layout is not None:
        data["layout"] = layout
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, out_dir / MANIFEST_NAME)
    fsync_dir(out_dir)
