"""The advertools peer of the audit bench: ``sitemap_to_df`` then ``adv.crawl`` in list mode.

Run by bench/audit_bench.py inside the venv bench/.env/adv-venv:
    python advertools_checker.py SITEMAP_URL WORKDIR OUT.json [--limit N]

This is how advertools' documentation checks a sitemap's URLs: read the sitemap(s) into a
DataFrame, then crawl the ``loc`` column without following links (``follow_links=False``).
adv.crawl runs Scrapy in a subprocess with advertools' own settings (robots.txt obeyed) and
extracts its SEO columns (title, meta, headings, links, canonical, robots directives...) from
every page into a .jl file (deleted after the count); Scrapy's default of 8 requests per
domain is kept, written out here. ``--limit N`` crawls only the first N URLs (for a run that
would otherwise take too long; the bench says so).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import advertools as adv


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sitemap")
    parser.add_argument("work", type=Path)
    parser.add_argument("out")
    parser.add_argument("--limit", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    df = adv.sitemap_to_df(args.sitemap)
    urls = df["loc"].dropna().tolist()
    listed = len(urls)
    if args.limit:
        urls = urls[: args.limit]
    output = args.work / "crawl.jl"
    output.unlink(missing_ok=True)
    adv.crawl(
        urls,
        str(output),
        follow_links=False,
        # advertools derives allowed_domains from the URLs' netloc ("127.0.0.1:8765"), which
        # Scrapy's offsite filter does not match against the host: every request was dropped
        allowed_domains=[urlsplit(args.sitemap).hostname],
        custom_settings={
            "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
            "LOG_LEVEL": "WARNING",
            "LOG_FILE": str(args.work / "scrapy.log"),
        },
    )
    # the .jl holds every page's text and links (about 1 GB for 50,000 pages of 20 KB): read it
    # line by line rather than with pandas, so the peer's figures are its crawl's, not a load's
    statuses: Counter[str] = Counter()
    with output.open() as f:
        for line in f:
            statuses[str(json.loads(line).get("status"))] += 1
    not_200 = sum(n for status, n in statuses.items() if status != "200")
    result = {
        "listed": listed,
        "checked": sum(statuses.values()),
        "statuses": statuses,
        "not_200": not_200,
        "advertools": adv.__version__,
        "seconds": round(time.perf_counter() - started, 3),
    }
    output.unlink()
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
