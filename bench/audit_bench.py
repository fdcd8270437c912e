"""Audit a 50,000-URL sitemap of a generated site with sitemap-crawler and its peers; print figures.

Run: python3 bench/audit_bench.py --urls 50000 --runs 3

Generates (or reuses) a site with bench/gen_site.py big enough to hold --urls indexable pages,
writes a sitemap of the first --urls of them (sorted) into the site's root with sitemap_out's
writer (50,000 URLs is one file; more becomes an index), serves the site with bench/serve.sh
(nginx on 127.0.0.1) and runs, round by round in alternating order:

* ``audit``: ``sitemap-crawler audit http://127.0.0.1:PORT/sitemap.xml --json FILE`` at its
  defaults (8 requests in flight, worker processes forked as for a crawl, robots.txt, retries,
  per-hop redirect checks, directive and duplicate checks);
* ``aiohttp``: bench/peers/aiohttp_checker.py, the checker a user would script: lxml reads the
  sitemap, aiohttp GETs every URL 8 at a time and reports the non-200 ones (no robots.txt, no
  politeness, no retries, no page checks);
* ``advertools``: bench/peers/advertools_checker.py, ``sitemap_to_df`` then ``adv.crawl`` in
  list mode (Scrapy underneath), in the venv bench/.env/adv-venv, installed from PyPI on first
  use and skipped, saying why, when it cannot be;
* ``crawl``: ``sitemap-crawler crawl`` of the same site from ``/``, the speed the audit is asked
  to match (it finds every indexable page, a few more than the sitemap lists).

For each run: URLs checked (from each tool's own output), wall seconds, URLs/s, CPU seconds,
peak RSS and PSS of the process tree (crawl_bench's measuring, reused), the findings (ours: the
counts by code from --json; peers: non-200 statuses) and the load average when the run began.
Then medians per tool. Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crawl_bench import (  # the bench folder is not a package
    ENV,
    HERE,
    PEERS,
    BenchError,
    Usage,
    _say,
    ensure_site,
    ours_command,
    ours_found,
    run_measured,
    serve,
)

ADV_VENV = ENV / "adv-venv"
ALL_TOOLS = ("audit", "aiohttp", "advertools", "crawl")
ALLOWED_SHARE = 0.95  # gen_site disallows about 5% of the pages


@dataclass(slots=True)
class Tool:
    name: str
    command: Callable[[str, Path], list[str]]
    read: Callable[[Path], tuple[int, str]]  # work folder -> URLs checked, findings summary
    env: dict[str, str]


@dataclass(slots=True, frozen=True)
class Run:
    tool: str
    round: int
    usage: Usage
    checked: int
    findings: str
    load: float

    @property
    def rate(self) -> float:
        return self.checked / self.usage.wall_s if self.usage.wall_s else 0.0


def _pythonpath_env() -> dict[str, str]:
    # The crawler runs from whatever PYTHONPATH the bench was started with (a worktree).
    pp = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": pp} if pp else {}


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def audit_read(work: Path) -> tuple[int, str]:
    data = _read_json(work / "audit.json")
    if data is None:
        return 0, "no JSON"
    summary = data.get("summary", data)
    counts = summary.get("counts", {})
    text = ", ".join(f"{code} {n}" for code, n in counts.items()) or "none"
    return int(summary.get("urls_checked", 0)), f"{sum(counts.values())} ({text})"


def peer_read(work: Path) -> tuple[int, str]:
    data = _read_json(work / "result.json")
    if data is None:
        return 0, "no result"
    other = {k: v for k, v in data["statuses"].items() if k != "200"}
    text = ", ".join(f"{k} {v}" for k, v in other.items()) or "all 200"
    return int(data["checked"]), f"{data['not_200']} non-200 ({text})"


def crawl_read(work: Path) -> tuple[int, str]:
    pages = {u for u in ours_found(work) if not u.endswith((".css", "/robots.txt"))}
    return len(pages), f"{len(pages)} pages listed"


def setup_audit() -> Tool:
    base = ours_command()
    return Tool(
        "audit",
        lambda url, work: [*base, "audit", url, "--json", str(work / "audit.json"), "--quiet"],
        audit_read,
        _pythonpath_env(),
    )


def setup_crawl() -> Tool:
    base = ours_command()
    return Tool(
        "crawl",
        lambda url, work: [
            *base,
            "crawl",
            url.rsplit("/", 1)[0] + "/",
            "-o",
            str(work / "out"),
            "--quiet",
        ],
        crawl_read,
        _pythonpath_env(),
    )


def setup_aiohttp() -> Tool:
    script = str(PEERS / "aiohttp_checker.py")
    return Tool(
        "aiohttp",
        lambda url, work: [sys.executable, script, url, str(work / "result.json")],
        peer_read,
        {},
    )


def setup_advertools(limit: int) -> Tool | None:
    python = ADV_VENV / "bin" / "python"
    probe = [str(python), "-c", "import advertools"]
    if not python.exists() or subprocess.run(probe, capture_output=True).returncode:
        _say(f"advertools: creating {ADV_VENV} and pip-installing advertools (not the main env)")
        made = subprocess.run([sys.executable, "-m", "venv", str(ADV_VENV)], check=False)
        pip = [str(ADV_VENV / "bin" / "pip"), "install", "-q", "advertools"]
        if made.returncode or subprocess.run(pip, check=False).returncode:
            _say("advertools: could not be installed from PyPI; skipped")
            return None
    script = str(PEERS / "advertools_checker.py")
    extra = ["--limit", str(limit)] if limit else []
    return Tool(
        "advertools",
        lambda url, work: [str(python), script, url, str(work), str(work / "result.json"), *extra],
        peer_read,
        # adv.crawl runs the `scrapy` command it finds on PATH: the venv's
        {"PATH": f"{ADV_VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"},
    )


def pages_for(urls: int) -> int:
    """Pages to generate so that at least `urls` of them are indexable (5% are disallowed)."""
    return math.ceil((urls + 100) / ALLOWED_SHARE * 1.01)


def write_sitemap(site: Path, expected: list[str], urls: int, origin: str) -> int:
    """The sitemap of the first `urls` expected URLs in the site's root; returns its size."""
    from sitemap_out import Entry, SitemapWriter

    www = site / "www"
    marker = www / "sitemap.count"
    if marker.exists() and marker.read_text() == str(urls) and (www / "sitemap.xml").exists():
        return urls
    if len(expected) < urls:
        raise BenchError(f"the site has {len(expected)} indexable pages, fewer than {urls}")
    with SitemapWriter(www, origin + "/") as writer:
        for url in expected[:urls]:
            writer.add(Entry(url))
        result = writer.publish()
    marker.write_text(str(urls))
    _say(f"sitemap: {result.url_count} URLs in {len(result.files)} file(s) under {www}")
    return result.url_count


def once(tool: Tool, url: str, rnd: int, timeout: float) -> Run:
    work = ENV / "audit-runs" / tool.name
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    load = os.getloadavg()[0]
    usage = run_measured(tool.command(url, work), HERE, tool.env, timeout, work / "log.txt")
    checked, findings = tool.read(work)
    return Run(tool.name, rnd, usage, checked, findings, load)


HEADER = (
    f"{'tool':<11} {'round':>5} {'checked':>8} {'wall s':>8} {'URLs/s':>8} {'CPU s':>8} "
    f"{'RSS MB':>7} {'PSS MB':>7} {'load':>5} {'exit':>4}  findings"
)


def row(r: Run) -> str:
    u = r.usage
    return (
        f"{r.tool:<11} {r.round:>5} {r.checked:>8} {u.wall_s:>8.2f} {r.rate:>8.0f} "
        f"{u.cpu_s:>8.2f} {u.peak_rss_mb:>7.1f} {u.peak_pss_mb:>7.1f} {r.load:>5.2f} "
        f"{u.returncode:>4}  {r.findings}"
    )


def summarise(runs: list[Run]) -> None:
    by_tool: dict[str, list[Run]] = {}
    for r in runs:
        by_tool.setdefault(r.tool, []).append(r)
    print("\nmedians per tool")
    print(
        f"{'tool':<11} {'runs':>4} {'checked':>8} {'wall s':>8} {'URLs/s':>8} {'CPU s':>8} "
        f"{'RSS MB':>7} {'PSS MB':>7} {'load':>5}"
    )
    med: dict[str, float] = {}
    for tool, rs in by_tool.items():
        m = statistics.median
        med[tool] = m(r.rate for r in rs)
        print(
            f"{tool:<11} {len(rs):>4} {m(r.checked for r in rs):>8.0f} "
            f"{m(r.usage.wall_s for r in rs):>8.2f} {med[tool]:>8.0f} "
            f"{m(r.usage.cpu_s for r in rs):>8.2f} {m(r.usage.peak_rss_mb for r in rs):>7.1f} "
            f"{m(r.usage.peak_pss_mb for r in rs):>7.1f} {m(r.load for r in rs):>5.2f}"
        )
    if med.get("audit"):
        print("\nratios (audit URLs/s / other URLs/s)")
        for tool, rate in med.items():
            if tool != "audit" and rate:
                print(f"  vs {tool:<11} x{med['audit'] / rate:5.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=50000, help="URLs the sitemap lists")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--page-kb", type=int, default=15, help="page size: KB to 2*KB")
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--runs", type=int, default=3, help="rounds; each tool runs once a round")
    parser.add_argument(
        "--tools", default=",".join(ALL_TOOLS), help=f"comma-separated subset of {ALL_TOOLS}"
    )
    parser.add_argument("--once", default="", help="tools run in the first round only (slow ones)")
    parser.add_argument(
        "--advertools-limit", type=int, default=0, help="advertools crawls only the first N URLs"
    )
    parser.add_argument("--timeout", type=float, default=1800, help="seconds allowed per run")
    parser.add_argument("--keep-serving", action="store_true", help="leave nginx running")
    args = parser.parse_args(argv)

    wanted = [t for t in args.tools.split(",") if t]
    unknown = set(wanted) - set(ALL_TOOLS)
    if unknown:
        parser.error(f"unknown tools: {sorted(unknown)}")
    once_only = set(args.once.split(","))
    origin = f"http://127.0.0.1:{args.port}"
    site, expected = ensure_site(pages_for(args.urls), args.seed, args.page_kb, origin)
    listed = write_sitemap(site, expected, args.urls, origin)
    url = origin + "/sitemap.xml"

    setups: dict[str, Callable[[], Tool | None]] = {
        "audit": setup_audit,
        "aiohttp": setup_aiohttp,
        "advertools": lambda: setup_advertools(args.advertools_limit),
        "crawl": setup_crawl,
    }
    tools = [t for name in wanted if (t := setups[name]()) is not None]

    pidfile = ENV / f"nginx-{args.port}" / "nginx.pid"
    started_here = not pidfile.exists()
    serve(site, args.port, "start")
    runs: list[Run] = []
    print(
        f"site: {site} ({len(expected)} indexable pages; the sitemap lists {listed}), "
        f"{os.cpu_count()} CPUs, {url}"
    )
    if args.advertools_limit and "advertools" in wanted:
        print(f"advertools crawls the first {args.advertools_limit} URLs only")
    print(HEADER, flush=True)
    try:
        for rnd in range(1, args.runs + 1):
            for tool in tools if rnd % 2 else tools[::-1]:
                if rnd > 1 and tool.name in once_only:
                    continue
                result = once(tool, url, rnd, args.timeout)
                runs.append(result)
                print(row(result), flush=True)
        summarise(runs)
    finally:
        if started_here and not args.keep_serving:
            serve(site, args.port, "stop")
    return 0


if __name__ == "__main__":
    sys.exit(main())
