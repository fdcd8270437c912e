"""Several hosts in one run (issue #28, part 5): allowed_hosts' scope rule, --resolve, and a
crawl of a site split over hosts, each host's robots.txt honoured and the start's
credentials kept to its origin. Every name resolves to 127.0.0.1 through --resolve (made-up
names do not resolve here, *.localhost included): one server answers by Host header."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from crawler.cli import main
from crawler.core.groups import DEFAULT_GROUP
from crawler.core.hosts import AllowedHosts, parse_host_pattern, parse_resolve
from crawler.core.screen import Plan
from crawler.core.urls import Scope
from crawler.errors import ConfigError
from crawler.shell import eventloop
from tests.sites import Page, Site, html, read_decisions, read_published

START = Scope.from_url("https://www.example.com/docs/")
HOSTS = AllowedHosts.parse(("blog.example.com", "*.lang.example.com"), START)

label = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)


def test_exact_and_wildcard_hosts_with_the_start_scheme_and_port() -> None:
    assert HOSTS.covers("https://blog.example.com/")
    assert HOSTS.covers("https://blog.example.com/any/path?q=1")
    assert HOSTS.covers("https://fr.lang.example.com/")
    assert HOSTS.covers("https://a.b.lang.example.com/x")
    assert not HOSTS.covers("https://lang.example.com/")  # *. never the bare suffix
    assert not HOSTS.covers("https://xlang.example.com/")
    assert not HOSTS.covers("http://blog.example.com/")  # another scheme
    assert not HOSTS.covers("https://blog.example.com:8443/")  # another port
    assert not HOSTS.covers("https://shop.example.com/")
    assert not HOSTS.covers("https://www.example.com/docs/")  # the start keeps its own scope


def test_a_start_with_a_port_wants_that_port() -> None:
    hosts = AllowedHosts.parse(("blog.test",), Scope.from_url("http://www.test:8080/"))
    assert hosts.covers("http://blog.test:8080/a")
    assert not hosts.covers("http://blog.test/a")


@given(st.lists(label, min_size=1, max_size=3), st.lists(label, min_size=1, max_size=3))
def test_a_wildcard_covers_every_subdomain_and_never_its_suffix(sub, base) -> None:
    suffix = ".".join([*base, "test"])
    hosts = AllowedHosts.parse((f"*.{suffix}",), Scope.from_url("https://start.invalid/"))
    assert hosts.covers(f"https://{'.'.join(sub)}.{suffix}/p")
    assert not hosts.covers(f"https://{suffix}/p")
    assert not hosts.covers(f"https://{'.'.join(sub)}{suffix}/p")  # no dot: another name


def test_the_start_path_prefix_applies_on_the_start_host_only() -> None:
    plan = Plan.make(
        "https://www.example.com/docs/", None, None, allowed_hosts=("blog.example.com",)
    )
    assert plan.in_scope("https://www.example.com/docs/a")
    assert not plan.in_scope("https://www.example.com/other")
    assert plan.in_scope("https://blog.example.com/other")
    assert "allowed_hosts blog.example.com" in plan.scope_text()


@pytest.mark.parametrize(
    "pattern", ["https://blog.example.com", "blog.example.com:443", "*", "*.", "a/b", "blog.*.com"]
)
def test_a_bad_pattern_is_a_config_error(pattern: str) -> None:
    with pytest.raises(ConfigError, match="allowed_hosts"):
        parse_host_pattern(pattern)


def test_patterns_are_normalised() -> None:
    assert parse_host_pattern("Blog.Example.COM") == "blog.example.com"
    assert parse_host_pattern("*.BÜCHER.de") == "*.xn--bcher-kva.de"


def test_public_url_and_allowed_hosts_do_not_mix() -> None:
    with pytest.raises(ConfigError, match="public_url"):
        Plan.make("http://127.0.0.1:9/", "https://www.example.com/", None, (), (), ("b.test",))


def test_the_settings_come_from_the_environment_too() -> None:
    from crawler.config import Config, from_env

    values = from_env(
        {
            "SITEMAP_CRAWLER_ALLOWED_HOSTS": "Blog.Example.com, *.lang.example.com",
            "SITEMAP_CRAWLER_CROSS_HOST": "true",
            "SITEMAP_CRAWLER_RESOLVE": "blog.example.com:443:127.0.0.1",
        }
    )
    config = Config(url="https://www.example.com/", **values).validate()
    assert config.allowed_hosts == ("blog.example.com", "*.lang.example.com")
    assert config.cross_host
    assert config.access().pinned == (("blog.example.com", 443, "127.0.0.1"),)


def test_resolve_entries() -> None:
    assert parse_resolve(("Blog.Example.com:443:127.0.0.1", "x.test:80:[::1]")) == {
        ("blog.example.com", 443): "127.0.0.1",
        ("x.test", 80): "::1",
    }
    for bad in ("blog.example.com:443", "h:0:127.0.0.1", "h:443:not-an-ip", ":443:127.0.0.1"):
        with pytest.raises(ConfigError, match="resolve"):
            parse_resolve((bad,))


# -- a site over several hosts, on one local server ------------------------------------------

USER, PASSWORD = "deploy", "st4ging-secret"
BASIC = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


class Hosts:
    """One aiohttp app on 127.0.0.1 answering each Host with its own Site."""

    def __init__(self, sites: dict[str, Site]) -> None:
        self.sites = sites
        self.app = web.Application()
        self.app.router.add_route("*", "/{tail:.*}", self._handle)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        site = self.sites.get(request.host.rsplit(":", 1)[0])
        if site is None:
            return web.Response(status=421, text="misdirected")
        return await site._handle(request)


def _split_site(port: int) -> Hosts:
    def at(host: str, path: str) -> str:
        return f"http://{host}:{port}{path}"

    return Hosts(
        {
            "www.example.test": Site(
                {
                    "/robots.txt": "User-agent: *\nDisallow: /nowhere\n",
                    "/": html(
                        "/a",
                        at("blog.example.test", "/"),
                        at("fr.lang.example.test", "/"),
                        at("lang.example.test", "/"),  # the bare suffix: not allowed
                        at("shop.example.test", "/"),  # not allowed
                    ),
                    "/a": html(),
                }
            ),
            "blog.example.test": Site(
                {
                    "/robots.txt": "User-agent: *\nDisallow: /private\n",
                    "/": html("/post", "/private", at("www.example.test", "/a")),
                    "/post": html(),
                    "/private": html(),
                }
            ),
            "fr.lang.example.test": Site({"/": html("/bonjour"), "/bonjour": html()}),
            "lang.example.test": Site({"/": html()}),
            "shop.example.test": Site({"/": html()}),
        }
    )


def _resolve(port: int, *hosts: str) -> list[str]:
    return ["--resolve", ",".join(f"{host}:{port}:127.0.0.1" for host in hosts)]


NAMES = ("www", "blog", "fr.lang", "lang", "shop")


def _serve_split(serve) -> tuple[int, Hosts]:
    """One server whose pages name their own port: started, then the sites filled in."""
    box: dict[str, Hosts] = {}

    async def handle(request: web.Request) -> web.StreamResponse:
        return await box["hosts"]._handle(request)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    port = serve(app).port
    box["hosts"] = _split_site(port)
    return port, box["hosts"]


def _crawl_split(port: int, out: Path, *args: str) -> int:
    return main(
        [
            "crawl", f"http://www.example.test:{port}/", "-o", str(out),
            "--allowed-hosts", "blog.example.test,*.lang.example.test",
            *_resolve(port, *(f"{n}.example.test" for n in NAMES)), *args,
        ]
    )  # fmt: skip


EXPECTED = {
    "www.example.test": ["/", "/a"],
    "blog.example.test": ["/", "/post"],
    "fr.lang.example.test": ["/", "/bonjour"],
}


def test_a_crawl_over_allowed_hosts(serve, tmp_path: Path, capsys, xsd) -> None:
    port, hosts = _serve_split(serve)
    out, decisions = tmp_path / "out", tmp_path / "decisions.jsonl"
    code = _crawl_split(port, out, "--auth", f"{USER}:{PASSWORD}", "--decisions", str(decisions))
    printed = capsys.readouterr()
    assert code == 0, printed.err
    expected = {
        "www.example.test": ["/", "/a"],
        "blog.example.test": ["/", "/post"],
        "fr.lang.example.test": ["/", "/bonjour"],
    }
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == sorted(
        f"{host}_{port}" for host in expected
    )
    for host, paths in expected.items():  # each host's own sitemap, its own URLs only
        origin = f"http://{host}:{port}"
        assert _listed(out / f"{host}_{port}", xsd) == {origin + p for p in paths}
        line = f"add this line to {origin}/robots.txt:  Sitemap: {origin}/sitemap.xml"
        assert line in printed.out.splitlines()
    record = read_decisions(decisions)
    assert record[f"http://blog.example.test:{port}/private"]["reason"] == "robots_txt"
    assert record[f"http://shop.example.test:{port}/"]["reason"] == "out_of_scope"
    assert record[f"http://lang.example.test:{port}/"]["reason"] == "out_of_scope"
    sites = hosts.sites
    assert "/private" not in sites["blog.example.test"].paths  # its own robots.txt
    assert sites["blog.example.test"].paths.count("/robots.txt") == 1  # read once
    assert "/robots.txt" in sites["fr.lang.example.test"].paths
    assert sites["shop.example.test"].paths == sites["lang.example.test"].paths == []
    # the start's credentials went to the start's origin only
    for name, site in sites.items():
        carried = [path for _, path, headers in site.requests if headers.get("Authorization")]
        assert carried == ([] if name != "www.example.test" else site.paths), name
    assert json.dumps(record)  # every decision is plain data


def test_cross_host_publishes_one_set_named_in_every_hosts_robots_txt(
    serve, tmp_path: Path, capsys, xsd
) -> None:
    port, _ = _serve_split(serve)
    out = tmp_path / "out"
    assert _crawl_split(port, out, "--cross-host", "--max-urls-per-file", "4") == 0
    printed = capsys.readouterr().out.splitlines()
    assert not [p for p in out.iterdir() if p.is_dir()]
    index = out / "sitemap.xml"
    assert xsd.any(index).getroot().tag.endswith("sitemapindex")  # 6 URLs, 4 a file
    assert _listed(out, xsd) == {
        f"http://{host}:{port}{path}" for host, paths in EXPECTED.items() for path in paths
    }
    sitemap = f"http://www.example.test:{port}/sitemap.xml"
    for host in EXPECTED:
        line = f"add this line to http://{host}:{port}/robots.txt:  Sitemap: {sitemap}"
        assert line in printed


def test_cross_host_needs_allowed_hosts(capsys) -> None:
    assert main(["crawl", "http://127.0.0.1:9/", "--cross-host"]) == 2
    assert "cross_host" in capsys.readouterr().err


def test_publish_to_copies_one_set_so_several_hosts_need_cross_host(capsys) -> None:
    args = ["crawl", "http://127.0.0.1:9/", "--allowed-hosts", "blog.example.test"]
    assert main([*args, "--publish-to", "s3://bucket/prefix/"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "give cross_host" in err


def _options(port: int, tmp_path: Path) -> list[str]:
    """A config whose url is the start host's, and the hosts' flags: explain and audit
    judge as that crawl would."""
    config = tmp_path / "hosts.toml"
    config.write_text(f'url = "http://www.example.test:{port}/"\n')
    names = (f"{n}.example.test" for n in NAMES)
    allowed = "blog.example.test,*.lang.example.test"
    return ["-c", str(config), "--allowed-hosts", allowed, *_resolve(port, *names)]


def test_explain_judges_a_url_on_an_allowed_host_by_its_robots_txt(
    serve, tmp_path: Path, capsys
) -> None:
    port, hosts = _serve_split(serve)
    options = _options(port, tmp_path)
    blog = f"http://blog.example.test:{port}"
    assert main(["explain", f"{blog}/post", *options]) == 0
    assert "allowed_hosts blog.example.test" in capsys.readouterr().out
    assert main(["explain", f"{blog}/private", *options]) == 3
    assert "Disallow: /private" in capsys.readouterr().out
    assert main(["explain", f"http://shop.example.test:{port}/", *options]) == 3
    assert "outside" in capsys.readouterr().out
    assert "/private" not in hosts.sites["blog.example.test"].paths


def test_the_audit_accepts_cross_host_locs_on_allowed_hosts(serve, tmp_path: Path, capsys) -> None:
    port, hosts = _serve_split(serve)
    out = tmp_path / "out"
    assert _crawl_split(port, out, "--cross-host", "--quiet") == 0
    hosts.sites["www.example.test"].pages["/sitemap.xml"] = Page(
        (out / "sitemap.xml").read_bytes(), content_type="application/xml"
    )
    sitemap = f"http://www.example.test:{port}/sitemap.xml"

    def audit(*args: str) -> tuple[int, dict]:
        report = tmp_path / f"audit{len(list(tmp_path.glob('audit*.json')))}.json"
        code = main(["audit", sitemap, "-q", "--report", str(report), "--retries", "0", *args])
        return code, json.loads(report.read_text())

    code, report = audit(*_options(port, tmp_path))
    codes = {f["code"] for f in report["findings"]}
    assert "url_not_allowed" not in codes and code == 0, report["findings"]
    assert report["summary"]["urls_checked"] == report["summary"]["urls_listed"] == 6
    # without the setting, the blog's and the language host's locs are another site's
    config = tmp_path / "hosts.toml"
    names = (f"{n}.example.test" for n in NAMES)
    _, report = audit("-c", str(config), *_resolve(port, *names))
    flagged = {f["url"] for f in report["findings"] if f["code"] == "url_not_allowed"}
    assert len(flagged) == 4 and all("www." not in url for url in flagged)
    capsys.readouterr()


def _listed(out: Path, xsd) -> set[str]:
    return set(read_published(out, xsd).locs)


def test_each_host_has_its_own_throttle_closed_with_the_start() -> None:
    from crawler.config import Config
    from crawler.core.page import PagePolicy
    from crawler.shell.client import PoliteClient

    config = Config(url="http://www.test/", delay=0.5).validate()
    client = PoliteClient(config, "http://www.test/", PagePolicy("sitemap-crawler"))
    start = client.throttle
    assert client.throttle_for("http://www.test/a") is start
    blog = client.throttle_for("http://blog.test/a")
    assert blog is not start and client.throttle_for("http://blog.test/b") is blog
    blog.set_crawl_delay(2.0)  # its robots.txt's, not the start's
    assert blog.requested_interval == 2.0 and start.requested_interval == 0.5
    start.close()  # max_time, a signal
    assert blog.closed and client.throttle_for("http://late.test/").closed


def test_another_hosts_crawl_delay_paces_that_host_only(serve, tmp_path: Path) -> None:

    from crawler.config import Config
    from crawler.shell.engine import Crawl

    port, hosts = _serve_split(serve)
    robots = "User-agent: *\nCrawl-delay: 0.1\nDisallow: /private\n"
    hosts.sites["blog.example.test"].pages["/robots.txt"] = robots
    config = Config(
        url=f"http://www.example.test:{port}/",
        output=tmp_path / "out",
        allowed_hosts=("blog.example.test",),
        resolve=tuple(f"{n}.example.test:{port}:127.0.0.1" for n in NAMES),
        quiet=True,
    ).validate()
    crawl = Crawl(config)
    eventloop.run(crawl.run())
    blog = crawl.client.throttle_for(f"http://blog.example.test:{port}/")
    assert blog.requested_interval == pytest.approx(0.1)
    assert crawl.client.throttle.requested_interval == 0


@pytest.mark.parametrize("cross", [False, True])
def test_llms_txt_over_allowed_hosts_is_one_file_with_a_section_per_other_host(
    serve, tmp_path: Path, capsys, xsd, cross: bool
) -> None:
    port, _ = _serve_split(serve)
    out = tmp_path / "out"
    args = ("--llms-txt", "--groups", "posts=/post") + (("--cross-host",) if cross else ())
    assert _crawl_split(port, out, *args) == 0, capsys.readouterr().err
    home = out if cross else out / f"www.example.test_{port}"
    text = (home / "llms.txt").read_text()
    headings = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert headings == ["posts", "Other pages"]  # the sitemap's groups, every host's pages
    links = re.findall(r"^- \[[^\]]*\]\(([^)]+)\)", text, re.M)
    assert set(links) == {
        f"http://{host}:{port}{path}" for host, paths in EXPECTED.items() for path in paths
    }
    if not cross:  # one llms.txt for the site: the other hosts' folders have none
        assert not list(out.glob("*/llms.txt"))[1:]
    # without groups, each other host's pages under its origin
    out2 = tmp_path / "out2"
    assert _crawl_split(port, out2, "--llms-txt", *(("--cross-host",) if cross else ())) == 0
    text = ((out2 if cross else out2 / f"www.example.test_{port}") / "llms.txt").read_text()
    headings = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert headings[0] == "/" and sorted(headings[1:]) == sorted(
        f"http://{host}:{port}/" for host in EXPECTED if host != "www.example.test"
    )


def test_groups_over_allowed_hosts_count_every_hosts_urls(serve, tmp_path: Path, capsys, xsd):
    """One writer per host, one change log: a group's figures in the report are every
    host's (its URLs and files summed, its changes the log's), and a group whose URLs are
    all on another host is not warned of as matching nothing."""
    port, _ = _serve_split(serve)
    out, report = tmp_path / "out", tmp_path / "report.json"
    args = ("--groups", "posts=/post", "--groups", "bonjour=/bonjour", "--report", str(report))
    assert _crawl_split(port, out, *args) == 0
    err = capsys.readouterr().err
    assert "matched no listed URL" not in err, err
    groups = json.loads(report.read_text())["groups"]
    assert list(groups) == ["posts", "bonjour", DEFAULT_GROUP]
    assert {name: figures["urls"] for name, figures in groups.items()} == {
        "posts": 1, "bonjour": 1, DEFAULT_GROUP: 4,
    }  # fmt: skip
    assert {name: figures["added"] for name, figures in groups.items()} == {
        "posts": 1, "bonjour": 1, DEFAULT_GROUP: 4,
    }  # fmt: skip
    files = sorted(out.glob("*/sitemap-*.xml"))
    for path in files:
        xsd.urlset(path)
    assert sum(figures["files"] for figures in groups.values()) == len(files)
