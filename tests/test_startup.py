"""What a crawl imports and builds at start (#26): a night whose pages all answer 304 parses
no page, so it must not pay at start for what only a page in a legacy encoding needs (the
single-byte encodings' tables), nor for the HTML parser, nor for statistics (the throttle's
median), nor for the modules of what it was not asked to do (--seed-sitemaps, rendering, a
notification, a stylesheet). On the 3,000-page bench site the start was about a quarter of
such a night's instructions."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib
import json
import pkgutil
from pathlib import Path

from aiohttp import web

from tests.procs import imports_of_a_crawl

_PAGES = 24  # past the throttle's BASELINE_SAMPLES: it takes its median
#: what a crawl without the options that need them must not import: each cost the start of
#: every crawl (the seed sitemaps' modules and importlib.resources about 1% of its imports).
#: importlib.resources is the one a dependency could bring back (certifi imports it, say):
#: then it is a dependency's import, not ours, and this entry goes
_UNUSED = (
    "statistics",
    "crawler.core.seeds",
    "crawler.shell.seeds",
    "crawler.core.notice",
    "crawler.shell.on_publish",
    "crawler.shell.browser",
    "importlib.resources",
    "sitemap_out.feed",  # --feed's (changes.atom): its name is the manifest's
    "crawler.core.llms",  # llms_txt's
    "crawler.core.nothing",  # a crawl that listed nothing: its message
)
#: what only a page's HTML needs: a night whose pages all answer 304 parses none, and does not
#: import the parser (crawler.core.page imports it at the first HTML page)
_PARSER = ("crawler.core.extract", "selectolax")


def _page(i: int) -> bytes:
    links = "".join(f'<a href="/p/{j}">{j}</a>' for j in range(_PAGES))
    return f"<!doctype html><title>p{i}</title><body><p>Page {i}.</p>{links}".encode()


def _app() -> web.Application:
    async def handle(request: web.Request) -> web.StreamResponse:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        name = request.path.rsplit("/", 1)[-1]
        if request.path != "/" and not (request.path.startswith("/p/") and name.isdigit()):
            return web.Response(status=404, text="no")
        body = _page(int(name) if name.isdigit() else -1)
        tag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        headers = {"ETag": tag, "Last-Modified": "Mon, 02 Nov 2026 10:00:00 GMT"}
        if request.headers.get("If-None-Match") == tag:
            return web.Response(status=304, headers=headers)
        return web.Response(body=body, headers=headers, content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    return app


def _night(url: str, tmp: Path, *extra: str) -> tuple[int, dict[str, object], list[str]]:
    """A crawl with a history in a fresh process: its exit code, its report, and which of
    _UNUSED and _PARSER it had imported at the end."""
    report = tmp / "report.json"
    argv = ["crawl", url, "-o", str(tmp / "out"), "-q", "--state", str(tmp / "state.db")]
    argv += ["--report", str(report), "--workers", "0", *extra]
    code, loaded, _ = imports_of_a_crawl(argv, _UNUSED + _PARSER)
    return int(code), json.loads(report.read_text()), loaded


def test_a_crawl_does_not_import_what_it_does_not_use(serve, tmp_path):
    srv = serve(_app())
    code, report, loaded = _night(srv.url + "/", tmp_path)
    assert code == 0 and report["pages_not_modified"] == 0
    # the throttle took its baseline (BASELINE_SAMPLES answers); the pages were parsed
    assert loaded == list(_PARSER)
    code, report, loaded = _night(srv.url + "/", tmp_path)
    assert code == 0 and report["pages_not_modified"] == _PAGES + 1
    assert loaded == []  # nor the parser: a night of 304s parses no page


def test_a_legacy_encoding_s_table_is_built_when_a_page_needs_it():
    """The single-byte tables are built on first use, each the WHATWG index it was."""
    from crawler.core.encodings import _table, decode, encode_query

    assert _table("utf-8") is None
    assert decode(b"caf\xe9 \x80", "windows-1252") == "café €"
    assert decode(b"\x81", "windows-1252") == "\x81"  # undefined in cp1252: WHATWG's C1
    assert decode(b"\xca", "windows-1255") == "\u05ba"
    assert decode(b"\xae", "koi8-u") == "\u045e"
    assert decode(b"\x80", "x-user-defined") == "\uf780"
    assert encode_query("/s?q=café", "windows-1252") == "/s?q=caf%E9"
    assert encode_query("/s?q=ў", "koi8-u") == "/s?q=%AE"


def test_every_dataclass_has_its_own_docstring():
    """Without one, dataclasses builds the class's __doc__ from inspect.signature at import,
    at each start of every process (Config's, of 95 fields, the dearest)."""
    import crawler
    import sitemap_out

    missing = []
    for package in (crawler, sitemap_out):
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            for name, value in vars(importlib.import_module(module.name)).items():
                if isinstance(value, type) and dataclasses.is_dataclass(value):
                    own = value.__dict__.get("__doc__") or ""
                    if value.__module__ == module.name and own.startswith(name + "("):
                        missing.append(f"{module.name}.{name}")
    assert missing == []


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_a_run_gives_options_to_the_command_it_asks_only(capsys):
    """Every command's options made at each start were 27 M instructions, 1% of a 3,000-page
    304 night: a run builds its own command's, and every help and error reads as before."""
    from crawler.cli import _asked, _parser

    whole = _parser()
    assert _parser(None).format_help() == whole.format_help()
    for name, parser in _commands(whole).items():
        argv = [name, "--help"]
        assert _asked(argv) == name
        built = _commands(_parser(_asked(argv)))
        assert built[name].format_help() == parser.format_help()
        assert [n for n, p in built.items() if len(p._actions) > 1] == [name]  # others: -h
    assert _asked(["--version"]) is None and _asked([]) is None
    assert _asked(["-h", "audit", "x"]) == "audit"
    errors = [
        ["crawl", "--no-such-option"], ["crawl", "--concurrency", "many"], ["explain"],
        ["robots"], ["audit"], ["nosuchcommand"], ["diff", "a"], ["job", "--retries"],
        ["submit", "--bogus"], ["--bogus", "crawl"], ["crawl", "-", "--", "-x"],
    ]  # fmt: skip
    for argv in errors:
        said = []
        for parser in (whole, _parser(_asked(argv))):
            try:
                said.append(vars(parser.parse_args(argv)))
            except SystemExit as stopped:
                said.append((stopped.code, capsys.readouterr()))
        assert said[0] == said[1], argv
