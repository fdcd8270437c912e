"""``changes.atom``: an Atom 1.0 feed (RFC 4287) of the URLs added or changed lately.

Search engines accept an Atom feed as a sitemap, read for its entries' ``<link href>`` and
``<updated>``; submitted beside the full sitemap it is a delta update they can poll often
and cheaply. One entry per URL (its id is the URL itself, so a URL that changes again
updates its entry rather than adding one), newest first, at most ``MAX_ENTRIES``, covering
the last N days: each run carries forward the entries of the feed it published before that
are still in the window, and adds its own.

Serialisation, :func:`read_feed`, which reads a previously published feed back with lxml
as hostile input is read elsewhere (no DTD, no entity expansion, bounded size), and
:class:`FeedWindow`, which stages the next feed from the last one and a run's changes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from lxml import etree

from sitemap_out.xml import XML_DECLARATION, escape

__all__ = [
    "ATOM_NS",
    "FEED_NAME",
    "MAX_ENTRIES",
    "FeedEntry",
    "FeedWindow",
    "feed_document",
    "read_feed",
]

ATOM_NS: Final = "http://www.w3.org/2005/Atom"
FEED_NAME: Final = "changes.atom"
MAX_ENTRIES: Final = 1000
#: A feed of MAX_ENTRIES entries of 2,048-character URLs is under 10 MB; more is not ours.
MAX_FEED_BYTES: Final = 16 << 20
_A: Final = "{" + ATOM_NS + "}"


@dataclass(frozen=True, slots=True, order=True)
class FeedEntry:
    """One URL added or changed, and when (its lastmod, else the run that found it)."""

    updated: datetime
    loc: str
    kind: str  # "added" or "changed"


def stamp(when: datetime) -> str:
    """RFC 3339 date-time, UTC, in seconds (Atom's dates must have a time and a zone)."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def feed_document(feed_url: str, site: str, entries: list[FeedEntry], updated: datetime) -> str:
    """The feed: its id is its own URL (stable across runs), ``updated`` its newest entry."""
    head = (
        f'{XML_DECLARATION}<feed xmlns="{ATOM_NS}">\n'
        f"<id>{escape(feed_url)}</id>\n"
        f"<title>{escape('URLs added or changed on ' + site)}</title>\n"
        f'<link rel="self" type="application/atom+xml" href="{escape(feed_url)}"/>\n'
        f'<link rel="alternate" href="{escape(site)}"/>\n'
        f"<updated>{stamp(updated)}</updated>\n"
        f"<author><name>{escape(site)}</name></author>\n"
        f"<generator>sitemap-crawler</generator>\n"
    )
    body = "".join(
        f"<entry><id>{escape(e.loc)}</id><title>{e.kind}: {escape(e.loc)}</title>"
        f'<link rel="alternate" href="{escape(e.loc)}"/><updated>{stamp(e.updated)}</updated>'
        f"</entry>\n"
        for e in entries
    )
    return head + body + "</feed>\n"


def read_feed(path: Path) -> tuple[list[FeedEntry], datetime | None]:
    """The entries of a feed we published, and its ``updated``; ([], None) when it is
    missing, too large or not such a feed (it is then started afresh)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_FEED_BYTES + 1)
    except OSError:
        return [], None
    if len(data) > MAX_FEED_BYTES:
        return [], None
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False
    )
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError:
        return [], None
    if root.tag != _A + "feed" or root.getroottree().docinfo.doctype:
        return [], None
    entries = []
    for entry in root.iter(_A + "entry"):
        loc = entry.findtext(_A + "id")
        when = _parse(entry.findtext(_A + "updated"))
        title = entry.findtext(_A + "title") or ""
        kind = "added" if title.startswith("added:") else "changed"
        if loc and when is not None:
            entries.append(FeedEntry(when, loc, kind))
    return entries, _parse(root.findtext(_A + "updated"))


def _parse(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


class FeedWindow:
    """The last feed's entries still in the window of ``days``, to carry into the next."""

    def __init__(self, out_dir: Path, days: int, now: datetime) -> None:
        entries, updated = read_feed(out_dir / FEED_NAME)
        since = now - timedelta(days=days)
        self._carried = {e.loc: e for e in entries if e.updated >= since}
        self._updated = updated
        self._now = now

    def drop(self, loc: str) -> None:
        """A URL removed from the sitemap leaves the feed too."""
        self._carried.pop(loc, None)

    def stage(self, folder: Path, base_url: str, news: Iterable[tuple[datetime, str, str]]) -> str:
        """The feed in folder: ``news`` (when, loc, kind: this run's URLs added or
        changed), then the last feed's still in the window, newest first, at most
        MAX_ENTRIES, fsynced; returns its URL."""
        carried = self._carried
        entries: list[FeedEntry] = []
        for when, loc, kind in news:
            carried.pop(loc, None)
            entries.append(FeedEntry(when, loc, kind))
        entries += carried.values()
        entries.sort(reverse=True)
        del entries[MAX_ENTRIES:]
        updated = entries[0].updated if entries else (self._updated or self._now)
        url = base_url + FEED_NAME
        text = feed_document(url, base_url, entries, updated)
        with open(folder / FEED_NAME, "wb") as fh:
            fh.write(text.encode())
            fh.flush()
            os.fsync(fh.fileno())
        return url
