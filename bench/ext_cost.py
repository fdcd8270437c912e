"""The per-page CPU of the sitemap extensions without a crawl around it: analyse() of a page,
and at the end of the crawl its sitemap entry (Listing -> Entry -> url_element), on pages of
the gen_site.py --media site. Runs the code PYTHONPATH names, so the same script measures the
code before the extensions (where a listing has no extras) and after.

Run: PYTHONPATH=CODE python3 bench/ext_cost.py [--site DIR --pages 300 --passes 9]

Each figure is the least CPU time (time.process_time) of `passes` passes over the pages, per
page: the least is the figure least disturbed by the other processes of a shared machine.
Prints figures only; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

from multidict import CIMultiDict

from crawler.core import page as page_module
from crawler.core.page import PagePolicy, analyse
from crawler.core.urls import clear_resolve_cache
from crawler.shell.listings import Listing
from sitemap_out.xml import url_element

HERE = Path(__file__).resolve().parent
SITE = HERE / ".sites" / "p20000-s1-kb15-media"


def _pages(site: Path, count: int, first: int = 1) -> list[tuple[str, bytes]]:
    """`count` pages of a generated site, from the `first` of its expected list on."""
    origin = json.loads((site / "site.json").read_text())["origin"]
    urls = (site / "expected.txt").read_text().split()
    www = site / "www"
    found: list[tuple[str, bytes]] = []
    for url in urls[first : first + count]:
        path = url[len(origin) :]
        file = www / path.lstrip("/")
        if path.endswith("/"):
            file = file / "index.html"
        found.append((url, file.read_bytes()))
    return found


def _least(fn: Callable[[], object], passes: int, per: int) -> float:
    best = float("inf")
    for _ in range(passes):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best / per * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", type=Path, default=SITE)
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--passes", type=int, default=9)
    ap.add_argument(
        "--listed",
        type=int,
        default=20000,
        help="pages whose entries are made (all: whole clusters)",
    )
    args = ap.parse_args()
    pages = _pages(args.site, args.pages)
    headers = CIMultiDict({"Content-Type": "text/html; charset=utf-8"})
    has_images = "images" in PagePolicy.__slots__  # type: ignore[attr-defined]
    policies = {"images": PagePolicy("sitemap-crawler")}
    if has_images:
        policies["no images"] = PagePolicy("sitemap-crawler", images=False)

    # the crawl passes its seen set: links to URLs met before skip normalisation
    known: dict[str, None] = {}
    for url, body in pages:
        known.update(
            dict.fromkeys(analyse(url, 200, headers, body, False, policies["images"]).targets)
        )
    for name, policy in policies.items():

        def run(policy: PagePolicy = policy) -> None:
            clear_resolve_cache()  # each pass as cold as the crawl's first sight of a URL
            for url, body in pages:
                analyse(url, 200, headers, body, False, policy, known)

        print(f"analyse ({name}): {_least(run, args.passes, len(pages)):7.1f} us a page")

    listed = _pages(args.site, args.listed)
    policy = policies["images"]
    listings = [
        _listing(url, analyse(url, 200, headers, body, False, policy)) for url, body in listed
    ]
    listings.sort(key=lambda listing: listing.loc)
    make_entries = _entries_maker(listings)
    passes = max(3, args.passes // 3)
    print(f"entry + url_element: {_least(make_entries, passes, len(listings)):7.1f} us a page")


def _listing(url: str, result: page_module.PageResult) -> Listing:
    values: list[object] = [url, url, 200, "", 1, None, None, None, None, result.body_key]
    extras = getattr(result, "extras", None)
    if "extras" in Listing.__slots__:  # type: ignore[attr-defined]
        from crawler.core.wire import pack

        values.append(None if extras is None else pack(extras))
    return Listing(*values)  # type: ignore[arg-type]


def _entries_maker(listings: list[Listing]) -> Callable[[], None]:
    """Every listing's entry serialised, as the end of a crawl does it (with the hreflang
    pass when the code has one)."""
    try:
        from datetime import UTC, datetime

        from crawler.core.report import ExtensionTally
        from crawler.shell.extensions import Extensions
    except ImportError:

        def plain() -> None:
            for listing in listings:
                url_element(listing.entry())

        return plain

    def extended() -> None:
        ext = Extensions(ExtensionTally(), None, datetime.now(UTC))
        for listing in listings:
            ext.noted(listing)
        if ext.hreflang:
            ext.prepare(iter(listings))
        for listing in listings:
            url_element(ext.entry(listing))
        ext.close()

    return extended


if __name__ == "__main__":
    main()
