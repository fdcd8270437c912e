"""Property-based tests for crawler.core.urls: the invariants every normal form must keep."""

from __future__ import annotations

import re

from hypothesis import assume, example, given
from hypothesis import strategies as st

import crawler.core.urls as urls_module
from crawler.core.urls import DEFAULT_STRIP_PARAMS, normalize, resolve, strip_params
from crawler.errors import InvalidURLError

UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
URL_CHARS = UNRESERVED + "!$&'()*+,;=:@/?%#[]<>\"{}|\\^` "

hosts = st.sampled_from(
    [
        "example.com",
        "EXAMPLE.com",
        "www.example.co.uk",
        "localhost",
        "127.0.0.1",
        "[::1]",
        "[2001:DB8::1]",
        "bücher.de",
        "BÜCHER.de",
        "xn--bcher-kva.de",
        "straße.de",
        "例え.テスト",
        "my_host.example",
        "example.com.",
    ]
)
ports = st.sampled_from(["", ":", ":80", ":443", ":8080", ":0080", ":65535"])
# Paths and queries mix URL syntax, percent escapes (good and broken) and arbitrary Unicode.
pieces = st.one_of(
    st.sampled_from(["/", ".", "..", "/./", "/../", "%2e", "%2E%2e", "%", "%4", "%zz"]),
    st.sampled_from(["%41", "%7e", "%7E", "%2F", "%2f", "%26", "%3D", "%C3%BC", "%c3%bc"]),
    st.text(alphabet=URL_CHARS, max_size=4),
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=3),
)
paths = st.lists(pieces, max_size=8).map("".join)


@st.composite
def urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "hTTpS"]))
    host = draw(hosts)
    port = draw(ports)
    path = draw(paths)
    path = path if path.startswith("/") or not path else "/" + path
    query = draw(st.none() | paths)
    fragment = draw(st.none() | paths)
    url = f"{scheme}://{host}{port}{path.split('?')[0].split('#')[0]}"
    if query is not None:
        url += "?" + query.split("#")[0]
    if fragment is not None:
        url += "#" + fragment
    return url


def normal_or_skip(url: str) -> str:
    try:
        return normalize(url)
    except InvalidURLError:
        assume(False)
        raise


@given(urls())
@example("http://e.com/%%32%35")
@example("http://e.com/%2E%2E/%2e/a/..%2F")
def test_normalize_is_idempotent(url: str) -> None:
    once = normal_or_skip(url)
    assert normalize(once) == once


@given(urls())
def test_normal_form_shape(url: str) -> None:
    once = normal_or_skip(url)
    assert once.isascii()
    assert "#" not in once
    assert " " not in once
    assert re.fullmatch(r"https?://[^/?#@]+/[^?#]*(\?[^#]*)?", once)
    path = once.split("?", 1)[0].split("/", 3)[3]
    assert "." not in path.split("/") and ".." not in path.split("/")
    for escape in re.findall(r"%(..)", once):
        assert re.fullmatch(r"[0-9A-F]{2}", escape)
        assert chr(int(escape, 16)) not in UNRESERVED


@given(urls(), st.data())
def test_encoding_an_unreserved_character_changes_nothing(url: str, data: st.DataObject) -> None:
    once = normal_or_skip(url)
    scheme_end = once.index("://") + 3
    path_start = once.index("/", scheme_end)
    spots = [
        i
        for i in range(path_start, len(once))
        if once[i] in UNRESERVED and "%" not in once[i - 2 : i]  # not a hex digit of an escape
    ]
    assume(spots)
    i = data.draw(st.sampled_from(spots))
    escape = f"%{ord(once[i]):02x}"
    escape = data.draw(st.sampled_from([escape, escape.upper()]))
    assert normalize(once[:i] + escape + once[i + 1 :]) == once


@given(st.text())
@example("\ud800")
@example("http://[")
@example("//[::1]:99999")
def test_resolve_never_raises(href: str) -> None:
    for base in ("https://example.com/a/b?c", "http://[::1]:8080/"):
        result = resolve(base, href)
        assert result is None or normalize(result) == result
        stripped = resolve(base, href, DEFAULT_STRIP_PARAMS)
        assert stripped is None or normalize(stripped) == stripped


@given(st.text(st.characters(blacklist_categories=()), max_size=30))
def test_resolve_never_raises_on_any_code_point(href: str) -> None:
    result = resolve("https://example.com/a/", href)
    assert result is None or normalize(result) == result


MEMO_BASES = (
    "https://example.com/a/b.html?q",
    "https://example.com/a/c.html",
    "https://example.com/a/c.html?r",
    "https://example.com/z/",
    "http://example.com/a/b.html?q",
    "https://example.com:8443/a/b.html?q",
)


@given(st.text(alphabet=URL_CHARS + "\t\n\r\x00", max_size=40), st.permutations(MEMO_BASES))
def test_memo_never_answers_for_another_page(href: str, bases: list[str]) -> None:
    """Whatever order pages come in, the memoised answer is the one computed from scratch."""
    for strip in ((), DEFAULT_STRIP_PARAMS):
        for base in bases:
            assert resolve(base, href, strip) == urls_module._resolve(base, href, strip)


@given(urls())
def test_strip_params_keeps_the_rest_in_order(url: str) -> None:
    stripped = strip_params(url, DEFAULT_STRIP_PARAMS)
    assert strip_params(stripped, DEFAULT_STRIP_PARAMS) == stripped
    if "?" in url.split("#")[0] and "?" in stripped.split("#")[0]:
        before = url.split("#")[0].split("?", 1)[1].split("&")
        after = stripped.split("#")[0].split("?", 1)[1].split("&")
        assert [p for p in before if p in after] == after


def _outcome(normalise: object, url: str) -> str:
    try:
        return normalise(url)  # type: ignore[operator,no-any-return]
    except InvalidURLError as exc:
        return f"error: {exc}"


octets = st.one_of(
    st.integers(0, 300).map(str),
    st.sampled_from(["00", "01", "007", "1e2", "", "0x", "0x7f", "0xff", "0xg", "a0x1", "x7f"]),
)  # a hexadecimal label ("0x7f") is a number to a browser, though it ends in a letter


@given(
    st.lists(octets, min_size=1, max_size=5).map(".".join),
    st.sampled_from(["", ":", ":80", ":443", ":8080", ":08080", ":65535", ":65536"]),
    st.sampled_from(["/", "/a/b.html", "/a/./b", "/%7e?q=1", "/?"]),
    st.sampled_from(["http", "https"]),
)
def test_an_address_host_takes_the_fast_path_only_when_normal(
    host: str, port: str, path: str, scheme: str
) -> None:
    """normalize's quick match accepts a host written as four decimal octets: whatever the
    address, the port and the path, the answer (or the error) is the slow path's."""
    url = f"{scheme}://{host}{port}{path}"
    assert _outcome(normalize, url) == _outcome(urls_module._normalize_slow, url)
