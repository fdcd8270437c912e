"""Image sitemap entries derived from the crawl: every source form and every exclusion, on
local fixture sites, each published sitemap validated against the extensions XSD."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.core.extract import extract_page
from crawler.core.media import host_accepted, host_of, is_pixel, largest_candidate
from crawler.core.page import _same_origin
from crawler.core.urls import join_parts, resolve
from tests.sites import Site, html, parse_xml

IMG = "{http://www.google.com/schemas/sitemap-image/1.1}"
SM = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


def images_by_loc(path) -> dict[str, list[str]]:
    root = parse_xml(path)
    return {
        url.findtext(f"{SM}loc"): [i.findtext(f"{IMG}loc") for i in url.iter(f"{IMG}image")]
        for url in root.iter(f"{SM}url")
    }


# -- pure rules ------------------------------------------------------------------------------


def test_largest_srcset_candidate() -> None:
    assert largest_candidate("a.jpg 480w, b.jpg 1080w, c.jpg 800w") == "b.jpg"
    assert largest_candidate("a.jpg, b.jpg 2x, c.jpg 1.5x") == "b.jpg"
    assert largest_candidate("a.jpg 2x, b.jpg 100w") == "b.jpg"  # widths rank above densities
    assert largest_candidate("/img/a,b.jpg 10w, /c.jpg 20w") == "/c.jpg"
    assert largest_candidate("one.jpg") == "one.jpg"
    assert largest_candidate("  ,, ") is None


def test_tracking_pixels() -> None:
    assert is_pixel("1", "1") and is_pixel("0", "0") and is_pixel("1px", "1")
    assert not is_pixel("1", None) and not is_pixel("10", "1")


def test_image_hosts() -> None:
    def accepted(url: str, patterns: tuple[str, ...]) -> bool:
        return host_accepted(host_of(url), "example.com", patterns)

    assert accepted("http://example.com/a.png", ())
    assert accepted("http://cdn.example.com:8080/a.png", ())
    assert not accepted("http://example.org/a.png", ())
    assert not accepted("http://badexample.com/a.png", ())
    assert accepted("http://img.cdn.net/a", (".cdn.net",))
    assert accepted("http://cdn.net/a", ("*.cdn.net",))
    assert not accepted("http://example.com/a", ("cdn.net",))
    assert accepted("http://any.where/a", ("*",))
    assert host_of("http://[::1]:8080/a") == "[::1]"
    assert host_of("https://a.b/") == "a.b"


def test_extract_collects_every_source_form() -> None:
    body = b"""<html><head><meta property="og:image" content="/og.jpg"></head><body>
    <img src="/a.jpg"><img srcset="/s1.jpg 1x, /s2.jpg 2x">
    <picture><source srcset="/p-small.webp 400w, /p-big.webp 1600w"><img src="/p.jpg"></picture>
    <video><source src="/v.mp4"></video>
    <img src="data:image/gif;base64,R0lGOD"><img src="/pixel.gif" width="1" height="1">
    </body></html>"""
    page = extract_page(body, "text/html", "http://example.com/")
    assert page.images == ["/a.jpg", "/s2.jpg", "/p.jpg", "/p-big.webp", "/og.jpg"]
    assert extract_page(body, "text/html", "http://example.com/", images=False).images == []


# -- crawls ----------------------------------------------------------------------------------


def test_crawl_lists_images_resolved_deduplicated_and_filtered(serve, crawl, tmp_path) -> None:
    site = Site(
        {
            "/": html(
                "/gallery/",
                "/plain",
                head='<meta property="og:image" content="https://cdn.example.com/og.jpg">',
                body='<img src="/logo.png"><img src="logo.png"><img src="/logo.png#x">',
            ),
            "/gallery/": html(
                body=(
                    '<img src="one.jpg" srcset="one-2x.jpg 2x">'
                    '<picture><source srcset="big.webp 1200w, small.webp 300w">'
                    '<img src="fallback.jpg"></picture>'
                    '<img src="data:image/png;base64,iVBOR">'
                    '<img src="/track.gif" width="1" height="1">'
                    '<img src="http://elsewhere.test/x.jpg">'
                )
            ),
            "/plain": html(),
        }
    )
    srv = serve(site.app)
    report = tmp_path / "report.json"
    code, pub, _, _ = crawl(srv.url + "/", "--report", str(report))
    assert code == 0
    images = images_by_loc(pub.files[0])
    assert images[srv.url + "/"] == [srv.url + "/logo.png"]  # cdn.example.com not accepted
    assert images[srv.url + "/gallery/"] == [
        srv.url + p for p in ("/gallery/one.jpg", "/gallery/one-2x.jpg", "/gallery/fallback.jpg")
    ] + [srv.url + "/gallery/big.webp"]
    assert images[srv.url + "/plain"] == []
    # images are not fetched
    assert not any(p.endswith((".jpg", ".png", ".webp", ".gif")) for p in site.paths)
    block = json.loads(report.read_text())["images"]
    assert block == {"pages": 2, "images": 5}
    assert b"xmlns:image" in pub.files[0].read_bytes()


def test_image_hosts_accepts_a_cdn_and_no_images_turns_it_off(serve, crawl, tmp_path) -> None:
    site = Site(
        {
            "/": html(
                body='<img src="https://img.cdn.example.net/a.jpg"><img src="/b.jpg">'
                '<img src="https://other.example.org/c.jpg">'
            )
        }
    )
    srv = serve(site.app)
    code, pub, _, _ = crawl(srv.url + "/", "--image-hosts", ".cdn.example.net,127.0.0.1")
    assert code == 0
    assert images_by_loc(pub.files[0])[srv.url + "/"] == [
        "https://img.cdn.example.net/a.jpg",
        srv.url + "/b.jpg",
    ]
    code, pub, _, _ = crawl(srv.url + "/", "--no-images", out=tmp_path / "off")
    assert code == 0
    assert images_by_loc(pub.files[0])[srv.url + "/"] == []
    assert b"xmlns:image" not in pub.files[0].read_bytes()


def test_at_most_a_thousand_images_per_page(serve, crawl) -> None:
    imgs = "".join(f'<img src="/i/{n}.jpg">' for n in range(1200))
    site = Site({"/": html(body=imgs)})
    srv = serve(site.app)
    code, pub, _, _ = crawl(srv.url + "/")
    assert code == 0
    images = images_by_loc(pub.files[0])[srv.url + "/"]
    assert len(images) == 1000 and images[-1] == srv.url + "/i/999.jpg"


def test_image_heavy_entries_roll_over_before_the_byte_limit(serve, crawl) -> None:
    """The writer counts the image tags: a part file stays under max_bytes_per_file."""
    pages = {
        f"/p{n}": html(body="".join(f'<img src="/i/{n}-{k}.jpg">' for k in range(40)))
        for n in range(30)
    }
    pages["/"] = html(*pages)
    site = Site(pages)
    srv = serve(site.app)
    code, pub, _, _ = crawl(srv.url + "/", "--max-bytes-per-file", "20000")
    assert code == 0
    parts = [p for p in pub.files if p.name.startswith("sitemap-")]
    assert len(parts) > 1
    assert all(p.stat().st_size <= 20000 for p in parts)
    assert sum(len(v) for p in parts for v in images_by_loc(p).values()) == 30 * 40


@given(st.text(alphabet="/.?#=&%:;@!$'()*+,~_-aZ09é \\", max_size=20))
@settings(max_examples=3000)
def test_same_origin_fast_join_is_resolve_or_nothing(href: str) -> None:
    """The string join taken for most images gives exactly what resolve() gives."""
    for base in ("http://127.0.0.1:8795/s01/p/12.html", "https://www.example.com/"):
        fast = _same_origin(href, base, *join_parts(base))
        assert fast is None or fast == resolve(base, href), (href, base)


@given(
    st.sampled_from(
        [
            "http://127.0.0.1:8795",
            "http://127.0.0.1:879",
            "http://127.0.0.1:8795.",
            "http://127.0.0.1",
            "HTTP://127.0.0.1:8795",
            "https://www.example.com",
            "https://www.example.com:443",
            "https://www.example.com.",
            "https://WWW.example.com",
            "http://www.example.com",
            "https://www.example.comm",
        ]
    ),
    st.text(alphabet="/.?#=&%:;@!$'()*+,~_-aZ09é \\", max_size=20),
)
@settings(max_examples=3000)
def test_same_origin_fast_join_of_absolute_urls_is_resolve_or_nothing(
    origin: str, tail: str
) -> None:
    """Absolute URLs (og:image, hreflang links) joined by the same test give what resolve()
    gives, whatever the spelling of the origin they start with."""
    href = origin + tail
    for base in ("http://127.0.0.1:8795/s01/p/12.html", "https://www.example.com/"):
        fast = _same_origin(href, base, *join_parts(base))
        assert fast is None or fast == resolve(base, href), (href, base)
        if re.fullmatch(r"/[aZ09_/-]*", tail) and base.startswith(origin + "/"):
            assert fast == href  # the common case is taken


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["", "/", "http://127.0.0.1:8795", "https://www.example.com", "//"]),
            st.text(alphabet="/.?#=&%:;@!$'()*+,~_-aZ09é \\\n", max_size=12),
        ),
        min_size=1,
        max_size=6,
    )
)
@settings(max_examples=3000)
def test_plain_images_are_the_same_origin_joins(pairs: list[tuple[str, str]]) -> None:
    """A page's images joined in one test give what _same_origin gives each, or nothing."""
    from crawler.core.page import _plain_images

    raws = [head + tail for head, tail in pairs]
    for base in ("http://127.0.0.1:8795/s01/p/12.html", "https://www.example.com/"):
        parts = join_parts(base)
        together = _plain_images(raws, parts[1])
        if together is not None:
            assert together == [_same_origin(raw, base, *parts) for raw in raws], (raws, base)
    if all(re.fullmatch(r"/[aZ09_?=-]+", raw) for raw in raws):
        assert _plain_images(raws, "http://h") == ["http://h" + raw for raw in raws]


def test_same_origin_fast_join_takes_the_common_absolute_urls() -> None:
    base = "http://127.0.0.1:8795/s01/p/12.html"
    for href in ("http://127.0.0.1:8795/img/og/1.jpg", "http://127.0.0.1:8795/de/x?a=1&b=2"):
        assert _same_origin(href, base, *join_parts(base)) == href
    for href in ("http://127.0.0.1:8795/a#b", "http://127.0.0.1:8795/a/../b", "https://x.org/a"):
        assert _same_origin(href, base, *join_parts(base)) is None


@given(
    st.lists(
        st.tuples(
            st.text(alphabet="abc/.,_?=", min_size=1, max_size=8),
            st.sampled_from(["", " 1x", " 2x", " 1.5x", " 480w", " 1200w", " 10w", "  3x "]),
        ),
        min_size=1,
        max_size=5,
    ),
    st.sampled_from([", ", ",\n", " , ", ","]),
)
def test_srcset_split_parse_is_the_standard_parse(candidates, comma) -> None:
    """The split taken for the common srcset picks what the full HTML parse picks."""
    from crawler.core.media import _SPLIT_SAFE, _largest_full, _largest_simple

    srcset = comma.join(url + descriptor for url, descriptor in candidates)
    if _SPLIT_SAFE.search(srcset) is None:
        assert _largest_simple(srcset) == _largest_full(srcset)
