"""Rendering's decisions, pure: which browser requests may leave, which pages to render under
`render = "auto"`, and what a rendered page says that its raw HTML did not.

The shell (crawler.shell.browser) drives the browser; everything here is a function of plain
data, so the rules are tested without one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from crawler.core.directives import Directives
from crawler.core.mime import parse_content_type
from crawler.core.robots import RobotsTxt
from crawler.core.urls import resolve

__all__ = [
    "AUTO_SAMPLE",
    "NAVIGATED",
    "AutoRender",
    "directives_note",
    "is_app_shell",
    "navigated_to",
    "refused",
]

#: Pages rendered both ways before `auto` decides for the rest of the crawl.
AUTO_SAMPLE = 5
#: Rendering is kept when it finds at least this fraction more in-scope links than the raw
#: HTML over the sample (and at least one): a menu built by script is material, a widget's
#: one extra link on some pages is not worth a browser.
AUTO_MORE = 0.2
#: An app shell's body holds less visible text than this (characters, whitespace collapsed).
SHELL_TEXT = 200
#: Resource types the browser never fetches: a page's links do not depend on them.
SKIPPED_TYPES = frozenset({"image", "media", "font", "imageset", "texttrack", "beacon", "ping"})
#: Resource types whose answers are kept for the whole crawl: a site's bundle is the same on
#: every page, and asking for it once is what a browser's cache (and Google's) does.
CACHED_TYPES = frozenset({"script", "stylesheet"})


def refused(
    url: str,
    method: str,
    resource_type: str,
    origin: str,
    hosts: Iterable[str],
    robots: RobotsTxt,
    user_agent: str,
) -> str | None:
    """Why the browser may not make this request (a word for the report's counts), or None
    when it may: a GET of the crawl's origin that robots.txt allows, or of an allowed asset
    origin, for a resource a page's links may depend on."""
    if resource_type in SKIPPED_TYPES:
        return "resource_type"
    if method != "GET":  # a crawler changes nothing on the site
        return "method"
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("http", "https"):
        return "scheme"
    request_origin = f"{scheme}://{rest.split('/', 1)[0].split('?', 1)[0].split('#', 1)[0]}"
    request_origin = _default_port(request_origin.lower())
    if request_origin == _default_port(origin):
        if not robots.can_fetch(url, user_agent):
            return "robots_txt"
        return None
    if request_origin in {_default_port(h) for h in hosts}:
        return None
    return "host"


def _default_port(origin: str) -> str:
    return (
        origin.removesuffix(":443") if origin.startswith("https:") else origin.removesuffix(":80")
    )


def is_app_shell(body: bytes, content_type: str | None) -> bool:
    """A page whose HTML is an empty frame for a script bundle: a body with (almost) no text
    and a <script src>. Its links are written by the script, so `auto` renders it whatever
    the sample decided."""
    from selectolax.lexbor import LexborHTMLParser  # only when rendering decides (#26)

    _, charset = parse_content_type(content_type)
    try:
        text = body.decode(charset or "utf-8", errors="replace")
    except LookupError:
        text = body.decode("utf-8", errors="replace")
    tree = LexborHTMLParser(text)
    if tree.css_first("script[src]") is None:
        return False
    node = tree.body
    if node is None:
        return True
    for dropped in node.css("script, style, noscript, template"):
        dropped.decompose()
    visible = " ".join((node.text(separator=" ") or "").split())
    return len(visible) < SHELL_TEXT


@dataclass(slots=True)
class AutoRender:
    """`render = "auto"`: the first AUTO_SAMPLE HTML pages are rendered, their links compared
    with the raw HTML's; then rendering goes on only if it found materially more."""

    sample: int = AUTO_SAMPLE
    raw: set[str] = field(default_factory=set)  # in-scope links found in the raw HTML
    rendered: set[str] = field(default_factory=set)  # and in the rendered DOM
    seen: int = 0  # pages compared
    decided: bool | None = None  # None while sampling
    why: str = ""

    @property
    def sampling(self) -> bool:
        return self.decided is None

    def wants(self, shell: bool | Callable[[], bool]) -> bool:
        """Render this page? Every page while sampling, then as decided; an app shell always.
        `shell` may be a test run only when the answer depends on it (it parses the page)."""
        if self.decided is None or self.decided:
            return True
        return shell() if callable(shell) else shell

    def observe(self, raw: Iterable[str], rendered: Iterable[str]) -> bool:
        """One sampled page's in-scope links, both ways. True when this page settles the
        decision (then `decided` and `why` say it)."""
        if self.decided is not None:
            return False
        self.raw.update(raw)
        self.rendered.update(rendered)
        self.seen += 1
        if self.seen < self.sample:
            return False
        self.settle()
        return True

    def settle(self) -> None:
        """Decide on what was sampled (also when the crawl ends before the sample is full)."""
        if self.decided is not None:
            return
        more = len(self.rendered - self.raw)
        needed = max(1, round(len(self.raw) * AUTO_MORE))
        pages = f"{self.seen} page{'s' if self.seen != 1 else ''}"
        found = (
            f"over the first {pages}, the raw HTML had {len(self.raw)} in-scope links, "
            f"the rendered pages {more} more"
        )
        if more >= needed:
            self.decided = True
            self.why = f"rendering every page: {found} (at least {needed} needed)"
        else:
            self.decided = False
            self.why = (
                f"rendering only app shells: {found} (fewer than {needed}: not worth a browser)"
            )


def directives_note(raw: Directives, rendered: Directives) -> str | None:
    """A note for the decision's detail when the robots meta of the rendered page differs
    from the raw HTML's: the rendered one is followed (as Google does for noindex)."""
    if (raw.noindex, raw.nofollow) == (rendered.noindex, rendered.nofollow):
        return None

    def said(d: Directives) -> str:
        words = [w for w, on in (("noindex", d.noindex), ("nofollow", d.nofollow)) if on]
        return ", ".join(words) or "index, follow"

    return (
        f"robots meta differs once rendered: raw HTML {said(raw)}, rendered {said(rendered)}; "
        f"the rendered page's is followed"
    )


#: How a page that navigated away while rendering is named in its redirect decision.
NAVIGATED = "its script navigated while rendering"


def navigated_to(url: str, navigation: str | None, strip: tuple[str, ...] = ()) -> str | None:
    """Where a rendered page sent the browser while it loaded (the navigation the browser
    was refused), normalised as links are; None when it went nowhere else. Google renders
    such a page as a redirect to that URL (crawler.core.stubs has the raw HTML's)."""
    if navigation is None:
        return None
    target = resolve(url, navigation, strip)
    return None if target is None or target == url else target
