"""Rendering's pure rules (crawler.core.rendering): no browser needed."""

from __future__ import annotations

import pytest

from crawler.config import Config
from crawler.core.directives import Directives
from crawler.core.rendering import AutoRender, directives_note, is_app_shell, refused
from crawler.core.robots import RobotsTxt, parse_robots
from crawler.errors import ConfigError

ORIGIN = "https://example.com"
ROBOTS = parse_robots("User-agent: *\nDisallow: /api/private\n")


def _refused(url: str, kind: str = "fetch", method: str = "GET", hosts=()) -> str | None:
    return refused(url, method, kind, ORIGIN, hosts, ROBOTS, "sitemap-crawler/1")


def test_the_browser_may_fetch_the_origin_and_allowed_hosts_only() -> None:
    assert _refused("https://example.com/api/nav.json") is None
    assert _refused("https://example.com:443/app.js", "script") is None
    assert _refused("https://cdn.example.net/app.js", "script") == "host"
    assert (
        _refused("https://cdn.example.net/app.js", "script", hosts=("https://cdn.example.net",))
        is None
    )
    assert _refused("http://example.com/app.js", "script") == "host"  # another origin
    assert _refused("data:text/plain,x") == "scheme"


def test_robots_txt_types_and_methods_refuse() -> None:
    assert _refused("https://example.com/api/private?x=1") == "robots_txt"
    for kind in ("image", "media", "font"):
        assert _refused("https://example.com/logo.png", kind) == "resource_type"
    assert _refused("https://example.com/api/save", method="POST") == "method"
    everything = RobotsTxt.disallow_all("robots.txt answered 500")
    assert refused(ORIGIN + "/x.js", "GET", "script", ORIGIN, (), everything, "a") == "robots_txt"


@pytest.mark.parametrize(
    ("html", "shell"),
    [
        (b'<html><body><div id="root"></div><script src="/b.js"></script></body></html>', True),
        (b'<html><head><script src="/b.js"></script></head><body>Loading...</body></html>', True),
        (b"<html><body><div id=root></div><script>inline()</script></body></html>", False),
        (
            b'<html><body><script src="/b.js"></script><p>' + b"Real words here. " * 20 + b"</p>",
            False,
        ),
        (b"<html><body><a href=/a>a</a></body></html>", False),
    ],
)
def test_an_app_shell_is_an_empty_body_with_a_script_bundle(html: bytes, shell: bool) -> None:
    assert is_app_shell(html, "text/html; charset=utf-8") is shell


def test_auto_keeps_rendering_only_when_it_finds_materially_more() -> None:
    auto = AutoRender(sample=2)
    assert auto.wants(shell=False)  # sampling: every page
    assert not auto.observe({"/a", "/b"}, {"/a", "/b"})
    assert auto.observe({"/c"}, {"/c"})
    assert auto.decided is False
    assert not auto.wants(shell=False) and auto.wants(shell=True)
    assert auto.why.startswith("rendering only app shells: over the first 2 pages")

    found = AutoRender(sample=1)
    assert found.observe(set(), {"/a"})  # raw HTML found nothing: any link is material
    assert found.decided is True and found.wants(shell=False)

    twenty = AutoRender(sample=1)
    twenty.observe({f"/{i}" for i in range(10)}, {f"/{i}" for i in range(12)})
    assert twenty.decided is True  # 2 more of 10: 20%
    short = AutoRender(sample=1)
    short.observe({f"/{i}" for i in range(10)}, {f"/{i}" for i in range(11)})
    assert short.decided is False


def test_a_sample_cut_short_is_decided_on_what_was_seen() -> None:
    auto = AutoRender()
    auto.observe({"/a"}, {"/a", "/b", "/c"})
    auto.settle()
    assert auto.decided is True and "first 1 page," in auto.why


def test_a_differing_robots_meta_is_noted() -> None:
    index, noindex = Directives(), Directives(noindex=True, source='meta robots "noindex"')
    assert directives_note(index, index) is None
    note = directives_note(index, noindex)
    assert note is not None and "raw HTML index, follow, rendered noindex" in note
    assert "rendered noindex" not in (directives_note(noindex, index) or "")


def test_render_settings_are_checked() -> None:
    base = {"url": "https://example.com/"}
    config = Config(**base, render_hosts=("cdn.example.net", "http://x.test:8080/")).validate()
    assert config.render_hosts == ("https://cdn.example.net", "http://x.test:8080")
    with pytest.raises(ConfigError, match="render_hosts"):
        Config(**base, render_hosts=("https://cdn.example.net/js/",)).validate()
    with pytest.raises(ConfigError, match="render must be one of never, auto, always"):
        Config(**base, render="sometimes").validate()
    with pytest.raises(ConfigError, match="render_concurrency"):
        Config(**base, render_concurrency=0).validate()
    with pytest.raises(ConfigError, match="render_timeout"):
        Config(**base, render_timeout=0).validate()
