"""What a page shows besides its links, for the sitemap extensions Google reads: images,
hreflang alternates, videos, and a news article's publication time. Pure.

Extraction itself happens in crawler.core.extract, in the one parse of the page; this module
holds the rules that turn raw attribute values into sitemap facts: srcset candidates, tracking
pixels, accepted image hosts, BCP 47 hreflang values, embedded players, JSON-LD, ISO 8601
durations and dates. A video travels as a `RawVideo` tuple of plain values (worker messages
and listings carry tuples, not collections of records: crawler.core.wire).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final

from sitemap_out.entry import (
    MAX_VIDEO_DESCRIPTION,
    MAX_VIDEO_DURATION,
    MAX_VIDEO_TITLE,
    Video,
    check_uri,
    is_hreflang,
)
from sitemap_out.errors import EntryError

__all__ = [
    "MAX_IMAGES",
    "VIDEO_REQUIRED",
    "PageExtras",
    "RawVideo",
    "host_accepted",
    "host_of",
    "is_pixel",
    "iso_duration",
    "jsonld_facts",
    "largest_candidate",
    "listed_images",
    "listed_videos",
    "missing_video_field",
    "parse_datetime",
    "player_video",
    "valid_hreflang",
]

#: Google reads at most 1,000 ``image:image`` per URL.
MAX_IMAGES: Final = 1000


@dataclass(slots=True, frozen=True)
class RawVideo:
    """A video as the page gives it: any field may be missing (a video lacking one Google
    requires is left out at publish, and counted). Crosses the pipe and the spool inside
    PageExtras, packed field by field (crawler.core.wire)."""

    thumbnail: str | None = None
    title: str | None = None
    description: str | None = None
    content: str | None = None  # content_loc: the video file
    player: str | None = None  # player_loc: an embedded player
    duration: int | None = None  # seconds
    date: str | None = None  # publication date, as written

    def with_urls(self, change: Callable[[str], str | None]) -> RawVideo:
        """The video with its three URLs passed through `change` (resolved against the
        page, encoded, or named as the sitemap names URLs)."""

        def new(url: str | None) -> str | None:
            return None if url is None else change(url)

        return replace(
            self, thumbnail=new(self.thumbnail), content=new(self.content), player=new(self.player)
        )


#: The fields Google requires of a video, in the order a missing one is named.
VIDEO_REQUIRED: Final = ("thumbnail", "title", "description", "content or player location")


@dataclass(slots=True)
class PageExtras:
    """A page's facts for the sitemap extensions, resolved and normalised, as plain values so
    they cross a pipe (PageResult) and a file (the listings' spool and the state) packed."""

    images: tuple[str, ...] = ()  # absolute, accepted hosts only, at most MAX_IMAGES
    alternates: tuple[tuple[str, str], ...] = ()  # (hreflang, URL) with a valid hreflang
    bad_hreflang: tuple[str, ...] = ()  # hreflang values that are not language codes
    videos: tuple[RawVideo, ...] = ()  # URLs resolved; fields the page does not give: None
    published: str | None = None  # article:published_time or JSON-LD datePublished, ISO 8601
    title: str | None = None  # the article's headline (og:title, JSON-LD headline, <title>)
    # the page's title and description for llms.txt (crawler.core.llms.about_of): with
    # llms_txt only
    about: tuple[str | None, str | None] | None = None

    def __bool__(self) -> bool:
        return bool(self.images or self.alternates or self.bad_hreflang or self.videos) or (
            self.published is not None or self.about is not None
        )


# --- hreflang ------------------------------------------------------------------------------


def valid_hreflang(value: str) -> bool:
    """Whether value is an hreflang Google accepts: BCP 47 language[-script][-region], or
    x-default (sitemap_out.entry.is_hreflang, the audit's rule too)."""
    return is_hreflang(value)


# --- images --------------------------------------------------------------------------------

_DESCRIPTOR_RE: Final = re.compile(r"([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)([wxhWXH])")
_CANDIDATE_URL_RE: Final = re.compile(r"[\t\n\f\r ,]*([^\t\n\f\r ]+)")


def largest_candidate(srcset: str) -> str | None:
    """The URL of the largest candidate of a ``srcset`` (widest ``w``, else densest ``x``),
    parsed as the HTML Standard does: a URL runs to whitespace (commas inside it are kept:
    CDN URLs hold them), a URL ending in commas ends its candidate, and the descriptors run
    to the next comma."""
    if _SPLIT_SAFE.search(srcset) is None:
        return _largest_simple(srcset)
    return _largest_full(srcset)


def _largest_full(srcset: str) -> str | None:
    best: str | None = None
    best_size = -1.0
    pos, end = 0, len(srcset)
    match_url = _CANDIDATE_URL_RE.match
    while pos < end:
        found = match_url(srcset, pos)
        if found is None:
            break
        url = found.group(1)
        pos = found.end()
        descriptor = ""
        if url.endswith(","):
            url = url.rstrip(",")
        else:
            comma = srcset.find(",", pos)
            if comma < 0:
                comma = end
            descriptor = srcset[pos:comma]
            pos = comma + 1
        if not url:
            continue
        size = _descriptor_size(descriptor) if descriptor else 1.0  # none: 1x
        if size > best_size:
            best, best_size = url, size
    return best


# a comma not followed by whitespace (it may be inside a URL), or a parenthesis: the full
# parse; without either, splitting at the commas is the same parse, about three times faster
_SPLIT_SAFE: Final = re.compile(r",(?![\t\n\f\r ])|\(")


def _largest_simple(srcset: str) -> str | None:
    best: str | None = None
    best_size = -1.0
    for part in srcset.split(","):
        tokens = part.split()
        if not tokens:
            continue
        size = 1.0
        if len(tokens) > 1:
            descriptor = tokens[1]
            number = descriptor[:-1]
            unit = descriptor[-1:]
            if (unit == "w" or unit == "x") and number.isdigit() and number.isascii():
                # "480w", "2x": what the expression below reads in them, without it
                size = float(number) * 1e6 if unit == "w" else float(number)
            else:
                size = _descriptor_size(descriptor)
        if size > best_size:
            best, best_size = tokens[0], size
    return best


def _descriptor_size(descriptor: str) -> float:
    """A srcset candidate's rank: its width (w), which is worth more than any density (x),
    or its density; 1 (1x) when neither can be read."""
    match = _DESCRIPTOR_RE.search(descriptor)
    if match is None:
        return 1.0
    value = float(match.group(1))
    unit = match.group(2).lower()
    return value * 1e6 if unit == "w" else value if unit == "x" else 1.0


def is_pixel(width: str | None, height: str | None) -> bool:
    """Whether an ``<img>`` declares itself a tracking pixel: 1x1 (or 0x0) by its attributes."""
    if width is None or height is None:
        return False
    return width.strip().removesuffix("px") in ("0", "1") and height.strip().removesuffix("px") in (
        "0",
        "1",
    )


def host_of(url: str) -> str:
    """The host of a normalised URL (scheme://host[:port]/path, lower-case host), by string
    operations: urlsplit costs ten times more, and runs for every image of every page."""
    start = url.find("//") + 2
    end = url.find("/", start)
    netloc = url[start:] if end < 0 else url[start:end]
    if netloc.startswith("["):
        return netloc[: netloc.find("]") + 1]
    colon = netloc.find(":")
    return netloc if colon < 0 else netloc[:colon]


def host_accepted(host: str, page_host: str, patterns: tuple[str, ...]) -> bool:
    """Whether an image on host (lower-case) may be listed for a page on page_host. No
    patterns: the page's host and its subdomains. A pattern is a host (``cdn.example.com``),
    or a host and its subdomains (``.example.com`` or ``*.example.com``); ``*`` accepts every
    host."""
    if not host:
        return False
    if not patterns:
        return host == page_host or host.endswith("." + page_host)
    for pattern in patterns:
        if pattern == "*":
            return True
        if pattern.startswith("*."):
            pattern = pattern[1:]
        if pattern.startswith("."):
            if host == pattern[1:] or host.endswith(pattern):
                return True
        elif host == pattern:
            return True
    return False


# --- videos --------------------------------------------------------------------------------

# The players' and the duration's patterns are compiled (and cached by re) at a page's first
# video: most sites have none, and a start pays no compile for them (#26)
_YOUTUBE_PATTERN: Final = (
    r"https?://(?:www\.)?(?:youtube\.com|youtube-nocookie\.com)/embed/([A-Za-z0-9_-]{6,})"
)
_VIMEO_PATTERN: Final = r"https?://player\.vimeo\.com/video/([0-9]+)"


def player_video(src: str, title: str | None) -> RawVideo | None:
    """A video embedded from a known host (YouTube, Vimeo) by an ``<iframe src>`` (absolute),
    or None. YouTube's thumbnail follows from the video id; Vimeo's does not."""
    match = re.match(_YOUTUBE_PATTERN, src)
    if match is not None:
        thumbnail = f"https://i.ytimg.com/vi/{match.group(1)}/hqdefault.jpg"
        return RawVideo(thumbnail, title, player=src)
    if re.match(_VIMEO_PATTERN, src) is not None:
        return RawVideo(title=title, player=src)
    return None


def missing_video_field(video: RawVideo) -> str | None:
    """The first field Google requires that the video lacks, or None when it has them all."""
    given = (video.thumbnail, video.title, video.description, video.content or video.player)
    for name, value in zip(VIDEO_REQUIRED, given, strict=True):
        if not value:
            return name
    return None


_DURATION_PATTERN: Final = (
    r"P(?:([0-9]+)D)?(?:T(?:([0-9]+)H)?(?:([0-9]+)M)?(?:([0-9]+(?:\.[0-9]+)?)S)?)?"
)


def iso_duration(text: str) -> int | None:
    """Seconds of an ISO 8601 duration (``PT1M33S``, as schema.org gives it), or None."""
    match = re.fullmatch(_DURATION_PATTERN, text.strip().upper())
    if match is None or not any(match.groups()):
        return None
    days, hours, minutes, seconds = match.groups()
    total = int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes or 0) * 60
    return total + round(float(seconds or 0))


def parse_datetime(text: str) -> datetime | None:
    """An ISO 8601 / W3C date or date-time, aware (a date, or a time without an offset,
    is read as UTC), or None when text is not one."""
    text = text.strip()
    if not 10 <= len(text) <= 40:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if value.tzinfo is None or value.utcoffset() is None:
        value = value.replace(tzinfo=UTC)
    return value


# --- JSON-LD -------------------------------------------------------------------------------

_ARTICLE_TYPES: Final = frozenset(
    {"article", "newsarticle", "blogposting", "reportagenewsarticle", "analysisnewsarticle"}
)


def _types(node: dict[str, Any]) -> set[str]:
    kind = node.get("@type")
    kinds = kind if isinstance(kind, list) else [kind]
    return {k.rsplit("/", 1)[-1].lower() for k in kinds if isinstance(k, str)}


def _objects(data: Any, depth: int = 0) -> Iterator[dict[str, Any]]:
    """Every JSON object in data, breadth first enough for @graph and nesting; bounded depth
    so a hostile page cannot make it recurse without end."""
    if depth > 8:
        return
    if isinstance(data, list):
        for item in data[:200]:
            yield from _objects(item, depth + 1)
    elif isinstance(data, dict):
        yield data
        for value in data.values():
            if isinstance(value, dict | list):
                yield from _objects(value, depth + 1)


def _text(value: Any) -> str | None:
    if isinstance(value, list) and value:
        value = value[0]
    if isinstance(value, dict):
        value = value.get("url") or value.get("contentUrl") or value.get("@id")
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def jsonld_facts(text: str) -> tuple[list[RawVideo], str | None, str | None]:
    """The VideoObjects, an article's datePublished and headline in one JSON-LD script.
    URLs are raw (the caller resolves them); bad JSON gives nothing."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return [], None, None
    videos: list[RawVideo] = []
    published: str | None = None
    headline: str | None = None
    for node in _objects(data):
        kinds = _types(node)
        if "videoobject" in kinds:
            duration = _text(node.get("duration"))
            videos.append(
                RawVideo(
                    _text(node.get("thumbnailUrl")) or _text(node.get("thumbnail")),
                    _text(node.get("name")),
                    _text(node.get("description")),
                    _text(node.get("contentUrl")),
                    _text(node.get("embedUrl")),
                    iso_duration(duration) if duration else None,
                    _text(node.get("uploadDate")),
                )
            )
        elif kinds & _ARTICLE_TYPES and published is None:
            published = _text(node.get("datePublished"))
            headline = _text(node.get("headline")) or _text(node.get("name"))
    return videos, published, headline


# --- sitemap values ------------------------------------------------------------------------


def listed_images(extras: PageExtras) -> tuple[str, ...]:
    """The page's images the sitemap can hold (an absolute RFC 3986 URL each)."""
    return tuple(image for image in extras.images if check_uri(image) is None)


def listed_videos(extras: PageExtras) -> tuple[list[Video], list[str]]:
    """The page's videos as sitemap values, each once (by content, else player location),
    and for each one left out the first field Google requires that it lacks."""
    videos: list[Video] = []
    missing: list[str] = []
    seen: set[str] = set()
    for raw in extras.videos:
        thumbnail, title, description = raw.thumbnail, raw.title, raw.description
        content, player, duration, date = raw.content, raw.player, raw.duration, raw.date
        key = content or player
        if key is not None and key in seen:
            continue
        lacking = missing_video_field(raw)
        if lacking is not None:
            missing.append(lacking)
            continue
        assert thumbnail and title and description
        published = parse_datetime(date) if date else None
        try:
            video = Video(
                thumbnail,
                _clip(title, MAX_VIDEO_TITLE),
                _clip(description, MAX_VIDEO_DESCRIPTION),
                content,
                player,
                duration if duration is not None and 0 <= duration <= MAX_VIDEO_DURATION else None,
                published,
            )
        except EntryError as exc:
            missing.append(exc.field)
            continue
        if key is not None:
            seen.add(key)
        videos.append(video)
    return videos, missing


def _clip(text: str, limit: int) -> str:
    """Whitespace runs made one space, cut to limit characters (at a word when it can)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut) + "…"
