"""Robots meta, X-Robots-Tag and Link header parsing (crawler.core.directives)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.core.directives import (
    NO_DIRECTIVES,
    Directives,
    header_directives,
    link_header_canonical,
    meta_directives,
)

# --- meta robots ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tags", "noindex", "nofollow"),
    [
        pytest.param([], False, False, id="no-tags"),
        pytest.param([("robots", "index, follow")], False, False, id="index-follow"),
        pytest.param([("robots", "noindex")], True, False, id="noindex"),
        pytest.param([("robots", "nofollow")], False, True, id="nofollow"),
        pytest.param([("robots", "noindex, nofollow")], True, True, id="comma-list"),
        pytest.param([("robots", "none")], True, True, id="none"),
        pytest.param([("ROBOTS", "NOINDEX")], True, False, id="upper-case"),
        pytest.param([("Robots", " NoFollow ")], False, True, id="mixed-case-padded"),
        pytest.param([("robots", "noindex"), ("robots", "nofollow")], True, True, id="two-tags"),
        pytest.param([("robots", "noindex,nofollow")], True, True, id="no-space-after-comma"),
        pytest.param([("robots", "noindex nofollow")], True, True, id="space-separated"),
        pytest.param([("sitemap-crawler", "noindex")], True, False, id="our-name"),
        pytest.param([("Sitemap-Crawler", "NONE")], True, True, id="our-name-upper"),
        pytest.param([("robots", "index"), ("sitemap-crawler", "nofollow")], False, True, id="mix"),
        pytest.param([("googlebot", "noindex, nofollow")], False, False, id="googlebot-ignored"),
        pytest.param([("bingbot", "none")], False, False, id="bingbot-ignored"),
        pytest.param([("description", "noindex")], False, False, id="other-meta"),
        pytest.param([("robots", "")], False, False, id="empty-content"),
        pytest.param([("robots", None)], False, False, id="no-content"),
        pytest.param([(None, "noindex")], False, False, id="no-name"),
        pytest.param([("robots", "max-snippet:-1, noindex")], True, False, id="with-values"),
        pytest.param([("robots", "noindexer, nofollowing")], False, False, id="no-prefix-match"),
        pytest.param([("robots", "all")], False, False, id="all"),
    ],
)
def test_meta_directives(tags: list[tuple[str, str]], noindex: bool, nofollow: bool) -> None:
    result = meta_directives(tags)
    assert (result.noindex, result.nofollow) == (noindex, nofollow)
    assert bool(result.source) == (noindex or nofollow)


def test_meta_source_names_the_tags_that_restrict() -> None:
    result = meta_directives(
        [("description", "x"), ("robots", "noindex, follow"), ("robots", "max-snippet:2")]
    )
    assert result.source == 'meta robots "noindex, follow"'


def test_meta_custom_agent() -> None:
    assert meta_directives([("mybot", "noindex")], agent="MyBot").noindex
    assert not meta_directives([("sitemap-crawler", "noindex")], agent="mybot").noindex


# --- X-Robots-Tag --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "noindex", "nofollow"),
    [
        pytest.param([], False, False, id="no-header"),
        pytest.param(["noindex"], True, False, id="noindex"),
        pytest.param(["NoIndex"], True, False, id="case"),
        pytest.param(["noindex, nofollow"], True, True, id="comma-list"),
        pytest.param(["none"], True, True, id="none"),
        pytest.param(["noindex", "nofollow"], True, True, id="two-headers"),
        pytest.param(["all", "nofollow"], False, True, id="two-headers-one-restricts"),
        pytest.param(["sitemap-crawler: noindex"], True, False, id="agent-us"),
        pytest.param(["Sitemap-Crawler: NOFOLLOW"], False, True, id="agent-us-case"),
        pytest.param(["sitemap-crawler:noindex,nofollow"], True, True, id="agent-us-list"),
        pytest.param(["googlebot: noindex"], False, False, id="agent-other"),
        pytest.param(["googlebot: noindex, nofollow"], False, False, id="agent-other-list"),
        pytest.param(
            ["googlebot: noindex", "nofollow"], False, True, id="agent-other-then-generic-header"
        ),
        pytest.param(
            ["nofollow, googlebot: noindex"], False, True, id="generic-then-agent-same-header"
        ),
        pytest.param(
            ["googlebot: noindex, sitemap-crawler: nofollow"], False, True, id="agent-switch"
        ),
        pytest.param(
            ["unavailable_after: 25 Jun 2010 15:00:00 PST"], False, False, id="unavailable-after"
        ),
        pytest.param(
            ["unavailable_after: 25 Jun 2010 15:00:00 PST, noindex"],
            True,
            False,
            id="unavailable-after-not-an-agent",
        ),
        pytest.param(
            ["unavailable_after: Friday, 25-Jun-2010 15:00:00 PST, noindex"],
            True,
            False,
            id="date-with-comma",
        ),
        pytest.param(["max-snippet: 10, noindex"], True, False, id="max-snippet"),
        pytest.param(["max-image-preview: large, nofollow"], False, True, id="max-image-preview"),
        pytest.param(["max-video-preview: -1, none"], True, True, id="max-video-preview"),
        pytest.param(["googlebot: max-snippet: 10, noindex"], False, False, id="agent-and-value"),
        pytest.param(["noarchive, nosnippet"], False, False, id="other-flags"),
        pytest.param(["", " , ,"], False, False, id="empty"),
    ],
)
def test_header_directives(values: list[str], noindex: bool, nofollow: bool) -> None:
    result = header_directives(values)
    assert (result.noindex, result.nofollow) == (noindex, nofollow)


def test_header_source_quotes_the_header() -> None:
    result = header_directives(["noarchive", " noindex "])
    assert result.source == 'X-Robots-Tag "noindex"'


def test_header_custom_agent() -> None:
    assert header_directives(["GoogleBot: noindex"], agent="googlebot").noindex


@given(st.lists(st.sampled_from(["", "noindex", "googlebot: noindex", "none", "x"]), max_size=3))
def test_a_page_s_header_directives_are_header_directives(values: list[str]) -> None:
    """#26: analyse's shortcut for an answer without X-Robots-Tag (most) gives what
    header_directives gives for none; with any, header_directives' answer."""
    from multidict import CIMultiDict

    from crawler.core.page import PagePolicy, _header

    policy = PagePolicy("sitemap-crawler", engines=("googlebot", "bingbot"))
    headers = CIMultiDict(("X-Robots-Tag", value) for value in values)
    expected = header_directives(values, "sitemap-crawler", ("googlebot", "bingbot"))
    assert _header(headers, policy) == expected
    assert header_directives([], "sitemap-crawler", ("googlebot",)) is NO_DIRECTIVES


@given(st.lists(st.text(max_size=60), max_size=4))
def test_header_directives_never_raise(values: list[str]) -> None:
    header_directives(values)
    meta_directives([(v, v) for v in values])


# --- Directives.merge ----------------------------------------------------------------------------


def test_merge_is_or_and_joins_sources() -> None:
    meta = Directives(noindex=True, source='meta robots "noindex"')
    header = Directives(nofollow=True, source='X-Robots-Tag "nofollow"')
    merged = meta.merge(header)
    assert merged == Directives(True, True, 'meta robots "noindex"; X-Robots-Tag "nofollow"')


def test_merge_with_nothing_is_identity() -> None:
    meta = Directives(noindex=True, source='meta robots "noindex"')
    assert meta.merge(Directives()) == meta
    assert Directives().merge(meta) == meta
    assert Directives().merge(Directives()) == Directives()


# --- Link: rel=canonical -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        pytest.param([], None, id="no-header"),
        pytest.param(['<https://e.com/a>; rel="canonical"'], "https://e.com/a", id="quoted"),
        pytest.param(["<https://e.com/a>; rel=canonical"], "https://e.com/a", id="bare"),
        pytest.param(["<https://e.com/a>;rel=Canonical"], "https://e.com/a", id="case-no-space"),
        pytest.param(['</a>; rel = "canonical"'], "/a", id="relative-bws"),
        pytest.param(
            ['<https://e.com/a>; rel="alternate canonical"'], "https://e.com/a", id="multi-rel"
        ),
        pytest.param(
            ['</p.pdf>; rel="preload"; as="x", </c>; rel="canonical"'], "/c", id="second-link"
        ),
        pytest.param(['</x>; rel="preload"', '</c>; rel="canonical"'], "/c", id="second-header"),
        pytest.param(['</a>; rel="canonical", </b>; rel="canonical"'], "/a", id="first-wins"),
        pytest.param(['</a,b>; rel="canonical"'], "/a,b", id="comma-in-url"),
        pytest.param(
            ['</a>; title="x, rel=canonical"; rel="next", </b>; rel=canonical'],
            "/b",
            id="comma-and-rel-in-quoted-title",
        ),
        pytest.param(['</a>; rel="next"; rel="canonical"'], None, id="later-rel-ignored"),
        pytest.param(['</a>; rel="canonicalize"'], None, id="no-prefix-match"),
        pytest.param(['</a>; rel="alternate"'], None, id="other-rel"),
        pytest.param(['</a>; anchor="/other"; rel="canonical"'], None, id="anchor-elsewhere"),
        pytest.param(['<>; rel="canonical"'], None, id="empty-target"),
        pytest.param(['< /a >; rel="canonical"'], "/a", id="target-whitespace"),
        pytest.param(['</a>;; rel="canonical";'], "/a", id="stray-semicolons"),
        pytest.param(['garbage, </a>; rel="canonical"'], "/a", id="junk-before"),
        pytest.param(['</x> junk; rel="canonical", </a>; rel=canonical'], "/a", id="junk-inside"),
        pytest.param(['</a; rel="canonical"'], None, id="unterminated-target"),
        pytest.param(['</a>; rel="canonical'], None, id="unterminated-quote-is-malformed"),
        pytest.param([""], None, id="empty-header"),
        pytest.param(['</a>; rel="c\\anonical"'], "/a", id="quoted-pair"),
    ],
)
def test_link_header_canonical(values: list[str], expected: str | None) -> None:
    assert link_header_canonical(values) == expected


@given(st.lists(st.text(alphabet='<>;,="\\ \tarelcanonical/x', max_size=80), max_size=3))
def test_link_header_never_raises(values: list[str]) -> None:
    result = link_header_canonical(values)
    assert result is None or result == result.strip()
