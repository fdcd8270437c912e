"""Table-driven tests for crawler.core.urls: one table per rule of issues #3 and #4."""

from __future__ import annotations

import dataclasses
from types import ModuleType

import pytest

from crawler.core.urls import (
    DEFAULT_STRIP_PARAMS,
    OriginMap,
    OutOfScopeError,
    Scope,
    clear_resolve_cache,
    normalize,
    resolve,
    resolve_links,
    strip_params,
    url_folder,
)
from crawler.errors import InvalidURLError, SitemapCrawlerError


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    clear_resolve_cache()


# --- normalize -------------------------------------------------------------------------------

NORMALIZE = [
    # scheme and host case
    ("HTTP://Example.COM/", "http://example.com/"),
    ("hTTpS://WWW.Example.com/Path/Keeps/Case", "https://www.example.com/Path/Keeps/Case"),
    # empty path
    ("http://example.com", "http://example.com/"),
    ("http://example.com?q=1", "http://example.com/?q=1"),
    ("http://example.com#top", "http://example.com/"),
    # ports
    ("http://example.com:80/", "http://example.com/"),
    ("https://example.com:443/", "https://example.com/"),
    ("http://example.com:443/", "http://example.com:443/"),
    ("https://example.com:80/", "https://example.com:80/"),
    ("http://example.com:8080/a", "http://example.com:8080/a"),
    ("http://example.com:/a", "http://example.com/a"),
    ("http://example.com:0080/a", "http://example.com/a"),
    ("http://example.com:08080/a", "http://example.com:8080/a"),
    ("http://127.0.0.1:8080", "http://127.0.0.1:8080/"),
    ("http://[::1]:8080/", "http://[::1]:8080/"),
    ("http://[0:0:0:0:0:0:0:1]/", "http://[::1]/"),
    ("http://[2001:DB8::1]:443/", "http://[2001:db8::1]:443/"),
    # dot segments (RFC 3986 5.2.4)
    ("http://e.com/a/./b", "http://e.com/a/b"),
    ("http://e.com/a/../b", "http://e.com/b"),
    ("http://e.com/../../b", "http://e.com/b"),
    ("http://e.com/a/b/..", "http://e.com/a/"),
    ("http://e.com/a/b/.", "http://e.com/a/b/"),
    ("http://e.com/a/.b/..c/c.", "http://e.com/a/.b/..c/c."),
    ("http://e.com/a/%2E%2E/b", "http://e.com/b"),
    ("http://e.com/a/%2e/b", "http://e.com/a/b"),
    ("http://e.com/a/b?x=/../c", "http://e.com/a/b?x=/../c"),
    ("http://e.com/a//b/../c", "http://e.com/a//c"),
    # percent-encoding: unreserved decoded, hex upper-cased, reserved kept as they are
    ("http://e.com/%7Euser/", "http://e.com/~user/"),
    ("http://e.com/%7euser/", "http://e.com/~user/"),
    ("http://e.com/%41%62%2D%5F%2E%30", "http://e.com/Ab-_.0"),
    ("http://e.com/a%2fb", "http://e.com/a%2Fb"),
    ("http://e.com/a%2Fb%3f%23", "http://e.com/a%2Fb%3F%23"),
    ("http://e.com/%c3%bc", "http://e.com/%C3%BC"),
    ("http://e.com/ümlat.html", "http://e.com/%C3%BCmlat.html"),
    ("http://e.com/a b", "http://e.com/a%20b"),
    ("http://e.com/€", "http://e.com/%E2%82%AC"),
    ("http://e.com/日本", "http://e.com/%E6%97%A5%E6%9C%AC"),
    ("http://e.com/😀", "http://e.com/%F0%9F%98%80"),
    ('http://e.com/<a>"{|}^`\\', "http://e.com/%3Ca%3E%22%7B%7C%7D%5E%60%5C"),
    ("http://e.com/[x]", "http://e.com/%5Bx%5D"),
    ("http://e.com/100%", "http://e.com/100%25"),
    ("http://e.com/%zz%4", "http://e.com/%25zz%254"),
    ("http://e.com/%25", "http://e.com/%25"),
    ("http://e.com/!$&'()*+,;=:@", "http://e.com/!$&'()*+,;=:@"),
    # query: verbatim apart from percent-encoding; order and reserved escapes kept
    ("http://e.com/?b=2&a=1", "http://e.com/?b=2&a=1"),
    ("http://e.com/?a=%26&b=%3D&c=%2F", "http://e.com/?a=%26&b=%3D&c=%2F"),
    ("http://e.com/?a=%7e%2d", "http://e.com/?a=~-"),
    ("http://e.com/?q=a b&r=ü", "http://e.com/?q=a%20b&r=%C3%BC"),
    ("http://e.com/?q=a+b", "http://e.com/?q=a+b"),
    ("http://e.com/?q=?/x", "http://e.com/?q=?/x"),
    ("http://e.com/?a=%2b", "http://e.com/?a=%2B"),
    ("http://e.com/?a=1&a=1&", "http://e.com/?a=1&a=1&"),
    # empty query is kept distinct (search engines treat /a? and /a as two URLs)
    ("http://e.com/a?", "http://e.com/a?"),
    ("http://e.com/a?#x", "http://e.com/a?"),
    # fragments dropped
    ("http://e.com/a#b?c", "http://e.com/a"),
    ("http://e.com/a?b#c", "http://e.com/a?b"),
    # IDNA
    ("http://bücher.de/", "http://xn--bcher-kva.de/"),
    ("http://BÜCHER.de/", "http://xn--bcher-kva.de/"),
    ("http://Bücher.DE/", "http://xn--bcher-kva.de/"),
    ("http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/"),
    ("http://XN--BCHER-KVA.DE/", "http://xn--bcher-kva.de/"),
    ("http://straße.de/", "http://xn--strae-oqa.de/"),  # non-transitional, like browsers
    ("http://例え.テスト/", "http://xn--r8jz45g.xn--zckzah/"),
    ("http://ｅｘａｍｐｌｅ.com/", "http://example.com/"),  # UTS 46 mapping of full-width
    ("http://www.bücher.de:8080/ü", "http://www.xn--bcher-kva.de:8080/%C3%BC"),
    ("http://b%C3%BCcher.de/", "http://xn--bcher-kva.de/"),
    # host odds and ends
    ("http://my_host.example.com/", "http://my_host.example.com/"),
    ("http://example.com./", "http://example.com./"),
    ("http://localhost/", "http://localhost/"),
    ("http://192.168.0.1/", "http://192.168.0.1/"),
]


@pytest.mark.parametrize(("url", "expected"), NORMALIZE)
def test_normalize(url: str, expected: str) -> None:
    assert normalize(url) == expected
    assert normalize(expected) == expected


def test_one_page_three_spellings() -> None:
    base = normalize("http://example.com/")
    spellings = {
        normalize("http://example.com/~user/"),
        normalize("http://example.com/%7Euser/"),
        normalize("http://example.com/./~user/"),
        resolve(base, "~user/"),
        resolve(base, "%7Euser/"),
        resolve(base, "./~user/"),
        resolve(base, "%7euser/"),
    }
    assert spellings == {"http://example.com/~user/"}


INVALID = [
    ("", "no scheme"),
    ("example.com/docs", "no scheme"),
    ("/docs/", "no scheme"),
    ("//example.com/", "no scheme"),
    ("ftp://example.com/", "unsupported scheme 'ftp'"),
    ("mailto:a@example.com", "unsupported scheme 'mailto'"),
    ("javascript:alert(1)", "unsupported scheme 'javascript'"),
    ("file:///etc/passwd", "unsupported scheme 'file'"),
    ("http:/example.com/", "no host"),
    ("http:example.com", "no host"),
    ("http://", "no host"),
    ("http:///a", "no host"),
    ("http://:80/", "no host"),
    ("http://?q", "no host"),
    ("http://user@example.com/", "userinfo"),
    ("http://user:pw@example.com/", "userinfo"),
    ("http://@example.com/", "userinfo"),
    ("http://example.com:abc/", "bad port"),
    ("http://example.com:65536/", "bad port"),
    ("http://example.com:0/", "bad port"),
    ("http://example.com:-1/", "bad port"),
    ("http://example.com:８０/", "bad port"),
    ("http://example.com:80:80/", "bad port"),
    ("http://exa mple.com/", "invalid host"),
    ("http://exa<mple.com/", "invalid host"),
    ("http://a..b/", "invalid host"),
    ("http://.example.com/", "invalid host"),
    ("http://" + "a" * 64 + ".com/", "invalid host"),
    ("http://" + "a." * 127 + "com/", "longer than 253"),
    ("http://xn--abc-.de/", "punycode"),
    ("http://xn--a.com/", "punycode"),
    ("http://b%FFcher.de/", "invalid host"),
    ("http://\u200b\u0000.com/", "control character"),
    ("http://exa\u00admple\ufffd.com/", "IDNA"),
    ("http://256.1.1.1/", "IPv4"),
    ("http://1.2.3/", "IPv4"),
    ("http://example.123/", "IPv4"),
    ("http://0x7f.1/", "IPv4"),
    ("http://[::1/", "IPv6"),
    ("http://[::g]/", "IPv6"),
    ("http://[::1]x/", "IPv6"),
    ("http://[fe80::1%25eth0]/", "IPv6"),
    ("http://example.com/a\nb", "control character"),
    ("http://example.com/a\tb", "control character"),
    ("http://example.com/\x00", "control character"),
    ("http://example.com/\x7f", "control character"),
    (" http://example.com/", "no scheme"),
    ("http://example.com/ \n", "control character"),
    ("http://example.com/\ud800", "surrogate"),
]


@pytest.mark.parametrize(("url", "reason"), INVALID)
def test_normalize_rejects(url: str, reason: str) -> None:
    with pytest.raises(InvalidURLError) as caught:
        normalize(url)
    message = str(caught.value)
    assert reason in message
    if "://" in url and "@" in url:  # named, but never with its userinfo (a password?)
        assert repr("http://***@" + url.split("@", 1)[1]) in message
    else:
        assert repr(url) in message, "the message names the URL"
    assert "\n" not in message, "one line"
    assert caught.value.exit_code == 2
    assert isinstance(caught.value, ValueError)


# --- resolve ---------------------------------------------------------------------------------

RFC_BASE = "http://a/b/c/d;p?q"

# RFC 3986 5.4.1, fragments dropped; "g:h" is not http(s) so it is unusable here.
RFC_NORMAL = [
    ("g:h", None),
    ("g", "http://a/b/c/g"),
    ("./g", "http://a/b/c/g"),
    ("g/", "http://a/b/c/g/"),
    ("/g", "http://a/g"),
    ("//g", "http://g/"),
    ("?y", "http://a/b/c/d;p?y"),
    ("g?y", "http://a/b/c/g?y"),
    ("#s", "http://a/b/c/d;p?q"),
    ("g#s", "http://a/b/c/g"),
    ("g?y#s", "http://a/b/c/g?y"),
    (";x", "http://a/b/c/;x"),
    ("g;x", "http://a/b/c/g;x"),
    ("g;x?y#s", "http://a/b/c/g;x?y"),
    ("", "http://a/b/c/d;p?q"),
    (".", "http://a/b/c/"),
    ("./", "http://a/b/c/"),
    ("..", "http://a/b/"),
    ("../", "http://a/b/"),
    ("../g", "http://a/b/g"),
    ("../..", "http://a/"),
    ("../../", "http://a/"),
    ("../../g", "http://a/g"),
]

# RFC 3986 5.4.2; "http:g" takes the backward-compatible reading, as browsers do.
RFC_ABNORMAL = [
    ("../../../g", "http://a/g"),
    ("../../../../g", "http://a/g"),
    ("/./g", "http://a/g"),
    ("/../g", "http://a/g"),
    ("g.", "http://a/b/c/g."),
    (".g", "http://a/b/c/.g"),
    ("g..", "http://a/b/c/g.."),
    ("..g", "http://a/b/c/..g"),
    ("./../g", "http://a/b/g"),
    ("./g/.", "http://a/b/c/g/"),
    ("g/./h", "http://a/b/c/g/h"),
    ("g/../h", "http://a/b/c/h"),
    ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
    ("g;x=1/../y", "http://a/b/c/y"),
    ("g?y/./x", "http://a/b/c/g?y/./x"),
    ("g?y/../x", "http://a/b/c/g?y/../x"),
    ("g#s/./x", "http://a/b/c/g"),
    ("g#s/../x", "http://a/b/c/g"),
    ("http:g", "http://a/b/c/g"),
]


@pytest.mark.parametrize(("href", "expected"), RFC_NORMAL + RFC_ABNORMAL)
def test_resolve_rfc3986_examples(href: str, expected: str | None) -> None:
    assert resolve(RFC_BASE, href) == expected
    assert resolve(RFC_BASE, href) == expected, "memoised answer is the same"


BASE = "https://www.example.com/docs/guide/page.html?x=1"

RESOLVE = [
    # whitespace as browsers treat it
    ("  page2.html  ", "https://www.example.com/docs/guide/page2.html"),
    ("\n\t/a\r\n", "https://www.example.com/a"),
    ("/a\tb\nc\rd", "https://www.example.com/abcd"),
    ("\x00\x1f/a\x0c", "https://www.example.com/a"),
    (" ?y ", "https://www.example.com/docs/guide/page.html?y"),
    ("   ", "https://www.example.com/docs/guide/page.html?x=1"),
    (" #top", "https://www.example.com/docs/guide/page.html?x=1"),
    ("a b.html", "https://www.example.com/docs/guide/a%20b.html"),
    # scheme filtering
    ("mailto:someone@example.com", None),
    ("MAILTO:someone@example.com", None),
    ("javascript:void(0)", None),
    (" JavaScript:void(0)", None),
    ("java\nscript:alert(1)", None),
    ("tel:+441234567", None),
    ("data:text/html,<p>x</p>", None),
    ("ftp://example.com/file", None),
    ("file:///etc/passwd", None),
    ("urn:isbn:0451450523", None),
    ("c:/windows", None),
    # absolute and scheme-relative
    ("http://Other.example.org:80/x#y", "http://other.example.org/x"),
    ("HTTPS://WWW.EXAMPLE.COM/Docs/", "https://www.example.com/Docs/"),
    ("//cdn.example.com/lib.js", "https://cdn.example.com/lib.js"),
    ("///cdn.example.com/lib.js", "https://cdn.example.com/lib.js"),
    ("https:other.example.org/x", "https://www.example.com/docs/guide/other.example.org/x"),
    ("http:other.example.org/x", "http://other.example.org/x"),
    ("https:/x", "https://www.example.com/x"),
    ("http:///other.example.org/", "http://other.example.org/"),
    # backslashes count as slashes before the query, as in browsers
    ("\\\\evil.example\\x", "https://evil.example/x"),
    ("/a\\b?c\\d", "https://www.example.com/a/b?c%5Cd"),
    ("..\\x", "https://www.example.com/docs/x"),
    # relative forms
    ("../", "https://www.example.com/docs/"),
    ("../../../../", "https://www.example.com/"),
    ("?", "https://www.example.com/docs/guide/page.html?"),
    ("?x=2", "https://www.example.com/docs/guide/page.html?x=2"),
    ("./?x=2", "https://www.example.com/docs/guide/?x=2"),
    ("#", "https://www.example.com/docs/guide/page.html?x=1"),
    ("page.html#section", "https://www.example.com/docs/guide/page.html"),
    ("%2e%2e/", "https://www.example.com/docs/"),
    ("ümlat.html", "https://www.example.com/docs/guide/%C3%BCmlat.html"),
    ("/%7Euser/?q=%c3%bc", "https://www.example.com/~user/?q=%C3%BC"),
    ("./a:b", "https://www.example.com/docs/guide/a:b"),
    # Unicode hosts in links
    ("https://bücher.de/ü", "https://xn--bcher-kva.de/%C3%BC"),
    ("//BÜCHER.de", "https://xn--bcher-kva.de/"),
    # unusable: never raises, returns None
    ("http://", None),
    ("http://user:pw@example.com/", None),
    ("http://exa mple.com/", None),
    ("http://example.com:99999/", None),
    ("//", None),
    ("http://[::1/", None),
    ("/a\x00b", None),
    ("/\ud800", None),
    ("http://xn--abc-.de/", None),
]


@pytest.mark.parametrize(("href", "expected"), RESOLVE)
def test_resolve(href: str, expected: str | None) -> None:
    assert resolve(BASE, href) == expected
    assert resolve(BASE, href) == expected


def test_resolve_memo_respects_what_the_result_depends_on() -> None:
    """One memo serves every page, but never hands one page's answer to another page."""
    a = "https://e.com/docs/a.html?p=1"
    b = "https://e.com/docs/sub/b.html?p=2"
    c = "http://e.com:8080/docs/a.html"
    for _ in range(2):
        assert resolve(a, "x.html") == "https://e.com/docs/x.html"
        assert resolve(b, "x.html") == "https://e.com/docs/sub/x.html"
        assert resolve(a, "/x") == "https://e.com/x"
        assert resolve(c, "/x") == "http://e.com:8080/x"
        assert resolve(a, "//h/x") == "https://h/x"
        assert resolve(c, "//h/x") == "http://h/x"
        assert resolve(a, "?q") == "https://e.com/docs/a.html?q"
        assert resolve("https://e.com/docs/b.html", "?q") == "https://e.com/docs/b.html?q"
        assert resolve(a, "") == a
        assert resolve(b, "") == b
        assert resolve(a, " ?q") == "https://e.com/docs/a.html?q"
        assert resolve(b, " ?q") == "https://e.com/docs/sub/b.html?q"
        assert resolve(a, "https:?q") == "https://e.com/docs/a.html?q"
        assert resolve(b, "https:?q") == "https://e.com/docs/sub/b.html?q"
        assert resolve(c, "https:?q") is None  # other scheme: an authority is needed
        assert resolve(a, "\\\\h\\x") == "https://h/x"
        assert resolve(c, "\\\\h\\x") == "http://h/x"
        assert resolve(a, "x?utm_source=1", strip=DEFAULT_STRIP_PARAMS) == ("https://e.com/docs/x")
        assert resolve(a, "x?utm_source=1") == "https://e.com/docs/x?utm_source=1"


def test_resolve_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import crawler.core.urls as urls

    monkeypatch.setattr(urls, "RESOLVE_CACHE_SIZE", 10)
    base = "https://e.com/"
    for i in range(100):
        assert resolve(base, f"/p{i}") == f"https://e.com/p{i}"
    for i in range(100):
        assert resolve(base, f"p{i}?x") == f"https://e.com/p{i}?x"  # the folder's forms too
    assert _kept(urls) == urls._cached[0] <= 10
    assert resolve(base, "/p3") == "https://e.com/p3"


def _kept(urls: ModuleType) -> int:
    """Entries in resolve()'s memo, the origins' and the pairs' together."""
    by_origin = sum(len(m) for origins in urls._caches.values() for m in origins.values())
    return by_origin + sum(len(pairs) for pairs in urls._pairs.values())


def test_resolve_links_memo_is_bounded_with_resolves(monkeypatch: pytest.MonkeyPatch) -> None:
    """The known joins resolve_links memoises count against the same bound, and have their
    own: the first JOINS_MEMOISED after the memo is emptied."""
    import crawler.core.urls as urls

    base = "https://e.com/a/b.html"
    hrefs = [f"/p{i}" for i in range(40)] + [f"https://e.com/q{i}" for i in range(40)]
    expected = [resolve(base, href) for href in hrefs]
    for size, joins, kept_at_most in ((10, 4096, 10), (1000, 5, 5)):
        monkeypatch.setattr(urls, "RESOLVE_CACHE_SIZE", size)
        monkeypatch.setattr(urls, "JOINS_MEMOISED", joins)
        clear_resolve_cache()
        for _ in range(2):
            assert resolve_links(base, hrefs, (), dict.fromkeys(expected)) == expected
            assert _kept(urls) == urls._cached[0] <= kept_at_most
            assert urls._joined[0] <= joins


def test_resolve_links_never_takes_an_answer_resolve_kept_for_a_pathless_base() -> None:
    """resolve() keeps a "?x", "#x" or "" href's answer for the whole base, and a raw base
    with no path (a redirect's, a robots.txt Sitemap's) is spelt as its origin: a page of
    that origin must still have its own "?x" joined to its own path (found by the review:
    the robots.txt redirected to "?v=2" sent every page's "?v=2" link to "/?v=2")."""
    clear_resolve_cache()
    assert resolve("http://127.0.0.1:18850", "?page=2") == "http://127.0.0.1:18850/?page=2"
    assert resolve("http://127.0.0.1:18850", "") == "http://127.0.0.1:18850/"
    base = "http://127.0.0.1:18850/blog/post"
    assert resolve_links(base, ["?page=2", "", "#top"], (), {}) == [
        "http://127.0.0.1:18850/blog/post?page=2",
        "http://127.0.0.1:18850/blog/post",
    ]


def test_resolve_root_base_without_path_folder() -> None:
    assert resolve("https://e.com/", "a/b") == "https://e.com/a/b"
    assert resolve("https://e.com/?x", "a") == "https://e.com/a"
    assert resolve("https://e.com:8443/a/", "../../b") == "https://e.com:8443/b"


@pytest.mark.parametrize(
    "base", ["https://e.com?ref=1", "https://e.com#top", "HTTPS://E.com:443?x"]
)
@pytest.mark.parametrize(
    ("href", "expected"),
    [("/x", "https://e.com/x"), ("x", "https://e.com/x"), ("../x", "https://e.com/x"),
     ("?q", "https://e.com/?q"), ("//o.com/p", "https://o.com/p")],
)  # fmt: skip
def test_resolve_a_raw_base_whose_authority_ends_at_its_query_or_fragment(
    base: str, href: str, expected: str
) -> None:
    """A sitemap's URL from robots.txt or a listed URL is raw: https://e.com?x has the
    path / (RFC 3986 5.2.2). This joined '/x' into the query: https://e.com/?ref=1/x."""
    assert resolve(base, href) == expected
    assert resolve(base, "") == resolve(base, "#y") == normalize(base)


# --- strip_params ----------------------------------------------------------------------------

STRIP = [
    ("https://e.com/a?utm_source=x&utm_medium=y", "https://e.com/a"),
    ("https://e.com/a?id=3&utm_source=x&b=%2F&gclid=1&c", "https://e.com/a?id=3&b=%2F&c"),
    ("https://e.com/a?UTM_Source=x&PHPSESSID=1&FbClId=2&id=1", "https://e.com/a?id=1"),
    ("https://e.com/a?sid=1&side=2&s_id=3", "https://e.com/a?side=2&s_id=3"),
    ("https://e.com/a?utm=1&utm_=2", "https://e.com/a?utm=1"),
    ("https://e.com/a?utm%5Fsource=1&x=1", "https://e.com/a?x=1"),
    ("https://e.com/a?gclid", "https://e.com/a"),
    ("https://e.com/a?", "https://e.com/a?"),
    ("https://e.com/a?b=1&a=2", "https://e.com/a?b=1&a=2"),
    ("https://e.com/a?q=sid%3D1", "https://e.com/a?q=sid%3D1"),
    ("https://e.com/a;jsessionid=ABC123", "https://e.com/a"),
    ("https://e.com/a;JSESSIONID=ABC123?x=1", "https://e.com/a?x=1"),
    ("https://e.com/a;jsessionid=1/b;sid=2;v=3", "https://e.com/a/b;v=3"),
    ("https://e.com/a;v=1;jsessionid=ABC", "https://e.com/a;v=1"),
    ("https://e.com/a;jsessionid", "https://e.com/a;jsessionid"),
    ("https://e.com/a?jsessionid=1#frag", "https://e.com/a#frag"),
    ("https://e.com/a#?utm_source=1", "https://e.com/a#?utm_source=1"),
    ("a/b;jsessionid=1?utm_x=1&y", "a/b?y"),
    ("https://e.com/a?x=1", "https://e.com/a?x=1"),
]


@pytest.mark.parametrize(("url", "expected"), STRIP)
def test_strip_params(url: str, expected: str) -> None:
    assert strip_params(url, DEFAULT_STRIP_PARAMS) == expected


def test_strip_params_custom_patterns() -> None:
    url = "https://e.com/a?ref=x&Ref_Id=1&x.y=2&refs=3&page=2"
    assert strip_params(url, ("ref*", "x.y")) == "https://e.com/a?page=2"
    assert strip_params(url, ("*",)) == "https://e.com/a"
    assert strip_params(url, ()) == url
    assert strip_params(url, ("x?y",)) == url, "only * is a wildcard"


def test_resolve_strips_before_normalising() -> None:
    base = "https://e.com/docs/"
    got = resolve(base, "p.html;jsessionid=X?b=%7e&utm_campaign=z&a=1#f", DEFAULT_STRIP_PARAMS)
    assert got == "https://e.com/docs/p.html?b=~&a=1"
    assert resolve(base, "p.html?fbclid=1", DEFAULT_STRIP_PARAMS) == "https://e.com/docs/p.html"


# --- url_folder and Scope --------------------------------------------------------------------

FOLDER = [
    ("https://e.com/docs/", "https://e.com/docs/"),
    ("https://e.com/docs/index.html", "https://e.com/docs/"),
    ("https://e.com/docs/index.html?a=/b/c", "https://e.com/docs/"),
    ("https://e.com/docs", "https://e.com/"),
    ("https://e.com", "https://e.com/"),
    ("HTTPS://E.COM:443/a/b/../c/d", "https://e.com/a/c/"),
    ("http://[::1]:8080/x/y", "http://[::1]:8080/x/"),
]


@pytest.mark.parametrize(("url", "expected"), FOLDER)
def test_url_folder(url: str, expected: str) -> None:
    assert url_folder(url) == expected


def test_url_folder_rejects_bad_urls() -> None:
    with pytest.raises(InvalidURLError):
        url_folder("ftp://e.com/")


def test_scope_from_url() -> None:
    assert Scope.from_url("https://example.com/docs/index.html") == Scope(
        "https", "example.com", 443, "/docs/"
    )
    assert Scope.from_url("https://example.com/docs/") == Scope.from_url(
        "https://EXAMPLE.com:443/docs/index.html"
    )
    assert Scope.from_url("http://127.0.0.1:8080") == Scope("http", "127.0.0.1", 8080, "/")
    assert Scope.from_url("http://[::1]:8080/a/") == Scope("http", "[::1]", 8080, "/a/")
    assert Scope.from_url("http://[::1]/a/").port == 80
    assert Scope.from_url("https://bücher.de/").host == "xn--bcher-kva.de"
    assert Scope.from_url("https://example.com/docs/").root == "https://example.com/docs/"
    assert Scope.from_url("http://e.com:8080/docs/").root == "http://e.com:8080/docs/"


SCOPE_ROOT = "https://example.com/docs/"
SCOPE = [
    ("https://example.com/docs/", True),
    ("https://example.com/docs/page", True),
    ("https://example.com/docs/a/b/c?x=1", True),
    ("https://example.com/docs/?x", True),
    ("https://example.com/docs", False),
    ("https://example.com/docs2/page", False),
    ("https://example.com/doc/", False),
    ("https://example.com/", False),
    ("https://example.com/DOCS/", False),
    ("https://example.com/other/docs/", False),
    ("http://example.com/docs/", False),
    ("https://example.com:8443/docs/", False),
    ("https://www.example.com/docs/", False),
    ("https://example.com.evil.org/docs/", False),
    ("https://sub.example.com/docs/", False),
]


@pytest.mark.parametrize(("url", "inside"), SCOPE)
def test_scope_contains(url: str, inside: bool) -> None:
    scope = Scope.from_url(SCOPE_ROOT + "index.html")
    assert scope.contains(normalize(url)) is inside


def test_scope_contains_root_and_ports() -> None:
    root = Scope.from_url("http://127.0.0.1:8080/")
    assert root.contains("http://127.0.0.1:8080/anything")
    assert not root.contains("http://127.0.0.1:8081/")
    assert not root.contains("http://127.0.0.1/")
    assert not root.contains("https://127.0.0.1:8080/")


@pytest.mark.parametrize(
    "args",
    [
        ("ftp", "e.com", 21, "/"),
        ("https", "e.com", 0, "/"),
        ("https", "e.com", 70000, "/"),
        ("https", "e.com", 443, "docs/"),
        ("https", "e.com", 443, "/docs"),
        ("https", "E.com", 443, "/"),
        ("https", "bücher.de", 443, "/"),
        ("https", "e.com", 443, "/a/../"),
        ("https", "e.com", 443, "/ü/"),
        ("https", "", 443, "/"),
    ],
)
def test_scope_rejects_non_normal_fields(args: tuple[str, str, int, str]) -> None:
    with pytest.raises(InvalidURLError):
        Scope(*args)


def test_scope_is_frozen_and_hashable() -> None:
    scope = Scope.from_url("https://e.com/docs/")
    with pytest.raises(dataclasses.FrozenInstanceError):
        scope.prefix = "/"  # type: ignore[misc]
    assert {scope, Scope("https", "e.com", 443, "/docs/")} == {scope}


# --- OriginMap -------------------------------------------------------------------------------


def staging() -> OriginMap:
    return OriginMap.from_urls("http://127.0.0.1:8080/", "https://www.example.com/docs/")


def test_origin_map_to_public() -> None:
    origins = staging()
    assert origins.to_public("http://127.0.0.1:8080/") == "https://www.example.com/docs/"
    assert origins.to_public("http://127.0.0.1:8080/a/b?c=1") == (
        "https://www.example.com/docs/a/b?c=1"
    )
    assert not origins.is_identity


def test_origin_map_to_public_refuses_urls_outside_the_crawl() -> None:
    with pytest.raises(OutOfScopeError) as caught:
        staging().to_public("https://elsewhere.org/")
    assert isinstance(caught.value, SitemapCrawlerError)
    assert "https://elsewhere.org/" in str(caught.value)


def test_origin_map_to_crawl() -> None:
    origins = staging()
    assert origins.to_crawl("https://www.example.com/docs/a?b") == "http://127.0.0.1:8080/a?b"
    assert origins.to_crawl("https://www.example.com/docs/") == "http://127.0.0.1:8080/"
    assert origins.to_crawl("https://www.example.com/docs") == "https://www.example.com/docs"
    assert origins.to_crawl("https://www.example.com/other") == "https://www.example.com/other"
    assert origins.to_crawl("http://127.0.0.1:8080/x") == "http://127.0.0.1:8080/x"
    assert origins.to_crawl("https://elsewhere.org/") == "https://elsewhere.org/"


def test_origin_map_links_to_public_origin_come_back_into_the_crawl() -> None:
    origins = staging()
    page = "http://127.0.0.1:8080/guide/"
    link = resolve(page, "https://www.example.com/docs/faq")
    assert link is not None
    crawled = origins.to_crawl(link)
    assert origins.crawl.contains(crawled)
    assert origins.to_public(crawled) == "https://www.example.com/docs/faq"


def test_origin_map_round_trip() -> None:
    origins = staging()
    for path in ("", "a", "a/b/", "x?y=1", "%C3%BC"):
        url = "http://127.0.0.1:8080/" + path
        assert origins.to_crawl(origins.to_public(url)) == url


def test_origin_map_identity() -> None:
    origins = OriginMap.from_urls("https://e.com/docs/")
    assert origins.is_identity
    assert origins == OriginMap.identity(Scope.from_url("https://e.com/docs/x"))
    assert origins.to_public("https://e.com/docs/a") == "https://e.com/docs/a"
    assert origins.to_crawl("https://e.com/docs/a") == "https://e.com/docs/a"
    with pytest.raises(OutOfScopeError):
        origins.to_public("https://e.com/other")
