"""The cost of the hreflang clusters at the end of a crawl (crawler.shell.extensions): time,
peak memory and temporary disk for N listed pages with alternates, against the same pass
without alternates.

Run: python3 bench/hreflang_bench.py [--pages 1000000] [--langs 3]

Each page of a synthetic multilingual site names itself and its other language versions
(clusters of --langs pages, x-default included, a tenth of them naming a page that is not
listed, one in a hundred one-way); a tenth as many URLs are decided not listed during the
"crawl". The listings are fed in loc order, as the spool hands them back, through
Extensions.noted, .prepare and .entry; the entries are built but not written. Peak RSS is
ru_maxrss over the process's RSS before; disk is the temporary database's pages.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from crawler.core.media import PageExtras
from crawler.core.report import ExtensionTally
from crawler.core.wire import pack
from crawler.shell.extensions import Extensions
from crawler.shell.listings import Listing

LANGS = ("de", "en", "fr", "it", "es", "nl", "pt", "pl")


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def listings(pages: int, langs: int, alternates: bool) -> list[Listing]:
    made = []
    clusters = pages // langs
    for c in range(clusters):
        for k in range(langs):
            loc = f"https://www.example.com/{LANGS[k]}/section-{c % 97}/article-{c:08d}.html"
            extras = None
            if alternates:
                pairs = [
                    (LANGS[j], f"https://www.example.com/{LANGS[j]}/section-{c % 97}/"
                     f"article-{c:08d}.html")
                    for j in range(langs)
                    if not (c % 100 == 7 and k == 0 and j == 1)  # one-way
                ]  # fmt: skip
                pairs.append(("x-default", pairs[0][1]))
                if c % 10 == 3:
                    pairs.append(("ja", f"https://www.example.com/ja/gone-{c}.html"))
                extras = pack(PageExtras(alternates=tuple(pairs)))
            made.append(Listing(loc, loc, 200, "", 3, None, None, None, None, None, extras))
    made.sort(key=lambda x: x.loc)
    return made


def run(pages: int, langs: int, alternates: bool) -> None:
    items = listings(pages, langs, alternates)
    before = rss_mb()
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started = time.perf_counter()
    cpu = time.process_time()
    ext = Extensions(ExtensionTally(), None, datetime.now(UTC))
    for c in range(pages // langs // 10):
        ext.decided(f"https://www.example.com/ja/gone-{c * 10 + 3}.html", "http_error", "404")
    for item in items:
        ext.noted(item)
    decided = time.perf_counter()
    disk = 0
    if ext.hreflang:
        ext.prepare(iter(items))
        conn = ext._conn()
        (pages_used,) = conn.execute("PRAGMA page_count").fetchone()
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
        disk = pages_used * page_size
    prepared = time.perf_counter()
    written = 0
    for item in items:
        written += len(ext.entry(item).alternates)
    done = time.perf_counter()
    cpu = time.process_time() - cpu
    ext.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    tally = ext.tally
    print(
        f"{'with' if alternates else 'without'} alternates: {len(items):,} listings, "
        f"{written:,} xhtml:link written, {tally.alternates_dropped:,} not listed, "
        f"{tally.missing_return:,} one-way\n"
        f"  crawl-time {decided - started:6.1f} s  prepare {prepared - decided:6.1f} s  "
        f"entries {done - prepared:6.1f} s  ({(done - started) / len(items) * 1e6:.1f} us a "
        f"listing; CPU {cpu:.1f} s, {cpu / len(items) * 1e6:.1f} us a listing)\n"
        f"  temporary database {disk / 2**20:,.0f} MB ({disk / len(items):.0f} bytes a "
        f"listing); RSS {before:,.0f} MB before, peak {max(peak, peak_before):,.0f} MB "
        f"(the listings themselves held in this bench's memory)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=1_000_000)
    parser.add_argument("--langs", type=int, default=3)
    args = parser.parse_args(argv)
    run(args.pages, args.langs, alternates=False)
    run(args.pages, args.langs, alternates=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
