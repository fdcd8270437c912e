"""The news sitemap: articles of the last two days, by the [news] table of the config."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from crawler.config import from_env, load_toml
from crawler.errors import ConfigError
from tests.sites import Site, html, parse_xml

SM = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
NEWS = "{http://www.google.com/schemas/sitemap-news/0.9}"

NOW = datetime.now(UTC).replace(microsecond=0)


def article(published: datetime | None, *, jsonld: bool = False, title: str = "Title") -> str:
    head = ""
    if published is not None and jsonld:
        data = {"@type": "NewsArticle", "headline": title, "datePublished": published.isoformat()}
        head = f'<script type="application/ld+json">{json.dumps(data)}</script>'
    elif published is not None:
        head = f'<meta property="article:published_time" content="{published.isoformat()}">'
        head += f'<meta property="og:title" content="{title}">'
    return html(head=head)


def news_config(tmp_path: Path, articles: str = '["/news/*"]') -> Path:
    path = tmp_path / "news.toml"
    path.write_text(f'[news]\nname = "The Example Times"\nlanguage = "en"\narticles = {articles}\n')
    return path


def read_news(path: Path) -> dict[str, dict[str, str]]:
    found = {}
    for url in parse_xml(path).iter(f"{SM}url"):
        news = url.find(f"{NEWS}news")
        found[url.findtext(f"{SM}loc")] = {
            "name": news.findtext(f"{NEWS}publication/{NEWS}name"),
            "language": news.findtext(f"{NEWS}publication/{NEWS}language"),
            "date": news.findtext(f"{NEWS}publication_date"),
            "title": news.findtext(f"{NEWS}title"),
        }
    return found


def test_news_sitemap_lists_recent_articles(serve, crawl, tmp_path) -> None:
    hour_ago = NOW - timedelta(hours=1)
    day_ago = NOW - timedelta(days=1)
    site = Site(
        {
            "/": html("/news/fresh", "/news/jsonld", "/news/old", "/news/undated", "/blog/post"),
            "/news/fresh": article(hour_ago, title="Merger & talks"),
            "/news/jsonld": article(day_ago, jsonld=True, title="From JSON-LD"),
            "/news/old": article(NOW - timedelta(days=3)),
            "/news/undated": article(None),
            "/blog/post": article(hour_ago),  # dated, but not an article by the pattern
        }
    )
    srv = serve(site.app)
    u = srv.url
    report = tmp_path / "report.json"
    code, pub, _, _ = crawl(u + "/", "-c", str(news_config(tmp_path)), "--report", str(report))
    assert code == 0
    names = sorted(p.name for p in pub.files)
    assert names == ["sitemap-1.xml", "sitemap-news.xml", "sitemap.xml"]
    index = parse_xml(pub.files[names.index("sitemap.xml")])
    listed = [loc.text for loc in index.iter(f"{SM}loc")]
    assert listed == [u + "/sitemap-1.xml", u + "/sitemap-news.xml"]
    news = read_news(pub.files[names.index("sitemap-news.xml")])
    assert news == {
        u + "/news/fresh": {
            "name": "The Example Times",
            "language": "en",
            "date": hour_ago.isoformat(),
            "title": "Merger & talks",
        },
        u + "/news/jsonld": {
            "name": "The Example Times",
            "language": "en",
            "date": day_ago.isoformat(),
            "title": "From JSON-LD",
        },
    }
    # every page is still in the main sitemap
    assert len(set(pub.locs)) == 6
    block = json.loads(report.read_text())["news"]
    assert block == {"listed": 2, "left_out": {"older than two days": 1}}


def test_at_most_a_thousand_news_urls_the_newest(serve, crawl, tmp_path) -> None:
    count = 1005
    pages = {f"/news/{n}": article(NOW - timedelta(minutes=n)) for n in range(count)}
    pages["/"] = html(*pages)
    srv = serve(Site(pages).app)
    report = tmp_path / "report.json"
    code, pub, _, _ = crawl(
        srv.url + "/", "-c", str(news_config(tmp_path)), "--report", str(report)
    )
    assert code == 0
    news_file = next(p for p in pub.files if p.name == "sitemap-news.xml")
    news = read_news(news_file)
    assert len(news) == 1000
    assert srv.url + "/news/999" in news and srv.url + "/news/1000" not in news
    assert json.loads(report.read_text())["news"]["left_out"] == {"over the 1,000 newest": 5}


def test_without_news_config_no_news_sitemap(serve, crawl) -> None:
    site = Site({"/": html("/news/a"), "/news/a": article(NOW)})
    srv = serve(site.app)
    code, pub, _, _ = crawl(srv.url + "/")
    assert code == 0
    assert [p.name for p in pub.files] == ["sitemap.xml"]
    assert b"xmlns:news" not in pub.files[0].read_bytes()


def test_news_table_and_env(tmp_path) -> None:
    values = load_toml(news_config(tmp_path))
    assert values == {
        "news_name": "The Example Times",
        "news_language": "en",
        "news_articles": ("/news/*",),
    }
    env = from_env(
        {
            "SITEMAP_CRAWLER_NEWS_NAME": "Times",
            "SITEMAP_CRAWLER_NEWS_LANGUAGE": "de",
            "SITEMAP_CRAWLER_NEWS_ARTICLES": "/news/*\n/artikel/*",
        }
    )
    assert env["news_articles"] == ("/news/*", "/artikel/*")
    bad = tmp_path / "bad.toml"
    bad.write_text('[news]\nname = "X"\npublisher = "Y"\n')
    with pytest.raises(ConfigError, match="unknown key 'publisher' in \\[news\\]"):
        load_toml(bad)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--news-name", "X"], "needs all of"),
        (["--news-name", "X", "--news-language", "english", "--news-articles", "/n/*"], "ISO 639"),
        (["--news-name", "X", "--news-language", "en", "--news-articles", "n/*"], "never match"),
        (["--image-hosts", "http://cdn.example.com/"], "image_hosts"),
    ],
)
def test_bad_extension_settings_exit_2(crawl, args, message) -> None:
    code, _, _, err = crawl("http://127.0.0.1:1/", *args)
    assert code == 2
    assert message in err


def test_a_day_without_articles_says_so_and_keeps_the_index(serve, crawl, tmp_path) -> None:
    """No article in the two days: sitemap-news.xml cannot be published (an empty urlset is
    invalid), so a line says why; the parts and the index stay as they were."""
    pages = {"/": html("/news/a", "/about"), "/about": html(), "/news/a": article(NOW)}
    srv = serve(Site(pages).app)
    config = news_config(tmp_path)
    code, _, _, _ = crawl(srv.url + "/", "-c", str(config))
    assert code == 0 and (tmp_path / "out" / "sitemap-news.xml").exists()
    part = (tmp_path / "out" / "sitemap-1.xml").read_bytes()
    pages["/news/a"] = article(NOW - timedelta(days=3))  # the same server, two days on
    code, _, _, err = crawl(srv.url + "/", "-c", str(config))
    assert code == 0
    assert "no article published in the last two days" in err and "older than two days" in err
    assert not (tmp_path / "out" / "sitemap-news.xml").exists()
    assert (tmp_path / "out" / "sitemap-1.xml").read_bytes() == part  # the index stays


def test_the_audit_of_a_crawl_with_news_finds_no_duplicate(serve, crawl, tmp_path) -> None:
    """An article is in sitemap-news.xml and in the main sitemap, as Google expects: the
    audit of the crawl's own output does not call it a duplicate URL."""
    from crawler.cli import main

    srv = serve(Site({"/": html("/news/a"), "/news/a": article(NOW)}).app)
    code, _, _, _ = crawl(srv.url + "/", "-c", str(news_config(tmp_path)))
    assert code == 0
    report = tmp_path / "audit.json"
    index = tmp_path / "out" / "sitemap.xml"
    main(["audit", str(index), "--no-fetch", "-q", "--report", str(report)])
    codes = [f["code"] for f in json.loads(report.read_text())["findings"]]
    assert "duplicate_url" not in codes, codes
