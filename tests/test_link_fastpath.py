"""The engine's seen-set fast path must never send a link to the wrong URL.

It joins hrefs to the base by string operations and looks the result up among URLs met,
which are all normalised; so whenever the cheap join is already a normalised URL, it must
be exactly what the full resolve() gives.
"""

from __future__ import annotations

import contextlib

from hypothesis import example, given, settings
from hypothesis import strategies as st

from crawler.core import urls
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


other_base = st.sampled_from(
    [
        "http://h:1/",
        "http://h:1/a/",
        "http://h:1/a/b/c.html",
        "http://h:1/x/y/z/",
        "http://h:1/a/b/c.html?q=1",
        "https://h:1/a/b/",
        "http://h:2/a/b/",
        "https://x.example/docs/index.html",
    ]
)


@settings(max_examples=400)  # near misses of up to 5 pages
@given(
    pages=st.lists(
        st.tuples(other_base, st.lists(href | inline_forms, max_size=6)), min_size=2, max_size=5
    ),
    strip=st.sampled_from([(), ("q",)]),
)
@example(
    pages=[("http://h:1/a/b/c.html", ["../x", "/x", "x"]), ("http://h:1/", ["../x", "/x", "x"])],
    strip=(),
)
@example(pages=[("http://h:1/a/", ["//h:1/a", "/a"]), ("https://h:1/a/", ["//h:1/a"])], strip=())
def test_resolve_links_memo_serves_each_page_its_own_answer(
    pages: list[tuple[str, list[str]]], strip: tuple[str, ...]
) -> None:
    """resolve_links memoises the known joins the origin alone decides, for the pages after:
    across pages of other folders, schemes, ports and origins, with every near miss known,
    each page still gets what an unmemoised resolve gives its hrefs (urls._resolve: resolve()
    itself answers from the same memo). The URLs known are a crawl's: stripped too."""
    urls.clear_resolve_cache()
    answers = [[urls._resolve(base, h, strip) for h in hrefs] for base, hrefs in pages]
    met = [url for page in answers for url in page if url is not None]
    near = {url for base, hrefs in pages for url in _near_misses(base, hrefs)}
    near = {url for url in near if urls.strip_params(url, strip) == url}  # as a crawl's are
    known = dict.fromkeys([*met, *near])
    for _ in range(2):
        for (base, hrefs), expected in zip(pages, answers, strict=True):
            found = [url for url in expected if url is not None]
            assert resolve_links(base, hrefs, strip, known) == list(dict.fromkeys(found))
