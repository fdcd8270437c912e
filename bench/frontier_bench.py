"""Memory and speed of the crawl frontier at millions of URLs; prints figures only.

Run: python3 bench/frontier_bench.py --urls 1000000   (and --urls 10000000)

Feeds synthetic links through what the crawler does with every link on a page: resolve and
normalise (``crawler.core.urls.resolve``), check the seen-set (``url in frontier``) and queue
the new ones (``Frontier.add``), popping pages breadth-first (``Frontier.pop``) as workers would. No
network, no parsing: this isolates the per-URL state, the part that decides whether a
million-page crawl fits a small machine.

Each popped page carries the links a CMS page does: the same ``--nav`` navigation links on every
page (seen after the first page), ``--new`` links to pages not met before and ``--old`` links to
pages met earlier, in relative, ``../``, root-relative and absolute forms, some with a fragment,
plus a mailto and an external link. URLs look like a shop's (``/catalog/c17/blue-cotton-
shirt-123456.html``), about 70 characters, because per-URL memory depends on URL length.

Figures: URLs/s (discovered), links/s (resolved), and peak RSS per discovered URL, where
"peak RSS" is the process's ``ru_maxrss`` minus its RSS before the first link (the interpreter,
imports and word lists), so it is what the frontier and the resolve memo cost. A checkpoint
line every ``--every`` URLs shows the curve; flat or falling bytes/URL is the target.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import resource
import sys
import time
from dataclasses import dataclass

from crawler.core.frontier import Frontier
from crawler.core.urls import resolve

ORIGIN = "https://www.shop.example"
_PROSE = (
    "blue red green black white cotton linen wool silk denim shirt dress skirt jacket coat "
    "sock shoe boot scarf hat classic modern slim loose long short summer winter organic basic"
)
WORDS = tuple(_PROSE.split())
CATEGORIES = 1000


@dataclass(slots=True, frozen=True)
class Checkpoint:
    urls: int
    seconds: float
    rss_mb: float
    bytes_per_url: float


def rss_kb_now() -> int:
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)


def peak_rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def path_of(n: int) -> str:
    """The root-relative path of synthetic page n: stable, unique, shop-like."""
    w = WORDS
    k = len(w)
    return f"/catalog/c{n % CATEGORIES}/{w[n % k]}-{w[n // k % k]}-{w[n // 997 % k]}-{n}.html"


def href_for(base_cat: int, n: int, roll: float) -> str:
    """Page n's path written as a link from a page in category base_cat, in a form roll picks."""
    path = path_of(n)
    if roll < 0.3:
        if n % CATEGORIES == base_cat:
            return path.rsplit("/", 1)[1]
        return "../" + path[len("/catalog/") :]
    if roll < 0.75:
        return path
    if roll < 0.9:
        return ORIGIN + path
    return path + "#reviews"


def nav_hrefs(count: int) -> list[str]:
    return ["/", *(f"/catalog/c{i}/" for i in range(count - 1))]


def run(urls: int, nav: int, new: int, old: int, every: int, seed: int) -> None:
    rng = random.Random(seed)
    navs = nav_hrefs(nav)
    gc.collect()
    base_kb = rss_kb_now()
    frontier = Frontier()
    start = ORIGIN + "/"
    frontier.add(start, 0, None)
    next_id = 0
    links = 0
    pages = 0
    checkpoints: list[Checkpoint] = []
    next_mark = every
    t0 = time.perf_counter()
    while frontier.seen_count < urls:
        task = frontier.pop()
        if task is None:
            break
        pages += 1
        base = task.url
        depth = task.depth + 1
        cat_at = base.find("/catalog/c")
        base_cat = int(base[cat_at + 10 : base.index("/", cat_at + 10)]) if cat_at > 0 else 0
        hrefs = list(navs)
        for _ in range(new):
            hrefs.append(href_for(base_cat, next_id, rng.random()))
            next_id += 1
        for _ in range(old):
            if next_id:
                hrefs.append(href_for(base_cat, rng.randrange(next_id), rng.random()))
        hrefs.append("mailto:sales@shop.example")
        hrefs.append(f"https://partner.example/ref/{next_id % 100}")
        for href in hrefs:
            target = resolve(base, href)
            if target is None or target in frontier:
                continue
            frontier.add(target, depth, base)
        links += len(hrefs)
        if frontier.seen_count >= next_mark:
            now = rss_kb_now()
            seen = frontier.seen_count
            mark = Checkpoint(
                seen, time.perf_counter() - t0, now / 1024, (now - base_kb) * 1024 / seen
            )
            checkpoints.append(mark)
            print(
                f"  {seen:>11,} URLs  {mark.seconds:>7.1f} s  RSS {mark.rss_mb:>8.1f} MB  "
                f"{mark.bytes_per_url:>6.0f} B/URL  queued {len(frontier):>10,}",
                flush=True,
            )
            next_mark += every
    elapsed = time.perf_counter() - t0
    seen = frontier.seen_count
    peak_kb = peak_rss_kb()
    sample = [path_of(rng.randrange(max(next_id, 1))) for _ in range(1000)]
    url_len = len(ORIGIN) + sum(map(len, sample)) / len(sample)
    print(
        f"\ndiscovered {seen:,} URLs ({len(frontier):,} still queued) from {pages:,} pages, "
        f"{links:,} links; mean URL length {url_len:.0f} chars"
    )
    print(
        f"time      {elapsed:.1f} s: {seen / elapsed:,.0f} URLs/s, {links / elapsed:,.0f} links/s"
    )
    print(
        f"peak RSS  {peak_kb / 1024:.1f} MB (baseline {base_kb / 1024:.1f} MB): "
        f"{(peak_kb - base_kb) * 1024 / seen:.0f} bytes per discovered URL"
    )
    if len(checkpoints) >= 2:
        first, last = checkpoints[0], checkpoints[-1]
        print(
            f"curve     {first.bytes_per_url:.0f} B/URL at {first.urls:,} -> "
            f"{last.bytes_per_url:.0f} B/URL at {last.urls:,} "
            f"({100 * (last.bytes_per_url / first.bytes_per_url - 1):+.1f}%)"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=1_000_000, help="stop at this many URLs")
    parser.add_argument("--nav", type=int, default=40, help="navigation links on every page")
    parser.add_argument("--new", type=int, default=10, help="links to new pages per page")
    parser.add_argument("--old", type=int, default=10, help="links to met pages per page")
    parser.add_argument("--every", type=int, default=0, help="checkpoint interval (default N/10)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    every = args.every or max(args.urls // 10, 1)
    print(
        f"frontier bench: {args.urls:,} URLs, {args.nav} nav + {args.new} new + {args.old} old "
        f"links per page, Python {sys.version.split()[0]}",
        flush=True,
    )
    run(args.urls, args.nav, args.new, args.old, every, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
