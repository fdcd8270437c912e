"""Peak memory and time of `sitemap-crawler audit --no-fetch` over very large sitemaps (#23):
one text sitemap of MIB MiB, then an index of FILES such files, generated on the fly by an
aiohttp server on 127.0.0.1 (nothing is written to disk but the audit's own spool).

    python3 bench/audit_memory_bench.py                 # 1 file, then 200 files of 50 MiB
    python3 bench/audit_memory_bench.py --files 20 --mib 50

Each run is the real CLI in a child process; its peak RSS is its own VmHWM (ru_maxrss would
count this process's pages, carried across exec). Prints, per run: files, URLs in them,
URLs kept (50,000 a file at most: the rest are counted), seconds, µs per URL, peak MB.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from aiohttp import web

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.procs import PEAK_RSS_CLI  # noqa: E402 - the CLI that reports its peak RSS

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def part(base: str, index: int, size: int) -> tuple[bytes, int]:
    """About `size` bytes of a text sitemap, its URLs distinct across parts; (body, lines)."""
    lines: list[str] = []
    total = n = 0
    while True:
        line = f"{base}/p{index}/category-{n % 997}/item-{n:09d}.html\n"
        if total + len(line) > size:
            break
        lines.append(line)
        total += len(line)
        n += 1
    return "".join(lines).encode(), n


class Server:
    """The sitemaps, made when asked for: /part-N.txt and /index.xml (listing FILES parts)."""

    def __init__(self, files: int, size: int) -> None:
        self.files, self.size = files, size
        self.lines = 0  # URLs served in parts, summed
        self.port = 0
        self.ready = threading.Event()

    async def _part(self, request: web.Request) -> web.Response:
        index = int(request.match_info["n"])
        body, lines = part(f"http://127.0.0.1:{self.port}", index, self.size)
        self.lines += lines
        return web.Response(body=body, content_type="text/plain")

    async def _index(self, request: web.Request) -> web.Response:
        base = f"http://127.0.0.1:{self.port}"
        items = "".join(
            f"<sitemap><loc>{base}/part-{n}.txt</loc></sitemap>" for n in range(self.files)
        )
        text = f'<?xml version="1.0"?><sitemapindex xmlns="{NS}">{items}</sitemapindex>'
        return web.Response(text=text, content_type="application/xml")

    def run(self) -> None:
        async def main() -> None:
            app = web.Application()
            app.router.add_get("/part-{n}.txt", self._part)
            app.router.add_get("/index.xml", self._index)
            runner = web.AppRunner(app)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            self.ready.set()
            await asyncio.Event().wait()

        asyncio.run(main())


def audit(url: str, work: Path) -> tuple[dict, float, float]:
    """(the JSON report's summary, seconds, peak RSS in MB) of one audit."""
    out = work / "audit.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", PEAK_RSS_CLI, "audit", url, "--no-fetch", "-q", "--json", str(out)],
        capture_output=True, text=True, env=env, cwd=work,
    )  # fmt: skip
    seconds = time.monotonic() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"audit failed ({proc.returncode}): {proc.stderr[-2000:]}")
    peak = int(proc.stderr.splitlines()[-1]) * 1024 / 1e6
    return json.loads(out.read_text())["summary"], seconds, peak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=200, help="sitemaps the index lists")
    parser.add_argument("--mib", type=int, default=50, help="size of each sitemap, MiB")
    args = parser.parse_args(argv)
    server = Server(args.files, args.mib << 20)
    threading.Thread(target=server.run, daemon=True).start()
    server.ready.wait()
    base = f"http://127.0.0.1:{server.port}"
    print(f"{'run':<28} {'files':>5} {'URLs in them':>13} {'kept':>10} {'s':>8} "
          f"{'µs/URL':>7} {'peak MB':>8}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="audit-memory-") as tmp:
        for name, url in (
            ("one text sitemap", base + "/part-0.txt"),
            ("index", base + "/index.xml"),
        ):
            server.lines = 0
            summary, seconds, peak = audit(url, Path(tmp))
            files = summary["sitemaps_read"] - (1 if name == "index" else 0)
            per_url = seconds / max(server.lines, 1) * 1e6
            print(
                f"{name + f' ({args.mib} MiB each)':<28} {files:>5} {server.lines:>13,} "
                f"{summary['urls_listed']:>10,} {seconds:>8.1f} {per_url:>7.2f} {peak:>8.0f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
