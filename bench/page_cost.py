"""The CPU of a full (200) page outside the transport, as a worker makes it: the bot-wall
test and analyse() (parse, links, normalisation, fingerprint, extensions), the settled
filter, the result packed into its frame, and in the main process the frame unpacked back
into a Fetched; with --content, as a crawl keeping a history (--state) makes it, the content
blocks too. Runs the code PYTHONPATH names, so one script measures base and a branch.

Run: PYTHONPATH=CODE python3 bench/page_cost.py [--site DIR --pages 300 --passes 5 --content]
     valgrind --tool=callgrind python3 bench/page_cost.py --passes 1 [--warm-only]

The pages are the crawl bench site's (crawl_bench.py generates it), taken in the order of
its expected list. A warm-up pass first fills the worker's memory (LinkResolver) and
settles every URL met, as a crawl that has judged the site's navigation has; the passes
after it are the measured ones. Figures: the least CPU time (time.process_time) of the
passes, per page. Under callgrind, run once with --warm-only and once without: the
difference in instructions over the pages is the measured pass, independent of the load.
Prints figures only; asserts nothing.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ext_cost import _pages
from multidict import CIMultiDict, CIMultiDictProxy

from crawler.core.page import PagePolicy
from crawler.core.urls import LinkResolver
from crawler.core.wire import unpack
from crawler.shell import pool
from crawler.shell.fetch import Response
from crawler.shell.pages import analysed

HERE = Path(__file__).resolve().parent
SITE = HERE / ".sites" / "p20000-s1-kb15"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", type=Path, default=SITE)
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--warm-only", action="store_true", help="the warm-up pass alone")
    ap.add_argument("--analyse-only", action="store_true", help="analysed() alone")
    ap.add_argument("--content", action="store_true", help="the content blocks too (--state)")
    args = ap.parse_args()
    pages = _pages(args.site, args.pages, first=0)
    raw = {"Content-Type": "text/html", "Content-Length": "1", "Server": "nginx", "ETag": "x"}
    headers = CIMultiDictProxy(CIMultiDict(raw))
    responses = [(url, Response(url, 200, headers, body)) for url, body in pages]
    policy = PagePolicy("sitemap-crawler", content=args.content)
    links = LinkResolver()

    def one_pass(analyse_only: bool = False) -> None:
        for number, (url, resp) in enumerate(responses):
            fetched = analysed(url, resp, policy, links.known)
            if analyse_only:
                continue
            if fetched.page is not None and fetched.page.targets:
                fetched.page.targets = links.unsettled(fetched.page.targets, 1)
            frame = pool._result(number, fetched)
            (payload,) = pool._Frames().feed(frame)
            result = unpack(pool.Result, payload)
            pool._fetched(url, result)

    one_pass()
    urls = list(links.known)
    links.settle(urls, [0] * len(urls))
    if args.warm_only:
        return
    best = float("inf")
    for _ in range(args.passes):
        start = time.process_time()
        one_pass(args.analyse_only)
        best = min(best, time.process_time() - start)
    print(f"{len(pages)} pages: {best / len(pages) * 1e6:7.1f} us a page (least of {args.passes})")


if __name__ == "__main__":
    main()
