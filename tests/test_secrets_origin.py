"""Credentials stay with their origin (issue #23, item 3): the auth, header and cookie of a
config or the environment go to the configured url's origin (or auth_origin's) only, in
every command; the command line's go to the command's target; the --on-publish hook gets
none. Two local servers, two origins; every request's headers are logged."""

from __future__ import annotations

import base64
import subprocess

from crawler.core.fleet import site_folder
from tests.procs import CLI, child_env
from tests.sites import Page, Site, html, read_published

USER, PASSWORD = "deploy", "st4ging-pass-secret"
TOKEN, COOKIE = "tok-7f3a-secret", "ck-91be-secret"
ENV = {
    "SITEMAP_CRAWLER_AUTH": f"{USER}:{PASSWORD}",
    "SITEMAP_CRAWLER_HEADER": f"X-Staging-Token: {TOKEN}",
    "SITEMAP_CRAWLER_COOKIE": f"staging_session={COOKIE}",
    "SITEMAP_CRAWLER_QUIET": "true",
}
BASIC = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


def _site() -> Site:
    return Site(
        {
            "/": html("/a", "/b"),
            "/a": html(),
            "/b": html(),
            "/robots.txt": "User-agent: *\nAllow: /\n",
            "/sitemap.xml": "",  # filled in once the port is known
        }
    )


def _sitemap(site: Site, origin: str) -> None:
    body = "".join(f"<url><loc>{origin}{p}</loc></url>" for p in ("/", "/a"))
    text = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{body}</urlset>\n'
    )
    site.pages["/sitemap.xml"] = Page(text, content_type="application/xml")


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], env=child_env(**env), capture_output=True, text=True, timeout=120
    )


def _credentials_seen(site: Site) -> list[str]:
    """The requests that carried any of the credentials."""
    return [
        path
        for _, path, headers in site.requests
        if headers.get("Authorization") == BASIC
        or TOKEN in headers.get("X-Staging-Token", "")
        or COOKIE in headers.get("Cookie", "")
    ]


def _all_credentials(site: Site) -> bool:
    return bool(site.requests) and all(
        headers.get("Authorization") == BASIC
        and headers.get("X-Staging-Token") == TOKEN
        and headers.get("Cookie") == f"staging_session={COOKIE}"
        for _, _, headers in site.requests
    )


def test_exported_credentials_go_to_the_configured_origin_only(serve, tmp_path):
    staging_site, www_site = _site(), _site()
    staging, www = serve(staging_site.app), serve(www_site.app)
    _sitemap(staging_site, staging.url)
    _sitemap(www_site, www.url)
    env = {**ENV, "SITEMAP_CRAWLER_URL": staging.url + "/"}
    said = (
        "SITEMAP_CRAWLER_AUTH, SITEMAP_CRAWLER_HEADER, SITEMAP_CRAWLER_COOKIE are for "
        f"{staging.url}, not sent to {www.url}"
    )
    for args in (
        ("robots", www.url + "/a"),
        ("explain", www.url + "/a"),
        ("audit", www.url + "/sitemap.xml", "--json", str(tmp_path / "audit.json")),
    ):
        done = _run(*args, **env)
        assert done.returncode in (0, 1, 3), done.stderr  # explain: out of scope
        assert www_site.requests, args
        assert _credentials_seen(www_site) == [], args
        assert said in done.stderr, (args, done.stderr)
        assert done.stderr.count(said) == 1
        assert PASSWORD not in done.stderr + done.stdout
        www_site.requests.clear()
    # the configured origin gets them, in every command
    for args in (("robots", staging.url + "/a"), ("explain", staging.url + "/a")):
        done = _run(*args, **env)
        assert done.returncode == 0, done.stderr
        assert _all_credentials(staging_site), args
        assert "not sent" not in done.stderr
        staging_site.requests.clear()
    done = _run("audit", staging.url + "/sitemap.xml", **env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _all_credentials(staging_site)
    # the command line's credentials are for the command's target, wherever it is
    done = _run("robots", www.url + "/a", "--auth", f"{USER}:{PASSWORD}", **env)
    assert done.returncode == 0, done.stderr
    assert [h.get("Authorization") for _, _, h in www_site.requests] == [BASIC]


def test_credentials_bound_to_no_origin_are_not_sent_and_auth_origin_binds_them(serve, tmp_path):
    site = _site()
    srv = serve(site.app)
    out = tmp_path / "out"
    env = {"SITEMAP_CRAWLER_AUTH": f"{USER}:{PASSWORD}"}
    done = _run("crawl", srv.url + "/", "-o", str(out), **env)
    assert done.returncode == 0, done.stderr
    assert _credentials_seen(site) == []
    line = (
        "SITEMAP_CRAWLER_AUTH is for no origin (give auth_origin or url beside it, e.g. "
        f"SITEMAP_CRAWLER_AUTH_ORIGIN), not sent to {srv.url}"
    )
    assert line in done.stderr
    site.requests.clear()
    done = _run("crawl", srv.url + "/", "-o", str(out), SITEMAP_CRAWLER_AUTH_ORIGIN=srv.url, **env)
    assert done.returncode == 0, done.stderr
    assert all(h.get("Authorization") == BASIC for _, _, h in site.requests)
    assert "not sent" not in done.stderr


def test_each_fleet_site_and_the_hook_get_no_credential_of_another(serve, tmp_path, xsd):
    sites = [_site(), _site()]
    servers = [serve(site.app) for site in sites]
    listing = tmp_path / "sites.txt"
    listing.write_text("".join(f"{srv.url}/\n" for srv in servers))
    config = tmp_path / "job.toml"
    config.write_text(
        f'url = "{servers[0].url}/"\nauth = "{USER}:{PASSWORD}"\n'
        f'header = ["X-Staging-Token: {TOKEN}"]\n'
    )
    marker = tmp_path / "hook-env"
    data = tmp_path / "data"
    for index in (0, 1):
        done = _run(
            "job", "--data", str(data), "--sites", str(listing), "--index", str(index),
            "-c", str(config), "--on-publish", 'env > "$MARKER"',
            MARKER=str(marker), SITEMAP_CRAWLER_COOKIE=f"staging_session={COOKIE}",
            SITEMAP_CRAWLER_QUIET="true",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        hook_env = marker.read_text()
        assert "SITEMAP_CRAWLER_COOKIE" not in hook_env and COOKIE not in hook_env
        assert PASSWORD not in hook_env and TOKEN not in hook_env
        assert "SITEMAP_CRAWLER_PUBLISHED_DIR=" in hook_env
        assert "SITEMAP_CRAWLER_OUTPUT=" not in hook_env
    assert _all_credentials(sites[0])
    assert sites[1].requests and _credentials_seen(sites[1]) == []
    for srv in servers:
        published = read_published(data / "sites" / site_folder(srv.url + "/") / "out", xsd)
        assert sorted(published.locs) == sorted(srv.url + p for p in ("/", "/a", "/b"))
