"""Whether a URL goes in the sitemap, and why not: pure functions over plain facts.

A sitemap promises a search engine that every URL in it is a canonical, indexable page,
so every exclusion carries a reason from one closed set (REASONS) and a detail a user can
act on. The engine gathers facts; this module only judges them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Final
from urllib.parse import urlsplit

from crawler.core.access import AUTH_ENV
from crawler.core.directives import Directives
from crawler.core.patterns import NO_PATTERNS, Patterns, path_and_query
from crawler.core.words import plural

LISTED = "listed"
ROBOTS_TXT = "robots_txt"
META_NOINDEX = "meta_noindex"
HEADER_NOINDEX = "header_noindex"
CANONICALISED = "canonicalised"
DUPLICATE_OF = "duplicate_of"
REDIRECT = "redirect"
HTTP_ERROR = "http_error"
OUT_OF_SCOPE = "out_of_scope"
EXCLUDED_BY_PATTERN = "excluded_by_pattern"
CONTENT_TYPE = "content_type"
TOO_LONG = "too_long"
TOO_LARGE = "too_large"
TRAP = "trap"
LIMIT = "limit"
FETCH_ERROR = "fetch_error"
NOFOLLOW = "nofollow"
BLOCKED_BY_BOT_PROTECTION = "blocked_by_bot_protection"

#: Every reason a decision may carry, in the order the summary prints them.
REASONS = (
    LISTED,
    ROBOTS_TXT,
    META_NOINDEX,
    HEADER_NOINDEX,
    CANONICALISED,
    DUPLICATE_OF,
    REDIRECT,
    HTTP_ERROR,
    OUT_OF_SCOPE,
    EXCLUDED_BY_PATTERN,
    CONTENT_TYPE,
    TOO_LONG,
    TOO_LARGE,
    TRAP,
    LIMIT,
    FETCH_ERROR,
    NOFOLLOW,
    BLOCKED_BY_BOT_PROTECTION,
)

#: Each reason in plain words, for `sitemap-crawler explain`.
REASON_TEXT = {
    LISTED: "listed: a final 200 page of a listed type, indexable and canonical",
    ROBOTS_TXT: "not listed: robots.txt forbids fetching it (to us, or to a search engine "
    "named in the detail: search_engines)",
    META_NOINDEX: "not listed: the page's robots meta tag says noindex (to every robot, or "
    "to a search engine named in the detail)",
    HEADER_NOINDEX: "not listed: the X-Robots-Tag response header says noindex (to every "
    "robot, or to a search engine named in the detail)",
    CANONICALISED: "not listed: the page names another URL as its canonical",
    DUPLICATE_OF: "not listed: its body is byte-identical to a listed page's, whose URL "
    "is preferred (shallower, shorter, or smaller)",
    REDIRECT: "not listed: it redirects, by HTTP or as a redirect stub (a meta refresh of "
    "up to 5 s, or a page that is only a script setting location): only the final URL of a "
    "redirect can be listed",
    HTTP_ERROR: "not listed: the server did not answer 200",
    OUT_OF_SCOPE: "not listed: outside the sitemap's scheme, host, port and folder",
    EXCLUDED_BY_PATTERN: "not listed: excluded by the crawl's include, exclude or "
    "exclude_listing_only patterns",
    CONTENT_TYPE: "not listed: its Content-Type is not one of listed_types",
    TOO_LONG: "not listed: the URL is longer than max_url_length",
    TOO_LARGE: "not listed: the body is larger than max_page_bytes",
    TRAP: "not listed: it looks like a spider trap",
    LIMIT: "not listed: a crawl limit (max_pages, max_depth or max_time) was reached first",
    FETCH_ERROR: "not listed: it could not be fetched",
    NOFOLLOW: "not listed: only rel=nofollow links (or the links of nofollow pages) lead to "
    "it, which are not followed (follow_nofollow); the detail names one such page",
    BLOCKED_BY_BOT_PROTECTION: "not listed: a CDN's bot protection (named in the detail) "
    "answered with its challenge or block page instead of the site: the page was not seen, "
    "so it is neither analysed nor listed (allow our User-Agent in that service)",
}

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})

#: What an answer usually means, and what to do: the start URL's error line says it.
STATUS_HINTS = {
    401: f"the site wants credentials (--auth USER:PASSWORD, or ${AUTH_ENV})",
    407: "the proxy wants credentials (--proxy http://USER:PASSWORD@HOST:PORT)",
    403: "forbidden, by a firewall or a User-Agent filter?",
    404: "no page there, check the URL",
    410: "gone, check the URL",
}
#: The answers an option of ours fixes: each decision's detail names it too.
OPTION_STATUSES = frozenset({401, 407})
#: A 401 when credentials were given: the run's message knows, a decision's detail does not.
CREDENTIALS_REFUSED = "the site refused the credentials given (--auth)"


@dataclass(slots=True, frozen=True)
class Decision:
    """Why a URL is listed or left out: the reason counts in the report, the detail
    says which rule or answer."""

    reason: str
    detail: str = ""

    @property
    def listed(self) -> bool:
        return self.reason == LISTED


_LISTED = Decision(LISTED)  # frozen: one for every listed page


@dataclass(slots=True, frozen=True)
class Policy:
    """The switches of the decision, taken from the config (all on by default)."""

    listed_types: frozenset[str]
    respect_noindex: bool = True
    respect_canonical: bool = True
    skip_duplicates: bool = True
    follow_nofollow: bool = False
    # a start URL is fetched whatever `include` says (its links lead to the included pages),
    # but listed only if it matches; exclude_listing_only pages are fetched, never listed
    include: Patterns = NO_PATTERNS
    exclude_listing_only: Patterns = NO_PATTERNS
    # whether those patterns may leave a listable page out: asked of every page judged,
    # where each Patterns' truth is a call (#26), so kept, as Plan.identity is
    unlists: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "unlists", bool(self.include or self.exclude_listing_only))


@dataclass(slots=True)
class PageFacts:
    """What the crawl learnt about one fetched URL (after its redirects)."""

    url: str
    status: int
    mime: str = ""
    meta: Directives = Directives()
    header: Directives = Directives()
    canonical: str | None = None  # normalised, in the crawl's URL space
    canonical_in_scope: bool = True
    canonical_public: str | None = None  # the canonical as the sitemap names URLs (--public-url)
    twin_of: str | None = None  # another URL answered the same body first (see duplicates)
    too_large: bool = False
    public: str | None = None  # the URL as the sitemap would list it, when not `url`
    last_modified: str | None = None  # the Last-Modified header as sent (the audit's dates)
    # a search engine reading the sitemap whose robots.txt group disallows the URL, though
    # ours allows it (Screen.engine_denial): "for googlebot: Disallow: /g/ (line 3)"
    engine_denial: str | None = None
    # a redirect stub (crawler.core.stubs): its target as the sitemap names URLs, and how
    moved_to: str | None = None
    moved_by: str = ""


def decide_page(facts: PageFacts, policy: Policy) -> Decision:
    """The decision for a final response. Order matters: the first rule that excludes wins.

    A page listed here may still lose to a byte-identical twin once the crawl is over
    (DUPLICATE_OF, decided by crawler.core.duplicates): that needs every page, not this one."""
    if facts.status != 200:
        hint = STATUS_HINTS[facts.status] if facts.status in OPTION_STATUSES else ""
        return Decision(HTTP_ERROR, f"HTTP {facts.status}" + (f": {hint}" if hint else ""))
    if facts.too_large:
        return Decision(TOO_LARGE, "body larger than max_page_bytes")
    if facts.mime not in policy.listed_types:
        return Decision(CONTENT_TYPE, facts.mime or "no Content-Type")
    if facts.moved_to is not None:  # a redirect to search engines, as an HTTP one is
        return Decision(REDIRECT, f"{facts.moved_by} to {facts.moved_to}")
    if facts.engine_denial is not None:
        return Decision(ROBOTS_TXT, facts.engine_denial)
    if policy.respect_noindex:
        if facts.header.noindex:
            return Decision(HEADER_NOINDEX, facts.header.source)
        if facts.meta.noindex:
            return Decision(META_NOINDEX, facts.meta.source)
        if (told := facts.header.engine_noindex()) is not None:
            return Decision(HEADER_NOINDEX, engine_detail(*told))
        if (told := facts.meta.engine_noindex()) is not None:
            return Decision(META_NOINDEX, engine_detail(*told))
    if policy.respect_canonical and facts.canonical and facts.canonical != facts.url:
        where = "" if facts.canonical_in_scope else " (out of scope)"
        named = facts.canonical_public or facts.canonical
        return Decision(CANONICALISED, f"canonical is {named}{where}")
    if policy.unlists:
        unlisted = _unlisted_by_pattern(facts.public or facts.url, policy)
        if unlisted is not None:
            return unlisted
    return _LISTED


def awaits_canonical(facts: PageFacts, decision: Decision, policy: Policy) -> bool:
    """Whether a page canonicalised to a URL the crawl judges would be listed if that
    canonical were ignored, as search engines ignore a broken one (crawler.core.canonicals):
    then its decision waits for its target's."""
    if decision.reason != CANONICALISED or not facts.canonical_in_scope:
        return False
    return decide_page(replace(facts, canonical=None), policy).listed


def canonical_ignored(canonical: str, why: str) -> str:
    """The detail of a page listed although its canonical names another URL."""
    return f"its canonical {canonical} is ignored: {why} (canonical_broken)"


_CANONICAL_IGNORED = re.compile(r"its canonical (\S+) is ignored: (.*?) \(canonical_broken\)")


def canonical_ignored_parts(detail: str) -> tuple[str, str] | None:
    """(canonical, why) of a canonical_ignored detail (a resumed crawl's listings), or None."""
    m = _CANONICAL_IGNORED.match(detail)
    return None if m is None else (m[1], m[2])


def walled_detail(service: str, status: int) -> str:
    """The detail of an answer a bot wall gave (crawler.core.botwall): names the service."""
    return f"{service} answered HTTP {status} with its challenge or block page"


def nofollow_detail(page: str) -> str:
    """The detail of a URL only nofollow links lead to: one page linking to it."""
    return f"linked only by nofollow links, e.g. from {page}"


def engine_detail(engine: str, why: str) -> str:
    """The detail of a decision made for a search engine, not for us: names the engine."""
    return f"for {engine}: {why}"


def _unlisted_by_pattern(url: str, policy: Policy) -> Decision | None:
    """A page that would be listed, left out by the user's patterns (its links followed).
    Last of the rules, so the site's own signals (noindex, canonical) are named first, and
    so only pages that would be listed are affected."""
    path = path_and_query(url)
    pattern = policy.exclude_listing_only.match(path)
    if pattern is not None:  # first: what had the page fetched though include leaves it out
        return Decision(EXCLUDED_BY_PATTERN, f"exclude_listing_only {pattern}")
    if policy.include and policy.include.match(path) is None:
        return Decision(EXCLUDED_BY_PATTERN, not_included(policy.include))
    return None


def included(path: str, include: Patterns, listing_only: Patterns) -> bool:
    """Whether a URL (its path and query) passes the include screen and may be fetched: it
    matches an include pattern, or an exclude_listing_only one (a hub whose links lead to
    the included pages: fetched and followed, never listed)."""
    return include.match(path) is not None or listing_only.match(path) is not None


def not_included(include: Patterns) -> str:
    """The detail of a URL no include pattern matches."""
    return f"not matched by include {', '.join(include.texts)}"


def follows_links(facts: PageFacts, policy: Policy) -> bool:
    """Whether the page's links are crawled. A noindex page's links still are. A page that
    is not HTML has no links but the hreflang alternates of its Link headers."""
    if facts.status != 200 or facts.too_large:
        return False
    if policy.skip_duplicates and facts.twin_of:
        return False  # a twin's links are its first page's: also the soft-404 trap defence
    if policy.follow_nofollow:
        return True
    return not (facts.meta.nofollow or facts.header.nofollow)


def nofollow_links(
    facts: PageFacts, targets: Sequence[str], nofollow: Sequence[str], policy: Policy
) -> Sequence[str]:
    """The URLs a page leads to only by links not followed because they are nofollow: its
    rel=nofollow links, and all its links when the page itself says nofollow. They are met
    all the same, and get the decision `nofollow` unless a followed link leads there too."""
    if policy.follow_nofollow or facts.status != 200:
        return []
    if facts.meta.nofollow or facts.header.nofollow:
        return [*targets, *nofollow]
    return nofollow


def _segment_counts(path: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for segment in path.split("/"):
        if segment:
            counts[segment] = counts.get(segment, 0) + 1
    return counts


class SegmentRepeats:
    """Whether one segment of a path occurs more than `limit` times (/a/b/a/b/a/b/a/
    loops), answered by folder: a site's URLs share a few folders, whose segments each of
    their URLs repeats, and counting them all cost about 7 k instructions a URL, for every
    URL met (a night of 304s meets them all again, #26). A folder is kept with the segments
    one more would take past the limit, or None when it has one past it already: a path
    then costs a look-up and a test of its last segment. A trailing slash is not a
    segment (empty ones never count): /blog/post/ is post in /blog, so the folders of a
    site whose URLs end in a slash are shared too."""

    __slots__ = ("_folders", "_kept", "limit")

    def __init__(self, limit: int) -> None:
        if limit < 1:  # the config's floor: a segment met once is never past the limit
            raise ValueError(f"a segment limit of at least 1, not {limit}")
        self.limit = limit
        self._folders: dict[str, frozenset[str] | None] = {}
        self._kept = 0  # what the folders kept hold, about in bytes (_KEPT_MOST)

    def __call__(self, path: str) -> bool:
        folder, _, name = path.rstrip("/").rpartition("/")
        folders = self._folders
        known = folders[folder] if folder in folders else self._counted(folder)
        return known is None or name in known

    def _counted(self, folder: str) -> frozenset[str] | None:
        """Kept for the next paths in folder, within _KEPT_MOST."""
        counts = _segment_counts(folder)
        limit = self.limit
        known = (
            None
            if max(counts.values(), default=0) > limit
            else frozenset(segment for segment, n in counts.items() if n == limit)
        )
        size = _KEPT_EACH + len(folder) + sum(_KEPT_EACH + len(s) for s in known or ())
        if self._kept + size > _KEPT_MOST:
            self._folders.clear()  # a trap's endless folders: the memory stays bounded
            self._kept = 0
        self._folders[folder] = known
        self._kept += size
        return known


#: about what the folders SegmentRepeats keeps may hold, in bytes (a site has a few hundred
#: folders, a few KB; a trap or a hostile page, no end of long ones, #26), and what each
#: folder and each of its segments kept costs beyond its characters (the string, its slot)
_KEPT_MOST: Final = 1 << 20
_KEPT_EACH: Final = 100


class TrapBudgets:
    """Per-folder and per-path-query page budgets: the defence against calendars, faceted
    search and other URL spaces that never end. Counts only; no I/O."""

    __slots__ = ("_folders", "_paths", "_patterns", "cuts", "per_folder", "per_param")

    def __init__(self, per_folder: int = 0, per_param: int = 0) -> None:
        self.per_folder = per_folder
        self.per_param = per_param
        self._folders: dict[str, int] = {}
        self._paths: dict[str, int] = {}  # a path -> its URLs that differ only in the query
        self.cuts: dict[str, int] = {}  # a spent budget's reason -> URLs it refused
        self._patterns: dict[str, str] = {}  # a spent budget's reason -> the exclude for it

    def spend(self, url: str) -> str | None:
        """Count url against its budgets; the reason when one is spent (then nothing is
        counted), else None."""
        path, _, query = url.partition("?")
        folder = path[: path.rfind("/") + 1]
        why = None
        if self.per_folder and self._folders.get(folder, 0) >= self.per_folder:
            why = f"more than {self.per_folder} URLs in folder {folder} (max_pages_per_folder)"
            pattern = urlsplit(folder).path + "*"
        elif self.per_param and query and self._paths.get(path, 0) >= self.per_param:
            why = (
                f"more than {self.per_param} URLs of {path} that differ only in their query "
                "(max_pages_per_param)"
            )
            pattern = urlsplit(path).path + "?*"
        if why is not None:
            self.cuts[why] = self.cuts.get(why, 0) + 1
            self._patterns[why] = pattern
            return why
        if self.per_folder:
            self._folders[folder] = self._folders.get(folder, 0) + 1
        if self.per_param and query:
            self._paths[path] = self._paths.get(path, 0) + 1
        return None

    def warnings(self) -> list[str]:
        """A line per spent budget: a trap cut short is worth a look (a real catalogue
        past the budget wants it raised). The pages fetched before the cut stay listed (a
        shop's first facet pages are real pages, and a decision is never taken back once
        written), so the line says so, and names the exclude that leaves them all out."""
        return [
            f"trap: {cut}: {plural(count, 'URL')} not fetched; the "
            f"{self._budget(cut)} fetched before the cut are listed as usual (to leave them "
            f"all out: --exclude '{self._patterns[cut]}')"
            for cut, count in sorted(self.cuts.items())
        ]

    def _budget(self, cut: str) -> int:
        return self.per_folder if cut.endswith("(max_pages_per_folder)") else self.per_param


def depth_priority(depth: int) -> float:
    """priority = max(0.1, 0.8 ** depth), as in hand-made sitemaps where home is 1.0."""
    return round(max(0.1, 0.8**depth), 2)
