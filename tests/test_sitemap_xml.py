"""Serialisation: exact bytes, namespaces only when used, escaping round-trips."""

from __future__ import annotations

from datetime import UTC, date, datetime

from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

from sitemap_out import Alternate, Entry
from sitemap_out.xml import (
    URLSET_CLOSE,
    escape,
    format_priority,
    index_document,
    url_element,
    urlset_open,
)

# Characters XML 1.0 allows (minus the surrogates Python strings can hold but UTF-8 can't).
xml_text = st.text(
    st.characters(
        blacklist_categories=["Cs"],
        blacklist_characters=[chr(c) for c in range(32) if c not in (9, 10, 13)]
        + ["\ufffe", "\uffff"],
    )
)


def test_plain_entry_bytes() -> None:
    assert url_element(Entry("https://example.com/a")) == (
        "<url><loc>https://example.com/a</loc></url>\n"
    )


def test_full_entry_child_order() -> None:
    e = Entry(
        "https://example.com/a?x=1&y=2",
        lastmod=datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
        changefreq="daily",
        priority=0.8,
        images=("https://example.com/i.png",),
        alternates=(Alternate("en", "https://example.com/a?x=1&y=2"),),
    )
    assert url_element(e) == (
        "<url><loc>https://example.com/a?x=1&amp;y=2</loc>"
        "<lastmod>2024-01-02T03:04:05+00:00</lastmod><changefreq>daily</changefreq>"
        "<priority>0.8</priority>"
        '<xhtml:link rel="alternate" hreflang="en" href="https://example.com/a?x=1&amp;y=2"/>'
        "<image:image><image:loc>https://example.com/i.png</image:loc></image:image></url>\n"
    )


def test_namespaces_only_when_used(xsd) -> None:
    plain = urlset_open()
    assert "xmlns:image" not in plain and "xmlns:xhtml" not in plain
    assert plain.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<urlset ')
    both = urlset_open(images=True, xhtml=True)
    assert 'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"' in both
    assert 'xmlns:xhtml="http://www.w3.org/1999/xhtml"' in both
    e = Entry("https://example.com/a", images=("https://example.com/i.png",))
    xsd.urlset((urlset_open(images=True) + url_element(e) + URLSET_CLOSE).encode())
    e = Entry("https://example.com/a", alternates=(Alternate("x-default", "https://e.com/"),))
    xsd.urlset((urlset_open(xhtml=True) + url_element(e) + URLSET_CLOSE).encode())


def test_no_crlf_no_indentation() -> None:
    doc = urlset_open() + url_element(Entry("https://example.com/a")) + URLSET_CLOSE
    assert "\r" not in doc
    assert all(not line.startswith((" ", "\t")) for line in doc.splitlines())


@given(st.floats(min_value=0.0, max_value=1.0))
def test_priority_is_a_plain_decimal(p: float) -> None:
    text = format_priority(p)
    assert "e" not in text.lower()
    assert abs(float(text) - p) <= 0.00005
    assert 0.0 <= float(text) <= 1.0


def test_index_document(xsd) -> None:
    doc = index_document(
        [
            ("https://example.com/sitemap-1.xml.gz", date(2024, 1, 2)),
            ("https://example.com/sitemap-2.xml.gz", None),
        ]
    )
    xsd.index(doc.encode())


@given(xml_text)
def test_escape_round_trips_in_text_and_attributes(text: str) -> None:
    esc = escape(text)
    assert "<" not in esc and ">" not in esc and '"' not in esc and "'" not in esc
    assert "&" not in esc.replace("&amp;", "").replace("&lt;", "").replace("&gt;", "").replace(
        "&quot;", ""
    ).replace("&apos;", "")
    doc = f"<r a=\"{esc}\" b='{esc}'>{esc}</r>".encode()
    root = etree.fromstring(doc)
    # XML normalises CR and attribute whitespace; compare what XML promises to keep.
    expect_text = text.replace("\r\n", "\n").replace("\r", "\n")
    assert (root.text or "") == expect_text
    assert root.get("a") == root.get("b")
    assert root.get("a") == expect_text.replace("\n", " ").replace("\t", " ")


@given(
    st.lists(
        st.text("abcXYZ019-._~!$&'()*+,;=:@/?%", max_size=40).map(
            lambda s: "https://example.com/" + s.replace("%", "%25")
        ),
        min_size=1,
        max_size=20,
    )
)
def test_locs_with_specials_round_trip_and_validate(xsd, locs: list[str]) -> None:
    doc = urlset_open() + "".join(url_element(Entry(loc)) for loc in locs) + URLSET_CLOSE
    tree = xsd.urlset(doc.encode())
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    assert [el.text for el in tree.iterfind("s:url/s:loc", ns)] == locs


def test_images_and_alternates_escaped_whether_or_not_any_needs_it() -> None:
    """The images of an entry are written in one join when none holds a special; the
    bytes are those of escaping each one."""
    from sitemap_out import Alternate, Entry
    from sitemap_out.xml import escape, url_element

    plain = ("https://e.com/a.jpg", "https://e.com/b.jpg?w=1")
    odd = ("https://e.com/a.jpg", "https://e.com/b.jpg?w=1&h='2'")
    for images in (plain, odd):
        entry = Entry(
            "https://e.com/page", images=images, alternates=(Alternate("de", "https://e.com/?a&b"),)
        )
        expected = (
            "<url><loc>https://e.com/page</loc>"
            '<xhtml:link rel="alternate" hreflang="de" href="https://e.com/?a&amp;b"/>'
            + "".join(
                f"<image:image><image:loc>{escape(i)}</image:loc></image:image>" for i in images
            )
            + "</url>\n"
        )
        assert url_element(entry) == expected
    assert escape("a&b<c>d\"e'f") == "a&amp;b&lt;c&gt;d&quot;e&apos;f"
