"""`sitemap-crawler robots`: the robots.txt tester, through the real CLI against servers on
127.0.0.1 (issue #12). Each test's robots.txt is written out in it, so the line numbers the
report must name can be counted by eye."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from crawler.cli import main
from tests.sites import Page, Site, redirect

ROBOTS = """\
User-agent: *
Disallow: /private/
Allow: /private/open

User-agent: sitemap-crawler
Disallow: /drafts/
Crawl-delay: 2

User-agent: googlebot
Disallow: /a
Allow: /a/b
Disallow: /t
Allow: /t
Crawl-delay: 7

Sitemap: https://www.example.com/sitemap.xml
Sitemap: https://www.example.com/news.xml
"""


def _txt(body: str, status: int = 200) -> Page:
    return Page(body, status, "text/plain")


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["robots", "--retries", "0", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _block(out: str, url: str) -> list[str]:
    """The URL's own lines: its verdict line and the indented ones under it."""
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"{url}  "))
    block = [lines[at]]
    for line in lines[at + 1 :]:
        if not line.startswith("  "):
            break
        block.append(line)
    return block


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_allowed_and_blocked_with_group_rule_and_lines(serve, capsys) -> None:
    site = Site({"/robots.txt": _txt(ROBOTS)})
    base = serve(site.app).url
    code, out, err = _run(capsys, f"{base}/drafts/x", f"{base}/private/x", f"{base}/ok")
    assert code == 1 and err == ""
    assert _block(out, f"{base}/drafts/x") == [
        f"{base}/drafts/x  BLOCKED for sitemap-crawler",
        "  group: User-agent: sitemap-crawler (line 5)",
        "  rule:  Disallow: /drafts/ (line 6)",
    ]
    # the agent's own group applies, not *: /private/ is *'s rule, so it does not count
    assert _block(out, f"{base}/private/x") == [
        f"{base}/private/x  allowed for sitemap-crawler",
        "  group: User-agent: sitemap-crawler (line 5)",
        "  rule:  none matched (allowed by default)",
        # bingbot has no group of its own: * forbids it what ours allows (#24)
        "  but:   BLOCKED for bingbot by Disallow: /private/ (line 2): a crawl does not list "
        "it (search_engines)",
    ]
    assert f"{base}/ok  allowed for sitemap-crawler" in out
    assert out.startswith("user agent: sitemap-crawler/")
    assert "(robots.txt token: sitemap-crawler, " in out.splitlines()[0]
    assert out.rstrip().endswith(
        "3 URLs: 2 allowed, 1 blocked; 1 allowed but blocked for a search engine, so not "
        "listed by a crawl"
    )
    assert site.paths == ["/robots.txt"]


def test_star_group_when_no_group_names_the_agent(serve, capsys) -> None:
    base = serve(Site({"/robots.txt": _txt(ROBOTS)}).app).url
    code, out, _ = _run(capsys, "--user-agent", "OtherBot/1.0", f"{base}/private/x")
    assert code == 1
    assert _block(out, f"{base}/private/x") == [
        f"{base}/private/x  BLOCKED for otherbot",
        "  group: User-agent: * (line 1); no group names otherbot",
        "  rule:  Disallow: /private/ (line 2)",
    ]


def test_googlebot_user_agent_picks_the_googlebot_group(serve, capsys) -> None:
    base = serve(Site({"/robots.txt": _txt(ROBOTS)}).app).url
    code, out, _ = _run(capsys, "--user-agent", "Googlebot/2.1", f"{base}/a/x", f"{base}/drafts/x")
    assert code == 1
    assert out.splitlines()[0] == (
        "user agent: Googlebot/2.1 (robots.txt token: googlebot, the User-Agent's first word)"
    )
    assert _block(out, f"{base}/a/x") == [
        f"{base}/a/x  BLOCKED for googlebot",
        "  group: User-agent: googlebot (line 9)",
        "  rule:  Disallow: /a (line 10)",
    ]
    assert f"{base}/drafts/x  allowed for googlebot" in out  # sitemap-crawler's rule
    assert "  Crawl-delay for googlebot: 7 s" in out.splitlines()


def test_allow_beats_disallow_by_length_and_wins_a_tie(serve, capsys) -> None:
    base = serve(Site({"/robots.txt": _txt(ROBOTS)}).app).url
    code, out, _ = _run(capsys, "--user-agent", "Googlebot", f"{base}/a/b/c", f"{base}/t/1")
    assert code == 0
    assert _block(out, f"{base}/a/b/c")[2:] == [
        "  rule:  Allow: /a/b (line 11)",
        "         beats Disallow: /a (line 10): longer pattern wins",
    ]
    assert _block(out, f"{base}/t/1")[2:] == [
        "  rule:  Allow: /t (line 13)",
        "         beats Disallow: /t (line 12): same length: Allow wins a tie",
    ]


def test_merged_groups_name_every_line(serve, capsys) -> None:
    robots = "User-agent: a\nUser-agent: googlebot\nDisallow: /x\n\nUser-agent: Googlebot\n"
    robots += "Disallow: /y\n"
    base = serve(Site({"/robots.txt": _txt(robots)}).app).url
    code, out, _ = _run(capsys, "--user-agent", "Googlebot", f"{base}/y/1")
    assert code == 1
    assert _block(out, f"{base}/y/1")[1:] == [
        "  group: User-agent: googlebot (lines 2, 5)",
        "  rule:  Disallow: /y (line 6)",
    ]


def test_crawl_delay_and_sitemap_lines(serve, capsys) -> None:
    base = serve(Site({"/robots.txt": _txt(ROBOTS)}).app).url
    code, out, _ = _run(capsys, f"{base}/")
    assert code == 0
    lines = out.splitlines()
    at = lines.index(f"robots.txt {base}/robots.txt: HTTP 200, {len(ROBOTS)} bytes")
    assert lines[at + 1 : at + 4] == [
        "  Crawl-delay for sitemap-crawler: 2 s",
        "  Sitemap: https://www.example.com/sitemap.xml",
        "  Sitemap: https://www.example.com/news.xml",
    ]


def test_404_robots_txt_allows_everything(serve, capsys) -> None:
    base = serve(Site({}).app).url
    code, out, _ = _run(capsys, f"{base}/anything")
    assert code == 0
    assert _block(out, f"{base}/anything") == [
        f"{base}/anything  allowed for sitemap-crawler",
        "  group: none (no robots.txt)",
        "  rule:  none: robots.txt answered 404: everything allowed "
        "(RFC 9309: an unavailable robots.txt allows all)",
    ]
    assert f"robots.txt {base}/robots.txt: robots.txt answered 404: everything allowed" in out


def test_500_robots_txt_blocks_everything_and_says_why(serve, capsys) -> None:
    base = serve(Site({"/robots.txt": _txt("oops", 500)}).app).url
    code, out, _ = _run(capsys, f"{base}/a", f"{base}/b")
    assert code == 3
    assert _block(out, f"{base}/a") == [
        f"{base}/a  BLOCKED for sitemap-crawler",
        "  group: none (robots.txt could not be read)",
        "  rule:  robots.txt answered 500: everything blocked until it can be read (RFC 9309)",
    ]
    assert "2 URLs: 0 allowed, 2 blocked (2 of them because their robots.txt could not" in out


def test_unreachable_robots_txt_blocks_everything(capsys) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/page"
    code, out, err = _run(capsys, "--timeout", "5", url)
    assert code == 3 and err == ""
    assert "  rule:  robots.txt unreachable: cannot connect: connection refused: everything " in out


def test_redirect_to_another_origin_is_not_followed(serve, capsys) -> None:
    other = Site({"/robots.txt": _txt("User-agent: *\nAllow: /\n")})
    other_base = serve(other.app).url
    base = serve(Site({"/robots.txt": redirect(f"{other_base}/robots.txt")}).app).url
    code, out, _ = _run(capsys, f"{base}/a")
    assert code == 3
    assert "robots.txt unreachable: redirects to another origin" in out
    assert other.paths == []


def test_two_origins_one_fetch_each(serve, capsys) -> None:
    first = Site({"/robots.txt": _txt("User-agent: *\nDisallow: /x\n")})
    second = Site({"/robots.txt": _txt("User-agent: *\nDisallow: /y\n")})
    one, two = serve(first.app).url, serve(second.app).url
    code, out, _ = _run(capsys, f"{one}/x", f"{two}/x", f"{one}/y", f"{two}/y", f"{one}/z")
    assert code == 1
    assert first.paths == ["/robots.txt"] and second.paths == ["/robots.txt"]
    assert f"{one}/x  BLOCKED" in out and f"{two}/y  BLOCKED" in out
    assert f"{two}/x  allowed" in out and f"{one}/y  allowed" in out
    assert f"robots.txt {one}/robots.txt: HTTP 200" in out
    assert f"robots.txt {two}/robots.txt: HTTP 200" in out


def test_credentials_go_to_the_first_origin_only(serve, capsys) -> None:
    first, second = Site({}), Site({})
    one, two = serve(first.app).url, serve(second.app).url
    code, _, _ = _run(capsys, "--header", "X-Staging: letmein", f"{one}/", f"{two}/")
    assert code == 0
    assert first.requests[0][2].get("X-Staging") == "letmein"
    assert "X-Staging" not in second.requests[0][2]


def test_robots_file_needs_no_server_and_takes_any_origin(tmp_path: Path, capsys) -> None:
    rules = tmp_path / "robots.txt"
    rules.write_text(ROBOTS)
    code, out, _ = _run(
        capsys,
        *("--robots-from", str(rules), "--user-agent", "OtherBot"),
        *("https://a.test/private/x", "https://b.test/private/open"),
    )
    assert code == 1
    assert _block(out, "https://a.test/private/x")[2] == "  rule:  Disallow: /private/ (line 2)"
    assert _block(out, "https://b.test/private/open")[2:] == [
        "  rule:  Allow: /private/open (line 3)",
        "         beats Disallow: /private/ (line 2): longer pattern wins",
    ]
    assert f"robots.txt {rules}: read from the file, {len(ROBOTS)} bytes" in out


def test_robots_from_a_url_tests_its_rules_for_any_origin(serve, capsys) -> None:
    """As crawl's --robots-from URL: the rules are fetched from there, and the URLs' own
    sites are never asked."""
    rules = Site({"/rules.txt": _txt(ROBOTS)})
    url = serve(rules.app).url + "/rules.txt"
    code, out, _ = _run(
        capsys,
        *("--robots-from", url, "--user-agent", "OtherBot"),
        *("https://a.test/private/x", "https://b.test/private/open"),
    )
    assert code == 1
    assert rules.paths == ["/rules.txt"]
    assert _block(out, "https://a.test/private/x")[2] == "  rule:  Disallow: /private/ (line 2)"


def test_the_old_spelling_robots_still_works_and_says_so(tmp_path: Path, capsys) -> None:
    rules = tmp_path / "robots.txt"
    rules.write_text(ROBOTS)
    code, out, err = _run(capsys, "--robots", str(rules), "https://a.test/drafts/x")
    assert code == 1 and "Disallow: /drafts/" in out
    assert err == (
        "sitemap-crawler: warning: --robots is now --robots-from; --robots goes in the next "
        "release\n"
    )


@pytest.mark.parametrize(
    ("page", "warning"),
    [
        (
            Page("<!doctype html><html><body>Welcome</body></html>"),
            "this looks like an HTML page, not a robots.txt",
        ),
        (
            Page(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", content_type="image/png"),
            "this looks like binary data, not a robots.txt",
        ),
        (
            _txt("User-agent: *\n" + "Disallow: /x\n" * 60_000 + "Disallow: /a\n"),
            "larger than 500 KiB: only the first 512000 bytes are read (RFC 9309)",
        ),
    ],
    ids=["html", "binary", "huge"],
)
def test_a_body_that_is_not_robots_txt_is_flagged(serve, capsys, page: Page, warning: str):
    base = serve(Site({"/robots.txt": page}).app).url
    code, out, err = _run(capsys, f"{base}/a")
    assert code == 0 and err == ""  # the rules past the cap do not apply
    assert f"  warning: {warning}" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ftp://example.com/"], "invalid URL 'ftp://example.com/': unsupported scheme"),
        (["example.com/a"], "invalid URL 'example.com/a': no scheme"),
        (
            ["--robots-from", "/nonexistent/robots.txt", "https://a.test/"],
            "robots_from: no such file: /nonexistent/robots.txt",
        ),
        (["--timeout", "0", "https://a.test/"], "timeout must be positive"),
    ],
)
def test_bad_input_exits_2_in_one_line(capsys, args: list[str], message: str) -> None:
    code, out, err = _run(capsys, *args)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and message in err


def test_no_url_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["robots"])
    assert exc.value.code == 2
    assert "robots" in capsys.readouterr().err


def test_the_readme_example_is_what_it_prints(serve, capsys) -> None:
    from tests.test_readme import README, _example_site

    section = README[README.index("## Test robots.txt") :]
    command = next(line for line in section.splitlines() if line.startswith("sitemap-crawler"))
    shown = section[section.index("```text\n") + len("```text\n") :].split("```")[0]
    base = serve(_example_site()).url
    args = [arg.replace("http://127.0.0.1:8000", base) for arg in command.split()[1:]]
    code = main(args)
    out = capsys.readouterr().out.replace(base, "http://127.0.0.1:8000")
    assert code == 1
    # the first line names the version, which moves on
    assert out.splitlines()[1:] == shown.splitlines()[1:]
    assert shown.startswith("user agent: sitemap-crawler/")


# -- #24: the token a search engine would use, the engines' own groups, relative Sitemap lines


def test_a_browser_style_user_agent_is_read_as_its_crawler(serve, capsys) -> None:
    from crawler.core.robots_check import tester_token

    bing = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"
    google = (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Googlebot/2.1; "
        "+http://www.google.com/bot.html) Chrome/120.0 Safari/537.36"
    )
    assert tester_token(bing) == ("bingbot", "the product named after 'compatible;'")
    assert tester_token(google)[0] == "googlebot"
    assert tester_token("Mozilla/5.0 (X11; Linux x86_64)")[0] == "mozilla"
    assert tester_token(bing, "MyBot") == ("mybot", "given with --token")
    base = serve(Site({"/robots.txt": _txt(ROBOTS)}).app).url
    code, out, _ = _run(capsys, "--user-agent", google, f"{base}/a/x")
    assert code == 1
    assert out.splitlines()[0].endswith(
        "(robots.txt token: googlebot, the product named after 'compatible;')"
    )
    assert f"{base}/a/x  BLOCKED for googlebot" in out
    code, out, _ = _run(capsys, "--user-agent", bing, "--token", "googlebot", f"{base}/a/x")
    assert code == 1 and "token: googlebot, given with --token" in out.splitlines()[0]


def test_an_engine_blocked_url_is_named_and_a_relative_sitemap_flagged(serve, capsys) -> None:
    rules = "User-agent: googlebot\nDisallow: /g/\n\nSitemap: /sitemap.xml\n"
    base = serve(Site({"/robots.txt": _txt(rules)}).app).url
    code, out, _ = _run(capsys, f"{base}/g/x", f"{base}/ok")
    assert code == 0  # the agent may fetch both
    assert _block(out, f"{base}/g/x")[-1] == (
        "  but:   BLOCKED for googlebot by Disallow: /g/ (line 2): a crawl does not list it "
        "(search_engines)"
    )
    assert len(_block(out, f"{base}/ok")) == 3
    assert "1 allowed but blocked for a search engine, so not listed by a crawl" in out
    assert (
        "  warning: Sitemap: /sitemap.xml is not an absolute URL: search engines ignore it "
        "(the Sitemap line must name the sitemap's full URL)"
    ) in out.splitlines()
    code, out, _ = _run(capsys, "--search-engines", "", f"{base}/g/x")
    assert code == 0 and "but:" not in out
