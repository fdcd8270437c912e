"""The sitemap extensions at the end of the crawl: each listed page's images, videos and
hreflang alternates written with it, and the news articles of the last two days written to
sitemap-news.xml.

Images and videos are the page's own business: they are built from its listing alone. An
hreflang alternate depends on other pages: it is written only if its target is itself listed
(answered 200, indexable, not canonicalised elsewhere, not a duplicate), and a cluster is
broken where a target is not listed or does not name the page back. Both are known only when
every page is judged, so a crawl that met any alternate keeps its alternates and the listed
URLs in a temporary SQLite database (an on-disk file SQLite deletes itself), instead of a
dictionary of every page's alternates in memory: a few hundred bytes of disk per listed page,
and the memory of SQLite's page cache, on a site of millions of pages. The non-listed
decisions go there too (from the start of the crawl: an alternate can name a page decided
before any alternate was seen), so that the report says why an alternate is not listed.

Publishing then reads the spool once more (the journal's order: twins, then this, then the
writing): the listed URLs and the edges are stored, the broken clusters counted by two
queries, and the writing pass merges each page's surviving alternates from one query sorted
by page, in the spool's loc order.
"""

from __future__ import annotations

import heapq
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from crawler.core.media import (
    PageExtras,
    listed_images,
    listed_videos,
    parse_datetime,
)
from crawler.core.patterns import Patterns, path_and_query
from crawler.core.report import MAX_EXAMPLES, ExtensionTally
from crawler.errors import OutputError
from crawler.shell.listings import Listing
from sitemap_out import Alternate, Entry, EntryError
from sitemap_out.entry import News
from sitemap_out.limits import MAX_NEWS_URLS

__all__ = ["NEWS_WINDOW", "Extensions", "NewsPolicy"]

#: Google News reads articles published in the last two days.
NEWS_WINDOW = timedelta(days=2)
#: A publication time this far ahead of the clock is a clock error, not news.
_FUTURE_SLACK = timedelta(minutes=15)
_BATCH = 10_000


def _rows(cursor: sqlite3.Cursor) -> Iterator[tuple[str, str, str]]:
    """A query's rows a thousand at a time: one call into SQLite per row costs more."""
    while batch := cursor.fetchmany(1000):
        yield from batch


@dataclass(slots=True, frozen=True)
class NewsPolicy:
    """The [news] table: the publication, and which pages are articles."""

    name: str
    language: str
    articles: Patterns


class Extensions:
    """The extensions of one crawl's listings, from the first decision to the publish."""

    def __init__(self, tally: ExtensionTally, news: NewsPolicy | None, now: datetime) -> None:
        self.tally = tally
        self.news = news
        self.now = now
        self.hreflang = False  # a listing named an alternate: the clusters need the database
        self._db: sqlite3.Connection | None = None
        self._decided: list[tuple[str, str, str]] = []
        self._decided_rows = 0
        # the newest articles: (published, loc, entry), at most MAX_NEWS_URLS of them
        self._articles: list[tuple[datetime, str, Entry]] = []
        self._edges: Iterator[tuple[str, str, str]] | None = None
        self._next_edge: tuple[str, str, str] | None = None

    # -- during the crawl -------------------------------------------------------------------

    def decided(self, public: str, reason: str, detail: str) -> None:
        """A URL will not be listed, for this reason: kept in case an alternate names it."""
        self._decided.append((public, reason, detail[:300]))
        if len(self._decided) >= _BATCH:
            self._flush_decided()

    def noted(self, listing: Listing) -> None:
        """A page is waiting to be listed: does it name alternates (once one has, the
        rest need not be looked at)."""
        if self.hreflang or listing.extras is None:
            return
        extras = listing.page_extras()
        if extras is not None and extras.alternates:
            self.hreflang = True

    def _flush_decided(self) -> None:
        rows, self._decided = self._decided, []
        if rows:
            self._execute_many("INSERT INTO decided VALUES (?, ?, ?)", rows)
            self._decided_rows += len(rows)

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            try:
                # "": a private temporary database on disk, deleted when it is closed
                self._db = sqlite3.connect("", isolation_level=None)
                self._db.executescript(
                    # up to 32 MB of it in memory: a site of 100,000 pages never touches disk
                    "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
                    "PRAGMA cache_size = -32768;"
                    "CREATE TABLE decided (url TEXT, reason TEXT, detail TEXT);"
                    "CREATE TABLE listed (loc TEXT PRIMARY KEY) WITHOUT ROWID;"
                    "CREATE TABLE edge (src TEXT, lang TEXT, dst TEXT);"
                )
            except sqlite3.Error as exc:
                raise self._failed(exc) from None
        return self._db

    def _execute_many(self, sql: str, rows: Sequence[tuple[str, ...]]) -> None:
        conn = self._conn()
        try:
            conn.execute("BEGIN")
            conn.executemany(sql, rows)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._failed(exc) from None

    @staticmethod
    def _failed(exc: sqlite3.Error) -> OutputError:
        return OutputError(
            f"cannot keep the hreflang alternates for the end of the crawl (a temporary "
            f"database): {exc}; the previously published sitemap is untouched"
        )

    # -- publishing -------------------------------------------------------------------------

    def prepare(self, winners: Iterator[Listing]) -> None:
        """Every listed page, in loc order, before any is written: the listed URLs and the
        alternates, then the broken clusters for the report. `winners` may tell decided()
        of the listings that lose to a twin as it goes."""
        listed: list[tuple[str]] = []
        edges: list[tuple[str, str, str]] = []
        for listing in winners:
            listed.append((listing.loc,))
            if listing.extras is not None:
                extras = listing.page_extras()
                if extras is not None:
                    edges += ((listing.loc, lang, dst) for lang, dst in extras.alternates)
            if len(listed) >= _BATCH or len(edges) >= _BATCH:
                self._store(listed, edges)
                listed, edges = [], []
        self._store(listed, edges)
        self._flush_decided()  # the twins' too: an alternate naming one is told why
        conn = self._conn()
        try:
            # (an index entry ends with the rowid: a page's edges stay in declaration order)
            conn.execute("CREATE INDEX edge_src ON edge (src)")
            self._report(conn)
            # stored in the spool's loc order, so rowid order is page order: no sort
            self._edges = _rows(
                conn.execute(
                    "SELECT e.src, e.lang, e.dst FROM edge e"
                    " WHERE EXISTS (SELECT 1 FROM listed l WHERE l.loc = e.dst) ORDER BY e.rowid"
                )
            )
        except sqlite3.Error as exc:
            raise self._failed(exc) from None
        self._next_edge = next(self._edges, None)

    def _store(self, listed: list[tuple[str]], edges: list[tuple[str, str, str]]) -> None:
        if listed:
            self._execute_many("INSERT OR IGNORE INTO listed VALUES (?)", listed)
        if edges:
            self._execute_many("INSERT INTO edge VALUES (?, ?, ?)", edges)

    def _report(self, conn: sqlite3.Connection) -> None:
        tally = self.tally
        unlisted = "NOT EXISTS (SELECT 1 FROM listed l WHERE l.loc = e.dst)"
        (tally.alternates_dropped,) = conn.execute(
            f"SELECT count(*) FROM edge e WHERE {unlisted}"
        ).fetchone()
        examples = conn.execute(
            f"SELECT e.src, e.lang, e.dst FROM edge e WHERE {unlisted}"
            " ORDER BY e.src, e.rowid LIMIT ?",
            (MAX_EXAMPLES,),
        ).fetchall()
        reasons: dict[str, tuple[str, str]] = {}
        if examples:
            targets = sorted({dst for _, _, dst in examples})
            marks = ", ".join("?" * len(targets))
            for url, reason, detail in conn.execute(
                f"SELECT url, reason, detail FROM decided WHERE url IN ({marks})", targets
            ):
                reasons.setdefault(url, (reason, detail))
        for src, lang, dst in examples:
            reason, detail = reasons.get(dst, ("not_crawled", "no link or limit reached it"))
            tally.not_listed.append(
                {"page": src, "hreflang": lang, "href": dst, "reason": reason, "detail": detail}
            )
        one_way = (
            "FROM edge e JOIN listed l ON l.loc = e.dst WHERE e.dst != e.src AND NOT EXISTS"
            " (SELECT 1 FROM edge r WHERE r.src = e.dst AND r.dst = e.src)"
        )
        (tally.missing_return,) = conn.execute(f"SELECT count(*) {one_way}").fetchone()
        for src, lang, dst in conn.execute(
            f"SELECT e.src, e.lang, e.dst {one_way} ORDER BY e.src, e.rowid LIMIT ?",
            (MAX_EXAMPLES,),
        ):
            tally.missing_return_examples.append(
                {"page": src, "hreflang": lang, "alternate": dst}  # which does not name page
            )

    def _alternates(self, loc: str) -> tuple[Alternate, ...]:
        """The listed alternates of loc (the pages come in loc order, as the edges)."""
        found: list[Alternate] = []
        edge = self._next_edge
        edges = self._edges
        assert edges is not None
        while edge is not None and edge[0] < loc:
            edge = next(edges, None)
        while edge is not None and edge[0] == loc:
            # normalised by the crawl (crawler.core.page), hreflang checked by is_hreflang
            found.append(Alternate.normalised(edge[1], edge[2]))
            edge = next(edges, None)
        self._next_edge = edge
        if all(alt.href == loc for alt in found):
            return ()  # naming only itself is no alternate
        return tuple(found)

    def entry(self, listing: Listing, base: Entry) -> Entry:
        """base, the listing's sitemap entry as dated at publish time, with its images,
        videos and listed alternates."""
        if listing.extras is None and self._edges is None:
            return base  # most pages: no extras to unpack, no alternates to look for (#26)
        extras = listing.page_extras()
        alternates: tuple[Alternate, ...] = ()
        if self._edges is not None:
            alternates = self._alternates(listing.loc)
        if extras is None and not alternates:
            return base
        tally = self.tally
        images: tuple[str, ...] = ()
        videos: list = []
        if extras is not None:
            images = extras.images
            videos, missing = listed_videos(extras)
            for field in missing:
                tally.left_out_video(listing.loc, field)
            if extras.bad_hreflang:
                tally.bad_hreflang.update(extras.bad_hreflang)
            if extras.alternates:
                tally.pages_with_alternates += 1
            if self.news is not None and extras.published:
                self._article(listing, extras, base)
        if images:
            tally.pages_with_images += 1
            tally.images += len(images)
        tally.videos += len(videos)
        tally.alternates += len(alternates)

        def entry(images: tuple[str, ...]) -> Entry:
            return Entry.normalised(
                base.loc, base.lastmod, base.changefreq, base.priority,
                images=images, alternates=alternates, videos=tuple(videos),
            )  # fmt: skip

        try:  # the crawl's URLs are normalised: only their length can fail
            return entry(images)
        except EntryError as exc:
            if exc.field != "images" or extras is None:
                raise
        kept = listed_images(extras)
        tally.images -= len(images) - len(kept)
        return entry(kept)

    def _article(self, listing: Listing, extras: PageExtras, base: Entry) -> None:
        """A dated page: an article for the news sitemap if its path says so and it is
        recent; the newest MAX_NEWS_URLS are kept."""
        news = self.news
        assert news is not None and extras.published is not None
        if news.articles.match(path_and_query(listing.loc)) is None:
            return
        left_out = self.tally.news_left_out
        published = parse_datetime(extras.published)
        if published is None:
            left_out["publication date unreadable"] += 1
            return
        if published > self.now + _FUTURE_SLACK:
            left_out["published in the future"] += 1
            return
        if self.now - published > NEWS_WINDOW:
            left_out["older than two days"] += 1
            return
        if not extras.title:
            left_out["no title"] += 1
            return
        title = " ".join(extras.title.split())
        entry = Entry(
            listing.loc,
            lastmod=base.lastmod,  # as decided at publish, like the page's own entry
            news=News(news.name, news.language, published.replace(microsecond=0), title),
        )
        item = (published, listing.loc, entry)
        if len(self._articles) < MAX_NEWS_URLS:
            heapq.heappush(self._articles, item)
        else:
            heapq.heappushpop(self._articles, item)
            left_out["over the 1,000 newest"] += 1

    def articles(self) -> list[Entry]:
        """The news sitemap's entries, in loc order like the other files."""
        self.tally.news = len(self._articles)
        return [entry for _, _, entry in sorted(self._articles, key=lambda item: item[1])]

    def close(self) -> None:
        self._edges = None
        if self._db is not None:
            self._db.close()
            self._db = None
