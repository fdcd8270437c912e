"""``changes.atom``: an Atom 1.0 feed (RFC 4287) of the URLs added or changed lately.

Search engines accept an Atom feed as a sitemap, read for its entries' ``<link href>`` and
``<updated>``; submitted beside the full sitemap it is a delta update they can poll often
and cheaply. One entry per URL (its id is the URL itself, so a URL that changes again
updates its entry rather than adding one), newest first, at most ``MAX_ENTRIES``, covering
the changes seen in the last N days: each run carries forward the entries of the feed it
published before that a run saw within the window, and adds its own.

An entry's ``updated`` is the page's lastmod (what a search engine reads as its date, so it
must be true), its ``published`` the run that saw the change (when the entry first appeared
in this feed), which is what the window goes by: a change whose Last-Modified is weeks old
stays in the feed for N days, as one seen today should. Its kind (added, changed) is an
``atom:category`` term, so that its ``title`` can be the page's own where the crawl knows it.

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
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

from sitemap_out.manifest import FEED_NAME
from sitemap_out.xml import XML_DECLARATION, escape

if TYPE_CHECKING:
    from lxml import etree

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
MAX_ENTRIES: Final = 1000
#: A feed of MAX_ENTRIES entries of 2,048-character URLs is under 10 MB; more is not ours.
MAX_FEED_BYTES: Final = 16 << 20
_A: Final = "{" + ATOM_NS + "}"


KINDS: Final = ("added", "changed")


@dataclass(frozen=True, slots=True, order=True)
class FeedEntry:
    """One URL added or changed: ``updated`` its lastmod (else the run that found it),
    ``seen`` the run that found it, ``title`` the page's title ("" when not known)."""

    updated: datetime
    loc: str
    kind: str  # one of KINDS
    seen: datetime
    title: str = ""

    def heading(self) -> str:
        """The page's title, else one a reader can scan: "Added: /path"."""
        if self.title:
            return self.title
        parts = urlsplit(self.loc)
        where = (parts.path or "/") + ("?" + parts.query if parts.query else "")
        return f"{self.kind.capitalize()}: {where}"


def stamp(when: datetime) -> str:
    """RFC 3339 date-time, UTC, in seconds (Atom's dates must have a time and a zone)."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def feed_document(feed_url: str, site: str, entries: list[FeedEntry], updated: datetime) -> str:
    """The feed: its id is its own URL (stable across runs), ``updated`` the newest of its
    entries' dates (a change seen today with an old lastmod still moves it)."""
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
        f"<entry><id>{escape(e.loc)}</id><title>{escape(e.heading())}</title>"
        f'<category term="{e.kind}"/><link rel="alternate" href="{escape(e.loc)}"/>'
        f"<published>{stamp(e.seen)}</published><updated>{stamp(e.updated)}</updated>"
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
    from lxml import etree  # here: a crawl without --feed never loads lxml

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
        if loc and when is not None:
            entries.append(_entry(entry, loc, when))
    return entries, _parse(root.findtext(_A + "updated"))


def _entry(entry: etree._Element, loc: str, when: datetime) -> FeedEntry:
    """An entry as written now (a category, a published date), or by a version before
    those, whose title said "added: URL" and whose window went by ``updated``."""
    title = entry.findtext(_A + "title") or ""
    seen = _parse(entry.findtext(_A + "published")) or when
    category = entry.find(_A + "category")
    kind = None if category is None else category.get("term")
    if kind in KINDS:
        return FeedEntry(when, loc, kind, seen, title)
    return FeedEntry(when, loc, "added" if title.startswith("added:") else "changed", seen)


def _parse(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


class FeedWindow:
    """The last feed's entries seen within the window of ``days``, to carry into the next."""

    def __init__(self, out_dir: Path, days: int, now: datetime) -> None:
        entries, updated = read_feed(out_dir / FEED_NAME)
        since = now - timedelta(days=days)
        self._carried = {e.loc: e for e in entries if e.seen >= since}
        self._updated = updated
        self._now = now
        self._titles: dict[str, str] = {}

    def titled(self, loc: str, title: str) -> None:
        """A news article's title, given after its page's entry (the news sitemap is
        written last): the title of its entry if this run added or changed the URL."""
        self._titles[loc] = title

    def drop(self, loc: str) -> None:
        """A URL removed from the sitemap leaves the feed too."""
        self._carried.pop(loc, None)

    def stage(
        self, folder: Path, base_url: str, news: Iterable[tuple[datetime, str, str, str]]
    ) -> str:
        """The feed in folder: ``news`` (when, loc, kind, title: this run's URLs added or
        changed), then the last feed's still in the window, newest first, at most
        MAX_ENTRIES, fsynced; returns its URL."""
        carried = self._carried
        entries: list[FeedEntry] = []
        titles = self._titles
        for when, loc, kind, title in news:
            carried.pop(loc, None)
            entries.append(FeedEntry(when, loc, kind, self._now, titles.get(loc, title)))
        entries += carried.values()
        entries.sort(reverse=True)
        del entries[MAX_ENTRIES:]
        updated = max((max(e.updated, e.seen) for e in entries), default=None)
        updated = updated or self._updated or self._now
        url = base_url + FEED_NAME
        text = feed_document(url, base_url, entries, updated)
        with open(folder / FEED_NAME, "wb") as fh:
            fh.write(text.encode())
            fh.flush()
            os.fsync(fh.fileno())
        return url
