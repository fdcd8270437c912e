"""`sitemap-crawler audit`: the sitemap file checks, discovery, bounds, outputs and exit
codes, through the real CLI against real local servers (or local files). --no-fetch keeps
the URL-level checks (another module's) out of these."""

from __future__ import annotations

import gzip
import json
import resource
import subprocess
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from crawler.cli import main
from crawler.core.sitemap_checks import PROBLEM_CODES, location_problem
from tests.procs import CLI, child_env
from tests.sites import Page, Site

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
XML = '<?xml version="1.0" encoding="UTF-8"?>\n'
GONE = Page("", status=404, content_type="text/plain")


def urlset(*locs: str, extra: str = "", ns: str = NS) -> str:
    urls = "".join(f"<url><loc>{loc}</loc>{extra}</url>\n" for loc in locs)
    return f'{XML}<urlset xmlns="{ns}">\n{urls}</urlset>\n'


def index(*locs: str) -> str:
    items = "".join(f"<sitemap><loc>{loc}</loc></sitemap>\n" for loc in locs)
    return f'{XML}<sitemapindex xmlns="{NS}">\n{items}</sitemapindex>\n'


def xml(body: str | bytes, content_type: str = "application/xml") -> Page:
    return Page(body, content_type=content_type)


def run_audit(tmp_path: Path, *args: str) -> tuple[int, dict]:
    out = tmp_path / "audit.json"
    code = main(["audit", *args, "-q", "--report", str(out)])
    return code, json.loads(out.read_text())


@pytest.fixture
def site(serve) -> Callable[[Callable[[str], dict]], str]:
    """site(pages_of_base) serves pages_of_base(base) (robots.txt a 404 unless given) and
    returns the base URL; the Site is kept on the function as .last for its requests."""

    def start(pages_of: Callable[[str], dict]) -> str:
        fixture = Site({})
        server = serve(fixture.app)
        fixture.pages.update({"/robots.txt": GONE, **pages_of(server.url)})
        start.last = fixture  # type: ignore[attr-defined]
        return server.url

    return start


# -- one fixture per file-level code: exactly that code, on exactly the faulty file ---------

CASES: dict[str, tuple[Callable[[str], dict], str, str, bool]] = {
    # code: (pages of base, target path, the faulty sitemap's path, whether url is set)
    "sitemap_unreachable": (
        lambda b: {
            "/index.xml": xml(index(f"{b}/ok.xml", f"{b}/missing.xml")),
            "/ok.xml": xml(urlset(f"{b}/a")),
        },
        "/index.xml",
        "/missing.xml",
        False,
    ),
    "sitemap_blocked": (
        lambda b: {
            "/robots.txt": Page(
                f"User-agent: *\nDisallow: /private/\nSitemap: {b}/index.xml\n",
                content_type="text/plain",
            ),
            "/index.xml": xml(index(f"{b}/ok.xml", f"{b}/private/s.xml")),
            "/ok.xml": xml(urlset(f"{b}/a")),
            "/private/s.xml": xml(urlset(f"{b}/private/a")),
        },
        "/",
        "/private/s.xml",
        False,
    ),
    "parse_error": (
        lambda b: {
            "/index.xml": xml(index(f"{b}/ok.xml", f"{b}/bad.xml")),
            "/ok.xml": xml(urlset(f"{b}/a")),
            "/bad.xml": xml(f'{XML}<html><body><a href="{b}/b">b</a></body></html>'),
        },
        "/index.xml",
        "/bad.xml",
        False,
    ),
    "leading_whitespace": (
        lambda b: {
            "/index.xml": xml(index(f"{b}/ok.xml", f"{b}/bad.xml")),
            "/ok.xml": xml(urlset(f"{b}/a")),
            "/bad.xml": xml("\n  " + urlset(f"{b}/b")),
        },
        "/index.xml",
        "/bad.xml",
        False,
    ),
    "wrong_namespace": (
        lambda b: {
            "/index.xml": xml(index(f"{b}/ok.xml", f"{b}/bad.xml")),
            "/ok.xml": xml(urlset(f"{b}/a")),
            "/bad.xml": xml(urlset(f"{b}/b", ns="http://www.google.com/schemas/sitemap/0.84")),
        },
        "/index.xml",
        "/bad.xml",
        False,
    ),
    "compression_error": (
        lambda b: {
            "/index.xml": xml(index(f"{b}/ok.xml.gz", f"{b}/bad.xml.gz")),
            "/ok.xml.gz": xml(gzip.compress(urlset(f"{b}/a").encode()), "application/gzip"),
            "/bad.xml.gz": xml(urlset(f"{b}/b"), "application/gzip"),  # not gzip at all
        },
        "/index.xml",
        "/bad.xml.gz",
        False,
    ),
    "empty_sitemap": (
        lambda b: {
            "/index.xml": xml(index(f"{b}/ok.xml", f"{b}/bad.xml")),
            "/ok.xml": xml(urlset(f"{b}/a")),
            "/bad.xml": xml(urlset()),
        },
        "/index.xml",
        "/bad.xml",
        False,
    ),
    "too_many_urls": (
        lambda b: {
            "/index.xml": xml(index(f"{b}/ok.txt", f"{b}/bad.txt")),
            "/ok.txt": xml(f"{b}/a\n", "text/plain"),
            "/bad.txt": xml("".join(f"{b}/p{n}\n" for n in range(50_001)), "text/plain"),
        },
        "/index.xml",
        "/bad.txt",
        False,
    ),
    "nested_index": (
        lambda b: {
            "/index.xml": xml(index(f"{b}/ok.xml", f"{b}/inner.xml")),
            "/ok.xml": xml(urlset(f"{b}/a")),
            "/inner.xml": xml(index(f"{b}/deep.xml")),
            "/deep.xml": xml(urlset(f"{b}/d")),
        },
        "/index.xml",
        "/index.xml",
        False,
    ),
    "missing_tag": (
        lambda b: {"/s.xml": xml(urlset(f"{b}/a").replace("</urlset>", _no_loc()))},
        "/s.xml",
        "/s.xml",
        False,
    ),
    "invalid_url": (
        lambda b: {"/s.xml": xml(urlset(f"{b}/a", f"{b}/b c"))},
        "/s.xml",
        "/s.xml",
        True,
    ),
    "invalid_date": (
        lambda b: {
            "/s.xml": xml(
                urlset(f"{b}/a", extra="<lastmod>2024-02-01</lastmod>").replace(
                    "</urlset>",
                    f"<url><loc>{b}/b</loc><lastmod>2024-02-30</lastmod></url></urlset>",
                )
            )
        },
        "/s.xml",
        "/s.xml",
        True,
    ),
    "invalid_tag_value": (
        lambda b: {
            "/s.xml": xml(
                urlset(f"{b}/a", extra="<changefreq>daily</changefreq>").replace(
                    "</urlset>",
                    f"<url><loc>{b}/b</loc><changefreq>sometimes</changefreq></url></urlset>",
                )
            )
        },
        "/s.xml",
        "/s.xml",
        True,
    ),
    "url_not_allowed": (
        lambda b: {"/docs/s.xml": xml(urlset(f"{b}/docs/a", f"{b}/other"))},
        "/docs/s.xml",
        "/docs/s.xml",
        True,
    ),
    "duplicate_url": (
        lambda b: {
            "/index.xml": xml(index(f"{b}/one.xml", f"{b}/two.xml")),
            "/one.xml": xml(urlset(f"{b}/a", f"{b}/x")),
            "/two.xml": xml(urlset(f"{b}/b", f"{b}/x")),
        },
        "/index.xml",
        "/two.xml",
        True,
    ),
    "not_in_robots_txt": (
        lambda b: {
            "/robots.txt": Page("User-agent: *\nDisallow: /nothing/\n", content_type="text/plain"),
            "/sitemap.xml": xml(urlset(f"{b}/a")),
        },
        "/",
        "/sitemap.xml",
        False,
    ),
}


def _no_loc() -> str:
    return "<url><lastmod>2024-01-01</lastmod></url></urlset>"


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_file_code_on_exactly_the_faulty_file(site, tmp_path: Path, code: str) -> None:
    pages_of, target, faulty, with_url = CASES[code]
    base = site(pages_of)
    exit_code, report = run_audit(tmp_path, base + target, "--no-fetch", "--fail-on", "notice")
    findings = report["findings"]
    assert {f["code"] for f in findings} == {code}, findings
    assert {f["sitemap"] for f in findings} == {base + faulty}
    assert all((f["url"] is not None) == with_url for f in findings), findings
    assert exit_code == 1
    if code == "duplicate_url":
        assert findings[0]["url"] == base + "/x"
        assert findings[0]["detail"] == f"listed first in {base}/one.xml, line 4"
    if code == "url_not_allowed":
        assert findings[0]["url"] == base + "/other"
        assert "folder /docs/" in findings[0]["detail"]


def test_too_many_sitemaps_in_an_index(site, tmp_path: Path) -> None:
    """50,001 entries: the finding, and at most MAX_SITEMAP_FILES of them are read."""
    children = [f"/s{n}.xml" for n in range(50_001)]

    def pages(b: str) -> dict:
        found = {"/index.xml": xml(index(*(b + c for c in children)))}
        found.update({c: xml(urlset(f"{b}/p{c[2:-4]}")) for c in children[:1000]})
        return found

    base = site(pages)
    exit_code, report = run_audit(tmp_path, base + "/index.xml", "--no-fetch")
    assert {f["code"] for f in report["findings"]} == {"too_many_sitemaps"}
    assert report["summary"]["sitemaps_read"] == 1000
    assert exit_code == 1


def test_too_large_gzip_bomb_in_bounded_memory(serve, tmp_path: Path) -> None:
    """200 MiB of zeros as sitemap.xml.gz (about 200 KB): too_large, the child's peak RSS
    under 300 MB."""
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1 << 20)
    bomb = b"".join(squeeze.compress(zeros) for _ in range(200)) + squeeze.flush()
    fixture = Site({"/robots.txt": GONE, "/sitemap.xml.gz": xml(bomb, "application/gzip")})
    base = serve(fixture.app).url
    out = tmp_path / "a.json"
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    proc = subprocess.run(
        [*CLI, "audit", base + "/", "--no-fetch", "-q", "--report", str(out)],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
    )
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    assert proc.returncode == 1, proc.stderr
    findings = json.loads(out.read_text())["findings"]
    assert [(f["code"], f["sitemap"]) for f in findings] == [
        ("too_large", base + "/sitemap.xml.gz")
    ]
    assert peak_mib < 300 or before / 1024 >= 300, f"peak RSS {peak_mib:.0f} MiB"


def test_truncated_gzip_is_one_compression_error(tmp_path: Path) -> None:
    packed = gzip.compress(urlset(*(f"https://example.com/p{n}" for n in range(500))).encode())
    path = tmp_path / "sitemap.xml.gz"
    path.write_bytes(packed[: len(packed) // 2])
    exit_code, report = run_audit(tmp_path, str(path), "--no-fetch")
    assert [f["code"] for f in report["findings"]] == ["compression_error"]
    assert exit_code == 1


# -- discovery ------------------------------------------------------------------------------


def test_sitemaps_found_through_robots_txt(site, tmp_path: Path) -> None:
    base = site(
        lambda b: {
            "/robots.txt": Page(f"User-agent: *\nSitemap: {b}/maps/all.xml\n", 200, "text/plain"),
            "/maps/all.xml": xml(urlset(f"{b}/maps/a", f"{b}/maps/b")),
            "/sitemap.xml": xml(urlset(f"{b}/never-read")),
        }
    )
    exit_code, report = run_audit(tmp_path, base + "/", "--no-fetch", "--fail-on", "notice")
    assert exit_code == 0, report
    assert report["summary"]["sitemaps_read"] == 1
    assert report["summary"]["urls_listed"] == 2
    assert "/sitemap.xml" not in site.last.paths


@pytest.mark.parametrize("name", ["sitemap_index.xml", "sitemap.xml.gz", "sitemap.txt"])
def test_sitemap_found_by_the_fallback_names(site, tmp_path: Path, name: str) -> None:
    def pages(b: str) -> dict:
        body = urlset(f"{b}/docs/a")
        if name.endswith(".gz"):
            return {f"/docs/{name}": xml(gzip.compress(body.encode()), "application/gzip")}
        if name.endswith(".txt"):
            return {f"/docs/{name}": xml(f"{b}/docs/a\n", "text/plain")}
        return {f"/docs/{name}": xml(body)}

    base = site(pages)
    exit_code, report = run_audit(tmp_path, base + "/docs/", "--no-fetch")
    assert exit_code == 0, report
    assert report["summary"]["sitemaps_read"] == 1
    assert report["findings"] == []


def test_no_sitemap_found_is_exit_3(site, tmp_path: Path, capsys) -> None:
    base = site(lambda b: {})
    exit_code, report = run_audit(tmp_path, base + "/")
    assert exit_code == 3
    assert report["summary"]["sitemaps_read"] == 0
    assert "no sitemap found" in capsys.readouterr().err


def test_unreachable_site_is_exit_3(tmp_path: Path, capsys) -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code = main(["audit", f"http://127.0.0.1:{port}/", "-q", "--retries", "0"])
    assert code == 3
    err = capsys.readouterr().err
    assert "cannot connect" in err and "Traceback" not in err


# -- local files ----------------------------------------------------------------------------


def test_local_files_plain_and_gzip(tmp_path: Path) -> None:
    body = urlset("https://example.com/a", "https://example.com/b")
    plain = tmp_path / "sitemap.xml"
    plain.write_text(body)
    packed = tmp_path / "sitemap.xml.gz"
    packed.write_bytes(gzip.compress(body.encode()))
    for path in (plain, packed):
        exit_code, report = run_audit(tmp_path, str(path), "--no-fetch")
        assert exit_code == 0, report
        assert report["summary"]["urls_listed"] == 2
        assert report["findings"] == []


def test_local_index_reads_its_sitemaps_beside_it(tmp_path: Path) -> None:
    (tmp_path / "sitemap.xml").write_text(
        index("https://example.com/sitemap-1.xml", "https://example.com/sitemap-2.xml")
    )
    (tmp_path / "sitemap-1.xml").write_text(urlset("https://example.com/a"))
    exit_code, report = run_audit(tmp_path, str(tmp_path / "sitemap.xml"), "--no-fetch")
    assert exit_code == 1
    assert report["summary"]["sitemaps_read"] == 2
    assert [(f["code"], f["sitemap"]) for f in report["findings"]] == [
        ("sitemap_unreachable", "https://example.com/sitemap-2.xml")
    ]


def test_a_missing_file_is_exit_2(tmp_path: Path, capsys) -> None:
    code = main(["audit", str(tmp_path / "nope.xml")])
    assert code == 2
    err = capsys.readouterr().err
    assert "nope.xml" in err and "Traceback" not in err


# -- options and outputs --------------------------------------------------------------------


def test_no_fetch_requests_no_listed_url(site, tmp_path: Path) -> None:
    base = site(lambda b: {"/sitemap.xml": xml(urlset(f"{b}/a", f"{b}/b"))})
    exit_code, _ = run_audit(tmp_path, base + "/sitemap.xml", "--no-fetch")
    assert exit_code == 0
    assert sorted(site.last.paths) == ["/robots.txt", "/sitemap.xml"]


def test_fail_on_decides_the_exit_code(site, tmp_path: Path) -> None:
    base = site(lambda b: {"/sitemap.xml": xml(urlset(f"{b}/a", f"{b}/a"))})  # a warning
    assert run_audit(tmp_path, base + "/sitemap.xml", "--no-fetch")[0] == 0
    assert run_audit(tmp_path, base + "/sitemap.xml", "--no-fetch", "--fail-on", "error")[0] == 0
    assert run_audit(tmp_path, base + "/sitemap.xml", "--no-fetch", "--fail-on", "warning")[0] == 1


def test_json_holds_the_summary_and_every_finding(site, tmp_path: Path) -> None:
    locs = [f"/p{n} x" for n in range(30)]  # 30 invalid URLs: more than the terminal shows
    base = site(lambda b: {"/sitemap.xml": xml(urlset(*(b + p for p in locs)))})
    exit_code, report = run_audit(tmp_path, base + "/sitemap.xml", "--no-fetch")
    assert exit_code == 1
    summary = report["summary"]
    assert summary["target"] == base + "/sitemap.xml"
    assert summary["sitemaps_read"] == 1 and summary["urls_listed"] == 30
    assert summary["counts"] == {"invalid_url": 30}
    assert summary["by_severity"] == {"error": 30, "warning": 0, "notice": 0}
    assert len(report["findings"]) == 30
    first = report["findings"][0]
    assert set(first) == {"code", "severity", "sitemap", "line", "url", "detail"}
    assert first["severity"] == "error" and first["line"] == 3


def test_terminal_output_cuts_long_groups(site, tmp_path: Path, capsys) -> None:
    locs = [f"/p{n} x" for n in range(30)]
    base = site(lambda b: {"/sitemap.xml": xml(urlset(*(b + p for p in locs)))})
    main(["audit", base + "/sitemap.xml", "--no-fetch", "-q"])
    out = capsys.readouterr().out
    assert out.startswith(f"audit of {base}/sitemap.xml: 1 sitemap file read, 30 URLs listed")
    assert "findings: 30 errors, 0 warnings, 0 notices" in out
    assert "error invalid_url: a loc that is not a valid absolute http(s) URL (30)" in out
    assert "  ... and 20 more" in out


def test_html_is_written(site, tmp_path: Path) -> None:
    base = site(lambda b: {"/sitemap.xml": xml(urlset(f"{b}/&lt;a&gt;", f"{b}/ok"))})
    page = tmp_path / "out" / "audit.html"
    page.parent.mkdir()  # a report's folder is not made: a typo in a path is no folder to make
    main(["audit", base + "/sitemap.xml", "--no-fetch", "-q", "--html", str(page)])
    text = page.read_text()
    assert text.lower().startswith("<!doctype html>")
    assert "/<a>" not in text and "u003ca\\u003e" in text  # the loc, as escaped JSON


def test_public_url_staging_sitemap_naming_the_public_site(site, tmp_path: Path) -> None:
    public = "https://www.example.com/"
    base = site(
        lambda b: {"/sitemap.xml": xml(urlset(public + "a", public + "b/c"))},
    )
    exit_code, report = run_audit(
        tmp_path, base + "/sitemap.xml", "--no-fetch", "--public-url", public
    )
    assert exit_code == 0, report
    assert report["findings"] == []
    # without the mapping, the same file names another host
    exit_code, report = run_audit(tmp_path, base + "/sitemap.xml", "--no-fetch")
    assert {f["code"] for f in report["findings"]} == {"url_not_allowed"}
    assert exit_code == 1


def test_location_rule_says_path_mismatch_www() -> None:
    sitemap = "https://example.com/sitemap.xml"
    assert location_problem("https://example.com/a", sitemap) is None
    assert location_problem("https://www.example.com/a", sitemap).startswith("path mismatch: www")
    assert location_problem("http://example.com/a", sitemap).startswith("scheme differs")
    assert location_problem("https://example.com:8443/a", sitemap).startswith("port differs")
    assert location_problem("https://example.com/a", "https://example.com/b/s.xml") == (
        "outside the sitemap's folder /b/"
    )


def test_every_reader_code_is_in_the_table() -> None:
    """A new reader code must be given its audit code here, not fall to parse_error."""
    import re

    source = Path(__file__).parents[1].joinpath("sitemap_out", "reader.py").read_text()
    codes = set(re.findall(r'report\(\s*"([a-z_]+)"', source))
    assert codes and codes <= set(PROBLEM_CODES)


def test_a_minified_sitemap_names_no_url_it_cannot_tell(tmp_path: Path) -> None:
    """Problems carry their line; on a one-line sitemap that line holds every entry, so
    the finding gives the line and no guessed URL (#12 review)."""
    page = tmp_path / "sitemap.xml"
    page.write_text(
        f'{XML}<urlset xmlns="{NS}"><url><loc>http://a.example/ok</loc>'
        "<changefreq>sometimes</changefreq></url><url><changefreq>daily</changefreq></url>"
        "<url><loc>http://a.example/last</loc></url></urlset>\n"
    )
    code, report = run_audit(tmp_path, str(page), "--no-fetch")
    assert code == 1
    by_code = {f["code"]: f for f in report["findings"]}
    assert by_code["invalid_tag_value"]["url"] is None
    assert by_code["missing_tag"]["url"] is None
    assert by_code["invalid_tag_value"]["line"] == 2


def test_a_gz_that_is_not_gzip_is_one_compression_error(tmp_path: Path) -> None:
    page = tmp_path / "sitemap.xml.gz"
    page.write_bytes(b"not gzip at all\nnor a list of URLs\n")
    code, report = run_audit(tmp_path, str(page), "--no-fetch")
    assert code == 1
    assert [f["code"] for f in report["findings"]] == ["compression_error"]


def test_an_unreachable_site_is_said_once(tmp_path: Path, capsys) -> None:
    code = main(["audit", "http://127.0.0.1:9/", "-q", "--retries", "0"])
    err = capsys.readouterr().err
    assert code == 3
    assert err.count("could not be read") == 1 and err.count("\n") == 1


def test_the_old_spelling_json_still_writes_the_report_and_says_so(tmp_path: Path, capsys) -> None:
    """--report FILE in every command; audit's --json is its hidden alias for one release."""
    sitemap = tmp_path / "sitemap.xml"
    sitemap.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<url><loc>https://example.com/</loc></url></urlset>\n"
    )
    out = tmp_path / "a.json"
    assert main(["audit", str(sitemap), "--no-fetch", "-q", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["summary"]["urls_listed"] == 1
    err = capsys.readouterr().err
    assert "warning: --json is now --report; --json goes in the next release" in err


def test_a_relative_sitemap_line_is_read_against_robots_txt_and_flagged(
    site, tmp_path: Path
) -> None:
    base = site(
        lambda b: {
            "/robots.txt": Page("User-agent: *\nSitemap: /maps/all.xml\n", 200, "text/plain"),
            "/maps/all.xml": xml(urlset(f"{b}/maps/a", f"{b}/maps/b")),
        }
    )
    exit_code, report = run_audit(tmp_path, base + "/", "--no-fetch")
    assert report["summary"]["sitemaps_read"] == 1, report
    assert report["summary"]["urls_listed"] == 2
    [finding] = report["findings"]
    assert finding["code"] == "robots_sitemap_relative"
    assert "Sitemap: /maps/all.xml" in finding["detail"]
    assert exit_code == 0  # a warning: the audit carries on


def test_no_usable_sitemap_line_falls_back_to_the_guesses(site, tmp_path: Path) -> None:
    base = site(
        lambda b: {
            "/robots.txt": Page(
                "User-agent: *\nSitemap: http://elsewhere.invalid/s.xml\n", 200, "text/plain"
            ),
            "/sitemap.xml": xml(urlset(f"{b}/a")),
        }
    )
    _, report = run_audit(tmp_path, base + "/", "--no-fetch")
    assert report["summary"]["sitemaps_read"] == 1, report
    codes = [f["code"] for f in report["findings"]]
    assert "sitemap_unreachable" in codes
    unreachable = next(f for f in report["findings"] if f["code"] == "sitemap_unreachable")
    assert "Sitemap: http://elsewhere.invalid/s.xml" in unreachable["detail"]


def _rss(*links: str) -> str:
    items = "".join(f"<item><title>t</title><link>{link}</link></item>" for link in links)
    return f'{XML}<rss version="2.0"><channel><title>f</title>{items}</channel></rss>\n'


@pytest.mark.parametrize(
    ("path", "content_type"),
    [("/feed", "application/rss+xml"), ("/feed/", "text/xml"), ("/list", "text/html")],
)
def test_a_sitemap_or_feed_at_a_url_not_named_like_one_is_read(
    site, tmp_path: Path, path: str, content_type: str
) -> None:
    def pages(b: str) -> dict:
        at = f"{b}/feed/" if path.endswith("/") else f"{b}/"  # a sitemap's folder rule
        body = urlset(f"{at}a", f"{at}b") if path == "/list" else _rss(f"{at}a", f"{at}b")
        return {path: xml(body, content_type), "/sitemap.xml": xml(urlset(f"{b}/never"))}

    base = site(pages)
    exit_code, report = run_audit(tmp_path, base + path, "--no-fetch")
    assert exit_code == 0, report
    assert report["summary"]["sitemaps_read"] == 1
    assert report["summary"]["urls_listed"] == 2
    assert site.last.paths.count(path) == 1  # read once, not asked again
    assert "/sitemap.xml" not in site.last.paths


def test_a_folder_answering_a_page_is_audited_as_a_site(site, tmp_path: Path) -> None:
    base = site(
        lambda b: {
            "/docs/": Page("<!doctype html><html><body>hi</body></html>"),
            "/docs/sitemap.xml": xml(urlset(f"{b}/docs/a")),
        }
    )
    exit_code, report = run_audit(tmp_path, base + "/docs/", "--no-fetch")
    assert exit_code == 0, report
    assert report["summary"]["urls_listed"] == 1
