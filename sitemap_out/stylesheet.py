"""The stylesheet a browser applies to the sitemap files: ``sitemap.xsl`` and its href.

Search engines read a sitemap's XML and ignore an ``<?xml-stylesheet?>`` instruction, so
the instruction costs one line per file and changes nothing they see; a person who opens the
file in a browser gets a sortable, searchable table instead of raw XML. The href is relative
(``sitemap.xsl``, published in the same folder), so a set moved to another host or served
under another prefix still finds it; browsers only apply a stylesheet from the document's
own origin, so a URL of one's own should be on the site's origin too.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Final

from sitemap_out.manifest import read_manifest

__all__ = ["XSL_NAME", "check_href", "stage_xsl", "xsl_bytes"]

#: The stylesheet the writer publishes beside the files that name it.
XSL_NAME: Final = "sitemap.xsl"

#: What an href may not hold: whitespace, controls, quotes and angle brackets (a PI's
#: pseudo-attribute ends at a quote, and "?>" would end the instruction itself).
_UNSAFE: Final = re.compile(r"[\s\x00-\x1f\x7f\"'<>\\]")
_SCHEME: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


def check_href(href: str) -> str | None:
    """Why ``href`` cannot name a stylesheet, or None: it must be a relative reference or an
    http(s) URL, without characters that would break the instruction."""
    if not href:
        return "is empty"
    if len(href) > 2048:
        return "is longer than 2,048 characters"
    if _UNSAFE.search(href):
        return "holds whitespace, a quote, a backslash or an angle bracket"
    scheme = _SCHEME.match(href)
    if scheme is not None and scheme.group(1).lower() not in ("http", "https"):
        return "must be http(s) or a relative reference (such as /sitemap.xsl)"
    return None


def xsl_bytes() -> bytes:
    """The stylesheet we publish (package data beside this module)."""
    from importlib import resources  # when one is staged: not every writer's import

    return resources.files("sitemap_out").joinpath(XSL_NAME).read_bytes()


def stage_xsl(out_dir: Path, staging: Path) -> bool:
    """Write sitemap.xsl into the staging folder (fsynced), to be published with the set;
    False, writing nothing, when out_dir holds a sitemap.xsl this tool did not publish
    (not in the manifest): someone's own stylesheet of that name, which the files then
    name, and which is never overwritten."""
    if XSL_NAME not in read_manifest(out_dir) and (out_dir / XSL_NAME).exists():
        return False
    with open(staging / XSL_NAME, "wb") as fh:
        fh.write(xsl_bytes())
        fh.flush()
        os.fsync(fh.fileno())
    return True
