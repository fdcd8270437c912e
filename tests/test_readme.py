"""The README's first crawl, as a newcomer types it, against the example site it serves
(issue #17): the commands and the output it shows must stay true."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from aiohttp import web

from crawler.cli import main
from tests.sites import read_decisions, read_published

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
SITE = ROOT / "examples" / "site"


def _example_site() -> web.Application:
    """examples/site as `python3 -m http.server` serves it: folders answer their index.html."""

    async def handle(request: web.Request) -> web.StreamResponse:
        path = SITE / request.path.lstrip("/")
        if path.is_dir():
            path = path / "index.html"
        if not path.is_file() or SITE not in path.resolve().parents:
            raise web.HTTPNotFound()
        return web.FileResponse(path)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    return app


def _command(prefix: str) -> list[str]:
    line = next(line for line in README.splitlines() if line.startswith(prefix))
    return shlex.split(line)


def test_the_first_crawl_publishes_what_the_readme_shows(serve, tmp_path, capsys, xsd, monkeypatch):
    serve_line = _command("python3 -m http.server")
    assert serve_line[-1] == "&" and serve_line[-2] == "examples/site"
    srv = serve(_example_site())
    command = _command("sitemap-crawler crawl http://127.0.0.1:8000/")
    assert command[:3] == ["sitemap-crawler", "crawl", "http://127.0.0.1:8000/"]
    monkeypatch.chdir(tmp_path)
    args = [arg.replace("http://127.0.0.1:8000", srv.url) for arg in command[1:]]
    assert main(args) == 0
    out = capsys.readouterr().out
    shown = README[README.index("```text\nfetched") + len("```text\n") :].split("```")[0]
    summary, published, robots_line = shown.strip().splitlines()
    # the figures shown are the ones printed, but for the timing
    assert re.sub(r"in \S+ s \(\S+ pages/s\)", "", out.splitlines()[0]) == re.sub(
        r"in \S+ s \(\S+ pages/s\)", "", summary
    )
    assert published in out
    assert robots_line.replace("http://127.0.0.1:8000", srv.url) in out
    result = read_published(tmp_path / "out", xsd)
    assert len(result.locs) == 5
    decisions = read_decisions(tmp_path / "why.jsonl")
    shown_line = README[README.index('{"url": "http://127.0.0.1:8000/drafts/') :].split("\n")[0]
    assert (
        shown_line.replace("http://127.0.0.1:8000", srv.url) in (tmp_path / "why.jsonl").read_text()
    )
    assert decisions[srv.url + "/drafts/next.html"]["reason"] == "meta_noindex"
