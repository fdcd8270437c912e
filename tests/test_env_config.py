"""Settings from the environment: SITEMAP_CRAWLER_<KEY> for every config key, parsed to the
key's type (config.from_env, pure), and in the CLI between the TOML file and the command line."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from crawler.config import ENV_NOT_KEYS, build, env_var, fields, from_env
from crawler.errors import ConfigError
from tests.procs import CLI, child_env
from tests.sites import Site, html, read_published

P = "SITEMAP_CRAWLER_"

# --- parsing (pure) ----------------------------------------------------------------------


def test_every_key_has_its_variable_and_values_take_the_keys_types():
    assert {env_var(spec.name) for spec in fields()} >= {
        "SITEMAP_CRAWLER_URL",
        "SITEMAP_CRAWLER_GZIP",
        "SITEMAP_CRAWLER_CONCURRENCY",
        "SITEMAP_CRAWLER_AUTH",
    }
    values = from_env(
        {
            "SITEMAP_CRAWLER_URL": "https://example.com/docs/",
            "SITEMAP_CRAWLER_GZIP": "true",
            "SITEMAP_CRAWLER_RESPECT_NOINDEX": "off",
            "SITEMAP_CRAWLER_CONCURRENCY": " 4 ",
            "SITEMAP_CRAWLER_DELAY": "0.5",
            "SITEMAP_CRAWLER_OUTPUT": "/data/out",
            "SITEMAP_CRAWLER_LISTED_TYPES": "text/html, application/pdf",
            "SITEMAP_CRAWLER_STRIP_PARAMS": "ref\nsid, lang\n",  # lines, and commas: plain words
            "SITEMAP_CRAWLER_EXCLUDE": "/a,b/*\n\n/search?*\n",
            "SITEMAP_CRAWLER_HEADER": "X-Token: a,b\nX-Other: c",
            "SITEMAP_CRAWLER_CHANGEFREQ": "",  # empty: unset
            "PATH": "/bin",  # not ours
            "SITEMAP_CRAWLER_DEBUG": "1",  # the tool's own switch, not a key
            "SITEMAP_CRAWLER_SHARED": "/srv/shared",  # the test suite's, inherited by a crawl
            "SITEMAP_CRAWLER_TEST_INSTALL": "1",
        }
    )
    assert values == {
        "url": "https://example.com/docs/",
        "gzip": True,
        "respect_noindex": False,
        "concurrency": 4,
        "delay": 0.5,
        "output": Path("/data/out"),
        "listed_types": ("text/html", "application/pdf"),
        "strip_params": ("ref", "sid", "lang"),
        "exclude": ("/a,b/*", "/search?*"),
        "header": ("X-Token: a,b", "X-Other: c"),
    }
    assert "SITEMAP_CRAWLER_DEBUG" in ENV_NOT_KEYS


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        (P + "CONCURRENCY", "x", f"{P}CONCURRENCY must be a whole number, got 'x'"),
        (P + "CONCURRENCY", "2.5", f"{P}CONCURRENCY must be a whole number"),
        (P + "GZIP", "maybe", f"{P}GZIP must be true or false, got 'maybe'"),
        ("SITEMAP_CRAWLER_DELAY", "soon", "SITEMAP_CRAWLER_DELAY must be a number, got 'soon'"),
        ("SITEMAP_CRAWLER_MAX_TIME", "nan", "SITEMAP_CRAWLER_MAX_TIME must be a finite number"),
        (
            P + "CONCURENCY",
            "4",
            f"unknown environment variable {P}CONCURENCY: no config key 'concurency'; did you"
            f" mean '{P}CONCURRENCY'?",
        ),
    ],
)  # fmt: skip
def test_bad_values_and_unknown_variables_name_the_variable(name, value, expected):
    with pytest.raises(ConfigError) as caught:
        from_env({name: value})
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


# --- through the CLI ---------------------------------------------------------------------


def _site() -> Site:
    return Site(
        {
            "/": html("/a", "/b", "/private/x"),
            "/a": html("/"),
            "/b": html("/"),
            "/private/x": html("/"),
            "/robots.txt": "",
        }
    )


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], env=child_env(**env), capture_output=True, text=True, timeout=60
    )


def test_a_crawl_configured_only_by_the_environment(serve, tmp_path, xsd):
    site = _site()
    srv = serve(site.app)
    out = tmp_path / "out"
    done = _run(
        "crawl",
        SITEMAP_CRAWLER_URL=srv.url + "/",
        SITEMAP_CRAWLER_OUTPUT=str(out),
        SITEMAP_CRAWLER_GZIP="true",
        SITEMAP_CRAWLER_CONCURRENCY="2",
        SITEMAP_CRAWLER_EXCLUDE="/private/*",
        SITEMAP_CRAWLER_QUIET="yes",
    )
    assert done.returncode == 0, done.stderr
    published = read_published(out, xsd)
    assert sorted(published.locs) == sorted(srv.url + p for p in ["/", "/a", "/b"])
    assert any(f.name.endswith(".xml.gz") for f in published.files)  # gzip from the env
    assert done.stdout == "" and done.stderr == ""  # quiet from the env
    assert "/private/x" not in site.paths


def test_command_line_over_environment_over_file(serve, tmp_path, xsd):
    site = _site()
    srv = serve(site.app)
    config = tmp_path / "c.toml"
    config.write_text(f'url = "{srv.url}/"\nexclude = ["/a"]\nmax_pages = 1\nquiet = true\n')
    out = tmp_path / "out"
    # the file alone: /a excluded and one page
    done = _run("crawl", "-c", str(config), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert read_published(out, xsd).locs == [srv.url + "/"]
    # the environment over the file: /b excluded instead, no page limit
    env = {"SITEMAP_CRAWLER_EXCLUDE": "/b", "SITEMAP_CRAWLER_MAX_PAGES": "0"}
    done = _run("crawl", "-c", str(config), "-o", str(out), **env)
    assert done.returncode == 0, done.stderr
    assert sorted(read_published(out, xsd).locs) == sorted(
        srv.url + p for p in ["/", "/a", "/private/x"]
    )
    # the command line over both
    done = _run("crawl", "-c", str(config), "-o", str(out), "--exclude", "/private/*", **env)
    assert done.returncode == 0, done.stderr
    assert sorted(read_published(out, xsd).locs) == sorted(srv.url + p for p in ["/", "/a", "/b"])


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({P + "CONCURRENCY": "x"}, f"{P}CONCURRENCY must be a whole number, got 'x'"),
        ({P + "CONCURRENCY": "0"}, f"{P}CONCURRENCY must be at least 1, got 0"),
        ({P + "FORMAT": "html"}, f"{P}FORMAT must be one of xml, txt, got 'html'"),
        ({"SITEMAP_CRAWLER_NOPE": "1"}, "unknown environment variable SITEMAP_CRAWLER_NOPE"),
    ],
)  # fmt: skip
def test_a_bad_variable_is_one_line_exit_2_and_no_request(serve, tmp_path, env, expected):
    site = _site()
    srv = serve(site.app)
    done = _run("crawl", srv.url + "/", "-o", str(tmp_path / "out"), **env)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and expected in done.stderr, done.stderr
    assert site.requests == []


def test_secrets_from_the_environment_are_never_printed(serve, tmp_path):
    site = _site()
    srv = serve(site.app)
    done = _run(
        "crawl",
        srv.url + "/",
        "-o",
        str(tmp_path / "out"),
        SITEMAP_CRAWLER_HEADER="X-Token: hunter2-secret\nbroken-header-secret",
        SITEMAP_CRAWLER_COOKIE="sid=cookie-secret",
        SITEMAP_CRAWLER_PROXY="socks5://u:proxy-secret@127.0.0.1:1",
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "secret" not in done.stderr + done.stdout
    assert site.requests == []


def test_the_other_commands_take_their_keys_from_the_environment(serve, tmp_path):
    site = _site()
    srv = serve(site.app)
    env = {
        "SITEMAP_CRAWLER_EXCLUDE": "/private/*",
        "SITEMAP_CRAWLER_USER_AGENT": "EnvBot/1.0",
        "SITEMAP_CRAWLER_OUTPUT": str(tmp_path / "never"),  # not explain's: ignored
    }
    done = _run("explain", srv.url + "/private/x", **env)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "exclude" in done.stdout
    assert site.requests[-1][2]["User-Agent"] == "EnvBot/1.0"
    done = _run("robots", srv.url + "/a", **env)
    assert done.returncode == 0, done.stderr
    assert "EnvBot" in done.stdout
    # a bad value of a key the command takes is an error there too
    done = _run("robots", srv.url + "/a", SITEMAP_CRAWLER_TIMEOUT="never")
    assert done.returncode == 2
    assert "SITEMAP_CRAWLER_TIMEOUT must be a number, got 'never'" in done.stderr
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize("value", ["", " ", "[]"])
def test_an_empty_list_variable_is_the_empty_list_as_on_the_command_line(value):
    """SEARCH_ENGINES='' says "none" (every engine's rules ignored), as --search-engines ''
    does: a job configured only by its environment must be able to say it."""
    values = from_env({"SITEMAP_CRAWLER_SEARCH_ENGINES": value, "SITEMAP_CRAWLER_DELAY": ""})
    assert values == {"search_engines": ()}  # an empty scalar stays unset
    config = build({"url": "https://example.com/", **values}, {})
    assert config.search_engines == ()
