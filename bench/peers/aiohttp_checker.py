"""The simple peer of the audit bench: the sitemap checker a user would script with aiohttp.

Run by bench/audit_bench.py with the main environment's Python:
    python3 aiohttp_checker.py SITEMAP_URL OUT.json [--concurrency 8]

It GETs the sitemap (one urlset, or an index whose sitemaps it then reads), reads every <loc>
with lxml, then GETs every URL with 8 requests in flight on one keep-alive connection pool,
reading each body in full, and reports the URLs whose final status is not 200 (redirects are
followed, as aiohttp does by default). That is all: no robots.txt, no politeness (delay, rate
cap, backing off on 429/5xx), no retries, no directive or duplicate checks, no per-hop redirect
judgement. It is the floor: what fetching the listed URLs alone costs in Python.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import sys
import time
from collections import Counter

import aiohttp
from lxml import etree

NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


async def read_locs(session: aiohttp.ClientSession, url: str) -> list[str]:
    async with session.get(url) as resp:
        data = await resp.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    root = etree.fromstring(data, etree.XMLParser(huge_tree=True))
    locs = [el.text.strip() for el in root.iter(f"{NS}loc") if el.text]
    if root.tag == f"{NS}sitemapindex":
        urls: list[str] = []
        for loc in locs:
            urls.extend(await read_locs(session, loc))
        return urls
    return locs


async def check(sitemap: str, concurrency: int) -> dict[str, object]:
    statuses: Counter[str] = Counter()
    bad: list[tuple[str, str]] = []
    connector = aiohttp.TCPConnector(limit=concurrency)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        urls = await read_locs(session, sitemap)
        queue: asyncio.Queue[str] = asyncio.Queue()
        for u in urls:
            queue.put_nowait(u)

        async def worker() -> None:
            while True:
                try:
                    url = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                try:
                    async with session.get(url) as resp:
                        await resp.read()
                        status = str(resp.status)
                except (TimeoutError, aiohttp.ClientError) as exc:
                    status = type(exc).__name__
                statuses[status] += 1
                if status != "200":
                    bad.append((url, status))

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return {"listed": len(urls), "checked": sum(statuses.values()), "statuses": statuses,
            "not_200": len(bad), "not_200_sample": bad[:5]}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sitemap")
    parser.add_argument("out")
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    started = time.perf_counter()
    result = asyncio.run(check(args.sitemap, args.concurrency))
    result["seconds"] = round(time.perf_counter() - started, 3)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    return 0 if result["not_200"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
