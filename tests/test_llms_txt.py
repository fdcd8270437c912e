"""llms.txt from the crawl (#27, part 4): with `llms_txt`, the listed pages' titles and
descriptions by section, published with the sitemap set. Every file is read back by a strict
parser of the llms.txt grammar (below); every sitemap is validated by the crawl fixture."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import signal
import subprocess
from dataclasses import dataclass, field

import pytest
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from crawler.cli import main
from crawler.core.extract import extract_page
from crawler.core.llms import MAX_SECTIONS, MAX_TITLE, LlmsFile, about_of, escape, section_of
from tests.procs import CLI, child_env, wait_for
from tests.sites import Page, Site, crawl_process, html, read_published

# --- a strict reader of what we write ------------------------------------------------------

_TEXT = r"((?:[^\\\[\]\n]|\\[\\`*_\[\]<>|])*)"  # escaped Markdown: no bare bracket
_LINK = re.compile(rf"- \[{_TEXT}\]\(([^()\s<>]+)\)(?:: (\S.*))?")
_ESCAPED = re.compile(r"\\([\\`*_\[\]<>|])")


@dataclass
class Link:
    title: str
    url: str
    description: str | None


@dataclass
class LlmsTxt:
    title: str
    description: str | None
    sections: dict[str, list[Link]] = field(default_factory=dict)

    @property
    def links(self) -> list[Link]:
        return [link for links in self.sections.values() for link in links]


def _plain(text: str) -> str:
    """Escaped Markdown back to its text; any unescaped Markdown character is refused."""
    assert re.search(r"(?<!\\)[`*_<>|]", _ESCAPED.sub("", text)) is None, text
    return _ESCAPED.sub(r"\1", text)


def parse(data: bytes) -> LlmsTxt:
    """llms.txt as llmstxt.org gives it, strictly: `# title`, a blank line, an optional
    `> description` and a blank line, then sections, each `## name`, a blank line, its
    `- [title](url)` or `- [title](url): description` lines and a blank line. UTF-8, LF."""
    text = data.decode("utf-8")  # strict: invalid UTF-8 fails here
    assert "\r" not in text and text.endswith("\n") and not text.endswith("\n\n\n")
    lines = text.split("\n")
    assert lines[0].startswith("# ") and lines[1] == "", lines[:2]
    out = LlmsTxt(_plain(lines[0][2:]), None)
    at = 2
    if lines[at].startswith("> "):
        out.description = _plain(lines[at][2:])
        assert lines[at + 1] == ""
        at += 2
    while at < len(lines) - 1:
        assert lines[at].startswith("## ") and lines[at + 1] == "", lines[at : at + 2]
        name = _plain(lines[at][3:])
        assert name not in out.sections
        links = out.sections[name] = []
        at += 2
        while lines[at]:
            match = _LINK.fullmatch(lines[at])
            assert match is not None, lines[at]
            title, url, description = match.groups()
            links.append(
                Link(_plain(title), url, None if description is None else _plain(description))
            )
            at += 1
        assert links, f"section {name} is empty"
        at += 1
    return out


def _more(link: Link) -> int | None:
    """The count a summary line gives ("and N more pages"), or None for a page's line."""
    found = re.fullmatch(r"and ([0-9,]+) more pages?", link.title)
    if found is None:
        return None
    assert link.description == "see the sitemap"
    return int(found.group(1).replace(",", ""))


def _pages(llms: LlmsTxt) -> list[Link]:
    return [link for link in llms.links if _more(link) is None]


# --- the pure parts ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("loc", "section"),
    [
        ("https://x.org/", ""),
        ("https://x.org/about", ""),
        ("https://x.org/?page=2", ""),
        ("https://x.org/a?b=c/d", ""),
        ("https://x.org/blog/", "blog"),
        ("https://x.org/blog/2024/post", "blog"),
        ("https://x.org/caf%C3%A9/menu", "caf%C3%A9"),
    ],
)
def test_a_section_is_the_first_segment_below_the_sitemaps_folder(loc, section):
    assert section_of(loc, "https://x.org/") == section
    deeper = loc.replace("x.org/", "x.org/docs/")
    assert section_of(deeper, "https://x.org/docs/") == section


def test_titles_and_descriptions_are_one_clipped_line_each():
    assert about_of(None, "  ") is None
    assert about_of("A\n  title\t", None) == ("A title", None)
    title, description = about_of("word " * 100, "x" * 2000)  # type: ignore[misc]
    assert len(title) <= MAX_TITLE and title.endswith("word\u2026")
    assert description is not None and description.endswith("\u2026")
    assert escape("a [b] | c_d *e* `f` <g> \\") == r"a \[b\] \| c\_d \*e\* \`f\` \<g\> \\"


def test_the_title_and_description_are_read_only_when_asked_for():
    body = _page(" Shop \n", "Things", head='<meta property="og:title" content="OG">').encode()
    assert extract_page(body, "text/html", "http://x.org/").about is None
    assert extract_page(body, "text/html", "http://x.org/", about=True).about == (
        "Shop",
        "Things",
    )
    untitled = _page(None, None, head='<meta property="og:title" content="OG">').encode()
    assert extract_page(untitled, "text/html", "http://x.org/", about=True).about == ("OG", None)


@given(st.text(max_size=300), st.text(max_size=300))
def test_any_title_and_description_parse_back_from_their_line(title, description):
    about = about_of(title, description)
    llms = LlmsFile("https://x.org/", "https://x.org/", 10)
    llms.add("https://x.org/a(b)", about)
    parsed = parse(llms.render("https://x.org/sitemap.xml").encode())
    (link,) = parsed.links
    assert link.url == "https://x.org/a%28b%29"
    if about is not None and about[0] is not None:
        assert (parsed.title, link.title) == (about[0], about[0])
    assert link.description == (None if about is None else about[1])


def test_a_million_pages_keep_the_cap_of_lines_and_a_count_per_section():
    """Bounded: past the cap a page only counts; past MAX_SECTIONS sections share a count."""
    llms = LlmsFile("https://x.org/", "https://x.org/", 3)
    llms.add("https://x.org/", ("Home", "The site"))
    for n in range(1_000_000):
        llms.add(f"https://x.org/s{n % (MAX_SECTIONS + 50)}/p{n}", (f"Page {n}", None))
    assert sum(len(s.lines) for s in llms._sections.values()) == 3
    assert len(llms._sections) == MAX_SECTIONS
    parsed = parse(llms.render("https://x.org/sitemap.xml").encode())
    assert (parsed.title, parsed.description) == ("Home", "The site")
    assert [link.title for link in _pages(parsed)] == ["Home", "Page 0", "Page 1"]
    counted = sum(_more(link) or 0 for link in parsed.links)
    assert counted == 1_000_000 - 2 and "Other sections" in parsed.sections


# --- crawls -----------------------------------------------------------------------------------


def _page(title: str | None, description: str | None = None, *links: str, head: str = "") -> str:
    meta = "" if description is None else f'<meta name="description" content="{description}">'
    body = html(*links, head=meta + head)
    return body.replace("<title>t</title>", "" if title is None else f"<title>{title}</title>")


def _site() -> dict[str, Page | str]:
    links = (
        "/about", "/blog/", "/blog/b-post", "/blog/a-post", "/docs/guide", "/docs/api",
        "/hidden", "/moved", "/private/x", "/skip/me", "/blog/c-post", "/og",
    )  # fmt: skip
    return {
        "/robots.txt": Page("User-agent: *\nDisallow: /private/\n", content_type="text/plain"),
        "/": _page("Acme &amp; Co", "Tools for [makers] | since 1990", *links),
        "/about": _page("About us\n  and\tthem", "Who we are"),
        "/blog/": _page("The blog", None),  # no description: none written
        "/blog/a-post": _page("A [bracketed] title", "Pipes | and *stars*"),
        "/blog/b-post": _page("Caf\u00e9 \u2014 \u65e5\u672c", "UTF-8 \u2713"),
        "/blog/c-post": _page("C post", "C"),
        "/docs/guide": _page("Guide", "How to"),
        "/docs/api": _page("API", "Reference"),
        "/og": _page(None, None, head='<meta property="og:title" content="From og">'),
        "/hidden": _page("Hidden", "noindex", head='<meta name="robots" content="noindex">'),
        "/moved": _page("Twin", "canonical", head='<link rel="canonical" href="/about">'),
        "/private/x": _page("Blocked", "by robots.txt"),
        "/skip/me": _page("Excluded", "by --exclude"),
    }


def test_a_crawl_publishes_llms_txt_beside_the_sitemap(serve, crawl, tmp_path):
    srv = serve(Site(_site()).app)
    base = srv.url + "/"
    report = tmp_path / "report.json"
    code, published, out, _ = crawl(
        base, "--llms-txt", "--exclude", "/skip/*", "--report", str(report)
    )
    assert code == 0
    llms_path = tmp_path / "out" / "llms.txt"
    llms = parse(llms_path.read_bytes())

    assert llms.title == "Acme & Co"  # the start page's, its entity decoded
    assert llms.description == "Tools for [makers] | since 1990"
    # the folder's own pages first, then the sections as the sitemap meets them
    assert list(llms.sections) == ["/", "/blog/", "/docs/"]
    by_url = {link.url: link for link in llms.links}
    # only the listed pages: the sitemap's, no noindex, canonicalised, blocked or excluded one
    assert set(by_url) == set(published.locs)
    for gone in ("/hidden", "/moved", "/private/x", "/skip/me"):
        assert srv.url + gone not in by_url
    # in the sitemap's order within each section
    order = {loc: n for n, loc in enumerate(published.locs)}
    for links in llms.sections.values():
        assert [order[link.url] for link in links] == sorted(order[link.url] for link in links)
    assert by_url[base + "about"].title == "About us and them"  # one line
    assert by_url[base + "about"].description == "Who we are"
    assert by_url[base + "blog/"].description is None  # none given, none written
    assert by_url[base + "blog/a-post"].title == "A [bracketed] title"
    assert by_url[base + "blog/a-post"].description == "Pipes | and *stars*"
    assert by_url[base + "blog/b-post"].title == "Caf\u00e9 \u2014 \u65e5\u672c"
    assert by_url[base + "og"].title == "From og"  # og:title only where there is no <title>
    assert [link.url for link in llms.sections["/docs/"]] == [
        base + "docs/api",
        base + "docs/guide",
    ]

    figures = json.loads(report.read_text())
    assert figures["llms_txt_url"] == base + "llms.txt"
    assert str(llms_path) in figures["files"]
    assert f"llms.txt (for language models): {base}llms.txt" in out


def test_a_grouped_sitemap_gives_llms_txt_its_groups_as_sections(serve, crawl, tmp_path):
    srv = serve(Site(_site()).app)
    base = srv.url + "/"
    code, published, _, _ = crawl(
        base, "--llms-txt", "--exclude", "/skip/*",
        "--groups", "docs=/docs/*", "--groups", "blog=/blog/*",
    )  # fmt: skip
    assert code == 0
    llms = parse((tmp_path / "out" / "llms.txt").read_bytes())
    # the groups in the index's order, the default group last, as Search Console sees them
    assert list(llms.sections) == ["docs", "blog", "Other pages"]
    assert {link.url for link in llms.sections["docs"]} == {base + "docs/api", base + "docs/guide"}
    assert base + "about" in {link.url for link in llms.sections["Other pages"]}
    assert {link.url for link in llms.links} == set(published.locs)


def test_the_cap_keeps_the_first_pages_in_sitemap_order_and_counts_the_rest(serve, crawl, tmp_path):
    srv = serve(Site(_site()).app)
    code, published, _, _ = crawl(srv.url + "/", "--llms-txt", "--llms-txt-max-links", "3")
    assert code == 0
    llms = parse((tmp_path / "out" / "llms.txt").read_bytes())
    assert [link.url for link in _pages(llms)] == published.locs[:3]
    sitemap = srv.url + "/sitemap.xml"
    more = {name: _more(links[-1]) for name, links in llms.sections.items()}
    assert all(links[-1].url == sitemap for links in llms.sections.values() if _more(links[-1]))
    assert sum(n or 0 for n in more.values()) == len(published.locs) - 3
    assert more["/docs/"] == 2 and len(llms.sections["/docs/"]) == 1  # a count alone


def test_a_start_page_that_redirects_gives_way_to_the_shortest_titled_page(serve, crawl, tmp_path):
    pages: dict[str, Page | str] = {
        "/": Page("", 301, None, {"Location": "/en/"}),
        "/en/": _page("Welcome", "In English", "/en/shop/a", "/en/report.pdf"),
        "/en/shop/a": _page("A shop page", "Buy"),
        "/en/report.pdf": Page(b"%PDF-1.4 a report", content_type="application/pdf"),
    }
    srv = serve(Site(pages).app)
    code, published, _, _ = crawl(
        srv.url + "/", "--llms-txt", "--sitemap-url", srv.url + "/sitemap.xml"
    )
    assert code == 0
    llms = parse((tmp_path / "out" / "llms.txt").read_bytes())
    assert (llms.title, llms.description) == ("Welcome", "In English")
    assert list(llms.sections) == ["/en/"]
    pdf = srv.url + "/en/report.pdf"
    assert Link(pdf, pdf, None) in llms.links  # no title: the URL names it
    assert {link.url for link in llms.links} == set(published.locs)


def test_a_noindex_start_page_still_names_the_site(serve, crawl, tmp_path):
    # a splash or login home page: not listed, but its title and description are the site's,
    # never another page's og:title
    noindex = '<meta name="robots" content="noindex">'
    pages: dict[str, Page | str] = {
        "/": _page("Home of Acme", "Acme's tools", "/a", "/sec/b", head=noindex),
        "/a": _page(None, None),
        "/sec/b": _page(None, None, head='<meta property="og:title" content="OG B">'),
    }
    srv = serve(Site(pages).app)
    code, published, _, _ = crawl(srv.url + "/", "--llms-txt")
    assert code == 0 and srv.url + "/" not in published.locs
    llms = parse((tmp_path / "out" / "llms.txt").read_bytes())
    assert (llms.title, llms.description) == ("Home of Acme", "Acme's tools")
    assert {link.url for link in llms.links} == set(published.locs)
    # a noindex start page without a title: the host, no description line
    pages["/"] = _page(None, None, "/a", "/sec/b", head=noindex)
    srv = serve(Site(pages).app)
    code, _, _, _ = crawl(srv.url + "/", "--llms-txt")
    assert code == 0
    llms = parse((tmp_path / "out" / "llms.txt").read_bytes())
    assert (llms.title, llms.description) == (srv.url.split("//")[1], None)


def test_without_the_key_nothing_is_extracted_and_no_llms_txt_is_written(serve, crawl, tmp_path):
    srv = serve(Site(_site()).app)
    code, _, _, _ = crawl(srv.url + "/")
    assert code == 0 and not (tmp_path / "out" / "llms.txt").exists()
    # turned off after a run with it: the file is left as published, and the run says so
    code, _, _, _ = crawl(srv.url + "/", "--llms-txt")
    before = (tmp_path / "out" / "llms.txt").read_bytes()
    code, _, _, err = crawl(srv.url + "/")
    assert code == 0 and (tmp_path / "out" / "llms.txt").read_bytes() == before
    assert "llms.txt left as published, no longer updated (the run had no llms_txt)" in err
    manifest = json.loads((tmp_path / "out" / ".sitemap-manifest.json").read_text())
    assert "llms.txt" in manifest["files"]


class EtagSite:
    """Pages with ETags that answer 304 to a matching If-None-Match: a nightly site."""

    def __init__(self, pages: dict[str, str]) -> None:
        self.pages = pages
        self.bodies = self.not_modified = 0

    def app(self) -> web.Application:
        async def handle(request: web.Request) -> web.Response:
            body = self.pages.get(request.path)
            if body is None:
                return web.Response(status=404, text="no")
            data = (body + f"<!-- {request.path} -->").encode()
            tag = '"' + hashlib.sha256(data).hexdigest()[:16] + '"'
            if request.headers.get("If-None-Match") == tag:
                self.not_modified += 1
                return web.Response(status=304, headers={"ETag": tag})
            self.bodies += 1
            headers = {"ETag": tag, "Content-Type": "text/html; charset=utf-8"}
            return web.Response(body=data, headers=headers)

        app = web.Application()
        app.router.add_get("/{tail:.*}", handle)
        return app


def _nightly_pages(count: int = 6) -> dict[str, str]:
    pages = {f"/s{n % 3}/p{n}": _page(f"Page {n} [{n}]", f"About {n}") for n in range(count)}
    pages["/"] = _page("Nightly", "A site crawled each night", *pages)
    return pages


def test_a_night_of_304s_writes_the_same_llms_txt(serve, tmp_path, xsd):
    site = EtagSite(_nightly_pages())
    srv = serve(site.app())
    state, out = tmp_path / "state.sqlite", tmp_path / "out"
    args = ["crawl", srv.url + "/", "-o", str(out), "-q", "--state", str(state), "--llms-txt"]
    assert main(args) == 0
    first = (out / "llms.txt").read_bytes()
    mtime = (out / "llms.txt").stat().st_mtime_ns
    site.bodies = site.not_modified = 0
    assert main(args) == 0
    assert site.bodies == 0 and site.not_modified == len(site.pages)  # every page a 304
    assert (out / "llms.txt").read_bytes() == first
    assert (out / "llms.txt").stat().st_mtime_ns == mtime  # the same bytes: left untouched
    assert len(_pages(parse(first))) == len(site.pages)
    read_published(out, xsd)


def test_turning_the_key_on_asks_for_whole_pages_again(serve, tmp_path):
    """Last night's history has no titles: a 304 would revive pages without them."""
    site = EtagSite(_nightly_pages())
    srv = serve(site.app())
    state, out = tmp_path / "state.sqlite", tmp_path / "out"
    args = ["crawl", srv.url + "/", "-o", str(out), "-q", "--state", str(state)]
    assert main(args) == 0
    site.bodies = site.not_modified = 0
    assert main([*args, "--llms-txt"]) == 0
    assert site.not_modified == 0
    llms = parse((out / "llms.txt").read_bytes())
    assert all(link.title.startswith(("Page", "Nightly")) for link in llms.links)


def test_worker_processes_give_the_same_llms_txt(serve, tmp_path, xsd):
    pages = {f"/s{n % 7}/p{n}": _page(f"Page {n}", f"About {n} | more") for n in range(260)}
    pages["/"] = _page("Many", "Pages enough for the workers", *pages)
    srv = serve(Site(dict(pages)).app)
    files = {}
    for workers in ("0", "1"):
        out, report = tmp_path / workers, tmp_path / f"{workers}.json"
        code = main(
            ["crawl", srv.url + "/", "-o", str(out), "-q", "--workers", workers, "--llms-txt",
             "--llms-txt-max-links", "100", "--report", str(report)]
        )  # fmt: skip
        assert code == 0
        read_published(out, xsd)
        files[workers] = (out / "llms.txt").read_bytes()
        if workers == "1":
            assert json.loads(report.read_text())["requests"]["by_workers"] > 0
    assert files["0"] == files["1"]
    llms = parse(files["1"])
    assert len(_pages(llms)) == 100 and sum(_more(link) or 0 for link in llms.links) == 161


def test_the_container_job_takes_the_keys_from_its_config_and_environment(serve, tmp_path, xsd):
    srv = serve(Site(_site()).app)
    config = tmp_path / "job.toml"
    config.write_text(f'url = "{srv.url}/"\nllms_txt = true\nquiet = true\nworkers = 0\n')
    data = tmp_path / "data"
    env = child_env(SITEMAP_CRAWLER_CONFIG=str(config), SITEMAP_CRAWLER_LLMS_TXT_MAX_LINKS="2")
    job = subprocess.run(
        [*CLI, "job", "--data", str(data)], env=env, capture_output=True, text=True, timeout=120
    )
    assert job.returncode == 0, job.stderr
    published = read_published(data / "out", xsd)
    llms = parse((data / "out" / "llms.txt").read_bytes())
    assert [link.url for link in _pages(llms)] == published.locs[:2]
    assert llms.title == "Acme & Co"


def test_an_interrupted_run_leaves_the_published_llms_txt(serve, tmp_path):
    titles = {"now": "First"}

    async def slow(request: web.Request) -> web.Response:
        n = int(request.path.rsplit("p", 1)[-1] or 0) if request.path != "/" else 0
        await asyncio.sleep(0.02 if request.path != "/" else 0)
        links = [f"/a/p{m}" for m in (2 * n + 1, 2 * n + 2) if m < 300]
        body = _page(f"{titles['now']} {request.path}", "desc", *links)
        return web.Response(text=body, content_type="text/html")

    site = Site({"/robots.txt": Page("", status=404)}, fallback=slow)
    srv = serve(site.app)
    out = tmp_path / "out"
    args = [srv.url + "/", "-o", str(out), "-q", "--llms-txt", "--workers", "0"]
    first = crawl_process(*args)
    _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    before = (out / "llms.txt").read_bytes()
    assert parse(before).title == "First /"

    titles["now"] = "Second"
    start = len(site.requests)
    second = crawl_process(*args)
    wait_for(lambda: len(site.requests) - start >= 60, "the second crawl's requests", proc=second)
    second.send_signal(signal.SIGTERM)
    _, err = second.communicate(timeout=30)
    assert second.returncode == 130, err
    assert (out / "llms.txt").read_bytes() == before
    assert not [p for p in out.iterdir() if p.name.startswith(".sitemap-staging-")]


def test_the_key_is_refused_out_of_range(tmp_path, capsys):
    code = main(
        ["crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "o"), "--llms-txt-max-links", "-1"]
    )
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "llms_txt_max_links must be from 0 to 100000" in err and len(err.splitlines()) == 1


def test_llms_txt_is_a_name_the_publish_owns(tmp_path, capsys):
    """Another output given that name in the output folder would be replaced by it."""
    out = tmp_path / "out"
    code = main(["crawl", "http://127.0.0.1:9/", "-o", str(out), "--report", str(out / "llms.txt")])
    assert code == 2
    assert "clashes with llms.txt in the output folder" in capsys.readouterr().err


def test_the_writer_publishes_llms_txt_with_the_set_or_not_at_all(tmp_path, xsd):
    """sitemap_out as a library: the text is rendered with the entry point's URL, and a
    writer that aborts leaves the published file as it was."""
    from sitemap_out import Entry, SitemapWriter

    out, base = tmp_path / "out", "https://x.org/"
    with SitemapWriter(out, base, stable=True) as writer:
        writer.add(Entry(base + "a"))
        writer.add_llms_txt(lambda sitemap: f"# X\n\n## /\n\n- [a]({sitemap})\n")
        result = writer.publish()
    assert result.llms_url == base + "llms.txt" and out / "llms.txt" in result.files
    before = (out / "llms.txt").read_bytes()
    assert parse(before).links == [Link("a", base + "sitemap.xml", None)]
    xsd.any(out / "sitemap.xml")
    with SitemapWriter(out, base, stable=True) as writer:
        writer.add(Entry(base + "b"))
        writer.add_llms_txt(lambda sitemap: "# Y\n")
    assert (out / "llms.txt").read_bytes() == before  # aborted: nothing published
