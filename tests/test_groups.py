"""Grouped sitemaps (#27): `[[groups]]` (--groups NAME=PATTERN, SITEMAP_CRAWLER_GROUPS) put
each group's URLs in parts of its own, sitemap-<name>-N.xml, with its own rollover and
stable layout, under the one index; the rest keep sitemap-N.xml. Crawls of local sites,
every file written validated against the XSDs and read back."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.cli import main
from crawler.core.groups import DEFAULT_GROUP, Groups, group_items
from crawler.errors import ConfigError
from sitemap_out import Entry, SitemapWriter
from sitemap_out.manifest import MANIFEST_NAME, read_manifest
from tests.procs import child_env
from tests.sites import NS, Page, Site, html, read_published
from tests.test_docker_job import _job

GROUPS = ("--groups", "blog=/blog/*", "--groups", "docs=/docs/*")


def _site(blog: int = 3, docs: int = 2, other: tuple[str, ...] = ("/about",)) -> Site:
    paths = [f"/blog/{i}" for i in range(blog)] + [f"/docs/{i}" for i in range(docs)]
    pages: dict[str, Page | str] = {"/robots.txt": Page("", status=404)}
    pages["/"] = html(*paths, *other)
    for path in (*paths, *other):
        pages[path] = html()
    return Site(pages)


def _index(out: Path, xsd) -> list[str]:
    """The file names the published index lists, in order (the index validated)."""
    root = xsd.index(out / "sitemap.xml").getroot()
    return [loc.text.rsplit("/", 1)[1] for loc in root.iter(f"{NS}loc")]


def _locs(path: Path, xsd) -> list[str]:
    return [loc.text for loc in xsd.urlset(path).getroot().iter(f"{NS}loc")]


def _paths(base: str, path: Path, xsd) -> list[str]:
    return [loc.removeprefix(base) for loc in _locs(path, xsd)]


def _consistent(out: Path, xsd) -> list[str]:
    """The published set is whole: the manifest names exactly the files there, and the
    index lists exactly the parts (every one present and valid)."""
    listed = _index(out, xsd)
    on_disk = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert sorted([*listed, "sitemap.xml"]) == on_disk
    assert sorted(read_manifest(out)) == on_disk
    for name in listed:
        xsd.any(out / name)
    return listed


# -- the pure function and the settings ---------------------------------------------------


def test_the_first_group_whose_pattern_matches_takes_the_url():
    groups = Groups.parse(["blog=/blog/*", "docs=re:^/docs/", "blog=/news/*", "all=*"])
    assert groups.names == ("blog", "docs", "all", DEFAULT_GROUP)
    assert groups.group_of("https://example.com/blog/a") == "blog"
    assert groups.group_of("https://example.com/news/a?x=1") == "blog"
    assert groups.group_of("https://example.com/docs/x") == "docs"
    assert groups.group_of("https://example.com/") == "all"
    only = Groups.parse(["blog=/blog/*"])
    assert only.group_of("https://example.com/about") == DEFAULT_GROUP
    assert not Groups.parse([]) and Groups.parse([]).group_of("https://e.com/x") == DEFAULT_GROUP


@pytest.mark.parametrize(
    ("items", "said"),
    [
        (["Blog=/blog/*"], "group name 'Blog' must be a lowercase letter"),
        (["my blog=/blog/*"], "group name 'my blog'"),
        (["../x=/x/*"], "group name '../x'"),
        (["default=/x/*"], "group name 'default' is the group of the URLs no group claims"),
        (["blog"], "'blog' is not NAME=PATTERN"),
        (["blog=blog/*"], "group 'blog' pattern 'blog/*' can never match"),
        (["blog=re:("], "group 'blog' pattern 're:(' is not a valid regular expression"),
        # a list written on one line: refused, not one pattern no URL matches
        (["blog=/blog/*,/news/*"], "holds a comma before another pattern"),
        (["blog=/blog/*, docs=/docs/*"], "one NAME=PATTERN per --groups"),
        (["blog=re:^/a,b, re:^/c"], "holds a comma"),
    ],
)
def test_a_bad_group_is_a_config_error_naming_it(items, said):
    with pytest.raises(ConfigError, match=r"^groups: ") as caught:
        Groups.parse(items)
    assert said in str(caught.value)


def test_groups_tables_become_name_pattern_items():
    tables = [
        {"name": "blog", "include": ["/blog/*", "/news/*"]},
        {"name": "docs", "include": "/d/*"},
    ]
    assert group_items(tables) == ("blog=/blog/*", "blog=/news/*", "docs=/d/*")
    for bad, said in (
        ([{"name": "blog"}], "[[groups]] 'blog' needs include"),
        ([{"include": ["/x"]}], "[[groups]] number 1 needs name"),
        ([{"name": "b", "include": ["/b/*"], "match": 1}], "unknown key 'match'"),
        ([{"name": "B=x", "include": ["/b/*"]}], "group name 'B=x'"),
        ({"name": "b"}, "groups must be [[groups]] tables"),
        (
            [{"name": "blog", "include": ["/b/*"]}, {"name": "blog", "include": ["/d/*"]}],
            "[[groups]] 'blog' is given twice",
        ),
    ):
        with pytest.raises(ConfigError) as caught:
            group_items(bad)
        assert said in str(caught.value)


@pytest.mark.parametrize(
    ("how", "said"),
    [
        ("flag", "group name 'Blog!'"),
        ("toml", "group name 'Blog!'"),
        ("env", "group name 'Blog!'"),
        ("toml-no-include", "[[groups]] 'blog' needs include"),
        ("toml-twice", "[[groups]] 'blog' is given twice"),
        ("env-commas", "holds a comma before another pattern"),
    ],
)
def test_a_bad_group_exits_2_in_one_line_before_any_request(
    how, said, serve, tmp_path, capsys, monkeypatch
):
    site = _site()
    srv = serve(site.app)
    args = ["crawl", srv.url + "/", "-o", str(tmp_path / "out")]
    if how == "flag":
        args += ["--groups", "Blog!=/blog/*"]
    elif how == "env":
        monkeypatch.setenv("SITEMAP_CRAWLER_GROUPS", "Blog!=/blog/*")
    elif how == "env-commas":
        monkeypatch.setenv("SITEMAP_CRAWLER_GROUPS", "blog=/blog/*,docs=/docs/*")
    elif how == "toml-twice":
        table = '[[groups]]\nname = "blog"\ninclude = ["/blog/*"]\n'
        (tmp_path / "c.toml").write_text(table + table.replace("/blog/*", "/docs/*"))
        args += ["-c", str(tmp_path / "c.toml")]
    else:
        table = 'name = "Blog!"\ninclude = ["/blog/*"]' if how == "toml" else 'name = "blog"'
        (tmp_path / "c.toml").write_text(f"[[groups]]\n{table}\n")
        args += ["-c", str(tmp_path / "c.toml")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert said in err
    assert site.requests == []


# -- crawls ---------------------------------------------------------------------------------


@pytest.mark.parametrize("zipped", [False, True])
def test_a_grouped_crawl_publishes_each_group_in_its_own_parts(zipped, crawl, serve, tmp_path, xsd):
    srv = serve(_site().app)
    base = srv.url
    code, published, _out, err = crawl(base + "/", *GROUPS, *(["--gzip"] if zipped else []))
    assert code == 0, err
    out = tmp_path / "out"
    ext = ".xml.gz" if zipped else ".xml"
    listed = _consistent(out, xsd)
    assert listed == [f"sitemap-blog-1{ext}", f"sitemap-docs-1{ext}", f"sitemap-1{ext}"]
    assert _paths(base, out / listed[0], xsd) == ["/blog/0", "/blog/1", "/blog/2"]
    assert _paths(base, out / listed[1], xsd) == ["/docs/0", "/docs/1"]
    assert _paths(base, out / listed[2], xsd) == ["/", "/about"]
    if zipped:
        assert gzip.decompress((out / listed[0]).read_bytes()).startswith(b"<?xml")
    assert sorted(published.locs) == sorted(
        base + p for p in ("/", "/about", "/blog/0", "/blog/1", "/blog/2", "/docs/0", "/docs/1")
    )


def test_a_group_named_twice_on_the_command_line_gathers_its_patterns(crawl, serve, tmp_path, xsd):
    srv = serve(_site().app)
    code, _, _, err = crawl(srv.url + "/", "--groups", "blog=/blog/*", "--groups", "blog=/docs/*")
    assert code == 0, err
    listed = _consistent(tmp_path / "out", xsd)
    assert listed == ["sitemap-blog-1.xml", "sitemap-1.xml"]
    assert len(_paths(srv.url, tmp_path / "out" / listed[0], xsd)) == 5


def test_a_group_that_matches_no_url_is_warned_of(crawl, serve, tmp_path, xsd):
    srv = serve(_site().app)
    code, _, _, err = crawl(srv.url + "/", "--groups", "blog=/blog/*", "--groups", "news=/news/*")
    assert code == 0, err
    _consistent(tmp_path / "out", xsd)
    warned = [line for line in err.splitlines() if "matched no listed URL" in line]
    assert warned == [
        "sitemap-crawler: warning: group 'news' matched no listed URL (its patterns match the"
        " path and query as the sitemap lists them, e.g. /blog/*)"
    ]


def test_each_group_rolls_over_on_its_own(crawl, serve, tmp_path, xsd):
    srv = serve(_site(blog=5, docs=2, other=("/a", "/b", "/c")).app)
    code, _published, _out, err = crawl(srv.url + "/", *GROUPS, "--max-urls-per-file", "2")
    assert code == 0, err
    out = tmp_path / "out"
    listed = _consistent(out, xsd)
    assert listed == [
        "sitemap-blog-1.xml", "sitemap-blog-2.xml", "sitemap-blog-3.xml",
        "sitemap-docs-1.xml",
        "sitemap-1.xml", "sitemap-2.xml",
    ]  # fmt: skip
    sizes = [len(_locs(out / name, xsd)) for name in listed]
    assert sizes == [2, 2, 1, 2, 2, 2]
    assert _paths(srv.url, out / "sitemap-blog-3.xml", xsd) == ["/blog/4"]


class _ByFirstLetter:
    """A Grouping of the property test: a URL's group is named by its path's first letter."""

    def __init__(self, letters: str) -> None:
        self.names = (*(f"g{c}" for c in letters), DEFAULT_GROUP)

    def group_of(self, loc: str) -> str:
        name = f"g{loc.rsplit('/', 1)[1][0]}"
        return name if name in self.names else DEFAULT_GROUP


@settings(max_examples=25)
@given(
    paths=st.sets(st.text("abcd", min_size=1, max_size=6), min_size=1, max_size=60),
    max_urls=st.integers(1, 7),
)
def test_per_group_rollover_arithmetic(tmp_path_factory, xsd, paths, max_urls):
    """Each group of n URLs takes ceil(n / max_urls) files, full but for its last, its URLs
    in loc order; a group with no URL has no file."""
    out = tmp_path_factory.mktemp("out")
    grouping = _ByFirstLetter("abc")
    locs = sorted(f"https://example.com/{p}" for p in paths)
    with SitemapWriter(out, "https://example.com/", max_urls=max_urls, groups=grouping) as w:
        for loc in locs:
            w.add(Entry(loc))
        result = w.publish()
    listed = _index(out, xsd)
    by_group = {g.name: g for g in result.groups}
    for name in grouping.names:
        mine = [loc for loc in locs if grouping.group_of(loc) == name]
        files = by_group[name].files
        assert len(files) == math.ceil(len(mine) / max_urls)
        stem = "sitemap-" if name == DEFAULT_GROUP else f"sitemap-{name}-"
        assert list(files) == [f"{stem}{i}.xml" for i in range(1, len(files) + 1)]
        got = [loc for f in files for loc in _locs(out / f, xsd)]
        assert got == mine
        assert all(len(_locs(out / f, xsd)) == max_urls for f in files[:-1])
        assert by_group[name].url_count == len(mine)
    assert listed == [f for name in grouping.names for f in by_group[name].files]


def _mtimes(out: Path) -> dict[str, tuple[int, bytes]]:
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in out.iterdir() if p.is_file()}


def test_a_night_where_one_group_changes_keeps_the_other_groups_parts(crawl, serve, tmp_path, xsd):
    site = _site(blog=5, docs=4, other=("/a", "/b", "/c"))
    srv = serve(site.app)
    args = (*GROUPS, "--max-urls-per-file", "2", "--max-shrink", "1")
    changes = tmp_path / "changes.json"
    report = tmp_path / "report.json"
    metrics = tmp_path / "metrics.prom"
    code, *_, err = crawl(srv.url + "/", *args)
    assert code == 0, err
    out = tmp_path / "out"
    before = _mtimes(out)
    # the blog grows by one post and loses another; docs and the rest are as they were
    site.pages["/blog/9"] = html()
    del site.pages["/blog/1"]
    site.pages["/"] = site.pages["/"].replace('"/blog/1"', '"/blog/9"')
    code, *_, err = crawl(
        srv.url + "/", *args,
        "--changes", str(changes), "--report", str(report), "--metrics", str(metrics),
    )  # fmt: skip
    assert code == 0, err
    after = _mtimes(out)
    listed = _consistent(out, xsd)
    for name in ("sitemap-docs-1.xml", "sitemap-docs-2.xml", "sitemap-2.xml"):
        assert after[name] == before[name], name  # not even staged again
    assert after["sitemap-blog-3.xml"] != before["sitemap-blog-3.xml"]
    assert [
        p for f in listed if f.startswith("sitemap-blog") for p in _paths(srv.url, out / f, xsd)
    ] == ["/blog/0", "/blog/2", "/blog/3", "/blog/4", "/blog/9"]
    data = json.loads(changes.read_text())
    assert data["counts"] == {"added": 1, "removed": 1, "changed": 0}
    assert data["groups"]["blog"] == {"added": 1, "removed": 1, "changed": 0}
    assert (
        data["groups"]["docs"]
        == data["groups"][DEFAULT_GROUP]
        == {"added": 0, "removed": 0, "changed": 0}
    )
    assert {r["group"] for r in data["added"] + data["removed"]} == {"blog"}
    figures = json.loads(report.read_text())["groups"]
    assert figures["blog"] == {"urls": 5, "files": 3, "added": 1, "removed": 1, "changed": 0}
    assert figures["docs"]["urls"] == 4 and figures[DEFAULT_GROUP]["files"] == 2
    text = metrics.read_text()
    assert 'sitemap_crawler_group_urls_listed{group="blog"' in text
    assert 'sitemap_crawler_group_urls_changed{change="added",group="blog"' in text


def test_a_group_added_then_removed_publishes_a_whole_set_each_night(crawl, serve, tmp_path, xsd):
    srv = serve(_site(blog=3, docs=3, other=("/a",)).app)
    out = tmp_path / "out"
    common = ("--max-urls-per-file", "2", "--max-shrink", "1")
    code, *_, err = crawl(srv.url + "/", "--groups", "blog=/blog/*", *common)
    assert code == 0, err
    assert _consistent(out, xsd) == [
        "sitemap-blog-1.xml", "sitemap-blog-2.xml", "sitemap-1.xml", "sitemap-2.xml",
        "sitemap-3.xml",
    ]  # fmt: skip
    before = _mtimes(out)
    # docs becomes a group: its URLs leave the default group; the blog's parts stay
    code, *_, err = crawl(srv.url + "/", *GROUPS, *common)
    assert code == 0, err
    listed = _consistent(out, xsd)
    assert listed[:4] == [
        "sitemap-blog-1.xml",
        "sitemap-blog-2.xml",
        "sitemap-docs-1.xml",
        "sitemap-docs-2.xml",
    ]
    assert all(_mtimes(out)[n] == before[n] for n in listed[:2])
    assert [p for f in listed[4:] for p in _paths(srv.url, out / f, xsd)] == ["/", "/a"]
    # groups renamed (blog -> posts) and docs dropped: the old files go, via the manifest
    code, *_, err = crawl(srv.url + "/", "--groups", "posts=/blog/*", *common)
    assert code == 0, err
    listed = _consistent(out, xsd)
    assert not any(f.startswith(("sitemap-blog", "sitemap-docs")) for f in listed)
    assert [f for f in listed if f.startswith("sitemap-posts")] == [
        "sitemap-posts-1.xml",
        "sitemap-posts-2.xml",
    ]
    published = read_published(out, xsd)
    assert len(published.locs) == 8
    assert "sitemap-blog-1.xml" not in json.loads((out / MANIFEST_NAME).read_text())["files"]
    # and no groups at all: one plain set again
    code, *_, err = crawl(srv.url + "/", *common)
    assert code == 0, err
    assert all(f.startswith("sitemap-") and f[8].isdigit() for f in _consistent(out, xsd))


def test_a_grouped_set_audits_clean(serve, tmp_path, capsys):
    site = _site()
    srv = serve(site.app)
    out = tmp_path / "out"
    assert main(["crawl", srv.url + "/", "-o", str(out), "-q", *GROUPS]) == 0
    for path in out.iterdir():
        if path.is_file() and not path.name.startswith("."):
            site.pages[f"/{path.name}"] = Page(path.read_bytes(), content_type="application/xml")
    report = tmp_path / "audit.json"
    code = main(["audit", srv.url + "/sitemap.xml", "-q", "--report", str(report)])
    found = json.loads(report.read_text())
    assert code == 0, found["findings"]
    assert found["findings"] == []
    assert found["summary"]["urls_listed"] == 7
    capsys.readouterr()


def test_the_job_reads_groups_from_its_config_file(serve, tmp_path, xsd):
    srv = serve(_site().app)
    config = tmp_path / "job.toml"
    config.write_text(
        f'url = "{srv.url}/"\nquiet = true\nworkers = 0\n\n'
        '[[groups]]\nname = "blog"\ninclude = ["/blog/*"]\n\n'
        '[[groups]]\nname = "docs"\ninclude = ["/docs/*", "/manual/*"]\n'
    )
    data = tmp_path / "data"
    job = _job(data, child_env(SITEMAP_CRAWLER_CONFIG=str(config)))
    assert job.returncode == 0, job.stderr
    assert _consistent(data / "out", xsd) == [
        "sitemap-blog-1.xml",
        "sitemap-docs-1.xml",
        "sitemap-1.xml",
    ]


class _Fixed:
    def __init__(self, *names: str) -> None:
        self.names = names

    def group_of(self, loc: str) -> str:
        return self.names[-1]


@pytest.mark.parametrize(
    ("names", "base", "said"),
    [
        (("blog",), "https://e.com/", "'default' included"),
        (("blog", "blog", DEFAULT_GROUP), "https://e.com/", "each group once"),
        (("Blog", DEFAULT_GROUP), "https://e.com/", "group name 'Blog' must be"),
        (("blog", DEFAULT_GROUP), None, "groups need base_url"),
    ],
)
def test_the_writer_refuses_groups_it_cannot_name(tmp_path, names, base, said):
    from sitemap_out import WriterConfigError

    with pytest.raises(WriterConfigError, match=said):
        SitemapWriter(tmp_path / "out", base, groups=_Fixed(*names))
    assert not (tmp_path / "out" / ".sitemap.lock").exists()


def test_a_single_file_sitemap_becomes_a_grouped_index_and_back(crawl, serve, tmp_path, xsd):
    srv = serve(_site().app)
    out = tmp_path / "out"
    code, *_, err = crawl(srv.url + "/")
    assert code == 0, err
    assert xsd.urlset(out / "sitemap.xml") and read_manifest(out) == ["sitemap.xml"]
    code, *_, err = crawl(srv.url + "/", "--groups", "blog=/blog/*")
    assert code == 0, err
    assert _consistent(out, xsd) == ["sitemap-blog-1.xml", "sitemap-1.xml"]
    assert len(read_published(out, xsd).locs) == 7
    code, *_, err = crawl(srv.url + "/")
    assert code == 0, err
    assert _consistent(out, xsd) == ["sitemap-1.xml"]  # an index stays one (stable layout)
    assert len(read_published(out, xsd).locs) == 7
