"""Video sitemap entries derived from the crawl: <video>, embedded players from known hosts,
VideoObject JSON-LD; a video lacking a field Google requires is left out and counted."""

from __future__ import annotations

import json

from crawler.core.media import (
    RawVideo,
    iso_duration,
    jsonld_facts,
    missing_video_field,
    player_video,
)
from tests.sites import Site, html, parse_xml

SM = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
VID = "{http://www.google.com/schemas/sitemap-video/1.1}"


def videos_by_loc(path) -> dict[str, list[dict[str, str]]]:
    return {
        url.findtext(f"{SM}loc"): [
            {child.tag.removeprefix(VID): child.text or "" for child in video}
            for video in url.iter(f"{VID}video")
        ]
        for url in parse_xml(path).iter(f"{SM}url")
    }


def page(head: str = "", body: str = "", title: str = "") -> str:
    return (
        f"<!doctype html><html><head><title>{title}</title>{head}</head><body>{body}</body></html>"
    )


def test_iso_durations() -> None:
    assert iso_duration("PT1M33S") == 93
    assert iso_duration("PT2H") == 7200
    assert iso_duration("P1DT1S") == 86401
    assert iso_duration("pt10.6s") == 11
    assert iso_duration("P") is None and iso_duration("93") is None


def test_players() -> None:
    yt = player_video("https://www.youtube.com/embed/dQw4w9WgXcQ?rel=0", "T")
    assert yt == RawVideo(
        thumbnail="https://i.ytimg.com/vi/dQw4w9WgXcQ/hqdefault.jpg",
        title="T",
        player="https://www.youtube.com/embed/dQw4w9WgXcQ?rel=0",
    )
    vimeo = player_video("https://player.vimeo.com/video/76979871", None)
    assert vimeo is not None and vimeo.thumbnail is None
    assert player_video("https://example.com/embed/x", "T") is None


def test_jsonld_video_and_article() -> None:
    text = json.dumps(
        {
            "@context": "https://schema.org",
            "@graph": [
                {"@type": "NewsArticle", "headline": "H", "datePublished": "2024-05-01T10:00:00Z"},
                {
                    "@type": ["VideoObject"],
                    "name": "N",
                    "description": "D",
                    "thumbnailUrl": ["/t.jpg"],
                    "contentUrl": "/v.mp4",
                    "duration": "PT1M",
                    "uploadDate": "2024-05-01",
                },
            ],
        }
    )
    videos, published, headline = jsonld_facts(text)
    assert videos == [RawVideo("/t.jpg", "N", "D", "/v.mp4", None, 60, "2024-05-01")]
    assert (published, headline) == ("2024-05-01T10:00:00Z", "H")
    assert jsonld_facts("{not json") == ([], None, None)


def test_missing_fields_named_in_order() -> None:
    assert missing_video_field(RawVideo(None, "t", "d", "c")) == "thumbnail"
    assert missing_video_field(RawVideo("th", None, "d", "c")) == "title"
    assert missing_video_field(RawVideo("th", "t", None, None, "p")) == "description"
    assert missing_video_field(RawVideo("th", "t", "d")) == "content or player location"
    assert missing_video_field(RawVideo("th", "t", "d", None, "p")) is None


JSONLD = json.dumps(
    {
        "@context": "https://schema.org",
        "@type": "VideoObject",
        "name": "Grilling steaks",
        "description": "How to get perfectly done steaks every time & more",
        "thumbnailUrl": "/thumbs/123.jpg",
        "contentUrl": "/media/123.mp4",
        "embedUrl": "/player?v=123",
        "duration": "PT10M",
        "uploadDate": "2024-05-01T12:00:00+02:00",
    }
)


def test_crawl_lists_videos_from_every_source(serve, crawl, tmp_path) -> None:
    desc = '<meta name="description" content="The page says what the video is.">'
    site = Site(
        {
            "/": html("/element", "/sourced", "/youtube", "/vimeo", "/jsonld", "/bare", "/none"),
            "/element": page(
                head=desc,
                body='<video src="clip.mp4" poster="clip.jpg" title="A clip"></video>',
                title="Element page",
            ),
            "/sourced": page(
                head='<meta property="og:title" content="OG title">'
                '<meta property="og:description" content="OG description">',
                body='<video poster="/p.jpg"><source src="/s.webm" type="video/webm"></video>',
            ),
            "/youtube": page(
                head=desc,
                body='<iframe src="https://www.youtube.com/embed/abcDEF12345" '
                'title="YT video"></iframe>',
            ),
            # Vimeo: no thumbnail follows from the player URL: left out
            "/vimeo": page(
                head=desc,
                body='<iframe src="https://player.vimeo.com/video/76979871" title="V"></iframe>',
            ),
            "/jsonld": page(
                head=f'<script type="application/ld+json">{JSONLD}</script>',
                body='<iframe src="/player?v=123"></iframe>',
            ),
            # no poster: no thumbnail
            "/bare": page(head=desc, body='<video src="/bare.mp4"></video>', title="Bare"),
            # no title anywhere, no description anywhere
            "/none": page(body='<video src="/n.mp4" poster="/n.jpg"></video>'),
        }
    )
    srv = serve(site.app)
    u = srv.url
    report = tmp_path / "report.json"
    code, pub, _, _ = crawl(u + "/", "--report", str(report))
    assert code == 0
    videos = videos_by_loc(pub.files[0])
    assert videos[u + "/element"] == [
        {
            "thumbnail_loc": u + "/clip.jpg",
            "title": "A clip",
            "description": "The page says what the video is.",
            "content_loc": u + "/clip.mp4",
        }
    ]
    assert videos[u + "/sourced"] == [
        {
            "thumbnail_loc": u + "/p.jpg",
            "title": "OG title",
            "description": "OG description",
            "content_loc": u + "/s.webm",
        }
    ]
    assert videos[u + "/youtube"] == [
        {
            "thumbnail_loc": "https://i.ytimg.com/vi/abcDEF12345/hqdefault.jpg",
            "title": "YT video",
            "description": "The page says what the video is.",
            "player_loc": "https://www.youtube.com/embed/abcDEF12345",
        }
    ]
    assert videos[u + "/jsonld"] == [
        {
            "thumbnail_loc": u + "/thumbs/123.jpg",
            "title": "Grilling steaks",
            "description": "How to get perfectly done steaks every time & more",
            "content_loc": u + "/media/123.mp4",
            "player_loc": u + "/player?v=123",
            "duration": "600",
            "publication_date": "2024-05-01T12:00:00+02:00",
        }
    ]
    assert videos[u + "/vimeo"] == videos[u + "/bare"] == videos[u + "/none"] == []
    block = json.loads(report.read_text())["videos"]
    assert block["listed"] == 4
    assert block["left_out_by_missing_field"] == {"thumbnail": 2, "title": 1}
    assert block["left_out_count"] == 3
    assert {(x["page"], x["missing"]) for x in block["left_out"]} == {
        (u + "/vimeo", "thumbnail"),
        (u + "/bare", "thumbnail"),
        (u + "/none", "title"),
    }
    assert b"xmlns:video" in pub.files[0].read_bytes()
    assert b"xmlns:news" not in pub.files[0].read_bytes()


def test_a_videos_urls_are_named_on_the_public_origin(serve, crawl) -> None:
    """--public-url: a video's thumbnail, content and player on the crawled origin are
    written on the public one, like the page itself."""
    json_ld = json.dumps(
        {
            "@type": "VideoObject",
            "name": "N",
            "description": "D",
            "thumbnailUrl": "/t.jpg",
            "contentUrl": "/v.mp4",
            "embedUrl": "/player?v=1",
        }
    )
    site = Site(
        {
            "/": html("/v"),
            "/v": page(head=f'<script type="application/ld+json">{json_ld}</script>'),
        }
    )
    srv = serve(site.app)
    public = "https://www.example.com"
    code, pub, _, _ = crawl(srv.url + "/", "--public-url", public + "/")
    assert code == 0
    assert videos_by_loc(pub.files[0])[public + "/v"] == [
        {
            "thumbnail_loc": public + "/t.jpg",
            "title": "N",
            "description": "D",
            "content_loc": public + "/v.mp4",
            "player_loc": public + "/player?v=1",
        }
    ]
