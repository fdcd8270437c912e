"""`audit` reads the sitemap extensions and checks them with the crawl's rules: hreflang
values, return links, videos' required fields, news age and the news file's size."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from crawler.cli import main
from sitemap_out.reader import read_sitemap
from tests.test_ext_hreflang import multilingual_site

HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
    'xmlns:xhtml="http://www.w3.org/1999/xhtml" '
    'xmlns:video="http://www.google.com/schemas/sitemap-video/1.1" '
    'xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">\n'
)
B = "https://example.com"


def audit_file(tmp_path: Path, body: str) -> list[dict]:
    path = tmp_path / "sitemap.xml"
    path.write_text(HEAD + body + "</urlset>\n")
    out = tmp_path / "audit.json"
    main(["audit", str(path), "--no-fetch", "-q", "--report", str(out), "--fail-on", "notice"])
    return json.loads(out.read_text())["findings"]


def link(lang: str, href: str) -> str:
    return f'<xhtml:link rel="alternate" hreflang="{lang}" href="{href}"/>'


def test_invalid_hreflang_and_missing_return_links(tmp_path: Path) -> None:
    body = (
        f"<url><loc>{B}/en</loc>{link('en', B + '/en')}{link('de', B + '/de')}"
        f"{link('english', B + '/en')}</url>\n"
        f"<url><loc>{B}/de</loc>{link('de', B + '/de')}</url>\n"
        f"<url><loc>{B}/fr</loc>{link('fr', B + '/fr')}{link('en', B + '/en')}</url>\n"
        f"<url><loc>{B}/es</loc>{link('es', B + '/es')}{link('it', B + '/elsewhere')}</url>\n"
    )
    findings = audit_file(tmp_path, body)
    got = {(f["code"], f["url"], f["detail"]) for f in findings}
    assert got == {
        (
            "invalid_hreflang",
            B + "/en",
            "hreflang 'english' is not a language code (or x-default)",
        ),
        ("hreflang_no_return", B + "/en", f"names {B}/de (de), which does not name it back"),
        ("hreflang_no_return", B + "/fr", f"names {B}/en (en), which does not name it back"),
    }


def test_video_without_a_required_field(tmp_path: Path) -> None:
    def video(*fields: str) -> str:
        values = {
            "thumbnail_loc": f"{B}/t.jpg",
            "title": "T",
            "description": "D",
            "content_loc": f"{B}/v.mp4",
        }
        inner = "".join(f"<video:{k}>{v}</video:{k}>" for k, v in values.items() if k in fields)
        return f"<video:video>{inner}</video:video>"

    body = (
        f"<url><loc>{B}/ok</loc>{video('thumbnail_loc', 'title', 'description', 'content_loc')}"
        "</url>\n"
        f"<url><loc>{B}/nothumb</loc>{video('title', 'description', 'content_loc')}</url>\n"
        f"<url><loc>{B}/noloc</loc>{video('thumbnail_loc', 'title', 'description')}</url>\n"
    )
    findings = audit_file(tmp_path, body)
    assert {(f["code"], f["url"], f["detail"]) for f in findings} == {
        ("video_missing_field", B + "/nothumb", "a video without thumbnail_loc"),
        ("video_missing_field", B + "/noloc", "a video without content_loc or player_loc"),
    }


def news(date: str) -> str:
    return (
        "<news:news><news:publication><news:name>N</news:name><news:language>en</news:language>"
        f"</news:publication><news:publication_date>{date}</news:publication_date>"
        "<news:title>T</news:title></news:news>"
    )


def test_news_too_old_and_too_many(tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    fresh = (now - timedelta(hours=2)).isoformat()
    old = (now - timedelta(days=3)).date().isoformat()
    body = f"<url><loc>{B}/old</loc>{news(old)}</url>\n" + "".join(
        f"<url><loc>{B}/n{i}</loc>{news(fresh)}</url>\n" for i in range(1000)
    )
    findings = audit_file(tmp_path, body)
    codes = sorted((f["code"], f["url"]) for f in findings)
    assert codes == [("news_too_old", B + "/old"), ("too_many_news_urls", None)]


def test_the_crawls_own_sitemaps_pass_the_audit(serve, crawl, tmp_path: Path) -> None:
    """What the crawl writes reads back with every extension, and the audit finds in it
    exactly the one-way cluster the crawl reported."""
    srv = serve(multilingual_site().app)
    code, pub, _, _ = crawl(srv.url + "/")
    assert code == 0
    read = read_sitemap(pub.files[0])
    assert read.ok and not read.problems
    assert any(entry.alternates for entry in read.entries)
    out = tmp_path / "audit.json"
    main(["audit", str(pub.files[0]), "--no-fetch", "-q", "--report", str(out)])
    findings = json.loads(out.read_text())["findings"]
    assert [(f["code"], f["url"]) for f in findings] == [("hreflang_no_return", srv.url + "/en/c")]
