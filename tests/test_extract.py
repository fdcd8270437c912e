"""HTML decoding and link/directive extraction (crawler.core.extract)."""

from __future__ import annotations

import codecs
import zlib
from array import array
from urllib.parse import urljoin

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from crawler.core.directives import Directives
from crawler.core.encodings import encode_query, encoding_for_label
from crawler.core.extract import (
    Link,
    PageData,
    _head_links,
    _prescan,
    _prescan_tags,
    _title,
    content_blocks,
    decode_html,
    digest_page,
    extract_page,
    sniff_encoding,
)
from crawler.core.mime import parse_content_type

PAGE = "https://example.com/dir/page.html"


def page(body: str, content_type: str | None = "text/html; charset=utf-8") -> PageData:
    return extract_page(body.encode("utf-8"), content_type, PAGE, content=True)


def hrefs(body: str) -> list[str]:
    return [link.href for link in page(body).links]


# --- Content-Type --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, ("", None)),
        ("", ("", None)),
        ("text/html", ("text/html", None)),
        ("TEXT/HTML", ("text/html", None)),
        ("text/html; charset=UTF-8", ("text/html", "utf-8")),
        ("text/html;charset=iso-8859-1", ("text/html", "iso-8859-1")),
        ('text/html; charset="windows-1252"', ("text/html", "windows-1252")),
        ("  application/xhtml+xml ; charset = utf-8 ", ("application/xhtml+xml", "utf-8")),
        ("text/html; foo=bar; charset=latin1", ("text/html", "latin1")),
        ('text/html; foo="a;charset=koi8-r"; charset=latin1', ("text/html", "latin1")),
        ("text/html; charset=utf-8; charset=latin1", ("text/html", "utf-8")),
        ("text/html;;charset=utf-8", ("text/html", "utf-8")),
        ("text/html; charset", ("text/html", None)),
        ("text/html; charset=", ("text/html", None)),
        ('text/html; charset=""', ("text/html", None)),
        ("html", ("", None)),
        ("text/", ("", None)),
        ("/html", ("", None)),
        ("text/html junk", ("", None)),
        ("text/html, text/plain", ("", None)),
        ("téxt/html", ("", None)),
        (";charset=utf-8", ("", None)),
    ],
)
def test_parse_content_type(header: str | None, expected: tuple[str, str | None]) -> None:
    assert parse_content_type(header) == expected


@given(st.text(max_size=80))
def test_parse_content_type_never_raises(header: str) -> None:
    mime, _ = parse_content_type(header)
    assert mime == mime.lower()


# --- Encoding labels and sniffing --------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "name"),
    [
        ("utf-8", "utf-8"),
        ("UTF8", "utf-8"),
        (" utf-8\t", "utf-8"),
        ("iso-8859-1", "windows-1252"),
        ("ISO_8859-1:1987", "windows-1252"),
        ("latin1", "windows-1252"),
        ("us-ascii", "windows-1252"),
        ("ascii", "windows-1252"),
        ("iso-8859-9", "windows-1254"),
        ("tis-620", "windows-874"),
        ("gb2312", "gbk"),
        ("shift_jis", "shift_jis"),
        ("ks_c_5601-1987", "euc-kr"),
        ("utf-16", "utf-16le"),
        ("iso-2022-kr", "replacement"),
        ("utf-7", None),
        ("base64", None),
        ("rot13", None),
        ("utf-32", None),
        ("cp037", None),
        ("", None),
        (None, None),
    ],
)
def test_encoding_for_label(label: str | None, name: str | None) -> None:
    assert encoding_for_label(label) == name


LATIN1_HREF = '<html><head>{meta}</head><body><a href="/caf\u00e9">Caf\u00e9</a></body></html>'


@pytest.mark.parametrize(
    ("body", "content_type", "encoding", "href"),
    [
        pytest.param(
            LATIN1_HREF.format(meta="").encode("latin-1"),
            "text/html; charset=ISO-8859-1",
            "windows-1252",
            "/caf\u00e9",
            id="latin1-declared-in-header",
        ),
        pytest.param(
            LATIN1_HREF.format(meta='<meta charset="iso-8859-1">').encode("latin-1"),
            "text/html",
            "windows-1252",
            "/caf\u00e9",
            id="latin1-meta-charset",
        ),
        pytest.param(
            LATIN1_HREF.format(
                meta='<meta http-equiv="Content-Type" content="text/html; charset=latin1">'
            ).encode("latin-1"),
            None,
            "windows-1252",
            "/caf\u00e9",
            id="latin1-meta-http-equiv",
        ),
        pytest.param(
            LATIN1_HREF.format(
                meta='<META HTTP-EQUIV=content-type CONTENT="text/html;charset=l1">'
            ).encode("latin-1"),
            None,
            "windows-1252",
            "/caf\u00e9",
            id="meta-upper-case-bare-values",
        ),
        pytest.param(
            codecs.BOM_UTF8 + LATIN1_HREF.format(meta="").encode("utf-8"),
            "text/html",
            "utf-8",
            "/caf\u00e9",
            id="utf8-bom",
        ),
        pytest.param(
            codecs.BOM_UTF8 + LATIN1_HREF.format(meta="").encode("utf-8"),
            "text/html; charset=iso-8859-1",
            "utf-8",
            "/caf\u00e9",
            id="bom-beats-header-as-in-browsers",
        ),
        pytest.param(
            codecs.BOM_UTF16_LE + LATIN1_HREF.format(meta="").encode("utf-16-le"),
            None,
            "utf-16le",
            "/caf\u00e9",
            id="utf16le-bom",
        ),
        pytest.param(
            codecs.BOM_UTF16_BE + LATIN1_HREF.format(meta="").encode("utf-16-be"),
            None,
            "utf-16be",
            "/caf\u00e9",
            id="utf16be-bom",
        ),
        pytest.param(
            LATIN1_HREF.format(meta="").encode("latin-1"),
            None,
            "utf-8",
            "/caf\ufffd",
            id="undeclared-latin1-is-utf8-with-replacement",
        ),
        pytest.param(
            LATIN1_HREF.format(meta='<meta charset="utf-8">').encode("utf-8"),
            "text/html; charset=x-unknown-thing",
            "utf-8",
            "/caf\u00e9",
            id="unknown-header-label-falls-through-to-meta",
        ),
        pytest.param(
            LATIN1_HREF.format(meta='<meta charset="utf-7">').encode("latin-1"),
            "text/html; charset=bogus",
            "utf-8",
            "/caf\ufffd",
            id="unknown-labels-everywhere-fall-back-to-utf8",
        ),
        pytest.param(
            LATIN1_HREF.format(meta='<meta charset="windows-1252">').encode("cp1252"),
            "text/html; charset=utf-8",
            "utf-8",
            "/caf\ufffd",
            id="header-beats-meta",
        ),
        pytest.param(
            '<meta charset="utf-16"><a href="/caf\u00e9">x</a>'.encode(),
            None,
            "utf-8",
            "/caf\u00e9",
            id="meta-utf16-means-utf8",
        ),
        pytest.param(
            '<meta charset="koi8-r"><a href="/\u043c\u0438\u0440">x</a>'.encode("koi8-r"),
            None,
            "koi8-r",
            "/\u043c\u0438\u0440",
            id="koi8-r",
        ),
        pytest.param(
            '<a href="/\u65e5\u672c">x</a>'.encode("cp932"),
            "text/html; charset=Shift_JIS",
            "shift_jis",
            "/\u65e5\u672c",
            id="shift-jis",
        ),
        pytest.param(
            b'<a href="/\x80\x81">x</a>',
            "text/html; charset=us-ascii",
            "windows-1252",
            "/\u20ac\u0081",
            id="whatwg-us-ascii-is-windows-1252-with-c1-passthrough",
        ),
    ],
)
def test_decoding_resolves_links(
    body: bytes, content_type: str | None, encoding: str, href: str
) -> None:
    data = extract_page(body, content_type, PAGE)
    assert data.encoding == encoding
    assert [link.href for link in data.links] == [href]
    text, used = decode_html(body, content_type)
    assert used == encoding
    assert href in text
    assert not text.startswith("\ufeff")


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        pytest.param(
            b"<!-- <meta charset=koi8-r> --><meta charset=latin2>", "iso-8859-2", id="comment"
        ),
        pytest.param(b"<!--><meta charset=latin2>", "iso-8859-2", id="empty-comment"),
        pytest.param(
            b'<div title="<meta charset=koi8-r>"><meta charset=latin2>', "iso-8859-2", id="attr"
        ),
        pytest.param(
            b"<metadata charset=koi8-r><meta charset=latin2>", "iso-8859-2", id="metadata"
        ),
        pytest.param(b"<meta charset=bogus><meta charset=latin2>", "iso-8859-2", id="skip-bogus"),
        pytest.param(b"<meta charset='latin2'>", "iso-8859-2", id="single-quotes"),
        pytest.param(b"<meta/charset=latin2>", "iso-8859-2", id="slash"),
        pytest.param(b"<meta charset=latin2 charset=koi8-r>", "iso-8859-2", id="first-attr-wins"),
        pytest.param(
            b'<meta content="text/html; charset=latin2">', "utf-8", id="content-without-http-equiv"
        ),
        pytest.param(
            b'<meta http-equiv="Content-Type" content="text/html; charset=\'latin2\'">',
            "iso-8859-2",
            id="quoted-charset-in-content",
        ),
        pytest.param(
            b'<meta http-equiv="Content-Type" content="text/html; charset = latin2; x">',
            "iso-8859-2",
            id="spaces-in-content",
        ),
        pytest.param(
            b"<?xml version='1.0'?><!DOCTYPE html><meta charset=latin2>", "iso-8859-2", id="doctype"
        ),
        pytest.param(b"<meta charset=x-user-defined>", "windows-1252", id="x-user-defined"),
        pytest.param(b" " * 1020 + b"<meta charset=latin2>", "utf-8", id="beyond-1024-bytes"),
        pytest.param(b"<meta charset=latin2", "utf-8", id="unclosed-tag-is-ignored"),
    ],
)
def test_meta_prescan(head: bytes, expected: str) -> None:
    assert sniff_encoding(head + b"<p>x</p>", None) == expected


_HEAD_TAILS = st.lists(
    st.sampled_from([b"<meta charset=latin1>", b"<title>", b"<!--", b"-->", b" ", b">", b'"']),
    max_size=6,
).map(b"".join)  # what follows the head: another meta, a comment, stray quotes
_SPACE = st.sampled_from([b"", b"", b"", b" ", b"\n", b"\t\r\n\f ", b"\x0b"])


def _mostly(good: list[bytes], odd: list[bytes], weight: int = 2) -> st.SearchStrategy[bytes]:
    """One of the forms the quick match reads, or now and then a near miss."""
    return st.sampled_from(good * (weight * len(odd)) + odd)


# the common head's parts (and now and then a near miss), then anything
_HEADS = st.tuples(
    _mostly([b"", b"<!DOCTYPE html>", b"<!doctype html>"], [b"<!doctype html-->", b"<!x>"]),
    _SPACE,
    _mostly(
        [b"", b"<html>", b'<html lang="en">', b'<HTML class="a b" lang="en-US">'],
        [b"<html lang=en>", b'<html data-x="1>2">', b"<html lang=\"a'b\">", b"<htmlx>",
         b'<html lang="en"x="y">', b'<html lang="en" >', b"<!-- c -->", b"<html lang='x'>"],
    ),
    _SPACE,
    _mostly([b"", b"<head>", b"<HEAD>"], [b"<header>", b'<head profile="x">']),
    _SPACE,
    _mostly([b"<meta ", b"<META\n"], [b"<meta/", b"<meta  ", b"<meta x "]),
    _mostly([b"charset=", b"CHARSET="], [b"charset =", b"charset= "]),
    _mostly(
        [b'"utf-8"', b'"latin1"', b"koi8-r", b"UTF-8", b'"bogus"', b"bogus"],
        [b'""', b"utf-16le", b"x-user-defined", b"utf-8/", b"'utf-8'", b'"utf-8', b'"utf-16"',
         b'" utf-8 "', b'"utf-8\'', b"utf-8'"],
        1,
    ),
    _mostly([b">", b"/>", b" />"], [b" >", b"", b" x>", b"/ >", b'">', b" / >"], 1),
    _HEAD_TAILS,
).map(b"".join)  # fmt: skip


@settings(max_examples=1500)
@given(head=_HEADS, cut=st.integers(0, 200))
@example(head=b'<meta charset="utf-8>', cut=0)
@example(head=b"<html><meta charset=utf-8/>", cut=0)
@example(head=b'<head><meta charset="bogus"><meta charset="latin1">', cut=0)
# long runs of whitespace around the optional tags (a template's blank lines): the same
# answer, and the quick form's whitespace is possessive so that it is not split three ways
@example(head=b"\n" * 1000 + b'<!doctype html><html><head><meta charset="utf-8">', cut=0)
@example(head=b"<!doctype html>" + b" " * 400 + b"<html lang='en'>" + b"\n" * 500 + b"<p>", cut=0)
def test_meta_prescan_quick_form_agrees_with_the_tag_by_tag_prescan(head: bytes, cut: int) -> None:
    """The one-match reading of the common head finds what the prescan's loop finds, cut
    anywhere (the 1024-byte limit can fall inside a tag)."""
    for text in (head, head[:cut]):
        assert _prescan(text) == _prescan_tags(text)


@settings(max_examples=400)
@given(head=_HEADS, tail=_HEAD_TAILS | st.binary(max_size=40))
@example(head=b'<meta charset="utf-8">', tail=b"<meta charset=latin1>")
@example(head=b"<meta charset=latin1>", tail=b"-->")
def test_a_remembered_head_answers_as_the_prescan_reads_any_page_it_starts(
    head: bytes, tail: bytes
) -> None:
    """The prescan remembers the heads its quick match read: another page that starts with
    one (the rest of a site's pages) gets the prescan loop's answer, whatever follows, and
    a page cut anywhere before the remembered head's end does not take its answer."""
    _prescan(head)  # remembered, when the quick match reads it to its end
    text = head + tail
    for cut in range(len(text) + 1):
        assert _prescan(text[:cut]) == _prescan_tags(text[:cut])


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\x00" * 10,
        b"\xff\xfe",
        b"\xef\xbb\xbf",
        bytes(range(256)),
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        b"<a href='/ok'>\xc3\x28\xa0\xa1</a>",
    ],
)
def test_garbage_and_empty_bodies(body: bytes) -> None:
    text, encoding = decode_html(body, "text/html")
    assert isinstance(text, str)
    assert encoding in ("utf-8", "utf-16le")
    data = extract_page(body, None, PAGE)
    assert data.base == PAGE
    assert data.canonical is None
    assert data.directives == Directives()


def test_replacement_encoding_yields_no_links() -> None:
    data = extract_page(b'<a href="/x">x</a>', "text/html; charset=iso-2022-kr", PAGE)
    assert data.encoding == "replacement"
    assert data.links == []


def test_non_html_body_has_no_links() -> None:
    data = extract_page(b'{"href": "/x", "a": "<b>"}', "application/json", PAGE)
    assert data.links == []


# --- Links -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        pytest.param('<a href="/a">x</a>', ["/a"], id="a"),
        pytest.param('<map><area href="/area" alt=""></map>', ["/area"], id="area"),
        pytest.param(
            '<a href="/1"></a><map><area href="/2"></map><a href="/3"></a>',
            ["/1", "/2", "/3"],
            id="document-order-with-area",
        ),
        pytest.param('<a href="  /padded\n\t">x</a>', ["/padded"], id="whitespace-stripped"),
        pytest.param('<a href="">x</a><a href>y</a><a href=" ">z</a>', [], id="empty-dropped"),
        pytest.param("<a name=top>x</a>", [], id="no-href"),
        pytest.param('<A HREF="/upper">x</A>', ["/upper"], id="upper-case-markup"),
        pytest.param("<a href=/bare>x</a>", ["/bare"], id="unquoted"),
        pytest.param('<a href="/a?x=1&amp;y=2">x</a>', ["/a?x=1&y=2"], id="entities-decoded"),
        pytest.param('<a href="rel/x">x</a>', ["rel/x"], id="relative-kept-raw"),
        pytest.param('<a href="https://other.org/">x</a>', ["https://other.org/"], id="absolute"),
        pytest.param('<a href="/a" href="/b">x</a>', ["/a"], id="duplicate-attr-first-wins"),
        pytest.param("<!-- <a href='/comment'>x</a> -->", [], id="comment"),
        pytest.param(
            "<script>document.write('<a href=\"/script\">x</a>')</script>", [], id="script"
        ),
        pytest.param('<template><a href="/tpl">x</a></template>', [], id="template"),
        pytest.param(
            '<template><div><template><a href="/t2"></a></template></div></template>',
            [],
            id="nested-template",
        ),
        pytest.param('<noscript><a href="/ns">x</a></noscript>', ["/ns"], id="noscript-kept"),
        pytest.param(
            "<head><noscript><img src=x></noscript><link rel=canonical href=/c></head>"
            '<a href="/after">x</a>',
            ["/after"],
            id="noscript-in-head",
        ),
        pytest.param("<textarea><a href='/ta'>x</a></textarea>", [], id="textarea-is-text"),
        pytest.param('<svg><a href="/svg"><text>x</text></a></svg>', ["/svg"], id="svg-a"),
        pytest.param('<svg><a xlink:href="/xl"><text>x</text></a></svg>', ["/xl"], id="svg-xlink"),
        pytest.param('<a href="/x\u00e9">x</a>', ["/x\u00e9"], id="non-ascii"),
        pytest.param('<link rel="stylesheet" href="/s.css">', [], id="link-is-not-a-link"),
    ],
)
def test_links(html: str, expected: list[str]) -> None:
    assert hrefs(html) == expected


@pytest.mark.parametrize(
    ("rel", "nofollow"),
    [
        (None, False),
        ("", False),
        ("nofollow", True),
        ("NoFollow noopener", True),
        ("noopener   NOFOLLOW", True),
        ("\tnofollow\n", True),
        ("noreferrer", False),
        ("nofollowing", False),
        ("ugc sponsored", False),
        ("no-follow", False),
        ("nofollow\u00a0", False),  # NBSP is not an HTML space: the token is "nofollow\xa0"
    ],
)
def test_rel_nofollow(rel: str | None, nofollow: bool) -> None:
    attr = "" if rel is None else f' rel="{rel}"'
    assert page(f'<a href="/x"{attr}>x</a>').links == [Link("/x", nofollow)]


def _links_reference(html: str) -> list[Link]:
    """The anchors' loop as it was written before its fast path: every href stripped of the
    URL parser's C0 controls and spaces, rel read through get()."""
    strip = "".join(map(chr, range(0x21)))
    parser = LexborHTMLParser(html)
    found = []
    for node in parser.css("a, area"):
        attrs = node.attributes
        href = attrs.get("href")
        if href is None:
            href = attrs.get("xlink:href")
            if href is None:
                continue
        href = href.strip(strip)
        if href:
            rel = attrs.get("rel")
            found.append(Link(href, rel is not None and "nofollow" in rel.lower().split()))
    return found


_HREF_ENDS = st.sampled_from(["", "", " ", "\t", "\n", "\x00", "\x1f", "\x7f", "\xa0", "!", "x"])
_ANCHORS = st.lists(
    st.tuples(
        st.sampled_from(["a", "a", "area", "svg-a"]),
        st.sampled_from(["href", "href", "xlink:href", "none", "bare"]),
        st.tuples(_HREF_ENDS, st.sampled_from(["", "/p", "x y", "#", "é"]), _HREF_ENDS),
        st.sampled_from([None, None, "", "nofollow", "NOFOLLOW ugc", "bare"]),
    ),
    max_size=6,
)


def _anchor(tag: str, attr: str, parts: tuple[str, str, str], rel: str | None) -> str:
    value = "".join(parts).replace("&", "&amp;").replace('"', "&quot;")
    value = value.replace("\x00", "&#0;")  # a raw NUL in an attribute becomes U+FFFD
    href = {"none": "", "bare": f" {attr}" if attr != "bare" else " href"}.get(
        attr, f' {attr}="{value}"'
    )
    rels = "" if rel is None else " rel" if rel == "bare" else f' rel="{rel}"'
    if tag == "svg-a":
        return f"<svg><a{href}{rels}><text>x</text></a></svg>"
    if tag == "area":
        return f"<map><area{href}{rels}></map>"
    return f"<a{href}{rels}>x</a>"


@settings(max_examples=300)
@given(_ANCHORS)
def test_links_agree_with_the_plain_loop(anchors: list[tuple[str, str, tuple, str | None]]) -> None:
    """The anchors' loop skips the strip when neither end needs it and reads rel only when
    present: the same links, ends and empties and SVG's xlink:href included."""
    html = "".join(_anchor(*anchor) for anchor in anchors)
    assert page(html).links == _links_reference(html)


@pytest.mark.parametrize(
    ("html", "title"),
    [
        ("<title> Head </title>", "Head"),
        ("<svg><title>svg</title></svg><title>head</title>", "head"),
        ("<title>head</title><svg><title>svg</title></svg>", "head"),
        ("<math><title>math</title></math>", None),
        ("<svg><title>icon</title></svg><p>no title of its own", None),
        ("<template><title>template</title></template><p>", None),
        ("<TITLE>upper</TITLE>", "upper"),
        ("<body><p>x</p><title>in body</title>", "in body"),
        ("<svg><foreignObject><title>f</title></foreignObject></svg>", "f"),
        ("<x:title>prefixed</x:title>", None),
        ("<p>none</p>", None),
    ],
)
def test_title_is_the_first_html_title_as_document_title_reads_it(
    html: str, title: str | None
) -> None:
    """An inline SVG icon's <title> or a formula's is not the page's (it was taken when
    it came first, by the selector and by the walk that replaced it): document.title reads
    the first <title> in the HTML namespace, and llms.txt and video titles use it."""
    assert _title(LexborHTMLParser(html)) == title


def test_area_nofollow() -> None:
    data = page('<map><area href="/a" rel="nofollow"></map>')
    assert data.links == [Link("/a", True)]


# --- <base href> --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("html", "base"),
    [
        pytest.param("<a href=x>x</a>", PAGE, id="no-base"),
        pytest.param(
            '<base href="https://cdn.example.org/root/">',
            "https://cdn.example.org/root/",
            id="absolute",
        ),
        pytest.param('<base href="/other/">', "https://example.com/other/", id="root-relative"),
        pytest.param('<base href="sub/">', "https://example.com/dir/sub/", id="relative"),
        pytest.param('<base href="../">', "https://example.com/", id="dot-dot"),
        pytest.param('<base href=" /ws/ ">', "https://example.com/ws/", id="whitespace"),
        pytest.param(
            '<base target="_top"><base href="/second/">',
            "https://example.com/second/",
            id="first-with-href",
        ),
        pytest.param(
            '<base href="/one/"><base href="/two/">', "https://example.com/one/", id="first-wins"
        ),
        pytest.param('<base href="">', PAGE, id="empty"),
        pytest.param('<base href="javascript:void(0)">', PAGE, id="javascript-refused"),
        pytest.param('<base href="data:text/html,x">', PAGE, id="data-refused"),
        pytest.param('<base href="http://[::1">', PAGE, id="unparseable"),
        pytest.param(
            '<body><base href="/late/"></body>', "https://example.com/late/", id="in-body"
        ),
        pytest.param('<template><base href="/tpl/"></template>', PAGE, id="in-template"),
    ],
)
def test_base(html: str, base: str) -> None:
    assert page(html).base == base


def test_base_applies_to_links_via_urljoin() -> None:
    data = page('<base href="/b/"><a href="c">x</a>')
    assert urljoin(data.base, data.links[0].href) == "https://example.com/b/c"


# --- Alternates and canonical -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("html", "alternates"),
    [
        pytest.param(
            '<link rel="alternate" hreflang="de" href="/de/">', [("de", "/de/")], id="basic"
        ),
        pytest.param(
            '<link rel="ALTERNATE" hreflang="fr-CA" href="/fr/">', [("fr-CA", "/fr/")], id="case"
        ),
        pytest.param(
            '<link rel="foo alternate" hreflang="x-default" href="/">',
            [("x-default", "/")],
            id="token",
        ),
        pytest.param('<link rel="alternates" hreflang="de" href="/de/">', [], id="no-prefix-match"),
        pytest.param(
            '<link rel="alternate" href="/feed" type="application/rss+xml">', [], id="no-hreflang"
        ),
        pytest.param('<link rel="alternate" hreflang="" href="/de/">', [], id="empty-hreflang"),
        pytest.param('<link rel="alternate" hreflang="de">', [], id="no-href"),
        pytest.param(
            '<link rel="alternate" hreflang=" de " href=" /de/ ">', [("de", "/de/")], id="stripped"
        ),
        pytest.param(
            "<link rel=alternate hreflang=de href=/de><link rel=alternate hreflang=fr href=/fr>",
            [("de", "/de"), ("fr", "/fr")],
            id="order",
        ),
        pytest.param(
            '<a rel="alternate" hreflang="de" href="/de/">x</a>', [], id="a-is-not-alternate"
        ),
        pytest.param(
            '<p>x</p><link rel="alternate" hreflang="de" href="/de/">', [], id="in-body-ignored"
        ),
    ],
)
def test_alternates(html: str, alternates: list[tuple[str, str]]) -> None:
    assert page(html).alternates == alternates


@pytest.mark.parametrize(
    ("html", "canonical"),
    [
        pytest.param("<p>x</p>", None, id="none"),
        pytest.param(
            '<link rel="canonical" href="https://example.com/c">',
            "https://example.com/c",
            id="absolute",
        ),
        pytest.param('<link rel="canonical" href="/c">', "/c", id="relative-raw"),
        pytest.param('<link rel="Canonical" href=" /c ">', "/c", id="case-and-space"),
        pytest.param('<link rel="canonical alternate" hreflang=en href="/c">', "/c", id="token"),
        pytest.param(
            '<link rel="canonical" href="/1"><link rel="canonical" href="/2">', "/1", id="first"
        ),
        pytest.param(
            '<link rel="canonical" href=""><link rel="canonical" href="/2">', "/2", id="skip-empty"
        ),
        pytest.param('<link rel="canonicalize" href="/c">', None, id="no-prefix-match"),
        pytest.param('<a rel="canonical" href="/c">x</a>', None, id="a-is-not-canonical"),
        pytest.param("<!-- <link rel=canonical href=/c> -->", None, id="comment"),
        pytest.param(
            "<head><title>t</title></head><body><p>x</p><link rel=canonical href=/c></body>",
            None,
            id="in-body-ignored",
        ),
        pytest.param(
            "<head><img src=x><link rel=canonical href=/c></head>",
            None,
            id="after-what-ends-the-head",
        ),
        pytest.param(
            "<head><meta charset=utf-8><link rel=canonical href=/c></head><p>x</p>",
            "/c",
            id="in-head",
        ),
        pytest.param(
            "<head><noscript><link rel=canonical href=/c></noscript></head>",
            "/c",
            id="in-noscript-in-head",
        ),
        pytest.param("<head></head><link rel=canonical href=/c>", "/c", id="moved-back-to-head"),
        pytest.param(
            "<head></head><body><div><div><link rel=canonical href=/c></div></div></body>",
            None,
            id="nested-in-body",
        ),
        pytest.param(
            "<head><svg><link rel=canonical href=/c></svg></head>", None, id="svg-ends-head"
        ),
    ],
)
def test_canonical(html: str, canonical: str | None) -> None:
    assert page(html).canonical == canonical


_HEAD_MARKUP = st.lists(
    st.sampled_from(
        [
            "<link rel=canonical href=/c>",
            "<LINK REL=alternate hreflang=de href=/de>",
            "<head>",
            "</head>",
            "<body>",
            "<html>",
            "<noscript>",
            "</noscript>",
            "<div>",
            "</div>",
            "<template>",
            "</template>",
            "<svg>",
            "</svg>",
            "<math><mtext>",
            "<foreignObject>",
            "<select>",
            "<table>",
            "<frameset>",
            "<title>t</title>",
            "<meta charset=utf-8>",
            "<img src=x>",
            "<link-x href=/x>",
            "text",
            "<!--",
            "-->",
        ]
    ),
    max_size=25,
).map("".join)


def _walked_head_links(parser: LexborHTMLParser) -> list[int]:
    """The reference: every <link> of the tree whose parent is <head>, or a <noscript> in it."""
    found = []
    for node in parser.tags("link"):
        parent = node.parent
        if parent is not None and parent.tag == "noscript":
            parent = parent.parent
        if parent is not None and parent.tag == "head":
            found.append(node.mem_id)
    return found


@settings(max_examples=500)
@given(html=_HEAD_MARKUP)
@example(html="<head><noscript><link rel=canonical href=/c></noscript><link href=/d></head>")
@example(html="<head><noscript><noscript><link href=/n></noscript></noscript></head>")
@example(html="<svg><head><link href=/s></svg>")
def test_head_links_agree_with_the_walk_of_the_tree(html: str) -> None:
    """_head_links reads <head>'s children (and its noscripts') for what a walk of the
    whole tree finds there: the same nodes, in document order."""
    parser = LexborHTMLParser(html)
    assert [node.mem_id for node in _head_links(parser)] == _walked_head_links(parser)


# --- Robots meta through extract_page ----------------------------------------------------------


@pytest.mark.parametrize(
    ("html", "noindex", "nofollow"),
    [
        pytest.param("<p>x</p>", False, False, id="none-present"),
        pytest.param('<meta name="robots" content="noindex">', True, False, id="noindex"),
        pytest.param('<META NAME="ROBOTS" CONTENT="NOINDEX, NOFOLLOW">', True, True, id="upper"),
        pytest.param(
            '<meta name="robots" content="noindex"><meta name="robots" content="nofollow">',
            True,
            True,
            id="two-tags",
        ),
        pytest.param('<meta name="robots" content="none">', True, True, id="none"),
        pytest.param('<meta name="sitemap-crawler" content="nofollow">', False, True, id="ours"),
        pytest.param('<meta name="googlebot" content="noindex">', False, False, id="googlebot"),
        pytest.param('<body><meta name="robots" content="noindex"></body>', True, False, id="body"),
        pytest.param("<!-- <meta name=robots content=noindex> -->", False, False, id="comment"),
        pytest.param(
            '<template><meta name="robots" content="noindex"></template>', False, False, id="tpl"
        ),
        pytest.param('<meta property="robots" content="noindex">', False, False, id="property"),
    ],
)
def test_page_robots_meta(html: str, noindex: bool, nofollow: bool) -> None:
    directives = page(html).directives
    assert (directives.noindex, directives.nofollow) == (noindex, nofollow)


def test_page_robots_meta_custom_agent() -> None:
    body = b'<meta name="mybot" content="noindex">'
    assert extract_page(body, None, PAGE, agent="mybot").directives.noindex
    assert not extract_page(body, None, PAGE).directives.noindex


def test_full_page() -> None:
    html = """<!DOCTYPE html><html><head>
    <meta name="robots" content="noindex, follow">
    <base href="/base/">
    <link rel="canonical" href="https://example.com/canon">
    <link rel="alternate" hreflang="de" href="/de/page">
    </head><body>
    <a href="one">1</a> <a href="/two" rel="nofollow">2</a>
    <script>var s = '<a href="/no">';</script>
    </body></html>"""
    assert page(html).links == [Link("one", False), Link("/two", True)]
    assert page(html) == PageData(
        base="https://example.com/base/",
        hrefs=["one", "/two"],
        nofollow_at=[1],
        alternates=[("de", "/de/page")],
        canonical="https://example.com/canon",
        directives=Directives(noindex=True, nofollow=False, source='meta robots "noindex, follow"'),
        encoding="utf-8",
        blocks=_blocks("1", "2"),  # the script is not text
    )


# --- Content blocks (honest lastmods) ---------------------------------------------------------


def _blocks(*texts: str) -> bytes:
    return array("I", [zlib.crc32("".join(t.split()).encode()) for t in texts]).tobytes()


@pytest.mark.parametrize(
    ("html", "texts"),
    [
        pytest.param(
            "<body><header>Acme</header><nav><a>Home</a></nav><div>Hello <b>big</b>\n  world"
            "</div><aside>Ad</aside><footer>(c) 2025</footer><script>x()</script></body>",
            ("Hello", "big", "world"),
            id="template-stripped",
        ),
        pytest.param(
            "<body><nav>n</nav><main><nav>in main</nav><p>Text  one</p><style>p{}</style>"
            "</main><p>outside</p></body>",
            ("in main", "Text one"),
            id="main",
        ),
        pytest.param(
            '<body><article>A</article><div role="main">R</div></body>', ("R",), id="role-main"
        ),
        pytest.param(
            "<body><article>A <i>b</i></article><p>c</p></body>", ("A", "b"), id="article"
        ),
        pytest.param(
            "<body><article>A</article><main>M</main></body>", ("M",), id="main-over-article"
        ),
        pytest.param("", (), id="empty"),
    ],
)
def test_content_blocks_are_the_main_text_without_the_template(html: str, texts: tuple) -> None:
    assert page(html).blocks == _blocks(*texts)


def test_content_blocks_ignore_markup_and_whitespace_changes() -> None:
    one = page("<body><div><p>Some   text</p>\n<p>More</p></div></body>").blocks
    two = page("<body><section>\n  <p>Some text</p><div>More</div></section></body>").blocks
    assert one == two
    assert page("<body><p>Some text.</p><p>More</p></body>").blocks != one


def _blocks_by_selectors(parser: LexborHTMLParser) -> bytes:
    """content_blocks as it chose its root and stripped it before #26 (CSS selectors for
    both): the reference the tags() walks must agree with."""
    root = parser.css_first("main, [role=main], article")
    if root is not None:
        if root.tag != "main":
            for better in (parser.css_first("main"), parser.css_first("[role=main]")):
                if better is not None:
                    root = better
                    break
        root.strip_tags(["script", "style", "noscript", "template"], recursive=True)
    else:
        root = parser.body
        if root is None:
            return b""
        parser.strip_tags(
            ["nav", "header", "footer", "aside", "script", "style", "noscript", "template"],
            recursive=True,
        )
    text = root.text(deep=True, separator="\x00").encode().translate(None, b" \t\n\r\x0c")
    return array("I", map(zlib.crc32, filter(None, text.split(b"\x00"))))[:2048].tobytes()


_CONTENT_MARKUP = st.lists(
    st.sampled_from(
        [
            "<main>",
            "</main>",
            "<MAIN>",
            "<article>",
            "</article>",
            '<div role="main">',
            "<div role=MAIN>",
            "<section role=main>",
            "</div>",
            "</section>",
            "<svg>",
            "</svg>",
            "<math>",
            "</math>",
            "<template>",
            "</template>",
            "<script>",
            "</script>",
            "<style>",
            "</style>",
            "<noscript>",
            "</noscript>",
            "<nav>",
            "</nav>",
            "<header>",
            "<footer>",
            "<aside>",
            "<p>",
            "text",
            " more  words ",
            "<body>",
            "<head>",
            "<table>",
            "<select>",
            "<option>",
            "<!--",
            "-->",
        ]
    ),
    max_size=30,
).map("".join)


@settings(max_examples=400)
@given(html=_CONTENT_MARKUP)
def test_content_blocks_agree_with_the_selector_reference(html: str) -> None:
    """The root found and the tags stripped by tags() walks are the ones the CSS selectors
    found: the stored fingerprints do not change."""
    assert content_blocks(LexborHTMLParser(html)) == _blocks_by_selectors(LexborHTMLParser(html))


# --- Robustness -----------------------------------------------------------------------------------


@settings(max_examples=300)
@given(body=st.binary(max_size=2048), content_type=st.none() | st.text(max_size=40))
def test_extract_page_never_raises_on_arbitrary_bytes(
    body: bytes, content_type: str | None
) -> None:
    data = extract_page(body, content_type, PAGE)
    assert isinstance(data.encoding, str)
    assert all(link.href and link.href == link.href.strip() for link in data.links)


_HTMLISH = st.lists(
    st.sampled_from(
        [
            b"<a href=",
            b"<area href=",
            b"<link rel=alternate hreflang=de href=",
            b"<base href=",
            b"<meta name=robots content=",
            b"<meta charset=",
            b"<template>",
            b"</template>",
            b"<script>",
            b"</script>",
            b"<!--",
            b"-->",
            b"<noscript>",
            b'"',
            b"'",
            b">",
            b"/x",
            b" ",
            b"\xe9",
            b"\xff",
            b"latin1",
            b"noindex",
            b"nofollow",
            b"\x00",
            b"<svg>",
        ]
    ),
    max_size=40,
).map(b"".join)


@settings(max_examples=300)
@given(body=_HTMLISH)
def test_extract_page_never_raises_on_html_like_bytes(body: bytes) -> None:
    data = extract_page(body, None, PAGE)
    _, encoding = decode_html(body, None)
    assert encoding == data.encoding
    assert all(link.href for link in data.links)


# --- Queries of legacy-encoded pages ---------------------------------------------------------


@pytest.mark.parametrize(
    ("href", "encoding", "sent"),
    [
        pytest.param("/s?q=café", "windows-1252", "/s?q=caf%E9", id="latin"),
        pytest.param("/s?q=日本&x=1", "shift_jis", "/s?q=%93%FA%96{&x=1", id="shift-jis"),
        pytest.param("/s?q=表", "shift_jis", "/s?q=%95\\", id="ascii-trail-byte-as-is"),
        pytest.param("/s?q=é", "gbk", "/s?q=%A8%A6", id="gbk"),
        pytest.param("/s?q=日本x", "iso-2022-jp", "/s?q=%1B$BF|K\\%1B(Bx", id="stateful"),
        pytest.param("/s?q=日", "windows-1252", "/s?q=%26%2326085%3B", id="unencodable"),
        pytest.param("/s?q=\u0081", "windows-1252", "/s?q=%81", id="whatwg-1252-table"),
        pytest.param("/café?q=é#é", "windows-1252", "/café?q=%E9#é", id="path-and-fragment-kept"),
        pytest.param("#x?é", "windows-1252", "#x?é", id="question-mark-in-fragment"),
        pytest.param("/s?q=é", "utf-8", "/s?q=é", id="utf-8"),
        pytest.param("/s?q=é", "utf-16le", "/s?q=é", id="utf-16-sends-utf-8"),
        pytest.param("/s?q=plain", "windows-1252", "/s?q=plain", id="ascii"),
    ],
)
def test_a_legacy_page_sends_its_query_in_its_encoding(href: str, encoding: str, sent: str):
    assert encode_query(href, encoding) == sent


@given(
    st.text(),
    st.sampled_from(
        ["windows-1252", "windows-1250", "shift_jis", "euc-jp", "iso-2022-jp", "euc-kr",
         "koi8-u", "gbk", "gb18030", "big5", "x-user-defined"]
    ),
)  # fmt: skip
def test_encoded_queries_are_ascii_and_ascii_hrefs_unchanged(href: str, encoding: str):
    sent = encode_query(href, encoding)
    end = sent.find("#") if "#" in sent else len(sent)
    start = sent.find("?", 0, end)
    if start >= 0:
        assert sent[start:end].isascii()
    if href.isascii():
        assert sent == href
    assert encode_query(href, "utf-8") == href


def test_digest_of_a_legacy_page_encodes_link_base_and_canonical_queries():
    body = (
        '<html><head><meta charset="windows-1252"><base href="/b/?é">'
        '<link rel="canonical" href="/c?x=é"></head>'
        '<body><a href="/s?q=café">x</a><a href="/café">y</a></body></html>'
    ).encode("cp1252")
    digest = digest_page(body, "text/html", "http://h/")
    assert digest.hrefs == ["/s?q=caf%E9", "/café"]  # a path is always UTF-8, later
    assert digest.canonical == "/c?x=%E9"
    assert digest.base == "http://h/b/?%E9"


@pytest.mark.parametrize(
    ("charset", "byte", "char"),
    [
        pytest.param("windows-1250", 0x81, "\u0081", id="windows-hole-is-c1"),
        pytest.param("windows-874", 0x81, "\u0081", id="874-hole-is-c1"),
        pytest.param("windows-1255", 0xCA, "\u05ba", id="1255-holam-haser"),
        pytest.param("windows-1255", 0xD9, "\ufffd", id="1255-undefined"),
        pytest.param("koi8-u", 0xAE, "\u045e", id="koi8-u-short-u"),
    ],
)
def test_single_byte_pages_decode_and_send_queries_as_whatwg_says(charset, byte, char):
    text, _ = decode_html(bytes([byte]), f"text/html; charset={charset}")
    assert text == char
    if char != "\ufffd":
        assert encode_query(f"?q={char}", charset) == f"?q=%{byte:02X}"


# What browsers send, from the Encoding Standard's encoders (checked against its indexes
# character by character over the BMP when this was written): narrower than Python's codecs.
@pytest.mark.parametrize(
    ("text", "encoding", "sent"),
    [
        ("髙", "shift_jis", "%FB%FC"),  # an IBM extension, not the NEC-selected copy
        ("\ue000", "shift_jis", "%26%2357344%3B"),  # the user-defined area is not encoded
        ("¥", "shift_jis", "\\"),
        ("〜", "shift_jis", "%26%2312316%3B"),  # no best-fit to ～
        ("¢", "shift_jis", "%26%23162%3B"),
        ("\u2212", "shift_jis", "%81|"),  # MINUS SIGN as FULLWIDTH HYPHEN-MINUS
        ("ｱ", "shift_jis", "%B1"),
        ("嘅", "big5", "%FBH"),  # not the HKSCS lead byte 0x9D
        ("€", "big5", "%A3%E1"),
        ("¢", "big5", "%26%23162%3B"),
        ("€", "gbk", "%80"),
        ("ß", "gbk", "%26%23223%3B"),  # GBK has no four-byte forms
        ("ḿ", "gbk", "%A8%BC"),
        ("ß", "gb18030", "%810%898"),
        ("\ue5e5", "gb18030", "%26%2358853%3B"),
        ("ä", "euc-jp", "%26%23228%3B"),  # JIS X 0212 is decoded, never encoded
        ("①", "euc-jp", "%AD%A1"),  # NEC row 13
        ("ｱ", "euc-jp", "%8E%B1"),
        ("東京～大阪", "iso-2022-jp", "%1B$BEl5~!ABg:e%1B(B"),  # one escape block
        ("¥100", "iso-2022-jp", "%1B(J\\100%1B(B"),  # Roman state spans the ASCII after it
        ("ｱ", "iso-2022-jp", "%1B$B%%22%1B(B"),  # half-width katakana sent full-width
        ("日\t本", "iso-2022-jp", "%1B$BF|K\\%1B(B"),  # the tab is dropped first
    ],
)
def test_a_legacy_query_is_encoded_as_browsers_encode_it(text: str, encoding: str, sent: str):
    assert encode_query(f"/s?q={text}", encoding) == f"/s?q={sent}"


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (b"\x80", "\u20ac"),  # a lone 0x80 is the euro sign
        (b"\xa3\xa0", "\u3000"),
        (b"\xa8\xbc", "\u1e3f"),
        (b"\x81\x35\xf4\x37", "\ue7c7"),
        (b"\xc4\xe3\xba\xc3", "你好"),
        (b"\xff", "\ufffd"),
    ],
)
def test_gbk_pages_decode_as_whatwg_says(data: bytes, text: str):
    for charset in ("gbk", "gb18030", "gb2312"):
        assert decode_html(data, f"text/html; charset={charset}")[0] == text


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (b"\xad\xa1", "①"),  # NEC row 13, which Python's euc_jp refuses
        (b"\xf9\xa1", "纊"),  # an NEC-selected IBM extension
        (b"\xa1\xc1", "～"),  # Microsoft's FULLWIDTH TILDE, not WAVE DASH
        (b"\xa1\xf1", "￠"),
        (b"\x8f\xa2\xb7", "～"),  # JIS X 0212's tilde
        (b"~\xa4\xa2", "~あ"),
        (b"\x8f\xb0\xa1", "丂"),  # JIS X 0212
        (b"\xad", "\ufffd"),
    ],
)
def test_euc_jp_pages_decode_as_whatwg_says(data: bytes, text: str):
    assert decode_html(data, "text/html; charset=euc-jp")[0] == text


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (b"\x87\x7a", "\u3875"),  # HKSCS-2008, which Python's big5hkscs lacks
        (b"\x87\x7b", "\U00021d53"),  # ... beyond the BMP
        (b"\xa1\x45", "‧"),  # WHATWG's choice where Python reads •
        (b"\xa4\x40", "一"),
        (b"\xa4", "\ufffd"),
    ],
)
def test_big5_pages_decode_as_whatwg_says(data: bytes, text: str):
    assert decode_html(data, "text/html; charset=big5")[0] == text
