"""Read and check a sitemap (urlset, index, text, or an RSS 2.0 or Atom 1.0 feed, which
search engines accept as sitemaps; optionally gzipped) as a stream.

Hostile input is expected (the audit reads other people's sitemaps), so reading is bounded:
at most ``max_bytes`` of decompressed data are ever inflated (a gzip bomb stops there),
no DTD is loaded and no entity is expanded, and finished ``<url>`` elements are dropped
from the tree as soon as they are checked. Bad input never raises: it yields
:class:`Problem` records; only I/O errors propagate.

The checks are those of sitemap.xsd / siteindex.xsd (so a file the XSDs accept gives no
error, and one they reject gives one) plus the protocol rules the XSD cannot express:
the URL and size limits, percent-encoded absolute http(s) locs, duplicates. Where the
protocol is stricter than the XSD but search engines are lenient (a dateTime without a time
zone, a urlset without its namespace, an unknown element or fields in another order, which
every engine reads past) the problem is a warning.
"""

from __future__ import annotations

import codecs
import io
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal, InvalidOperation
from email.utils import parsedate_to_datetime
from typing import BinaryIO, Final, Literal

from lxml import etree

from sitemap_out.entry import CHANGEFREQS, MAX_LOC_CHARS, MIN_LOC_CHARS, check_uri, is_hreflang
from sitemap_out.feed import ATOM_NS
from sitemap_out.limits import MAX_BYTES, MAX_NEWS_URLS, MAX_URLS
from sitemap_out.xml import IMAGE_NS, NEWS_NS, SITEMAP_NS, VIDEO_NS, XHTML_NS

__all__ = ["Problem", "ReadEntry", "ReadResult", "read_sitemap"]

Kind = Literal["urlset", "sitemapindex", "text", "feed", "unknown"]
Severity = Literal["error", "warning"]

#: Each problem code is listed at most this often; ``ReadResult.problem_counts`` has totals.
MAX_PROBLEMS_PER_CODE: Final = 100
_CHUNK: Final = 1 << 16

_DATE = r"(\d{4})-(\d{2})-(\d{2})"
_TZ = r"(Z|[+-](\d{2}):(\d{2}))?"
_DATE_RE: Final = re.compile(_DATE + _TZ)
_DATETIME_RE: Final = re.compile(_DATE + r"T(\d{2}):(\d{2}):(\d{2})(\.\d+)?" + _TZ)
_DECIMAL_RE: Final = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
_ABSOLUTE_RE: Final = re.compile(r"(?i:https?)://[^/?#\s]")
_WS: Final = b" \t\r\n"
_SPACE_RE: Final = re.compile(r"\s")


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding. ``code`` is a stable snake_case id; ``line`` is 1-based when known."""

    code: str
    message: str
    line: int | None = None
    severity: Severity = "error"


@dataclass(slots=True)
class ReadEntry:
    """A ``<url>`` (or an index's ``<sitemap>``, or a text line) as found: raw strings,
    since a value may be invalid and the caller decides what to do with it."""

    loc: str
    lastmod: str | None = None
    changefreq: str | None = None
    priority: str | None = None
    images: tuple[str, ...] = ()
    alternates: tuple[tuple[str, str], ...] = ()
    line: int | None = None
    videos: int = 0  # video:video elements
    news_date: str | None = None  # news:publication_date, as written
    mobile: tuple[str, ...] = ()  # separate mobile URLs (xhtml:link media=, no hreflang)


@dataclass(slots=True)
class ReadResult:
    """One sitemap file as read: its entries and problems, counted past the limits kept."""

    kind: Kind
    entries: list[ReadEntry] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    problem_counts: dict[str, int] = field(default_factory=dict)
    uncompressed_bytes: int = 0
    past_limit: int = 0  # entries past max_urls: counted, neither kept nor checked

    @property
    def ok(self) -> bool:
        """True when nothing worse than a warning was found."""
        return not any(p.severity == "error" for p in self.problems)

    @property
    def codes(self) -> set[str]:
        return set(self.problem_counts)

    def report(
        self, code: str, message: str, line: int | None = None, *, warn: bool = False
    ) -> None:
        count = self.problem_counts.get(code, 0) + 1
        self.problem_counts[code] = count
        if count <= MAX_PROBLEMS_PER_CODE:
            self.problems.append(Problem(code, message, line, "warning" if warn else "error"))


# -- bytes in -------------------------------------------------------------------------------


class _TooLarge(Exception):
    pass


def _payload(raw: BinaryIO, max_bytes: int, result: ReadResult) -> Iterator[bytes]:
    """Decompressed chunks, never more than ``max_bytes`` in total (one extra byte to tell)."""
    first = raw.read(_CHUNK)
    gzipped = first[:2] == b"\x1f\x8b"
    budget = max_bytes + 1
    total = 0

    def emit(data: bytes) -> bytes:
        nonlocal total
        total += len(data)
        result.uncompressed_bytes = min(total, max_bytes)
        if total > max_bytes:
            result.report(
                "too_large", f"more than {max_bytes} bytes uncompressed; read stopped there"
            )
            raise _TooLarge
        return data

    if not gzipped:
        chunk = first
        while chunk:
            yield emit(chunk[: budget - total])
            chunk = raw.read(_CHUNK)
        return
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    chunk = first
    while chunk:
        data = chunk
        while data:
            try:
                out = inflater.decompress(data, budget - total)
            except zlib.error as exc:
                result.report("bad_gzip", f"gzip data is corrupt: {exc}")
                return
            if out:
                yield emit(out)
            if inflater.eof:  # a further gzip member may follow
                data = inflater.unused_data
                if data:
                    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            else:
                data = inflater.unconsumed_tail
        chunk = raw.read(_CHUNK)
    if not inflater.eof:  # also when it ended before its first byte of data
        result.report("bad_gzip", "gzip data ends early (truncated file)")


# -- values ---------------------------------------------------------------------------------


def _check_loc(text: str | None, result: ReadResult, line: int | None, *, xsd_min: bool) -> str:
    loc = (text or "").strip()
    if not loc:
        result.report("missing_loc", "empty <loc>" if text is not None else "no <loc>", line)
        return loc
    if loc != text:
        result.report(
            "loc_whitespace",
            f"{loc[:200]!r} has whitespace around it (engines trim it; a strict reader may not)",
            line,
            warn=True,
        )
    if len(loc) > MAX_LOC_CHARS:
        result.report("loc_too_long", f"loc has {len(loc)} characters (max 2048)", line)
    elif _ABSOLUTE_RE.match(loc) is None:
        what = "not an absolute http(s) URL"
        if "://" not in loc and not loc.lower().startswith(("http:", "https:")):
            what = "relative: a loc must be an absolute http(s) URL"
        result.report("loc_not_absolute", f"{loc[:200]!r} is {what}", line)
    elif xsd_min and len(loc) < MIN_LOC_CHARS:
        result.report("loc_too_short", f"loc {loc!r} is under the schema's 12 characters", line)
    else:
        problem = check_uri(loc)
        if problem is not None:
            result.report("loc_not_encoded", f"{loc[:200]!r} {problem}", line)
        elif "#" in loc:
            result.report(
                "loc_fragment",
                f"{loc[:200]!r} has a fragment ({loc[loc.find('#') :][:50]}): engines drop "
                "it, so it names the page without it",
                line,
                warn=True,
            )
    return loc


def _tz_ok(match: re.Match[str], first: int) -> bool:
    if match.group(first) in (None, "Z"):
        return True
    return int(match.group(first + 1)) <= 14 and int(match.group(first + 2)) <= 59


def _check_lastmod(raw: str, result: ReadResult, line: int | None) -> None:
    value = raw.strip()
    m = _DATETIME_RE.fullmatch(value)
    ok = False
    try:
        if m is not None:
            date(int(m[1]), int(m[2]), int(m[3]))
            ok = int(m[4]) <= 23 and int(m[5]) <= 59 and int(m[6]) <= 59 and _tz_ok(m, 8)
            if ok and m.group(8) is None:
                result.report(
                    "lastmod_no_timezone",
                    f"lastmod {value!r} has a time but no time zone (W3C Datetime needs one)",
                    line,
                    warn=True,
                )
        elif (m := _DATE_RE.fullmatch(value)) is not None:
            date(int(m[1]), int(m[2]), int(m[3]))
            ok = _tz_ok(m, 4)
    except ValueError:
        ok = False
    if not ok:
        result.report("bad_lastmod", f"lastmod {raw[:100]!r} is not a W3C date or datetime", line)


def _check_priority(raw: str, result: ReadResult, line: int | None) -> None:
    value = raw.strip()
    try:
        ok = _DECIMAL_RE.fullmatch(value) is not None and 0 <= Decimal(value) <= 1
    except InvalidOperation:  # pragma: no cover - the regex admits only valid decimals
        ok = False
    if not ok:
        result.report("bad_priority", f"priority {raw[:100]!r} is not from 0.0 to 1.0", line)


# -- XML ------------------------------------------------------------------------------------


_URL_FIELDS: Final = ("loc", "lastmod", "changefreq", "priority")
_INDEX_FIELDS: Final = ("loc", "lastmod")


class _XmlReader:
    def __init__(self, result: ReadResult, max_urls: int) -> None:
        self.result = result
        self.max_urls = max_urls
        self.parser = etree.XMLPullParser(
            events=("start", "end"),
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            huge_tree=False,
            remove_comments=True,
            remove_pis=True,
        )
        self.depth = 0
        self.ns: str | None = None
        self.item_tag = ""
        self.fields: tuple[str, ...] = ()
        self.count = 0
        self.seen: set[str] = set()
        self.stopped = False
        self.news = 0  # entries with news:news
        self.item_depth = 2  # where an entry's element ends: an RSS item is one deeper
        self.feed_kind: Literal["", "rss", "atom"] = ""

    def feed(self, data: bytes) -> None:
        try:
            self.parser.feed(data)
            self._drain()
        except etree.XMLSyntaxError as exc:
            self._syntax(exc)

    def close(self) -> None:
        if self.stopped:
            return
        try:
            self.parser.close()
            self._drain()
        except etree.XMLSyntaxError as exc:
            self._syntax(exc)
            return
        if self.item_tag and self.count == 0:
            name = self.result.kind
            self.result.report("empty", f"<{name}> lists nothing; it needs at least one entry")

    def _syntax(self, exc: etree.XMLSyntaxError) -> None:
        self.stopped = True
        self.result.report("not_well_formed", f"not well-formed XML: {exc.msg}", exc.lineno)

    def _drain(self) -> None:
        for event, elem in self.parser.read_events():
            if self.stopped:
                return
            if event == "start":
                self.depth += 1
                if self.depth == 1:
                    self._root(elem)
                elif self.depth == 2:
                    self._top_child(elem)
            else:
                self.depth -= 1
                if self.depth == self.item_depth - 1 and elem.tag == self.item_tag:
                    if self.count >= self.max_urls:
                        self._past_limit(elem)
                    elif self.feed_kind:
                        self._feed_item(elem)
                    else:
                        self._item(elem)
                if self.depth == self.item_depth - 1:
                    self._drop(elem)

    def _root(self, root: etree._Element) -> None:
        result = self.result
        qname = etree.QName(root)
        if (qname.localname, qname.namespace) in (("rss", None), ("feed", ATOM_NS)):
            self._feed_root(root)
            return
        if qname.localname not in ("urlset", "sitemapindex"):
            result.report("wrong_root", f"root element is <{qname.localname}>", root.sourceline)
            self.stopped = True
            return
        result.kind = qname.localname  # type: ignore[assignment]
        if root.getroottree().docinfo.doctype:
            result.report("doctype", "DOCTYPE is not allowed; no entity was expanded", 1)
        ns = qname.namespace
        if ns is None:
            result.report(
                "missing_namespace",
                f'no namespace; expected xmlns="{SITEMAP_NS}"',
                root.sourceline,
                warn=True,
            )
        elif ns != SITEMAP_NS:
            result.report("wrong_namespace", f"namespace is {ns!r}, not {SITEMAP_NS!r}", 1)
        self.ns = ns or ""
        prefix = "{" + ns + "}" if ns else ""
        child = "url" if qname.localname == "urlset" else "sitemap"
        self.item_tag = prefix + child
        self.fields = _URL_FIELDS if child == "url" else _INDEX_FIELDS
        if (root.text or "").strip():
            result.report("unexpected_text", "text directly inside the root", root.sourceline)

    def _past_limit(self, elem: etree._Element) -> None:
        """An entry past the file's limit, already an error: counted, not kept, so memory
        stays flat however long the file (an engine reads no further either)."""
        self.count += 1
        if self.count == self.max_urls + 1:
            what = "sitemaps" if self.result.kind == "sitemapindex" else "URLs"
            self.result.report(
                "too_many_urls", f"more than {self.max_urls} {what}", elem.sourceline
            )
        self.result.past_limit += 1

    def _feed_root(self, root: etree._Element) -> None:
        """An RSS 2.0 or Atom 1.0 feed, which Google and Bing read as a sitemap: its items'
        links (and dates) are its URLs, under a sitemap's limits."""
        self.result.kind = "feed"
        if root.tag == "rss":
            self.feed_kind, self.item_tag, self.item_depth = "rss", "item", 3
        else:
            self.feed_kind, self.item_tag = "atom", f"{{{ATOM_NS}}}entry"

    def _feed_item(self, elem: etree._Element) -> None:
        result = self.result
        line = elem.sourceline
        self.count += 1
        lastmod: str | None
        if self.feed_kind == "rss":
            link = elem.findtext("link")
            lastmod = _rss_date(elem.findtext("pubDate"), result, line)
        else:
            link = next(
                (
                    child.get("href")
                    for child in elem.iterfind(f"{{{ATOM_NS}}}link")
                    if child.get("rel", "alternate") == "alternate"
                ),
                None,
            )
            lastmod = elem.findtext(f"{{{ATOM_NS}}}updated")
            lastmod = lastmod.strip() if lastmod is not None else None
            if lastmod is not None:
                _check_lastmod(lastmod, result, line)
        loc = _check_loc(link, result, line, xsd_min=False)
        self._entry(ReadEntry(loc=loc, lastmod=lastmod, line=line))

    def _entry(self, entry: ReadEntry) -> None:
        if entry.loc:
            if entry.loc in self.seen:
                self.result.report(
                    "duplicate_loc", f"{entry.loc[:200]!r} is listed again", entry.line
                )
            else:
                self.seen.add(entry.loc)
        self.result.entries.append(entry)

    def _top_child(self, elem: etree._Element) -> None:
        if self.feed_kind or elem.tag == self.item_tag or not isinstance(elem.tag, str):
            return
        ns = etree.QName(elem).namespace or ""
        if ns == self.ns:
            name = etree.QName(elem).localname
            self.result.report(
                "unknown_element",
                f"<{name}> does not belong in <{self.result.kind}>; engines skip it",
                elem.sourceline,
                warn=True,
            )

    def _drop(self, elem: etree._Element) -> None:
        """Free finished elements so memory stays flat however many URLs there are."""
        if (elem.tail or "").strip():
            self.result.report("unexpected_text", "text between entries", elem.sourceline)
        elem.clear(keep_tail=False)
        parent = elem.getparent()
        if parent is not None:
            while elem.getprevious() is not None:
                del parent[0]

    def _item(self, elem: etree._Element) -> None:
        result = self.result
        line = elem.sourceline
        self.count += 1
        values: dict[str, str | None] = {}
        position = -1
        images: list[str] = []
        alternates: list[tuple[str, str]] = []
        mobile: list[str] = []
        videos = 0
        news_date: str | None = None
        if (elem.text or "").strip():
            result.report("unexpected_text", "text directly inside an entry", line)
        for child in elem:
            if not isinstance(child.tag, str):
                continue
            q = etree.QName(child)
            cns = q.namespace or ""
            if (child.tail or "").strip():
                result.report("unexpected_text", "text between fields", child.sourceline)
            if cns == self.ns:
                name = q.localname
                if name not in self.fields:
                    result.report(
                        "unknown_element",
                        f"<{name}> does not belong in <{etree.QName(elem).localname}>; "
                        "engines skip it (the URL is read)",
                        child.sourceline,
                        warn=True,
                    )
                    continue
                if name in values:
                    result.report(
                        "unexpected_element", f"<{name}> is given twice", child.sourceline
                    )
                    continue
                index = self.fields.index(name)
                if index < position:
                    result.report(
                        "field_order",
                        f"<{name}> comes after <{self.fields[position]}>: the schema's order is "
                        f"{', '.join(self.fields)} (every engine reads it anyway)",
                        child.sourceline,
                        warn=True,
                    )
                position = max(position, index)
                values[name] = child.text or ""
            elif cns == IMAGE_NS and q.localname == "image":
                for sub in child:
                    if sub.tag == f"{{{IMAGE_NS}}}loc":
                        images.append((sub.text or "").strip())
            elif cns == XHTML_NS and q.localname == "link":
                self._link(child, alternates, mobile)
            elif cns == VIDEO_NS and q.localname == "video":
                videos += 1
                self._video(child)
            elif cns == NEWS_NS and q.localname == "news":
                news_date = (child.findtext(f"{{{NEWS_NS}}}publication_date") or "").strip()
                self.news += 1
                if self.news == MAX_NEWS_URLS + 1:
                    result.report(
                        "too_many_news",
                        f"more than {MAX_NEWS_URLS} URLs with news:news in one file",
                        child.sourceline,
                    )
        loc = _check_loc(values.get("loc"), result, line, xsd_min=True)
        lastmod = values.get("lastmod")
        if lastmod is not None:
            _check_lastmod(lastmod, result, line)
        changefreq = values.get("changefreq")
        if changefreq is not None and changefreq not in CHANGEFREQS:
            result.report("bad_changefreq", f"changefreq {changefreq[:50]!r} is unknown", line)
        priority = values.get("priority")
        if priority is not None:
            _check_priority(priority, result, line)
        self._entry(
            ReadEntry(
                loc=loc,
                lastmod=lastmod.strip() if lastmod is not None else None,
                changefreq=changefreq,
                priority=priority.strip() if priority is not None else None,
                images=tuple(images),
                alternates=tuple(alternates),
                line=line,
                videos=videos,
                news_date=news_date,
                mobile=tuple(mobile),
            )
        )

    def _link(
        self, link: etree._Element, alternates: list[tuple[str, str]], mobile: list[str]
    ) -> None:
        """An xhtml:link: an hreflang alternate, or (media= without hreflang) the page's
        separate mobile URL, Google's markup for m. sites. Either needs rel="alternate" and
        an href, or engines ignore it."""
        href, hreflang = (link.get("href") or "").strip(), link.get("hreflang")
        missing = [
            what
            for what, ok in (
                ('rel="alternate"', "alternate" in (link.get("rel") or "").split()),
                ("href", href),
            )
            if not ok
        ]
        if missing:
            self.result.report(
                "bad_alternate_link",
                f"xhtml:link without {' and '.join(missing)}: engines ignore it",
                link.sourceline,
            )
            return
        if hreflang is None and link.get("media"):
            mobile.append(href)
            return
        alternates.append((hreflang or "", href))
        if hreflang is None:
            self.result.report(
                "bad_alternate_link",
                "xhtml:link without hreflang (nor media=, for a mobile URL)",
                link.sourceline,
            )
        elif not is_hreflang(hreflang):
            self.result.report(
                "bad_hreflang",
                f"hreflang {hreflang[:50]!r} is not a language code (or x-default)",
                link.sourceline,
            )

    def _video(self, video: etree._Element) -> None:
        """A video lacking a field Google requires is left out of its index: say which."""
        found = {
            etree.QName(child).localname: (child.text or "").strip()
            for child in video
            if isinstance(child.tag, str)
        }
        for name in ("thumbnail_loc", "title", "description"):
            if not found.get(name):
                break
        else:
            if found.get("content_loc") or found.get("player_loc"):
                return
            name = "content_loc or player_loc"
        self.result.report("video_missing_field", f"a video without {name}", video.sourceline)


def _rss_date(text: str | None, result: ReadResult, line: int | None) -> str | None:
    """An RSS pubDate (RFC 822) as the W3C datetime a lastmod is, or None."""
    if text is None or not text.strip():
        return None
    try:
        when = parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        result.report("bad_lastmod", f"pubDate {text[:100]!r} is not an RFC 822 date", line)
        return None
    if when.tzinfo is None:
        return when.isoformat(timespec="seconds") + "Z"
    return when.isoformat(timespec="seconds")


# -- text -----------------------------------------------------------------------------------


def _read_text(chunks: Iterator[bytes], result: ReadResult, max_urls: int) -> None:
    result.kind = "text"
    utf8 = codecs.getincrementaldecoder("utf-8")("strict")
    seen: set[str] = set()
    pending = ""
    line_no = 0
    bad_encoding = False

    def handle(line: str) -> None:
        nonlocal line_no
        line_no += 1
        url = line.strip()
        if not url:
            return
        if len(result.entries) == max_urls:  # past the limit: counted, not kept
            if not result.past_limit:
                result.report("too_many_urls", f"more than {max_urls} URLs", line_no)
            result.past_limit += 1
            return
        if _SPACE_RE.search(url) is not None:
            result.report("loc_not_encoded", f"line {url[:200]!r} holds whitespace", line_no)
        else:
            _check_loc(url, result, line_no, xsd_min=False)
        if url in seen:
            result.report("duplicate_loc", f"{url[:200]!r} is listed again", line_no)
        else:
            seen.add(url)
        result.entries.append(ReadEntry(loc=url, line=line_no))

    def decode(data: bytes, final: bool) -> str:
        nonlocal bad_encoding, utf8
        try:
            return utf8.decode(data, final)
        except UnicodeDecodeError:
            if not bad_encoding:
                bad_encoding = True
                result.report("bad_encoding", "not valid UTF-8", line_no + 1)
            utf8 = codecs.getincrementaldecoder("utf-8")("replace")
            return utf8.decode(data, final)

    first = True
    for data in chunks:
        text = decode(data, False)
        if first:
            text = text.removeprefix("\ufeff")
            first = False
        pending += text
        *lines, pending = pending.split("\n")
        for line in lines:
            handle(line)
    pending += decode(b"", True)
    for line in pending.split("\n"):
        handle(line)
    if not result.entries:
        result.report("empty", "the text sitemap lists no URL")


# -- what a URL answers ---------------------------------------------------------------------

#: The root elements of what search engines read as a sitemap, after the XML prologue.
_SITEMAP_ROOT: Final = re.compile(
    rb"^(?:<\?[^>]*\?>|<!--.*?-->|<!DOCTYPE[^>]*>|\s)*<(?:[\w.-]+:)?(urlset|sitemapindex|rss|feed)[\s>/]",
    re.DOTALL,
)


def looks_like_sitemap(body: bytes, content_type: str) -> bool:
    """Whether an answer is a sitemap rather than a page: what the audit asks of a URL whose
    name does not say (a feed at /feed, a sitemap served by a script). Gzip, a sitemap or
    feed root element, or plain text whose first line is an http(s) URL."""
    head = body[:4096].removeprefix(b"\xef\xbb\xbf").lstrip(_WS)
    if head.startswith(b"\x1f\x8b"):
        return True
    if _SITEMAP_ROOT.match(head):
        return True
    first = head.split(b"\n", 1)[0].strip().lower()
    plain = content_type.split(";", 1)[0].strip().lower() == "text/plain"
    return plain and first.startswith((b"http://", b"https://"))


# -- entry point ----------------------------------------------------------------------------


def read_sitemap(
    source: str | os.PathLike[str] | bytes,
    *,
    max_bytes: int = MAX_BYTES,
    max_urls: int = MAX_URLS,
) -> ReadResult:
    """Read a urlset, index or text sitemap (gzip detected by content) and check it."""
    result = ReadResult(kind="unknown")
    raw: BinaryIO = io.BytesIO(source) if isinstance(source, bytes) else open(source, "rb")  # noqa: SIM115
    with raw:
        chunks = _payload(raw, max_bytes, result)
        head = b""
        try:
            for data in chunks:
                head += data
                if head.lstrip(_WS).removeprefix(b"\xef\xbb\xbf").lstrip(_WS):
                    break
            body = head.lstrip(_WS).removeprefix(b"\xef\xbb\xbf").lstrip(_WS)
            if not body:
                if "bad_gzip" not in result.problem_counts:
                    result.report("empty", "the file is empty")
                return result
            if body.startswith(b"<"):
                reader = _XmlReader(result, max_urls)
                reader.feed(head)
                for data in chunks:
                    if reader.stopped:
                        break
                    reader.feed(data)
                reader.close()
            else:
                _read_text(_chain(head, chunks), result, max_urls)
        except _TooLarge:
            pass
    if result.past_limit:
        _say_past_limit(result)
    return result


def _say_past_limit(result: ReadResult) -> None:
    """The too_many_urls problem, told how many entries the file holds past its limit."""
    for n, problem in enumerate(result.problems):
        if problem.code == "too_many_urls":
            more = f"{result.past_limit} more entries, counted but neither read nor checked"
            result.problems[n] = Problem(
                problem.code, f"{problem.message}: {more}", problem.line, problem.severity
            )


def _chain(head: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield head
    yield from rest
