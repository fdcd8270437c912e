"""Crawl a generated single-page app raw and rendered; print pages/s and peak RSS.

Run: python3 bench/render_bench.py --pages 500 [--runs 1] [--tools raw,always,auto,spider-rs]

Serves bench/spa_site.py's app (N routes, links written by script after a fetch, nothing in
the raw HTML) on 127.0.0.1 and crawls it with:

* raw: sitemap-crawler without rendering (it finds the home page alone: that is the point);
* always / auto: sitemap-crawler --render always / auto (Debian's chromium via Playwright);
* spider-rs: the Rust `spider` crate's Chrome mode through @spider-rs/spider-rs (npm, in
  bench/peers/node_modules), driving the same /usr/bin/chromium through
  bench/peers/chromium-as-root (CHROME=...), see bench/README.md.

Figures as bench/crawl_bench.py takes them (wall from spawn to exit, CPU of the whole tree,
peak RSS and PSS of the whole process tree sampled every 50 ms: the browser's processes
count). "private" is how many requests reached /api/private/, which robots.txt disallows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from crawl_bench import (
    PEERS,
    SITEMAP_NS,
    Tool,
    lines_found,
    run_measured,
    setup_spider_rs,
)
from lxml import etree

HERE = Path(__file__).resolve().parent
TOOLS = ("raw", "always", "auto", "spider-rs")


def ours(mode: str, concurrency: int) -> Tool:
    """This checkout's crawler (not an installed copy, which may predate --render)."""
    base = [sys.executable, "-m", "crawler.cli"]

    def command(url: str, work: Path) -> list[str]:
        return [
            *base, "crawl", url, "-o", str(work / "out"), "--quiet",
            "--concurrency", str(concurrency), "--render", "never" if mode == "raw" else mode,
            "--report", str(work / "report.json"),
        ]  # fmt: skip

    def found(work: Path) -> set[str]:
        sitemap = work / "out" / "sitemap.xml"
        if not sitemap.exists():
            return set()
        tree = etree.parse(str(sitemap))
        return {loc.text or "" for loc in tree.iter(f"{SITEMAP_NS}loc")}

    return Tool(mode, command, found, env={"PYTHONPATH": str(HERE.parent)})


def spider_chrome() -> Tool | None:
    tool = setup_spider_rs()  # installs the npm package on first use
    if tool is None:
        return None
    node = shutil.which("node") or "node"
    return Tool(
        "spider-rs",
        lambda url, work: [node, str(PEERS / "spider_rs_chrome.mjs"), url, str(work / "l.txt")],
        lines_found("l.txt"),
        cwd=PEERS,
        env={"CHROME": str(PEERS / "chromium-as-root")},
    )


def stats(url: str) -> dict[str, int]:
    with urllib.request.urlopen(url + "/stats", timeout=10) as answer:
        return json.loads(answer.read())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--port", type=int, default=8099)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args(argv)
    url = f"http://127.0.0.1:{args.port}"
    server = subprocess.Popen(
        [sys.executable, str(HERE / "spa_site.py"), "--pages", str(args.pages),
         "--port", str(args.port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(100):
            try:
                stats(url)
                break
            except OSError:
                time.sleep(0.1)
        tools: list[Tool] = []
        for name in args.tools.split(","):
            if name == "spider-rs":
                peer = spider_chrome()
                if peer is not None:
                    tools.append(peer)
            else:
                tools.append(ours(name, args.concurrency))
        print(f"{args.pages}-route app at {url}; {os.cpu_count()} CPUs", flush=True)
        print(
            f"{'tool':<10} {'found':>9} {'wall s':>8} {'pages/s':>8} {'CPU s':>7} "
            f"{'peak RSS':>9} {'peak PSS':>9} {'requests':>9} {'private':>8}"
        )
        for _ in range(args.runs):
            for tool in tools:
                with tempfile.TemporaryDirectory(prefix=f"render-bench-{tool.name}-") as tmp:
                    work = Path(tmp)
                    before = stats(url)
                    usage = run_measured(
                        tool.command(url + "/", work), tool.cwd, tool.env, args.timeout,
                        work / "log.txt",
                    )  # fmt: skip
                    after = stats(url)
                    found = len(tool.found(work))
                    report = work / "report.json"
                    figures = json.loads(report.read_text()) if report.exists() else {}
                    render = figures.get("render")
                    requests = after["requests"] - before["requests"] - 1
                    private = after["private"] - before["private"]
                    print(
                        f"{tool.name:<10} {found:>4}/{args.pages:<4} {usage.wall_s:>8.1f} "
                        f"{found / usage.wall_s:>8.1f} {usage.cpu_s:>7.1f} "
                        f"{usage.peak_rss_mb:>6.0f} MB {usage.peak_pss_mb:>6.0f} MB "
                        f"{requests:>9} {private:>8}"
                        + (f"  exit {usage.returncode}" if usage.returncode else ""),
                        flush=True,
                    )
                    if render:
                        print(f"           render: {json.dumps(render)}", flush=True)
    finally:
        server.terminate()
        server.wait(10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
