"""Throughput of crawler.core.urls.resolve and normalize on one core; prints figures only.

Issue #6: >= 3,000 pages/s with ~50 links a page is 150,000+ resolve() calls/s, in a CPU budget
that also pays for fetching and parsing. The link mix imitates a real site: every page repeats
the same header/nav/footer links (root-relative, relative, absolute, a few mailto/javascript/
fragment links) and adds ~30% unique content links, some with non-ASCII or percent-encoded
paths and tracking parameters.

Run: python3 bench/urls_bench.py [--pages N] [--repeat N]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from crawler.core.urls import DEFAULT_STRIP_PARAMS, clear_resolve_cache, normalize, resolve

SITE = "https://www.example.com"
SECTIONS = ["blog", "docs", "products", "support", "about", "news", "careers", "shop"]
WORDS = ["guide", "setup", "intro", "faq", "pricing", "release", "notes", "how-to", "tips"]
ODD = ["über-uns", "café", "naïve guide", "日本語", "%E2%82%AC-prices", "a%2fb", "%7Euser"]


def nav_links() -> list[str]:
    """~35 links every page carries: header, nav, footer, social."""
    links = [f"/{s}/" for s in SECTIONS]
    links += [f"/{s}/{w}" for s in SECTIONS[:3] for w in WORDS[:5]]
    links += ["/", "#main", "#", "../", "./", "index.html", "/search?q=", "/login?next=%2F"]
    links += ["mailto:info@example.com", "javascript:void(0)", "tel:+441234567"]
    links += [f"{SITE}/legal/privacy", f"{SITE}/legal/terms", "https://twitter.com/example"]
    links += ["//cdn.example.com/app.css"]
    return links


def content_links(rng: random.Random, page: int, count: int) -> list[str]:
    """Links unique to one page; some relative, some odd (non-ASCII, escapes, tracking)."""
    out = []
    for i in range(count):
        word = rng.choice(WORDS)
        kind = rng.random()
        if kind < 0.4:
            out.append(f"/{rng.choice(SECTIONS)}/{word}-{page}-{i}")
        elif kind < 0.6:
            out.append(f"{word}-{page}-{i}.html")
        elif kind < 0.75:
            out.append(f"../{word}/{page}/{i}/?utm_source=news&id={i}")
        elif kind < 0.9:
            out.append(f"/{rng.choice(ODD)}/{page}-{i}")
        else:
            out.append(f"{SITE}/{word}/{page}-{i}#section-{i}")
    return out


def workload(pages: int, per_page: int = 50, unique_share: float = 0.3) -> list[tuple[str, list]]:
    rng = random.Random(6)
    nav = nav_links()
    unique = round(per_page * unique_share)
    shared = per_page - unique
    work = []
    for page in range(pages):
        base = f"{SITE}/{SECTIONS[page % len(SECTIONS)]}/{WORDS[page % len(WORDS)]}-{page}"
        links = [nav[(page + k) % len(nav)] for k in range(shared)]
        links += content_links(rng, page, unique)
        rng.shuffle(links)
        work.append((base, links))
    return work


def rate(run: Callable[[], int], repeat: int) -> tuple[float, float]:
    """(median, best) calls per second over ``repeat`` runs."""
    rates = []
    for _ in range(repeat):
        start = time.perf_counter()
        calls = run()
        rates.append(calls / (time.perf_counter() - start))
    return statistics.median(rates), max(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    work = workload(args.pages)
    calls = sum(len(links) for _, links in work)

    def crawl(strip: tuple[str, ...]) -> Callable[[], int]:
        def run() -> int:
            clear_resolve_cache()  # every run starts cold, as a crawl does
            for base, links in work:
                for href in links:
                    resolve(base, href, strip)
            return calls

        return run

    def uncached() -> int:
        n = 0
        for base, links in work[:300]:
            for href in links:
                clear_resolve_cache()
                resolve(base, href)
                n += 1
        return n

    urls = [u for base, links in work[:400] for h in links if (u := resolve(base, h))]
    raw = [
        u.upper().replace("HTTPS://WWW.EXAMPLE.COM", "HTTPS://www.Example.COM:443") for u in urls
    ]

    def norm(inputs: list[str]) -> Callable[[], int]:
        def run() -> int:
            for url in inputs:
                normalize(url)
            return len(inputs)

        return run

    print(f"workload: {args.pages} pages x 50 links ({calls} resolve calls, ~30% unique)")
    for label, run in [
        ("resolve, realistic mix, cold memo", crawl(())),
        ("resolve, same, stripping tracking params", crawl(DEFAULT_STRIP_PARAMS)),
        ("resolve, every call a memo miss", uncached),
        ("normalize, already-normal URLs", norm(urls)),
        ("normalize, URLs needing work", norm(raw)),
    ]:
        median, best = rate(run, args.repeat)
        print(f"{label:<44} {median:>12,.0f} calls/s (best {best:,.0f})")
    median, _ = rate(crawl(()), args.repeat)
    print(f"=> resolve CPU for 3,000 pages/s x 50 links: {150_000 / median:.0%} of one core")


if __name__ == "__main__":
    main()
