"""`sitemap-crawler submit [--status]` and `submit = [...]` after a publish (#28), against
the engines' APIs imitated on 127.0.0.1 (tests/engines.py): what is sent (paths, auth,
bodies), what is printed, and the exit codes; no secret is ever printed."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from aiohttp import web

from crawler.cli import main
from crawler.core.submissions import bing_status, google_status, line
from tests.engines import ACCOUNT, AUDIENCE, BING_KEY, GRANT, SCOPE, TOKEN, Engines
from tests.procs import CLI, child_env, interrupted
from tests.sites import Site, html, read_published, tree_site

SITE = "https://www.example.com/"
SITEMAP = "https://www.example.com/sitemap.xml"


@pytest.fixture
def engines(serve, monkeypatch, tmp_path):
    """The imitated APIs, the environment pointing submit at them, and a key file."""
    fake = Engines()
    server = serve(fake.app())
    monkeypatch.setenv("SITEMAP_CRAWLER_TEST_GOOGLE_API", server.url)
    monkeypatch.setenv("SITEMAP_CRAWLER_TEST_BING_API", server.url)
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    fake.path = fake.key_file(tmp_path, server.url)  # type: ignore[attr-defined]
    fake.url = server.url  # type: ignore[attr-defined]
    return fake


def _google(engines, *args: str) -> list[str]:
    return ["submit", "--submit", "google", "--google-key-file", str(engines.path), *args]


def _no_secret(text: str, engines) -> None:
    for secret in (TOKEN, BING_KEY, "PRIVATE KEY", "0123456789abcdef"):
        assert secret not in text


def test_google_submit_puts_the_documented_request_with_a_token_from_the_key(engines, capsys):
    engines.google[SITE] = {}
    assert main(_google(engines, SITEMAP)) == 0
    out, err = capsys.readouterr()
    assert out == f"google: submitted {SITEMAP} to the Search Console property {SITE}\n"
    (grant,) = engines.grants  # one token, by the JWT-bearer grant, signed RS256 by the key
    assert grant["grant_type"] == GRANT and grant["alg"] == "RS256"
    assert grant["iss"] == ACCOUNT and grant["scope"] == SCOPE and grant["aud"] == AUDIENCE
    assert grant["exp"] - grant["iat"] == 3600
    (put,) = engines.requests
    assert put["method"] == "PUT" and put["body"] == b""
    assert put["raw_path"] == (
        f"/webmasters/v3/sites/{quote(SITE, safe='')}/sitemaps/{quote(SITEMAP, safe='')}"
    )
    assert put["authorization"] == f"Bearer {TOKEN}"
    assert engines.google[SITE][SITEMAP]["isPending"] is True
    _no_secret(out + err, engines)


def test_status_prints_what_google_last_said(engines, capsys):
    engines.google["sc-domain:example.com"] = {
        SITEMAP: {
            "path": SITEMAP,
            "lastSubmitted": "2026-11-20T03:00:00.000Z",
            "isPending": False,
            "isSitemapsIndex": True,
            "type": "sitemap",
            "lastDownloaded": "2026-11-25T04:12:00.000Z",
            "warnings": "2",
            "errors": "0",
            "contents": [
                {"type": "web", "submitted": "1234", "indexed": "0"},
                {"type": "image", "submitted": "56"},
            ],
        }
    }
    args = [*_google(engines, SITEMAP, "https://www.example.com/other.xml"), "--status"]
    assert main([*args, "--google-property", "sc-domain:example.com"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [
        f"google {SITEMAP}: last read 2026-11-25T04:12:00.000Z; submitted "
        "2026-11-20T03:00:00.000Z; 0 errors; 2 warnings; web 1234 URLs, image 56 URLs",
        "google https://www.example.com/other.xml: not known for the site "
        "sc-domain:example.com (submit it first; or the site or property setting names "
        "another site than the one the engine knows)",
    ]
    assert [r["method"] for r in engines.requests] == ["GET", "GET"]
    engines.google["sc-domain:example.com"][SITEMAP]["errors"] = "3"
    assert main([*args, "--google-property", "sc-domain:example.com"]) == 1  # errors: "no"
    assert "3 errors" in capsys.readouterr().out


def test_no_permission_is_exit_4_naming_the_account_and_property(engines, capsys):
    assert main(_google(engines, SITEMAP)) == 4  # the property is not the account's
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(
        f"sitemap-crawler: google: {ACCOUNT} may not use the Search Console property {SITE} "
        "(HTTP 403): add it as a user (Full or Owner) of that property"
    )
    assert len(err.splitlines()) == 1
    _no_secret(err, engines)


def test_rate_limits_and_5xx_are_retried_then_exit_75(engines, capsys):
    engines.google[SITE] = {}
    engines.fail = [429, 503]
    assert main(_google(engines, SITEMAP)) == 0
    assert len(engines.requests) == 3
    capsys.readouterr()
    engines.fail = [503] * 10
    assert main(_google(engines, SITEMAP)) == 75
    err = capsys.readouterr().err
    assert err.startswith("sitemap-crawler: google: HTTP 503, still after retries: try again later")
    assert len(engines.requests) == 3 + 4  # a first try and 3 retries


def test_a_refused_key_and_a_file_that_is_no_key(engines, capsys, tmp_path):
    engines.google[SITE] = {}
    engines.revoked = True
    assert main(_google(engines, SITEMAP)) == 4
    err = capsys.readouterr().err
    assert f"the token endpoint refused the service account {ACCOUNT}: invalid_grant" in err
    assert engines.requests == []
    bad = tmp_path / "not-a-key.json"
    bad.write_text('{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----x"}')
    assert main(["submit", "--submit", "google", "--google-key-file", str(bad), SITEMAP]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sitemap-crawler: google_key_file {bad} is not a service account's")
    assert "BEGIN" not in err
    assert main(["submit", "--submit", "google", SITEMAP]) == 2
    assert "needs google_key_file" in capsys.readouterr().err
    assert main(["submit", SITEMAP]) == 2
    assert "no engine to submit to" in capsys.readouterr().err


def test_submit_with_nothing_named_says_what_it_needs(capsys, monkeypatch):
    # no sitemap and no config: one line and exit 2, not an unexpected failure (exit 70)
    monkeypatch.delenv("SITEMAP_CRAWLER_URL", raising=False)
    assert main(["submit"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sitemap-crawler: no sitemap: give its URL") and err.count("\n") == 1


def test_bing_submit_and_status(engines, capsys, monkeypatch):
    engines.bing[SITE] = []
    monkeypatch.setenv("SITEMAP_CRAWLER_BING_API_KEY", BING_KEY)
    assert main(["submit", "--submit", "bing", SITEMAP]) == 0
    out, err = capsys.readouterr()
    assert out == f"bing: submitted {SITEMAP} for the site {SITE}\n"
    (post,) = engines.requests
    assert post["method"] == "POST" and post["bing"] == "SubmitFeed"
    assert post["query"] == {"apikey": BING_KEY}
    assert post["content_type"].startswith("application/json")
    assert json.loads(post["body"]) == {"siteUrl": SITE, "feedUrl": SITEMAP}
    assert main(["submit", "--submit", "bing", "--status", SITEMAP]) == 0
    out = capsys.readouterr().out
    assert out == (
        f"bing   {SITEMAP}: never read yet; submitted 2025-11-25T19:00:00-08:00; "
        "status Pending; web 0 URLs\n"
    )
    assert engines.requests[-1]["query"] == {"siteUrl": SITE, "apikey": BING_KEY}
    monkeypatch.setenv("SITEMAP_CRAWLER_BING_API_KEY", "wrong-key-secret")
    assert main(["submit", "--submit", "bing", SITEMAP]) == 4
    err = capsys.readouterr().err
    assert "InvalidApiKey: check bing_api_key" in err and "wrong-key-secret" not in err
    monkeypatch.setenv("SITEMAP_CRAWLER_BING_API_KEY", BING_KEY)
    assert main(["submit", "--submit", "bing", "https://other.example/sitemap.xml"]) == 4
    assert "NotAuthorized: the key's account has not verified this site" in capsys.readouterr().err


def test_the_job_submits_after_publishing_and_a_failed_submission_exits_9(
    engines, serve, tmp_path, capsys, xsd
):
    start = serve(tree_site(3).app).url + "/"
    data = tmp_path / "data"
    args = ["job", start, "--data", str(data), "--submit", "google"]
    args += ["--google-key-file", str(engines.path)]
    assert main(args) == 9  # the property is none of the account's: 403
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(
        f"sitemap-crawler: published 3 URLs to {data / 'out'}, but submitting it failed: "
        f"google: {ACCOUNT} may not use the Search Console property {start}"
    )
    assert len(read_published(data / "out", xsd).locs) == 3  # published all the same
    engines.google[start] = {}
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"google: submitted {start}sitemap.xml to the Search Console property {start}" in out
    report = json.loads((data / "state" / "last-report.json").read_text())
    assert report["submitted"] == [
        f"google: submitted {start}sitemap.xml to the Search Console property {start}"
    ]
    _no_secret(out, engines)


def test_a_key_file_gone_during_the_crawl_is_not_read_again(engines, tmp_path, serve, capsys):
    """Read (and checked) before the crawl, and kept: a key rotated or unmounted during a
    night's crawl does not turn a publish into exit 2."""

    async def home(request: web.Request) -> web.Response:
        engines.path.unlink(missing_ok=True)  # the mounted secret goes away mid-crawl
        return web.Response(text=html("/a"), content_type="text/html")

    site = Site({"/": home, "/a": html(body="a"), "/robots.txt": ""})
    start = serve(site.app).url + "/"
    engines.google[start] = {}
    code = main(["crawl", start, "-o", str(tmp_path / "out"), "--submit", "google",
                 "--google-key-file", str(engines.path)])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert not engines.path.exists() and engines.google[start]


def test_an_unexpected_failure_of_submit_after_a_publish_is_exit_9_with_a_report(
    engines, serve, tmp_path, capsys, monkeypatch, xsd
):
    from crawler.shell import submit

    async def broken(self, sitemap: str) -> str:
        raise OverflowError("date value out of range")

    monkeypatch.setattr(submit.Google, "submit", broken)
    start = serve(tree_site(3).app).url + "/"
    engines.google[start] = {}
    out, report = tmp_path / "out", tmp_path / "report.json"
    code = main(["crawl", start, "-o", str(out), "--report", str(report), "--submit", "google",
                 "--google-key-file", str(engines.path)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 9, err
    assert "but submitting it failed: OverflowError: date value out of range" in err
    assert json.loads(report.read_text())["published"] is True
    assert len(read_published(out, xsd).locs) == 3


def test_sigterm_during_submit_exits_9_writes_the_report_and_still_notifies(
    engines, serve, tmp_path, xsd
):
    engines.delay = 60.0  # the submission hangs until the signal
    start = serve(tree_site(3).app).url + "/"
    engines.google[start] = {}
    out, report, told = tmp_path / "out", tmp_path / "report.json", tmp_path / "told"
    code, err = interrupted(
        [*CLI, "crawl", start, "-o", str(out), "-q", "--report", str(report),
         "--submit", "google", "--google-key-file", str(engines.path),
         "--on-failure", f'echo "$SITEMAP_CRAWLER_FAILED_EXIT_CODE" > "{told}"'],
        lambda: engines.requests, "the submission to be sent",
        env=child_env(
            SITEMAP_CRAWLER_TEST_GOOGLE_API=engines.url,  # type: ignore[attr-defined]
            SITEMAP_CRAWLER_TEST_BING_API=engines.url,  # type: ignore[attr-defined]
        ),
    )  # fmt: skip
    assert code == 9, err  # published locally: not 130's "untouched"
    assert "but submitting it was interrupted" in err
    assert json.loads(report.read_text())["published"] is True
    assert told.read_text().strip() == "9"
    assert len(read_published(out, xsd).locs) == 3


def test_a_job_with_a_bad_key_file_fails_before_crawling(engines, serve, tmp_path, capsys):
    site = tree_site(3)
    start = serve(site.app).url + "/"
    bad = tmp_path / "k.json"
    bad.write_text("{}")
    code = main(["job", start, "--data", str(tmp_path / "d"), "--submit", "google",
                 "--google-key-file", str(bad)])  # fmt: skip
    assert code == 2 and site.requests == []


def test_the_engines_answers_read_as_documented():
    status = google_status(SITEMAP, {"path": SITEMAP, "isPending": True, "errors": "1"})
    assert status.pending is True and status.errors == 1 and status.has_errors
    assert line(status) == f"google {SITEMAP}: never read yet; pending; 1 error"
    feeds = {"d": [{"Url": SITEMAP, "Status": "Success", "UrlCount": 7,
                    "LastCrawled": "/Date(1764126000000)/", "Submitted": None}]}  # fmt: skip
    status = bing_status(SITEMAP, feeds)
    assert status.last_read == "2025-11-26T03:00:00+00:00" and status.urls == {"web": 7}
    assert not status.has_errors


def test_the_audit_can_include_what_the_engines_said(engines, serve, tmp_path, capsys):
    from tests.sites import Page, Site, urlset

    site = Site({"/robots.txt": Page("", status=404)})
    base = serve(site.app).url
    site.pages["/sitemap.xml"] = urlset(base, ["/a"])
    engines.google[base + "/"] = {
        base + "/sitemap.xml": {"path": base + "/sitemap.xml", "lastDownloaded": "2026-11-25",
                                "errors": "0", "warnings": "0"},
    }  # fmt: skip
    report = tmp_path / "audit.json"
    args = ["audit", base + "/sitemap.xml", "--no-fetch", "--engine-status", "--report",
            str(report), *_google(engines)[1:]]  # fmt: skip
    main(args)
    out = capsys.readouterr().out
    section = out[out.index("what the search engines last said") :].splitlines()
    assert section[1] == f"  google {base}/sitemap.xml: last read 2026-11-25; 0 errors; 0 warnings"
    (said,) = json.loads(report.read_text())["engines"]
    assert said["engine"] == "google" and said["last_read"] == "2026-11-25"
    assert main(["audit", str(tmp_path / "x.xml"), "--engine-status"]) == 2
