"""Turn a fetched HTML body into the few facts the crawler needs: links, hreflang alternates,
canonical, robots meta directives, and the encoding the bytes were read in.

Decoding follows the WHATWG encoding sniffing order the way browsers and search engines apply
it, so that a ``<a href="/café">`` in a Latin-1 page is the same URL Googlebot sees. Everything
here is pure and must stay cheap: it runs once per fetched page (issue #6 budgets well under a
millisecond), so the page is parsed exactly once and only the handful of element types we need
is visited. Pure in what it answers: its only memo (the prescan's remembered heads) gives
the answers the prescan would, and is bounded.
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import re
import zlib
from array import array
from dataclasses import dataclass, field, replace
from urllib.parse import urljoin, urlsplit

from selectolax.lexbor import LexborHTMLParser, LexborNode

from crawler import PRODUCT_TOKEN
from crawler.core.directives import NO_DIRECTIVES, Directives, ascii_lower, meta_directives
from crawler.core.encodings import BOMS, UTF8_QUERIES, decode, encode_query, encoding_for_label
from crawler.core.lastmod import MAX_BLOCKS
from crawler.core.media import (
    RawVideo,
    is_pixel,
    jsonld_facts,
    largest_candidate,
    player_video,
)
from crawler.core.mime import parse_content_type
from crawler.core.stubs import STUB_MAX_BYTES, STUB_MAX_TEXT, refresh_target, script_target
from crawler.core.urls import resolve

__all__ = [
    "Link",
    "PageData",
    "PageDigest",
    "content_blocks",
    "decode_html",
    "digest_page",
    "extract_page",
    "sniff_encoding",
]

# --- <meta> prescan (HTML Standard 13.2.3.2, "prescan a byte stream") ---------------------------

_PRESCAN_LIMIT = 1024
_WS = b"\t\n\f\r "
# Attribute as the prescan's "get an attribute" reads it: a name up to whitespace, "/", ">"
# or "=", then optionally "=" and a quoted or bare value.
_ATTR_RE = re.compile(
    rb"""[\t\n\f\r /]*
         ([^\t\n\f\r />][^\t\n\f\r /=>]*)
         (?:[\t\n\f\r ]*=[\t\n\f\r ]*
            (?:"([^"]*)"|'([^']*)'|([^\t\n\f\r >"']*)))?""",
    re.VERBOSE,
)
_TAG_RE = re.compile(rb"<(/?)([A-Za-z][^\t\n\f\r />]*)|<!--|<[!/?]")
_CHARSET_IN_CONTENT_RE = re.compile(
    rb"""charset[\t\n\f\r ]*=[\t\n\f\r ]*(?:"([^"]*)"|'([^']*)'|([^\t\n\f\r ;"']+))""",
    re.IGNORECASE,
)


# The head most pages start with (a doctype, <html> with quoted attributes, <head>, then
# <meta charset>), read in one match: what the prescan's loop below finds in it, for a
# seventh of its cost (tests/test_extract.py holds the two to the same answers)
_S = rb"[\t\n\f\r ]*+"  # possessive: a long run of whitespace is never split three ways
_QUICK_META = re.compile(
    rb"(?:<!doctype html>)?" + _S
    + rb'(?:<html(?:[\t\n\f\r ]+[a-z][a-z-]*="[^"<>]*")*' + _S + rb">)?" + _S
    + rb"(?:<head>)?" + _S
    + rb'<meta[\t\n\f\r ]+charset=(?:"([^"<>]+)"' + _S + rb"/?|([a-z0-9_.:-]+))>",
    re.IGNORECASE,
)  # fmt: skip


# Heads the quick match read to its end (the ``>`` of the <meta charset>), by the encoding
# they declare, the latest first: a site's pages start with the same few heads, and a page
# that starts with one is answered by one startswith() for the match's 7,000 instructions.
# Exact: neither the match nor the prescan's loop reads past that ``>`` before answering
# (tests/test_extract.py holds a remembered head with any tail to the loop's answer).
# A tuple, replaced whole: read and remembered from any thread without a lock.
_QUICK_HEADS: tuple[tuple[str, tuple[bytes, ...]], ...] = ()
_QUICK_HEADS_KEPT = 8  # a name's heads: a site's templates; a miss costs one more match


def _prescan(head: bytes) -> str | None:
    """Encoding declared by a ``<meta>`` in ``head`` (the first 1024 bytes), browser-style:
    comments and other tags' attributes are skipped, so a commented-out or quoted
    ``charset=`` cannot mislead us."""
    found = _remembered(head)
    if found is not None:
        return found
    quick = _QUICK_META.match(head)
    if quick is not None:
        label = quick.group(1)
        found = _meta_charset({b"charset": label if label is not None else quick.group(2)})
        if found is not None:
            _remember_head(found, head[: quick.end()])  # within head: _PRESCAN_LIMIT bytes
            return found
    return _prescan_tags(head)


def _remembered(data: bytes) -> str | None:
    """The encoding of a remembered head `data` starts with. A head is at most
    _PRESCAN_LIMIT bytes: a body is asked as it is, before its head is copied."""
    for name, heads in _QUICK_HEADS:
        if data.startswith(heads):
            return name
    return None


def _remember_head(name: str, head: bytes) -> None:
    """Keep a head the quick match read, for the next pages of its site (a memo: the
    answers are the same without it)."""
    global _QUICK_HEADS
    kept = dict(_QUICK_HEADS)
    kept[name] = (head, *kept.get(name, ()))[:_QUICK_HEADS_KEPT]
    _QUICK_HEADS = tuple(kept.items())


def _prescan_tags(head: bytes) -> str | None:
    """The prescan proper: tag by tag, as the HTML Standard says."""
    pos, end = 0, len(head)
    while pos < end:
        tag = _TAG_RE.search(head, pos)
        if tag is None:
            return None
        token = tag.group(0)
        if token == b"<!--":
            close = head.find(b"-->", tag.start() + 2)
            if close < 0:
                return None
            pos = close + 3
            continue
        if tag.group(2) is None:  # <!DOCTYPE, <?xml, </ followed by a non-letter
            close = head.find(b">", tag.end())
            if close < 0:
                return None
            pos = close + 1
            continue
        pos = tag.end()
        is_meta = not tag.group(1) and tag.group(2).lower() == b"meta"
        attrs: dict[bytes, bytes] = {}
        while True:
            attr = _ATTR_RE.match(head, pos)
            if attr is None:
                break
            pos = attr.end()
            name = attr.group(1).lower()
            value = attr.group(2)
            if value is None:
                value = attr.group(3)
            if value is None:
                value = attr.group(4) or b""
            attrs.setdefault(name, value)
        if is_meta:
            found = _meta_charset(attrs)
            if found is not None:
                return found
        close = head.find(b">", pos)
        if close < 0:
            return None
        pos = close + 1
    return None


def _meta_charset(attrs: dict[bytes, bytes]) -> str | None:
    charset = attrs.get(b"charset")
    if charset is not None:
        name = encoding_for_label(charset.decode("latin-1"))
    elif b"content" in attrs and attrs.get(b"http-equiv", b"").lower() == b"content-type":
        match = _CHARSET_IN_CONTENT_RE.search(attrs[b"content"])
        if match is None:
            return None
        label = next(g for g in match.groups() if g is not None)
        name = encoding_for_label(label.decode("latin-1"))
    else:
        return None
    if name in ("utf-16be", "utf-16le"):
        return "utf-8"  # a document that can declare itself in ASCII is not UTF-16
    if name == "x-user-defined":
        return "windows-1252"
    return name


# --- Decoding ----------------------------------------------------------------------------------

_BOM_BYTES = tuple(bom for bom, _ in BOMS)


def sniff_encoding(body: bytes, content_type: str | None) -> str:
    """WHATWG name of the encoding ``body`` should be read in.

    Order: byte-order mark, Content-Type charset, ``<meta>`` in the first 1024 bytes, UTF-8.
    The BOM comes first because that is what every browser does: a page saved with a UTF-8
    BOM on a server that claims ISO-8859-1 is read as UTF-8. Unknown labels fall through.
    """
    if body.startswith(_BOM_BYTES):  # one test for the three (most pages have none)
        for bom, name in BOMS:
            if body.startswith(bom):
                return name
    _, charset = parse_content_type(content_type)
    label = encoding_for_label(charset)
    if label is not None:
        return label
    return _remembered(body) or _prescan(body[:_PRESCAN_LIMIT]) or "utf-8"


def decode_html(body: bytes, content_type: str | None) -> tuple[str, str]:
    """Decode an HTML body the way a browser would; never raises.

    Returns ``(text, encoding)`` with the WHATWG encoding name, e.g. ``"windows-1252"`` for a
    page served as ``charset=iso-8859-1``. Undecodable bytes become U+FFFD.
    """
    name = sniff_encoding(body, content_type)
    return decode(body, name), name


# --- Extraction --------------------------------------------------------------------------------


@dataclass(slots=True)
class Link:
    """An ``<a>``/``<area>`` target as written (whitespace-stripped, unresolved)."""

    href: str
    nofollow: bool


@dataclass(slots=True)
class PageData:
    """What one HTML page contributes to the crawl. Hrefs are raw: resolve them against
    ``base`` (the caller normalises; for non-UTF-8 pages the query is percent-encoded in
    ``encoding`` first, per the URL Standard: :func:`encode_query`, as digest_page does)."""

    base: str
    hrefs: list[str] = field(default_factory=list)  # every <a>/<area> href, document order
    nofollow_at: list[int] = field(default_factory=list)  # where in hrefs: rel=nofollow ones
    alternates: list[tuple[str, str]] = field(default_factory=list)
    canonical: str | None = None
    directives: Directives = NO_DIRECTIVES
    encoding: str = "utf-8"
    images: list[str] = field(default_factory=list)  # raw; no data: URIs nor 1x1 pixels
    videos: list[RawVideo] = field(default_factory=list)  # URLs raw
    published: str | None = None  # article:published_time, else JSON-LD datePublished
    title: str | None = None  # og:title, JSON-LD headline or <title>: news and videos only
    # the page's <title> (og:title when it has none) and meta description: llms.txt only
    about: tuple[str | None, str | None] | None = None
    blocks: bytes = b""  # the main content's text blocks, hashed: see content_blocks
    # a redirect stub's (crawler.core.stubs) raw target and what sends the browser there
    moved: tuple[str, str] | None = None

    @property
    def links(self) -> list[Link]:
        """The hrefs with their rel=nofollow flags (built on demand: the crawl reads the
        two lists, one object less per link)."""
        nofollow = set(self.nofollow_at)
        return [Link(href, i in nofollow) for i, href in enumerate(self.hrefs)]


# The URL parser strips leading/trailing C0 controls and spaces; so do we, so that an href
# that is only whitespace counts as empty.
_URL_STRIP = "".join(map(chr, range(0x21)))
_HTML_SPACE_RE = re.compile(r"[\t\n\f\r ]+")


def _rel_tokens(rel: str | None) -> list[str]:
    """``rel`` is a set of space-separated, ASCII case-insensitive tokens."""
    if not rel:
        return []
    if rel.isascii():
        return rel.lower().split()
    return _HTML_SPACE_RE.split(ascii_lower(rel))


def _effective_base(page_url: str, href: str) -> str:
    """HTML "frozen base URL": the ``<base href>`` resolved against the page URL, unless it
    fails to parse or is a data:/javascript: URL, which browsers refuse as a base."""
    try:
        base = urljoin(page_url, href.strip(_URL_STRIP))
        scheme = urlsplit(base).scheme.lower()
    except ValueError:
        return page_url
    if scheme in ("data", "javascript"):
        return page_url
    return base


# lexbor's ids of the two tags _head_links looks for (fixed in lexbor; read, not written out)
_HEAD = LexborHTMLParser("<link><noscript>").head
assert _HEAD is not None  # a parse always makes a <head>
_HEAD_IDS = {node.tag: node.tag_id for node in _HEAD.iter()}
_LINK_ID, _NOSCRIPT_ID = _HEAD_IDS["link"], _HEAD_IDS["noscript"]


def _head_links(parser: LexborHTMLParser) -> list[LexborNode]:
    """The <link>s in <head> as the HTML parser built it, in document order: one written
    after something that ends the head (text, an <img>) lands in <body>, where Google
    ignores it. The tree builder puts a <link> in head only as a child of <head> or of a
    <noscript> there (and makes one <head> a document), so its children and its noscripts'
    settle it: a handful of nodes, where a tags() walk visits the whole tree."""
    head = parser.head
    if head is None:
        return []
    found: list[LexborNode] = []
    for node in head.iter():
        tag_id = node.tag_id
        if tag_id == _LINK_ID:
            found.append(node)
        elif tag_id == _NOSCRIPT_ID:
            found += [child for child in node.iter() if child.tag_id == _LINK_ID]
    return found


def extract_page(
    body: bytes,
    content_type: str | None,
    page_url: str,
    agent: str = PRODUCT_TOKEN,
    images: bool = True,
    content: bool = False,
    engines: tuple[str, ...] = (),
    about: bool = False,
) -> PageData:
    """Parse ``body`` once and collect links, alternates, canonical and robots meta directives.

    Never raises on any bytes: a body that is not HTML simply has no links. Links inside
    comments, ``<script>`` and ``<template>`` are not links (the parser never makes them
    elements of the document); ``<noscript>`` content is parsed as markup, as crawlers do.
    Canonical and hreflang ``<link>``s count only inside ``<head>``, as search engines read
    them. `content`: also the content blocks (content_blocks), which only a crawl keeping a
    history uses: they cost about a third of the parse. `engines`: the search engines whose
    named robots meta tags are read too (meta_directives). `about`: also the page's title
    and description (PageData.about), which only llms.txt uses.
    """
    encoding = sniff_encoding(body, content_type)
    if encoding == "utf-8":
        # lexbor reads bytes as UTF-8 with replacement, exactly our decoder: skip a Python
        # decode and re-encode of the whole page.
        source: bytes | str = body[3:] if body.startswith(codecs.BOM_UTF8) else body
    else:
        source = decode(body, encoding)
    parser = LexborHTMLParser(source)

    # tags() walks the tree in C and is measurably faster than an equivalent CSS query;
    # attributes (one dict per node) is cheaper than several attrs.get() calls.
    # no object per link: the hrefs in one list, and where the (few) rel=nofollow ones are
    hrefs: list[str] = []
    nofollow_at: list[int] = []
    anchors = parser.tags("a")
    if parser.tags("area"):
        anchors = parser.css("a, area")  # keep document order across the two kinds
    # per link, the fewest operations: a subscript (a page's <a>s mostly have an href), and
    # the strip (its 33 characters cost 700 instructions a call) only for a page where some
    # href holds a C0 control or a space, found for all at once in C (_needs_strip)
    for node in anchors:
        attrs = node.attributes
        try:
            href = attrs["href"]
        except KeyError:
            href = None
        if href is None:
            href = attrs.get("xlink:href")  # SVG 1.1 <a>
            if href is None:
                continue
        if "rel" in attrs:
            rel = attrs["rel"]
            if rel is not None and "nofollow" in _rel_tokens(rel):
                nofollow_at.append(len(hrefs))
        hrefs.append(href)
    if _needs_strip(hrefs):
        hrefs, nofollow_at = _stripped(hrefs, nofollow_at)

    base = page_url
    for node in parser.tags("base"):
        href = node.attributes.get("href")
        if href is not None:
            base = _effective_base(page_url, href)
            break

    alternates: list[tuple[str, str]] = []
    canonical: str | None = None
    for node in _head_links(parser):  # search engines read them in <head> only
        attrs = node.attributes
        rel = attrs.get("rel")
        href = attrs.get("href")
        if not rel or not href:
            continue
        href = href.strip(_URL_STRIP)
        if not href:
            continue
        tokens = _rel_tokens(rel)
        if "alternate" in tokens:
            hreflang = (attrs.get("hreflang") or "").strip("\t\n\f\r ")
            if hreflang:
                alternates.append((hreflang, href))
        if canonical is None and "canonical" in tokens:
            canonical = href

    metas: list[tuple[str | None, str | None]] = []
    props: dict[str, str] = {}  # og: and article: properties, the first of each
    moved: tuple[str, str] | None = None
    for node in parser.tags("meta"):
        attrs = node.attributes
        if "name" in attrs:
            metas.append((attrs.get("name"), attrs.get("content")))
        elif "property" in attrs:
            prop, value = attrs.get("property"), attrs.get("content")
            if prop and value:
                props.setdefault(ascii_lower(prop), value.strip())
        elif moved is None and ascii_lower(attrs.get("http-equiv") or "").strip() == "refresh":
            refresh = refresh_target(attrs.get("content"))
            if refresh is not None:
                moved = refresh[1], f"meta refresh ({refresh[0]} s)"
    directives = meta_directives(metas, agent, engines) if metas else NO_DIRECTIVES
    if moved is None and len(body) <= STUB_MAX_BYTES:
        moved = _script_stub(parser)

    data = PageData(
        base, hrefs, nofollow_at, alternates, canonical, directives, encoding, moved=moved
    )
    if images:
        data.images = _images(parser, props)
    _media(parser, props, metas, data)
    if about:
        data.about = _title(parser) or props.get("og:title"), _description(metas)
    if content:
        data.blocks = content_blocks(parser)  # last: it strips the template
    return data


# every byte the same but those of _URL_STRIP (C0 controls and the space), made another
_STRIPPED_MARKED = bytes(byte if byte > 0x20 else 0x7F for byte in range(256))


def _needs_strip(hrefs: list[str]) -> bool:
    """Whether any href is empty or holds a character the URL parser strips from its ends
    (anywhere in it: one C pass over them all, where a test of each href's two ends costs
    more than the strip it saves)."""
    if not all(hrefs):
        return True
    joined = "".join(hrefs).encode("utf-8", "surrogatepass")
    return joined.translate(_STRIPPED_MARKED) != joined


def _stripped(raw: list[str], nofollow_at: list[int]) -> tuple[list[str], list[int]]:
    """The hrefs stripped of C0 controls and spaces, the empty ones dropped, and where the
    nofollow ones are among those kept."""
    nofollow = set(nofollow_at)
    hrefs: list[str] = []
    kept_nofollow: list[int] = []
    for i, href in enumerate(raw):
        href = href.strip(_URL_STRIP)
        if href:
            if i in nofollow:
                kept_nofollow.append(len(hrefs))
            hrefs.append(href)
    return hrefs, kept_nofollow


def _script_stub(parser: LexborHTMLParser) -> tuple[str, str] | None:
    """A small page's one inline script, when it only sends the browser on and the page
    has no more than a notice besides (crawler.core.stubs.script_target)."""
    scripts = parser.tags("script")
    if len(scripts) != 1 or "src" in scripts[0].attributes:
        return None
    kind = ascii_lower(scripts[0].attributes.get("type") or "").strip()
    if kind and "javascript" not in kind and kind != "module":
        return None
    code = scripts[0].text(deep=True)
    found = script_target(code)
    if found is None or parser.root is None:
        return None
    text = _HTML_SPACE_RE.sub("", parser.root.text(deep=True))
    if len(text) - len(_HTML_SPACE_RE.sub("", code)) > STUB_MAX_TEXT:
        return None
    return found[0], f"script {found[1]}"


def _images(parser: LexborHTMLParser, props: dict[str, str]) -> list[str]:
    """The images a page shows, raw, in document order: img src, the largest candidate of
    img srcset and of picture > source srcset, then og:image. No data: URIs, and no image
    declared 1x1 (a tracking pixel)."""
    found: list[str] = []
    for node in parser.tags("img"):
        attrs = node.attributes
        width = attrs.get("width")
        if width is not None and is_pixel(width, attrs.get("height")):
            continue
        src = attrs.get("src")
        if src:
            found.append(src)
        srcset = attrs.get("srcset")
        if srcset:
            best = largest_candidate(srcset)
            if best:
                found.append(best)
    if parser.tags("picture"):  # a walk that finds none costs less than one of the sources
        for node in parser.tags("source"):
            parent = node.parent
            if parent is None or parent.tag != "picture":
                continue
            srcset = node.attributes.get("srcset")
            if srcset:
                best = largest_candidate(srcset)
                if best:
                    found.append(best)
    if props:
        for key in ("og:image", "og:image:url", "og:image:secure_url"):
            if key in props:
                found.append(props[key])
    if not found:
        return found
    return [
        url
        for url in (raw.strip(_URL_STRIP) for raw in found)
        if url and not url[:5].lower().startswith("data:")
    ]


def _media(
    parser: LexborHTMLParser,
    props: dict[str, str],
    metas: list[tuple[str | None, str | None]],
    data: PageData,
) -> None:
    """Videos (<video>, players from known hosts, JSON-LD VideoObject) and the article's
    publication time and headline, into data."""
    videos: list[RawVideo] = []
    published = props.get("article:published_time") or None
    headline: str | None = None
    # a tags() walk of the tree, in C, costs a few us: cheaper than a byte search of the page
    for node in parser.tags("script"):
        kind = node.attributes.get("type")
        if not kind or ascii_lower(kind.strip()) != "application/ld+json":
            continue
        found, date, title = jsonld_facts(node.text(deep=True))
        videos += found
        if published is None and date:
            published = date
        headline = headline or title
    for node in parser.tags("video"):
        attrs = node.attributes
        src = (attrs.get("src") or "").strip(_URL_STRIP)
        if not src:
            for child in node.iter():
                if child.tag == "source":
                    src = (child.attributes.get("src") or "").strip(_URL_STRIP)
                    if src:
                        break
        if not src:
            continue
        poster = (attrs.get("poster") or "").strip(_URL_STRIP) or None
        title = attrs.get("title") or attrs.get("aria-label")
        videos.append(RawVideo(poster, title, content=src))
    for node in parser.tags("iframe"):
        attrs = node.attributes
        src = (attrs.get("src") or "").strip(_URL_STRIP)
        if src and ("youtu" in src or "vimeo" in src):
            try:
                absolute = urljoin(data.base, src)
            except ValueError:
                continue
            video = player_video(absolute, attrs.get("title"))
            if video is not None:
                videos.append(video)
    data.videos = videos
    data.published = published
    if videos or published:
        # the page's own title and description stand in for a video's that it does not give
        title = headline or props.get("og:title")
        data.title = (title if title is not None else _title(parser)) or None
        if videos:
            description = props.get("og:description")
            if description is None:
                description = _description(metas)
            data.videos = [_fill(video, data.title, description) for video in videos]


def _title(parser: LexborHTMLParser) -> str | None:
    """The page's title as document.title has it: the first <title> in the HTML namespace,
    stripped, not an inline SVG icon's or a formula's <title> on a page without one of its
    own. A tags() walk: a selector costs its parser and compile on every page (36,000
    instructions against 10,000)."""
    for node in parser.tags("title"):
        if not _foreign(node):
            return node.text(deep=True).strip()
    return None


def _foreign(node: LexborNode) -> bool:
    """Whether an element is SVG's or MathML's: inside <svg> or <math>, unless an HTML
    integration point (<foreignObject>) is nearer. A page's own title, in <head>, settles
    it at its first step."""
    parent = node.parent
    while parent is not None:
        tag = parent.tag
        if tag in ("svg", "math"):
            return True
        if tag in ("head", "body", "foreignObject"):
            return False
        parent = parent.parent
    return False


def _description(metas: list[tuple[str | None, str | None]]) -> str | None:
    """The page's meta description, the first one."""
    return next((c for n, c in metas if n and c and ascii_lower(n) == "description"), None)


def _fill(video: RawVideo, title: str | None, description: str | None) -> RawVideo:
    return replace(
        video,
        title=(video.title or "").strip() or title,
        description=(video.description or "").strip() or (description or "").strip() or None,
    )


#: Elements that are template, not content, when a page has no <main>, [role=main] or
#: <article>: what search engines ask to ignore ("minor changes of templates affecting a
#: bunch of pages are no reason to submit all pages as modified").
_TEMPLATE_TAGS = ["nav", "header", "footer", "aside", "script", "style", "noscript", "template"]
_NOT_TEXT_TAGS = ["script", "style", "noscript", "template"]
_BLOCK_SPLIT = "\x00"
_BLOCK_SEP = b"\x00"
_WHITESPACE = b" \t\n\r\x0c"  # ASCII whitespace, as HTML defines it


def content_blocks(parser: LexborHTMLParser) -> bytes:
    """The page's main content as text blocks (each text run, without its whitespace), each
    hashed to 32 bits (crc32) and packed in document order: the material of the content
    fingerprint behind honest lastmods (crawler.core.lastmod). Kept per block, not as one
    hash, so that blocks repeating on most pages of the site can be left out later, when
    the crawl knows which they are. Mutates the tree (the template is stripped): call it
    last, on the one parse of the page."""
    root = _main_content(parser)
    if root is not None:
        # a node's strip_tags compiles a CSS selector per tag; a tags() walk of the whole
        # tree (in C, no selector) first skips the tags the page has none of (most)
        for tag in _NOT_TEXT_TAGS:
            if parser.tags(tag):
                root.strip_tags([tag], recursive=True)
    else:
        root = parser.body
        if root is None:
            return b""
        parser.strip_tags(_TEMPLATE_TAGS, recursive=True)
    # whitespace removed (not collapsed) in one C pass over the whole text: re-indented
    # markup or a reflowed paragraph is no change; the separator is kept, then each block
    # hashed, all through map: no Python loop per block (this runs on every page)
    text = root.text(deep=True, separator=_BLOCK_SPLIT).encode().translate(None, _WHITESPACE)
    hashes = array("I", map(zlib.crc32, filter(None, text.split(_BLOCK_SEP))))
    return hashes[:MAX_BLOCKS].tobytes()


def _main_content(parser: LexborHTMLParser) -> LexborNode | None:
    """The first <main>, else the first [role=main], else the first <article>: the page's
    own content, as search engines take it. tags() walks without compiling a selector,
    so only a page without <main> pays for the attribute selector."""
    mains = parser.tags("main")
    if mains:
        return mains[0]
    root = parser.css_first("[role=main]")
    if root is None:
        articles = parser.tags("article")
        root = articles[0] if articles else None
    return root


@dataclass(slots=True)
class PageDigest:
    """What the crawl keeps of a parsed HTML page, before its links are resolved
    (crawler.core.page.analyse does that)."""

    base: str  # normalised
    hrefs: list[str]  # the hrefs to follow, raw, in document order; hreflang alternates last
    canonical: str | None  # raw, resolved against base by the caller
    directives: Directives
    body_key: int  # the first 64 bits of the body's sha256, signed (an SQLite integer)
    images: list[str] = field(default_factory=list)  # raw, like hrefs
    alternates: list[tuple[str, str]] = field(default_factory=list)  # (hreflang, raw href)
    videos: list[RawVideo] = field(default_factory=list)  # URLs raw
    published: str | None = None
    title: str | None = None
    about: tuple[str | None, str | None] | None = None  # title and description (PageData)
    blocks: bytes = b""  # the main content's text blocks, hashed (content_blocks)
    moved: tuple[str, str] | None = None  # a redirect stub's raw target, and how (PageData)
    nofollow: list[str] = field(default_factory=list)  # rel=nofollow hrefs, raw, not followed


def digest_page(
    body: bytes,
    content_type: str | None,
    page_url: str,
    agent: str = PRODUCT_TOKEN,
    follow_nofollow: bool = False,
    images: bool = True,
    content: bool = False,
    engines: tuple[str, ...] = (),
    about: bool = False,
) -> PageDigest:
    """Parse an HTML page into its digest. Never raises, like :func:`extract_page`."""
    page = extract_page(body, content_type, page_url, agent, images, content, engines, about)
    base, canonical, encoding, moved = page.base, page.canonical, page.encoding, page.moved
    hrefs, nofollow = page.hrefs, []  # the page's own lists: this digest is their one reader
    if page.nofollow_at and not follow_nofollow:
        skipped = set(page.nofollow_at)
        nofollow = [hrefs[i] for i in page.nofollow_at]
        hrefs = [href for i, href in enumerate(hrefs) if i not in skipped]
    if page.alternates:
        hrefs += [href for _, href in page.alternates]
    pictures, alternates, videos = page.images, page.alternates, page.videos
    if encoding not in UTF8_QUERIES:
        hrefs = [encode_query(href, encoding) for href in hrefs]
        nofollow = [encode_query(href, encoding) for href in nofollow]
        pictures = [encode_query(href, encoding) for href in pictures]
        alternates = [(lang, encode_query(href, encoding)) for lang, href in alternates]
        videos = [
            video.with_urls(functools.partial(encode_query, encoding=encoding)) for video in videos
        ]
        base = encode_query(base, encoding)
        if canonical is not None:
            canonical = encode_query(canonical, encoding)
        if moved is not None:
            moved = encode_query(moved[0], encoding), moved[1]
    if base != page_url:  # a <base href>: normalised (fragment and all) once here
        base = resolve(page_url, base) or page_url
    # sha256 (OpenSSL, hardware-assisted): 12 us for 23 KB against blake2b's 17
    key = int.from_bytes(hashlib.sha256(body).digest()[:8], "little", signed=True)
    return PageDigest(
        base,
        hrefs,
        canonical,
        page.directives,
        key,
        pictures,
        alternates,
        videos,
        page.published,
        page.title,
        page.about,
        page.blocks,
        moved,
        nofollow,
    )
