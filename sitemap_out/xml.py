"""Pure serialisation of sitemap pieces to text: no I/O, no lxml, one call per entry.

The writer needs the exact byte size of every piece before it writes it (to roll over
before a limit is passed), so everything here is built from plain strings whose
``len(s.encode())`` is the size on disk. Output is UTF-8, LF line ends, no indentation,
one ``<url>`` per line; the image and xhtml namespaces are declared on ``<urlset>`` only
when the file uses them.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime
from functools import lru_cache
from typing import Final

from sitemap_out.entry import Entry, News, Video, format_lastmod

__all__ = [
    "IMAGE_NS",
    "NEWS_NS",
    "NS_ALL",
    "NS_IMAGE",
    "NS_NEWS",
    "NS_VIDEO",
    "NS_XHTML",
    "SITEMAP_NS",
    "URLSET_CLOSE",
    "VIDEO_NS",
    "XHTML_NS",
    "XML_DECLARATION",
    "escape",
    "format_priority",
    "index_close",
    "index_entry",
    "index_open",
    "stylesheet_pi",
    "text_line",
    "text_loc",
    "unescape",
    "url_element",
    "url_loc",
    "urlset_open",
    "urlset_open_for",
]

SITEMAP_NS: Final = "http://www.sitemaps.org/schemas/sitemap/0.9"
IMAGE_NS: Final = "http://www.google.com/schemas/sitemap-image/1.1"
XHTML_NS: Final = "http://www.w3.org/1999/xhtml"
VIDEO_NS: Final = "http://www.google.com/schemas/sitemap-video/1.1"
NEWS_NS: Final = "http://www.google.com/schemas/sitemap-news/0.9"
#: Bits of Entry.namespaces: which extension namespaces a <url> (and so its file) uses.
NS_IMAGE: Final = 1
NS_XHTML: Final = 2
NS_VIDEO: Final = 4
NS_NEWS: Final = 8
NS_ALL: Final = 15

XML_DECLARATION: Final = '<?xml version="1.0" encoding="UTF-8"?>\n'
URLSET_CLOSE: Final = "</urlset>\n"

_ESCAPES: Final = str.maketrans(
    {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;"}
)


def escape(text: str) -> str:
    """Entity-escape the five XML specials, safe in element text and in quoted attributes.

    Most URLs carry none of them, so five substring tests (each a memchr in C: together a
    quarter of the cost of a set-disjointness test, which hashes every character) skip the
    translate call in the common case.
    """
    if "&" in text or "<" in text or ">" in text or '"' in text or "'" in text:
        return text.translate(_ESCAPES)
    return text


#: What escape() writes, undone (`&amp;` last, so that `&amp;lt;` reads `&lt;`)
_UNESCAPES: Final = (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&apos;", "'"))


def unescape(text: str) -> str:
    """Element text as escape() wrote it, as lxml reads it: the five entities replaced."""
    if "&" in text:
        for entity, char in _UNESCAPES:
            text = text.replace(entity, char)
        text = text.replace("&amp;", "&")
    return text


def _plain(text: str) -> bool:
    return not ("&" in text or "<" in text or ">" in text or '"' in text or "'" in text)


_IMAGE_OPEN: Final = "<image:image><image:loc>"
_IMAGE_CLOSE: Final = "</image:loc></image:image>"
_IMAGE_BETWEEN: Final = _IMAGE_CLOSE + _IMAGE_OPEN


@lru_cache(maxsize=1024)
def format_priority(value: float) -> str:
    """An ``xsd:decimal`` (never exponent notation) with at most four decimals."""
    text = f"{value:.4f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def stylesheet_pi(href: str | None) -> str:
    """The ``<?xml-stylesheet?>`` line a browser follows to show the file as a page, or ""
    (href None). Search engines skip processing instructions, so it changes nothing for them."""
    if href is None:
        return ""
    return f'<?xml-stylesheet type="text/xsl" href="{escape(href)}"?>\n'


def urlset_open(
    *,
    images: bool = False,
    xhtml: bool = False,
    video: bool = False,
    news: bool = False,
    stylesheet: str | None = None,
) -> str:
    """The XML declaration, the stylesheet line when there is one, and the ``<urlset>``
    start tag, declaring only the namespaces used."""
    extra = ""
    if images:
        extra += f' xmlns:image="{IMAGE_NS}"'
    if video:
        extra += f' xmlns:video="{VIDEO_NS}"'
    if news:
        extra += f' xmlns:news="{NEWS_NS}"'
    if xhtml:
        extra += f' xmlns:xhtml="{XHTML_NS}"'
    pi = stylesheet_pi(stylesheet)
    return f'{XML_DECLARATION}{pi}<urlset xmlns="{SITEMAP_NS}"{extra}>\n'


def urlset_open_for(namespaces: int, stylesheet: str | None = None) -> str:
    """urlset_open for a set of NS_* bits (Entry.namespaces, or'ed over a file)."""
    return urlset_open(
        images=bool(namespaces & NS_IMAGE),
        xhtml=bool(namespaces & NS_XHTML),
        video=bool(namespaces & NS_VIDEO),
        news=bool(namespaces & NS_NEWS),
        stylesheet=stylesheet,
    )


def url_element(entry: Entry) -> str:
    """One ``<url>...</url>`` line. Child order follows sitemap.xsd's sequence."""
    lastmod = entry.lastmod
    if (
        lastmod is not None
        and entry.changefreq is None
        and entry.priority is None
        and not (entry.alternates or entry.images or entry.videos or entry.news)
    ):  # a crawl's every entry on most sites: one format, not a list joined (#26)
        return (
            f"<url><loc>{escape(entry.loc)}</loc>"
            f"<lastmod>{format_lastmod(lastmod)}</lastmod></url>\n"
        )
    parts = ["<url><loc>", escape(entry.loc), "</loc>"]
    if entry.lastmod is not None:
        parts += ("<lastmod>", format_lastmod(entry.lastmod), "</lastmod>")
    if entry.changefreq is not None:
        parts += ("<changefreq>", entry.changefreq, "</changefreq>")
    if entry.priority is not None:
        parts += ("<priority>", format_priority(entry.priority), "</priority>")
    for alt in entry.alternates:
        parts.append(
            f'<xhtml:link rel="alternate" hreflang="{escape(alt.hreflang)}"'
            f' href="{escape(alt.href)}"/>'
        )
    images = entry.images
    if images:
        # one join for all of a page's images (a dozen on many pages) when none needs an
        # escape, which the concatenation of the URLs tells in one test
        if _plain("".join(images)):
            parts += (_IMAGE_OPEN, _IMAGE_BETWEEN.join(images), _IMAGE_CLOSE)
        else:
            for image in images:
                parts += (_IMAGE_OPEN, escape(image), _IMAGE_CLOSE)
    if entry.videos:
        parts += map(video_element, entry.videos)
    if entry.news is not None:
        parts.append(news_element(entry.news))
    parts.append("</url>\n")
    return "".join(parts)


def video_element(video: Video) -> str:
    """One ``<video:video>``, children in sitemap-video.xsd's sequence."""
    parts = [
        "<video:video><video:thumbnail_loc>",
        escape(video.thumbnail_loc),
        "</video:thumbnail_loc><video:title>",
        escape(video.title),
        "</video:title><video:description>",
        escape(video.description),
        "</video:description>",
    ]
    if video.content_loc is not None:
        parts += ("<video:content_loc>", escape(video.content_loc), "</video:content_loc>")
    if video.player_loc is not None:
        parts += ("<video:player_loc>", escape(video.player_loc), "</video:player_loc>")
    if video.duration is not None:
        parts += ("<video:duration>", str(video.duration), "</video:duration>")
    if video.publication_date is not None:
        stamp = format_lastmod(video.publication_date)
        parts += ("<video:publication_date>", stamp, "</video:publication_date>")
    parts.append("</video:video>")
    return "".join(parts)


def news_element(news: News) -> str:
    """One ``<news:news>``, children in sitemap-news.xsd's sequence."""
    return (
        f"<news:news><news:publication><news:name>{escape(news.name)}</news:name>"
        f"<news:language>{news.language}</news:language></news:publication>"
        f"<news:publication_date>{format_lastmod(news.publication_date)}"
        f"</news:publication_date><news:title>{escape(news.title)}</news:title></news:news>"
    )


def text_line(entry: Entry) -> str:
    """One line of a text sitemap: the loc itself (already free of whitespace by validation)."""
    return entry.loc + "\n"


def url_loc(data: bytes) -> str:
    """The loc of a ``<url>`` as url_element wrote it (its UTF-8 bytes)."""
    return unescape(data[10 : data.index(b"</loc>", 10)].decode())


def text_loc(data: bytes) -> str:
    """The loc of a line as text_line wrote it (its UTF-8 bytes)."""
    return data[:-1].decode()


def index_open(stylesheet: str | None = None) -> str:
    return f'{XML_DECLARATION}{stylesheet_pi(stylesheet)}<sitemapindex xmlns="{SITEMAP_NS}">\n'


def index_entry(loc: str, lastmod: datetime | date | None) -> str:
    """One ``<sitemap>`` line of an index."""
    if lastmod is None:
        return f"<sitemap><loc>{escape(loc)}</loc></sitemap>\n"
    stamp = format_lastmod(lastmod)
    return f"<sitemap><loc>{escape(loc)}</loc><lastmod>{stamp}</lastmod></sitemap>\n"


def index_close() -> str:
    return "</sitemapindex>\n"


def index_document(
    items: Iterable[tuple[str, datetime | date | None]], stylesheet: str | None = None
) -> str:
    """A whole index as one string; the writer streams the same pieces instead."""
    body = "".join(index_entry(loc, lm) for loc, lm in items)
    return index_open(stylesheet) + body + index_close()
