"""One sitemap URL as plain, validated data, and the W3C Datetime rules for its lastmod.

Validation happens when an ``Entry`` is built, not when it is written, so a bad value is
reported next to the code that produced it and the writer's hot loop can trust its input.
The rules are the protocol's, which are stricter than the XSD's: a ``loc`` must be an
absolute http(s) URI, already percent-encoded per RFC 3986, 12 to 2,048 characters long
(12 is the XSD's minimum). Nothing is silently repaired; callers holding an IRI or a raw
URL convert it explicitly with :func:`encode_uri` first.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Final
from urllib.parse import quote, urlsplit, urlunsplit

from sitemap_out.errors import EntryError

__all__ = [
    "CHANGEFREQS",
    "MAX_IMAGES_PER_URL",
    "MAX_LOC_CHARS",
    "MAX_VIDEO_DESCRIPTION",
    "MAX_VIDEO_DURATION",
    "MAX_VIDEO_TITLE",
    "MIN_LOC_CHARS",
    "NEWS_LANGUAGE",
    "Alternate",
    "Entry",
    "News",
    "Video",
    "check_uri",
    "encode_uri",
    "format_lastmod",
    "is_hreflang",
    "lastmod_key",
]

CHANGEFREQS: Final = frozenset(
    {"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"}
)
MAX_LOC_CHARS: Final = 2048
#: sitemap.xsd's ``tLoc`` has ``minLength 12``; anything shorter would make the file invalid.
MIN_LOC_CHARS: Final = 12
#: Google's documented ceiling for ``image:image`` per ``url``.
MAX_IMAGES_PER_URL: Final = 1000
#: sitemap-video.xsd: ``video:title`` at most 100 characters, ``video:description`` 2,048,
#: ``video:duration`` at most 28,800 seconds (8 hours).
MAX_VIDEO_TITLE: Final = 100
MAX_VIDEO_DESCRIPTION: Final = 2048
MAX_VIDEO_DURATION: Final = 28_800
#: sitemap-news.xsd's ``news:language``: ISO 639 two or three letters, or zh-cn / zh-tw.
NEWS_LANGUAGE: Final = re.compile(r"zh-cn|zh-tw|[a-z]{2,3}")

# RFC 3986 characters only: unreserved, reserved and "%" (whose escapes are checked apart).
_URI_CHARS = r"A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%"
_URI_RE: Final = re.compile(
    r"(?i:https?)://"
    r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:%]*@)?"  # userinfo
    r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]+)"  # host
    r"(?::[0-9]*)?"  # port
    rf"(?:[/?#][{_URI_CHARS}]*)?"
)
_BAD_PERCENT: Final = re.compile(r"%(?![0-9A-Fa-f]{2})")
# xs:language, which is what xhtml:link's hreflang is validated against ("x-default" fits).
_LANGUAGE_RE: Final = re.compile(r"[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*")
# hreflang as Google reads it (BCP 47): a language (ISO 639, 2 or 3 letters), an optional
# script (4 letters: zh-Hant) and an optional region (2 letters or 3 digits: es-419); or
# x-default. Narrower than xs:language, which also admits "english".
_HREFLANG_RE: Final = re.compile(
    r"[A-Za-z]{2,3}(?:-[A-Za-z]{4})?(?:-(?:[A-Za-z]{2}|[0-9]{3}))?|(?i:x-default)"
)


def is_hreflang(value: str) -> bool:
    """Whether value is an hreflang search engines accept (case does not matter)."""
    return _HREFLANG_RE.fullmatch(value) is not None


_UTC: Final = UTC
_NUMBER: Final = (int, float)  # not `int | float`, a new union object at each check
_MINUTE: Final = timedelta(minutes=1)


def check_uri(value: object, *, min_chars: int = 0) -> str | None:
    """Return why ``value`` is not a publishable http(s) URI, or None when it is.

    Shared by the writer (which raises) and the reader (which reports), so both apply
    exactly the same rule.
    """
    if not isinstance(value, str):
        return f"must be a str, not {type(value).__name__}"
    if len(value) > MAX_LOC_CHARS:
        return f"is {len(value)} characters long; the limit is {MAX_LOC_CHARS}"
    if len(value) < min_chars:
        return f"is {len(value)} characters long; the schema minimum is {min_chars}"
    if _URI_RE.fullmatch(value) is None:
        if not value.lower().startswith(("http://", "https://")):
            return "must be an absolute http:// or https:// URL"
        if not value.isascii():
            return "contains non-ASCII characters; percent-encode it as UTF-8 (encode_uri)"
        return "contains characters RFC 3986 does not allow unescaped; percent-encode them"
    if "%" in value and _BAD_PERCENT.search(value) is not None:
        return "has a '%' that does not start a %XX escape"
    return None


def encode_uri(iri: str) -> str:
    """Turn an IRI or a sloppily written URL into the RFC 3986 form the writer accepts.

    Non-ASCII characters become UTF-8 percent escapes (``/ümlat.html`` ->
    ``/%C3%BCmlat.html``), a non-ASCII host becomes IDNA (punycode), and existing
    ``%XX`` escapes and reserved characters are kept, so encoding twice changes nothing.
    """
    parts = urlsplit(iri.strip())
    netloc = parts.netloc
    host = parts.hostname or ""
    if host and not host.isascii():
        netloc = netloc.replace(host, host.encode("idna").decode("ascii"), 1)
    safe = "!$&'()*+,;=:@/~%"
    path = quote(parts.path, safe=safe)
    query = quote(parts.query, safe=safe + "?")
    fragment = quote(parts.fragment, safe=safe + "?#")
    fixed = urlunsplit((parts.scheme.lower(), netloc, path, query, fragment))
    # A lone "%" (not an escape) must itself be escaped to stay unambiguous.
    return _BAD_PERCENT.sub("%25", fixed)


def format_lastmod(value: datetime | date) -> str:
    """W3C Datetime: ``YYYY-MM-DDThh:mm:ss+hh:mm`` when a time is known, else ``YYYY-MM-DD``.

    Seconds are the finest unit written: fractions are legal W3C Datetime but some
    consumers reject them, and a sitemap's lastmod is never that precise anyway. UTC is
    written ``+00:00`` (not ``Z``) so every timestamp has the same shape.
    """
    global _formatted
    last = _formatted
    if last[0] is value:
        return last[1]
    text = value.isoformat(timespec="seconds") if isinstance(value, datetime) else value.isoformat()
    _formatted = (value, text)
    return text


#: The last value format_lastmod formatted, and its text: a writer formats an entry's
#: lastmod for its <url> and again to compare it with the one published (compare.py), and
#: isoformat is most of either. Kept by identity (the object is held, so its id is not
#: reused), one tuple swapped whole, so that threads sharing it read a matching pair.
_formatted: tuple[object, str] = (None, "")


def lastmod_key(value: datetime | date) -> datetime:
    """A sort key that orders dates and aware datetimes together (a date counts as 00:00 UTC)."""
    if isinstance(value, datetime):
        return value
    return datetime(value.year, value.month, value.day, tzinfo=_UTC)


def _check_lastmod(loc: str, value: object) -> None:
    if isinstance(value, datetime):
        if value.tzinfo is _UTC:  # offset 0: every lastmod a crawl gives (listings.py)
            return
        offset = value.utcoffset()
        if offset is None:
            raise EntryError(loc, "lastmod", "naive datetime; give it a time zone")
        if offset % _MINUTE:
            raise EntryError(loc, "lastmod", f"UTC offset {offset} has seconds; W3C can't say it")
    elif not isinstance(value, date):
        raise EntryError(loc, "lastmod", f"must be a datetime or date, not {type(value).__name__}")


def _check_values(
    loc: str,
    lastmod: datetime | date | None = None,
    changefreq: str | None = None,
    priority: float | None = None,
) -> None:
    """Raise the EntryError ``Entry(loc, lastmod, changefreq, priority)`` would raise,
    without making the entry (Entry's constructor, normalised, and Entry.check_values)."""
    problem = check_uri(loc, min_chars=MIN_LOC_CHARS)
    if problem is not None:
        raise EntryError(str(loc), "loc", problem)
    if lastmod is not None:
        _check_lastmod(loc, lastmod)
    if changefreq is not None and changefreq not in CHANGEFREQS:
        raise EntryError(loc, "changefreq", f"{changefreq!r} is not one of {sorted(CHANGEFREQS)}")
    if priority is not None:
        p = priority
        if isinstance(p, bool) or not isinstance(p, _NUMBER) or not 0.0 <= p <= 1.0:
            raise EntryError(loc, "priority", f"{p!r} is not a number from 0.0 to 1.0")
        if isinstance(p, float) and math.isnan(p):  # pragma: no cover - NaN fails the range
            raise EntryError(loc, "priority", "NaN")


@dataclass(frozen=True, slots=True)
class Alternate:
    """A language version of the page (``xhtml:link rel="alternate"``)."""

    hreflang: str
    href: str

    def __post_init__(self) -> None:
        if not isinstance(self.hreflang, str) or not _LANGUAGE_RE.fullmatch(self.hreflang):
            raise EntryError(
                self.href, "hreflang", f"{self.hreflang!r} is not a language tag (or x-default)"
            )
        problem = check_uri(self.href)
        if problem is not None:
            raise EntryError(self.href, "href", problem)

    @classmethod
    def normalised(cls, hreflang: str, href: str) -> Alternate:
        """An alternate whose values the caller made valid by construction: an hreflang
        that passed :func:`is_hreflang` (a narrower rule than the one checked above) and an
        href its URL normaliser produced (an absolute http(s) URL in RFC 3986 form, as
        crawler.core.urls.normalize makes them). Only the length is checked, the one rule a
        normaliser does not enforce; the crawl builds three of these per page of a
        multilingual site, and the regular expressions of the full check cost more than the
        rest of writing them."""
        if len(href) > MAX_LOC_CHARS:
            raise EntryError(href, "href", check_uri(href) or "is too long")
        alternate = object.__new__(cls)
        object.__setattr__(alternate, "hreflang", hreflang)
        object.__setattr__(alternate, "href", href)
        return alternate


@dataclass(frozen=True, slots=True)
class Video:
    """A video on the page (``video:video``) with the fields Google requires (thumbnail,
    title, description, and a content or player location) and the optional ones we know."""

    thumbnail_loc: str
    title: str
    description: str
    content_loc: str | None = None
    player_loc: str | None = None
    duration: int | None = None  # seconds
    publication_date: datetime | date | None = None

    def __post_init__(self) -> None:
        where = self.content_loc or self.player_loc or str(self.thumbnail_loc)
        for name in ("thumbnail_loc", "content_loc", "player_loc"):
            value = getattr(self, name)
            if value is None:
                continue
            problem = check_uri(value)
            if problem is not None:
                raise EntryError(where, f"video {name}", problem)
        if self.content_loc is None and self.player_loc is None:
            raise EntryError(where, "video", "needs a content_loc or a player_loc")
        for name, limit in (("title", MAX_VIDEO_TITLE), ("description", MAX_VIDEO_DESCRIPTION)):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip() or len(value) > limit:
                raise EntryError(where, f"video {name}", f"must be 1 to {limit} characters")
        duration = self.duration
        if duration is not None and (
            isinstance(duration, bool)
            or not isinstance(duration, int)
            or not 0 <= duration <= MAX_VIDEO_DURATION
        ):
            raise EntryError(where, "video duration", f"{duration!r} is not 0 to 28800 seconds")
        if self.publication_date is not None:
            _check_lastmod(where, self.publication_date)


@dataclass(frozen=True, slots=True)
class News:
    """A news article (``news:news``): its publication, when it was published, its title."""

    name: str
    language: str
    publication_date: datetime | date
    title: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise EntryError(self.title, "news name", "must not be empty")
        if not isinstance(self.language, str) or not NEWS_LANGUAGE.fullmatch(self.language):
            raise EntryError(self.title, "news language", f"{self.language!r} is not ISO 639")
        if not isinstance(self.title, str) or not self.title.strip():
            raise EntryError(str(self.title), "news title", "must not be empty")
        _check_lastmod(self.title, self.publication_date)


@dataclass(frozen=True, slots=True)
class Entry:
    """One ``<url>`` of a sitemap. Invalid values raise :class:`EntryError` on construction.

    ``images`` and ``alternates`` accept any iterable and are stored as tuples so an Entry
    stays hashable and immutable.
    """

    loc: str
    lastmod: datetime | date | None = None
    changefreq: str | None = None
    priority: float | None = None
    images: tuple[str, ...] = field(default=())
    alternates: tuple[Alternate, ...] = field(default=())
    videos: tuple[Video, ...] = field(default=())
    news: News | None = None

    def __post_init__(self) -> None:
        self._check_scalars()
        if self.images:
            self._check_images()
        if self.alternates:
            self._check_alternates()
        if self.videos:
            self._check_videos()
        if self.news is not None and not isinstance(self.news, News):
            raise EntryError(self.loc, "news", f"{self.news!r:.80} is not a News")

    @classmethod
    def normalised(
        cls,
        loc: str,
        lastmod: datetime | date | None = None,
        changefreq: str | None = None,
        priority: float | None = None,
        images: tuple[str, ...] = (),
        alternates: tuple[Alternate, ...] = (),
        videos: tuple[Video, ...] = (),
    ) -> Entry:
        """An entry whose image URLs the caller's URL normaliser produced (absolute http(s)
        URLs in RFC 3986 form by construction, as crawler.core.urls.normalize makes them),
        with alternates made by :meth:`Alternate.normalised` or checked, and checked videos.

        The crawl lists pages of a dozen images each: checking every image URL against the
        RFC 3986 expression again cost more than the rest of the entry. Here the loc and the
        other single values are checked as by the constructor, the images for their number
        and length only (the rules a normaliser does not enforce), each raising the same
        EntryError. Values from anywhere else go through the constructor."""
        entry = cls._unchecked(
            loc, lastmod, changefreq, priority, tuple(images), tuple(alternates), tuple(videos)
        )
        entry._check_scalars()
        if images:
            entry._check_image_lengths()
        if alternates:
            entry._check_alternates()
        if videos:
            entry._check_videos()
        return entry

    @classmethod
    def redated(
        cls,
        loc: str,
        lastmod: datetime | date | None,
        changefreq: str | None = None,
        priority: float | None = None,
    ) -> Entry:
        """An entry made again with another lastmod: its loc, changefreq and priority are
        an entry's checked before (the constructor's or :meth:`normalised`'s), so only the
        lastmod is checked, with the constructor's rule and error. For a caller that checks
        an entry when it is decided and writes it later, dated then (a crawl lists a page
        when judged, and decides its lastmod once the whole site is known): the loc's
        RFC 3986 expression, run again at the publish, cost a third of building it."""
        if lastmod is not None:
            _check_lastmod(loc, lastmod)
        return cls._unchecked(loc, lastmod, changefreq, priority)

    @classmethod
    def _unchecked(
        cls,
        loc: str,
        lastmod: datetime | date | None,
        changefreq: str | None,
        priority: float | None,
        images: tuple[str, ...] = (),
        alternates: tuple[Alternate, ...] = (),
        videos: tuple[Video, ...] = (),
    ) -> Entry:
        """The entry as given, without the dataclass's generic steps nor any check: for
        normalised and redated, which check what their callers have not (a crawl makes one
        a listed page, at the publish). An Entry is filled as its settable twin, _Fields
        (the same slots in the same order, so the same layout), then made an Entry: eight
        plain slot stores and one class change cost half of the eight calls to the slots'
        descriptors a frozen class otherwise needs (about 3,700 instructions against 7,800,
        #26). A subclass's layout may differ: its fields go through the descriptors."""
        if cls is Entry:
            draft = object.__new__(_Fields)
            draft.loc = loc
            draft.lastmod = lastmod
            draft.changefreq = changefreq
            draft.priority = priority
            draft.images = images
            draft.alternates = alternates
            draft.videos = videos
            draft.news = None
            draft.__class__ = Entry  # type: ignore[assignment]
            return draft  # type: ignore[return-value]  # an Entry now (typing.cast: a call)
        entry = object.__new__(cls)
        (
            set_loc, set_lastmod, set_changefreq, set_priority,
            set_images, set_alternates, set_videos, set_news,
        ) = _ENTRY_SLOTS  # fmt: skip
        set_loc(entry, loc)
        set_lastmod(entry, lastmod)
        set_changefreq(entry, changefreq)
        set_priority(entry, priority)
        set_images(entry, images)
        set_alternates(entry, alternates)
        set_videos(entry, videos)
        set_news(entry, None)
        return entry

    #: check_values(loc, lastmod=None, changefreq=None, priority=None): raise the EntryError
    #: ``Entry(loc, lastmod, changefreq, priority)`` would raise, without making the entry:
    #: for a caller that checks an entry's values when it decides them and makes the entry
    #: later (a crawl checks a page when it lists it, and writes it once the crawl is over).
    #: Making a frozen Entry only to drop it cost more than checking it (#26); the rule's
    #: own function, not a method calling it: one call a listed page less.
    check_values = staticmethod(_check_values)

    def _check_scalars(self) -> None:
        _check_values(self.loc, self.lastmod, self.changefreq, self.priority)

    def _check_videos(self) -> None:
        videos = self.videos if type(self.videos) is tuple else tuple(self.videos)
        object.__setattr__(self, "videos", videos)
        for video in videos:
            if not isinstance(video, Video):
                raise EntryError(self.loc, "videos", f"{video!r:.80} is not a Video")

    @property
    def namespaces(self) -> int:
        """The extension namespaces this entry uses, as xml.NS_* bits."""
        if not (self.images or self.alternates or self.videos) and self.news is None:
            return 0  # most entries (a writer asks twice an entry): four tests, no arithmetic
        return (
            bool(self.images)
            | bool(self.alternates) << 1
            | bool(self.videos) << 2
            | (self.news is not None) << 3
        )

    def _check_images(self) -> None:
        images = self.images if type(self.images) is tuple else tuple(self.images)
        object.__setattr__(self, "images", images)
        if len(images) > MAX_IMAGES_PER_URL:
            raise EntryError(
                self.loc, "images", f"{len(images)} images; at most {MAX_IMAGES_PER_URL} per URL"
            )
        uri = _URI_RE.fullmatch
        for image in images:
            # the common case in one step: a URI of a sane length with no escape to check
            if (
                type(image) is str
                and len(image) <= MAX_LOC_CHARS
                and "%" not in image
                and uri(image) is not None
            ):
                continue
            problem = check_uri(image)
            if problem is not None:
                raise EntryError(self.loc, "images", f"{image!r:.80} {problem}")

    def _check_image_lengths(self) -> None:
        images = self.images
        if len(images) > MAX_IMAGES_PER_URL:
            raise EntryError(
                self.loc, "images", f"{len(images)} images; at most {MAX_IMAGES_PER_URL} per URL"
            )
        if max(map(len, images)) > MAX_LOC_CHARS:
            for image in images:
                if len(image) > MAX_LOC_CHARS:
                    raise EntryError(self.loc, "images", f"{image!r:.80} {check_uri(image)}")

    def _check_alternates(self) -> None:
        alternates = self.alternates
        if type(alternates) is not tuple:
            alternates = tuple(alternates)
            object.__setattr__(self, "alternates", alternates)
        for alt in alternates:
            if not isinstance(alt, Alternate):
                raise EntryError(self.loc, "alternates", f"{alt!r:.80} is not an Alternate")


class _Fields:
    """Entry's slots, settable: Entry._unchecked fills one and makes it the Entry it is
    laid out as. Made from Entry's own __slots__, so the two layouts are one; a field added
    to Entry must also be set by _unchecked (a test checks every slot is set)."""

    __slots__ = Entry.__slots__
    loc: str
    lastmod: datetime | date | None
    changefreq: str | None
    priority: float | None
    images: tuple[str, ...]
    alternates: tuple[Alternate, ...]
    videos: tuple[Video, ...]
    news: News | None


#: Entry's slots' setters, by name in Entry._unchecked's order (a frozen class's fields can
#: only be set through them or object.__setattr__): a field renamed fails here, at import,
#: and a field reordered cannot put a value in another's slot
_ENTRY_SLOTS: Final = tuple(
    Entry.__dict__[name].__set__
    for name in (
        "loc", "lastmod", "changefreq", "priority", "images", "alternates", "videos", "news",
    )
)  # fmt: skip
