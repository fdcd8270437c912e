"""The engine's seen-set fast path must never send a link to the wrong URL.

It joins hrefs to the base by string operations and looks the result up among URLs met,
which are all normalised; so whenever the cheap join is already a normalised URL, it must
be exactly what the full resolve() gives.
"""

from __future__ import annotations

import contextlib

from hypothesis import example, given, settings
from hypothesis import strategies as st

from crawler.core.urls import join_exactly, join_parts, normalize, resolve, resolve_links
from crawler.errors import InvalidURLError

segment = st.sampled_from(["a", "b", "..", ".", "", "%7E", "~x", "p.html", "q=1", "é", "A"])
href = st.builds(
    lambda prefix, parts, query, frag: prefix + "/".join(parts) + query + frag,
    st.sampled_from(
        ["", "/", "//", "../", "../../", "./", "http://h:1/", "https://H/", "?", "#", "mailto:"]
    ),
    st.lists(segment, max_size=5),
    st.sampled_from(["", "?x=1", "?", "?a&b"]),
    st.sampled_from(["", "#", "#f"]),
)
base = st.sampled_from(
    [
        "http://h:1/",
        "http://h:1/a/b/c.html",
        "http://h:1/a/b/",
        "http://h:1/a/b/c.html?q=1",
        "https://x.example/docs/index.html",
        "http://h:1/a.html",
    ]
)
# hrefs in the forms resolve_links joins inline, and their edges
inline_forms = st.sampled_from(
    ["h", "http://h:1/a", "/0", "/#", "/\\a", "../", "../?q", "../.x", "../#f", "..", "..x",
     "//h:1", "//h:1/a/b", "/-a", "#", "#f", "mailto:", "mailto:a@b", " mailto:a", "MAILTO:a"]
)  # fmt: skip


@settings(max_examples=3000)
@given(href=href, base=base)
@example(href="../../../u", base="http://h:1/a/b/c.html")
@example(href="#f", base="http://h:1/a/b/c.html?q=1")
def test_cheap_join_agrees_with_resolve_whenever_it_is_normal(href: str, base: str) -> None:
    candidate = join_exactly(href, base, *join_parts(base))
    if candidate is None:
        return
    try:
        is_normal = normalize(candidate) == candidate
    except InvalidURLError:
        return
    if is_normal:
        assert candidate == resolve(base, href)


@settings(max_examples=1000)
@given(
    hrefs=st.lists(href | inline_forms, max_size=8),
    met=st.lists(href, max_size=8),
    base=base,
)
def test_resolve_links_agrees_with_resolve(hrefs: list[str], met: list[str], base: str) -> None:
    """The page's loop, its inlined forms included, gives what resolve() gives each href,
    whatever the normalised URLs already known."""
    known = {url: None for url in (resolve(base, h) for h in met + hrefs[::2]) if url}
    expected = [url for url in (resolve(base, h) for h in hrefs) if url is not None]
    assert resolve_links(base, hrefs, (), known) == list(dict.fromkeys(expected))


def _near_misses(base: str, hrefs: list[str]) -> set[str]:
    """Every normalised URL a string join could wrongly land on: the base's prefixes joined
    to the hrefs' suffixes (an inline join off by a folder or a slash is among them)."""
    near = set()
    for href_ in hrefs:
        for i in range(len(base) + 1):
            for j in range(len(href_) + 1):
                with contextlib.suppress(InvalidURLError):
                    url = base[:i] + href_[j:]
                    if url.startswith(("http://", "https://")) and normalize(url) == url:
                        near.add(url)
    return near


@settings(max_examples=300)
@given(hrefs=st.lists(href | inline_forms, max_size=6), base=base)
@example(hrefs=["../a/", "../", "//h:1/a", "/a", "#f"], base="http://h:1/")
@example(hrefs=["../a/", "../?q", "../"], base="http://h:1/a/b/c.html?q=1")
def test_resolve_links_never_lands_on_another_known_url(hrefs: list[str], base: str) -> None:
    """With every URL a join off by a folder or a slash could give known too, the loop
    still gives resolve()'s: a wrong inline join is caught even when it lands on a URL met."""
    expected = [url for url in (resolve(base, h) for h in hrefs) if url is not None]
    known = dict.fromkeys([*expected, *_near_misses(base, hrefs)])
    assert resolve_links(base, hrefs, (), known) == list(dict.fromkeys(expected))


@settings(max_examples=1000)
@given(hrefs=st.lists(href | inline_forms, max_size=8), base=base)
def test_resolve_links_agrees_with_resolve_when_every_url_is_known(
    hrefs: list[str], base: str
) -> None:
    """Every inline join a hit (a crawl's navigation, met before): still resolve()'s URLs."""
    expected = [url for url in (resolve(base, h) for h in hrefs) if url is not None]
    known = dict.fromkeys(expected)
    assert resolve_links(base, hrefs, (), known) == list(dict.fromkeys(expected))
