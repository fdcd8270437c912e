"""`sitemap-crawler diff OLD NEW` (issue #27, part 3): two sets compared for a release gate.
Sets written by the project's writer (validated against the XSDs), published by real crawls of
a local server, served over HTTP; thresholds and exit codes; every report parsed back."""

from __future__ import annotations

import json
import math
import re
from datetime import date
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.cli import main
from crawler.core.diff import (
    INDEXABLE,
    Change,
    DiffSummary,
    Threshold,
    crossed,
    lastmod_instant,
    parse_thresholds,
    verdict,
)
from crawler.core.diff_html import render_html
from crawler.core.diff_report import render_json, render_text
from crawler.core.findings import Finding
from crawler.errors import ConfigError
from crawler.exit_codes import MEANINGS, Exit
from sitemap_out import Entry, SitemapWriter
from tests.sites import Page, Site, html, read_decisions

# -- the pure parts -----------------------------------------------------------------------------


def test_thresholds_repeated_or_comma_separated() -> None:
    found = parse_thresholds(["removed>10", "removed>2.5%, added>0", "moved > 3"])
    assert found == (
        Threshold("removed", 10),
        Threshold("removed", 2.5, percent=True),
        Threshold("added", 0),
        Threshold("moved", 3),
    )
    assert [str(t) for t in found] == ["removed>10", "removed>2.5%", "added>0", "moved>3"]


@pytest.mark.parametrize(
    "bad", ["removed", "removed>=3", "gone>1", "removed>-1", "added>x", "", "removed>2.5"]
)
def test_a_bad_threshold_is_a_usage_error(bad: str) -> None:
    with pytest.raises(ConfigError, match="--fail-on") as caught:
        parse_thresholds([bad])
    assert caught.value.exit_code == Exit.USAGE


def test_crossed_counts_and_shares_of_old() -> None:
    summary = DiffSummary("a", "b", old_urls=200, new_urls=190, removed=20, added=10, moved=5)
    rules = parse_thresholds(["removed>10%,removed>9.5%,removed>20,added>9,moved>5"])
    assert [str(c) for c in crossed(rules, summary)] == ["removed>9.5% (10.0%)", "added>9 (10)"]
    # a share of an empty OLD: nothing added is 0%, anything added is all of it
    empty = DiffSummary("a", "b", old_urls=0, new_urls=3, added=3)
    assert crossed(parse_thresholds(["removed>0%"]), empty) == []
    (over,) = crossed(parse_thresholds(["added>50%"]), empty)
    assert math.isinf(over.value)
    assert str(over) == "added>50% (OLD is empty)"  # not "(inf%)"


@given(st.dates(min_value=date(1990, 1, 1)), st.sampled_from(["Z", "+00:00", "+02:00"]))
def test_a_date_and_its_midnight_are_one_instant(day: date, zone: str) -> None:
    midnight = lastmod_instant(f"{day.isoformat()}T00:00:00{zone}")
    if zone == "+02:00":
        assert midnight != lastmod_instant(day.isoformat())
    else:
        assert midnight == lastmod_instant(day.isoformat())


def test_lastmod_instants() -> None:
    assert lastmod_instant("2026-03-01T10:00:00+01:00") == lastmod_instant("2026-03-01T09:00:00Z")
    assert lastmod_instant("yesterday") == "yesterday"  # not a date: compared as written
    assert lastmod_instant(None) is None and lastmod_instant(" ") is None


def test_verdict_is_the_worst_url_finding_that_says_whether_to_list() -> None:
    url = "https://e.com/a"
    found = [
        Finding("lastmod_in_future", "s", url, "x"),
        Finding("redirect", "s", url, "301 to /b"),
        Finding("http_error", "s", url, "HTTP 404"),
    ]
    assert verdict(found) == ("http_error", "HTTP 404")
    assert verdict(found[:1])[0] == INDEXABLE
    assert verdict([])[0] == INDEXABLE


def test_text_is_capped_and_the_json_is_whole() -> None:
    summary = DiffSummary("old.xml", "new.xml", old_urls=30, new_urls=5, removed=25)
    removed = [Change("removed", f"https://e.com/{n:02d}") for n in range(25)]
    text = render_text(summary, {"removed": removed[:3]}, (), (), lines=3)
    assert "removed 25, added 0, lastmod moved 0, unchanged 0" in text
    assert "https://e.com/02" in text and "https://e.com/03" not in text
    assert "... and 22 more" in text
    data = json.loads("".join(render_json(summary, (), {"removed": iter(removed)})))
    assert [c["url"] for c in data["removed"]] == [c.url for c in removed]
    assert data["added"] == [] and data["summary"]["removed"] == 25


def test_the_html_holds_hostile_urls_as_data() -> None:
    evil = "https://e.com/</script><script>alert(1)</script>"
    summary = DiffSummary("o", "n", old_urls=0, new_urls=1, added=1)
    page = "".join(render_html(summary, (), (), {"added": [Change("added", evil)]}))
    assert "<script>alert" not in page
    rows = _html_lists(page)
    assert rows["added"][0][0] == evil


# -- helpers ------------------------------------------------------------------------------------


def _publish(out: Path, base: str, pages: dict[str, date | None], xsd, **kw) -> Path:
    """A set published by the project's writer, every file validated."""
    with SitemapWriter(out, base + "/", **kw) as writer:
        writer.add_many(Entry(base + path, lastmod=day) for path, day in sorted(pages.items()))
        writer.publish()
    for file in out.iterdir():
        if file.name.endswith((".xml", ".xml.gz")):
            xsd.any(file)
    return out


def _diff(tmp_path: Path, capsys, *args: str) -> tuple[int, str, str, dict, dict]:
    """exit code, stdout, stderr, the --report JSON and the --html page's lists."""
    report, page = tmp_path / "diff.json", tmp_path / "diff.html"
    for stale in (report, page):
        stale.unlink(missing_ok=True)
    code = main(
        ["diff", *args, "-q", "--retries", "0", "--report", str(report), "--html", str(page)]
    )
    out, err = capsys.readouterr()
    data = json.loads(report.read_text()) if report.exists() else {}
    lists = _html_lists(page.read_text()) if page.exists() else {}
    return code, out, err, data, lists


class _Scripts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: dict[str, str] = {}
        self._id: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        ids = dict(attrs).get("id") or ""
        self._id = ids if tag == "script" and ids.startswith("diff-") else None

    def handle_data(self, data: str) -> None:
        if self._id is not None:
            self.found[self._id] = self.found.get(self._id, "") + data

    def handle_endtag(self, tag: str) -> None:
        self._id = None


def _html_lists(page: str) -> dict[str, list[list]]:
    parser = _Scripts()
    parser.feed(page)
    return {key.removeprefix("diff-"): json.loads(text) for key, text in parser.found.items()}


BASE = "https://www.example.com"


# -- files and folders written by the writer ----------------------------------------------------


def test_two_published_folders(tmp_path, capsys, xsd) -> None:
    old = {f"/p/{n}": date(2026, 1, 1) for n in range(30)}
    new = {f"/p/{n}": date(2026, 1, 1) for n in range(5, 32)}
    new["/p/10"] = date(2026, 2, 1)  # moved
    new["/p/11"] = None  # no lastmod now: not compared
    _publish(tmp_path / "old", BASE, old, xsd, max_urls=7)  # an index and 5 parts
    _publish(tmp_path / "new", BASE, new, xsd, gzip=True)
    code, out, err, data, lists = _diff(
        tmp_path, capsys, str(tmp_path / "old"), str(tmp_path / "new")
    )
    assert code == Exit.OK, err
    assert "removed 5, added 2, lastmod moved 1, unchanged 24" in out
    summary = data["summary"]
    assert (summary["old_urls"], summary["new_urls"], summary["lastmods_compared"]) == (30, 27, 24)
    assert [c["url"] for c in data["removed"]] == sorted(f"{BASE}/p/{n}" for n in range(5))
    assert [c["url"] for c in data["added"]] == [f"{BASE}/p/30", f"{BASE}/p/31"]
    assert data["moved"] == [
        {"url": f"{BASE}/p/10", "old_lastmod": "2026-01-01", "new_lastmod": "2026-02-01"}
    ]
    assert [row[0] for row in lists["removed"]] == [c["url"] for c in data["removed"]]
    assert lists["moved"] == [[f"{BASE}/p/10", "2026-01-01", "2026-02-01", None, None]]
    # the index file itself, and its .gz part, read as any sitemap
    code, out, *_ = _diff(
        tmp_path, capsys, str(tmp_path / "old" / "sitemap.xml"), str(tmp_path / "new")
    )
    assert code == Exit.OK and "removed 5, added 2" in out


def test_fail_on_thresholds_and_exit_codes(tmp_path, capsys, xsd) -> None:
    old = _publish(tmp_path / "old", BASE, {f"/{n}": None for n in range(100)}, xsd)
    new = _publish(tmp_path / "new", BASE, {f"/{n}": None for n in range(3, 110)}, xsd, fmt="txt")
    args = (str(old), str(new))
    for rules, expected in [
        (["removed>3"], Exit.OK),
        (["removed>2"], Exit.NO),
        (["removed>3%"], Exit.OK),
        (["removed>2.5%"], Exit.NO),
        (["added>10"], Exit.OK),
        (["added>9"], Exit.NO),
        (["removed>50", "added>9"], Exit.NO),
        (["removed>50,added>90"], Exit.OK),
        (["moved>0"], Exit.OK),
    ]:
        fail_on = [a for rule in rules for a in ("--fail-on", rule)]
        code, out, err, data, _ = _diff(tmp_path, capsys, *args, *fail_on)
        assert code == expected, (rules, out, err)
        assert [r["threshold"] for r in data["fail_on"]] == ",".join(rules).split(",")
        assert any(r["crossed"] for r in data["fail_on"]) == (expected == Exit.NO)
        assert bool(_crossed(out)) == (expected == Exit.NO)
    code, out, err, _, _ = _diff(tmp_path, capsys, *args, "--fail-on", "removed>=3")
    assert code == Exit.USAGE and len(err.strip().splitlines()) == 1 and "--fail-on" in err
    assert set(MEANINGS["diff"]) == {Exit.OK, Exit.NO, Exit.USAGE, Exit.NOTHING, 70, 130}


def _crossed(out: str) -> list[str]:
    match = re.search(r"^fail-on crossed: (.*)$", out, re.M)
    return [] if match is None else match.group(1).split(", ")


def test_keys_as_the_audit_reads_them(tmp_path, capsys) -> None:
    """Host case, escaping and a default port are one URL; a parameter or a slash is not."""
    old = tmp_path / "old.txt"
    new = tmp_path / "new.txt"
    old.write_text("https://Example.com/a%7e\nhttps://example.com:443/b\nhttps://example.com/c\n")
    new.write_text("https://example.com/a~\nhttps://example.com/b\nhttps://example.com/c/\n")
    code, _, _, data, _ = _diff(tmp_path, capsys, str(old), str(new))
    assert code == Exit.OK
    assert [c["url"] for c in data["removed"]] == ["https://example.com/c"]
    assert [c["url"] for c in data["added"]] == ["https://example.com/c/"]


def test_nothing_to_compare_is_3(tmp_path, capsys, xsd) -> None:
    empty = tmp_path / "empty.xml"
    empty.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>'
    )
    code, _, err, data, _ = _diff(tmp_path, capsys, str(empty), str(empty))
    assert code == Exit.NOTHING and "nothing to compare" in err
    assert data["summary"]["old_urls"] == 0


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: p / "missing.xml", "no such file or folder"),
        (lambda p: _write(p / "page.html", "<html><body>hello</body></html>"), "not a sitemap"),
        (lambda p: _write(p / "words.txt", "hello world\n"), "not a sitemap"),
        (lambda p: _write(p / "report.json", '{"summary": {"listed": 3}}'), "not a decisions"),
        (
            lambda p: _write(p / "bad.jsonl", '{"url": "https://e.com/", "listed": true}\n{x'),
            "line 2",
        ),
        (lambda p: p, "not a published set"),
        (lambda p: _write(p / "sitemap.xml.gz", "not gzip at all"), "gzip"),
    ],
)
def test_bad_input_is_one_line_and_2(tmp_path, capsys, make, said) -> None:
    good = tmp_path / "good.txt"
    good.write_text("https://example.com/a\n")
    folder = tmp_path / "bad"
    folder.mkdir()
    bad = make(folder)
    code, _, err, data, _ = _diff(tmp_path, capsys, str(good), str(bad))
    assert code == Exit.USAGE, err
    assert len(err.strip().splitlines()) == 1 and said in err and "Traceback" not in err
    assert err.startswith("error: NEW (") or "NEW (" in err
    assert data == {}  # no report for a diff not made


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_an_index_part_missing_is_refused(tmp_path, capsys, xsd) -> None:
    old = _publish(tmp_path / "old", BASE, {f"/{n}": None for n in range(20)}, xsd, max_urls=5)
    (old / "sitemap-3.xml").unlink()
    new = tmp_path / "new.txt"
    new.write_text(f"{BASE}/1\n")
    code, _, err, _, _ = _diff(tmp_path, capsys, str(old), str(new))
    assert code == Exit.USAGE and "sitemap-3.xml" in err and "in part" in err


# -- decisions files and folders of two crawls ---------------------------------------------------


def test_decisions_files_and_folders_of_two_crawls(serve, tmp_path, capsys, xsd) -> None:
    site = Site({"/robots.txt": Page("", status=404)})
    site.pages["/"] = html("/a", "/b", "/c", "/e")
    for path in ("/a", "/b", "/c", "/d", "/e"):
        site.pages[path] = html("/")
    srv = serve(site.app)
    base = srv.url
    runs = []
    for n in (1, 2):
        out, decisions = tmp_path / f"out{n}", tmp_path / f"decisions{n}.jsonl"
        code = main(["crawl", base + "/", "-o", str(out), "--decisions", str(decisions), "-q"])
        assert code == 0
        for file in out.glob("sitemap*.xml"):
            xsd.any(file)
        runs.append((out, decisions))
        # the release: /c gone (still linked: a 404), /e unlinked (still 200), /d new
        site.pages["/"] = html("/a", "/b", "/c", "/d")
        site.pages.pop("/c", None)
    capsys.readouterr()
    listed = [r for r in read_decisions(runs[1][1]).values() if r["listed"]]
    assert len(listed) == 4
    for old, new in ((runs[0][1], runs[1][1]), (runs[0][0], runs[1][0])):
        code, out, err, data, _ = _diff(
            tmp_path, capsys, str(old), str(new), "--fail-on", "removed>1"
        )
        assert code == Exit.NO, err
        assert [c["url"] for c in data["removed"]] == [f"{base}/c", f"{base}/e"]
        assert [c["url"] for c in data["added"]] == [f"{base}/d"]
        assert "fail-on crossed: removed>1 (2)" in out
    # NEW's decisions say why each is gone: /c answered 404, /e was met by no link
    code, out, _, data, _ = _diff(tmp_path, capsys, str(runs[0][1]), str(runs[1][1]))
    assert data["summary"]["explained_by"] == "decisions"
    why = {c["url"].removeprefix(base): (c["verdict"], c["detail"]) for c in data["removed"]}
    assert why["/c"][0] == "http_error" and why["/c"][1].startswith("HTTP 404")
    assert why["/e"][0] == "not_met"
    assert "removed, by NEW's decisions: 1 left out by NEW's crawl (http_error 1), 1 never" in out
    # a decisions file against the folder the same crawl published: nothing differs
    code, out, *_ = _diff(tmp_path, capsys, str(runs[1][1]), str(runs[1][0]))
    assert code == Exit.OK and "removed 0, added 0" in out


# -- over HTTP, and --fetch ---------------------------------------------------------------------


def _release_site() -> Site:
    """A site after a release: /gone now 404s, /moved redirects, /still is still 200 and
    indexable; /fresh is indexable, /hidden says noindex."""
    site = Site({"/robots.txt": Page("", status=404)})
    for path in ("/a", "/b", "/still", "/fresh"):
        site.pages[path] = html()
    site.pages["/hidden"] = html(head='<meta name="robots" content="noindex">')
    site.pages["/moved"] = Page("", status=301, headers={"Location": "/a"})
    return site


def test_a_sitemap_url_against_a_folder_with_fetch(serve, tmp_path, capsys, xsd) -> None:
    site = _release_site()
    srv = serve(site.app)
    base = srv.url
    old = {p: date(2026, 1, 1) for p in ("/a", "/b", "/gone", "/moved", "/still")}
    out = _publish(tmp_path / "old", base, old, xsd, max_urls=2)  # served: an index, 3 parts
    for file in out.iterdir():
        if file.name.startswith("sitemap"):
            site.pages["/" + file.name] = Page(file.read_bytes(), content_type="application/xml")
    new = _publish(
        tmp_path / "new", base, dict.fromkeys(("/a", "/b", "/fresh", "/hidden")), xsd, fmt="txt"
    )
    code, out_text, err, data, lists = _diff(
        tmp_path, capsys, base + "/sitemap.xml", str(new), "--fetch", "--fail-on", "removed>2"
    )
    assert code == Exit.NO, err
    verdicts = {c["url"].removeprefix(base): c["verdict"] for c in data["removed"] + data["added"]}
    assert verdicts == {
        "/gone": "http_error",
        "/moved": "redirect",
        "/still": INDEXABLE,
        "/fresh": INDEXABLE,
        "/hidden": "noindex",
    }
    assert data["summary"]["verdicts"] == {
        "removed": {"http_error": 1, "redirect": 1, INDEXABLE: 1},
        "added": {INDEXABLE: 1, "noindex": 1},
    }
    assert "removed, fetched: 2 now not indexable" in out_text
    assert "1 still 200 and indexable" in out_text
    assert "added, fetched: 1 indexable, 1 not indexable (noindex 1)" in out_text
    assert f"{base}/gone  [http_error: HTTP 404]" in out_text
    assert {row[0].removeprefix(base): row[3] for row in lists["removed"]} == {
        "/gone": "http_error",
        "/moved": "redirect",
        "/still": INDEXABLE,
    }
    asked = {path for _, path, _ in site.requests}
    assert {"/gone", "/moved", "/still", "/fresh", "/hidden"} <= asked
    assert "/b" not in asked  # a URL in both is not fetched (/a is: /moved redirects there)
    # without --fetch: nothing but the sitemaps is asked for
    site.requests.clear()
    code, *_ = _diff(tmp_path, capsys, base + "/sitemap.xml", str(new))
    assert code == Exit.OK
    assert {path for _, path, _ in site.requests} <= {"/robots.txt", "/sitemap.xml"} | {
        f"/sitemap-{n}.xml" for n in (1, 2, 3)
    }


def test_a_dead_server_or_a_bad_url_is_2(serve, tmp_path, capsys) -> None:
    site = Site({"/robots.txt": Page("", status=404), "/page": html()})
    srv = serve(site.app)
    good = tmp_path / "good.txt"
    good.write_text("https://example.com/a\n")
    for target, said in [
        (srv.url + "/sitemap.xml", "HTTP 404"),
        ("http://127.0.0.1:9/sitemap.xml", "NEW (http://127.0.0.1:9/sitemap.xml)"),
        ("http://exa mple.com/sitemap.xml", "NEW ("),
    ]:
        code, _, err, _, _ = _diff(tmp_path, capsys, str(good), target)
        assert code == Exit.USAGE, err
        assert len(err.strip().splitlines()) == 1 and said in err and "Traceback" not in err


def test_help_and_an_unexpected_failure(monkeypatch, capsys, tmp_path) -> None:
    from crawler import cli
    from crawler.exit_codes import help_text

    with pytest.raises(SystemExit):
        main(["diff", "--help"])
    out = capsys.readouterr().out
    flat = lambda text: re.sub(r"\s+", " ", text)  # noqa: E731
    assert flat(help_text("diff")) in flat(out) and "--fail-on" in out
    # diff asks no engine anything: none of submit's options (audit's --engine-status has them)
    for option in ("--submit", "--google-key-file", "--bing-api-key", "--bing-site"):
        assert option not in out
    with pytest.raises(SystemExit) as refused:
        main(["diff", "a", "b", "--submit", "google"])
    assert refused.value.code == Exit.USAGE
    capsys.readouterr()

    def bug(*_: object) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "_diff_run", bug)
    monkeypatch.delenv("SITEMAP_CRAWLER_DEBUG", raising=False)
    assert main(["diff", "a", "b"]) == Exit.FAILURE == 70
    err = capsys.readouterr().err
    assert "unexpected failure: RuntimeError: a bug" in err and len(err.splitlines()) == 1


def test_a_feed_against_a_text_sitemap_with_the_json_spelling(tmp_path, capsys) -> None:
    feed = tmp_path / "feed.xml"
    feed.write_text(
        '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>t</title>'
        "<link>https://example.com/</link><description>d</description>"
        "<item><title>a</title><link>https://example.com/a</link>"
        "<pubDate>Mon, 02 Feb 2026 10:00:00 GMT</pubDate></item>"
        "<item><title>b</title><link>https://example.com/b</link></item>"
        "</channel></rss>"
    )
    text = tmp_path / "sitemap.txt"
    text.write_text("https://example.com/b\nhttps://example.com/c\n")
    report = tmp_path / "r.json"
    code = main(["diff", str(feed), str(text), "-q", "--json", str(report)])
    assert code == Exit.OK
    data = json.loads(report.read_text())
    assert data["removed"] == [
        {"url": "https://example.com/a", "old_lastmod": data["removed"][0]["old_lastmod"]}
    ]
    assert data["removed"][0]["old_lastmod"]  # the pubDate, as the reader gives it
    assert [c["url"] for c in data["added"]] == ["https://example.com/c"]
    capsys.readouterr()
