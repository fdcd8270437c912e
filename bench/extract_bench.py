"""Throughput of `crawler.core.extract.extract_page` on one core.

Issue #6 asks for >= 3,000 pages/s on 2 cores for ~23 KB pages with ~80 links, so the per-page
extraction budget is well under 0.6 ms. This prints figures only; it asserts nothing.

Run: python3 bench/extract_bench.py [--seconds N]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from crawler.core.extract import decode_html, extract_page

PAGE_URL = "https://www.example.com/blog/2024/05/some-article-slug"
TARGET_SIZE = 23 * 1024


def _nav(rng: random.Random, count: int, prefix: str) -> str:
    items = []
    for i in range(count):
        rel = ' rel="nofollow noopener"' if rng.random() < 0.1 else ""
        items.append(
            f'<li class="nav-item nav-{i}"><a class="nav-link" href="/{prefix}/section-{i}/"'
            f'{rel} title="Section {i}">Section {i}</a></li>'
        )
    return "<ul>" + "\n".join(items) + "</ul>"


def make_page(seed: int = 0, content_links: int = 40) -> bytes:
    """A realistic article page: big head, nav/header/footer (~40 links), body text with links,
    inline scripts, JSON-LD and comments, padded to about 23 KB."""
    rng = random.Random(seed)
    head = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        "<title>Some article title | Example Blog</title>",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="description" content="A long description of the article for search engines.">',
        '<meta name="robots" content="index, follow, max-image-preview:large">',
        '<meta property="og:title" content="Some article title">',
        '<meta property="og:url" content="https://www.example.com/blog/2024/05/some-article-slug">',
        f'<link rel="canonical" href="{PAGE_URL}">',
        '<link rel="alternate" hreflang="de" href="https://www.example.com/de/blog/artikel">',
        '<link rel="alternate" hreflang="fr" href="https://www.example.com/fr/blog/article">',
        '<link rel="alternate" hreflang="x-default" href="https://www.example.com/blog/a">',
        '<link rel="alternate" type="application/rss+xml" href="/feed.xml">',
        '<link rel="stylesheet" href="/static/css/main.3f2a1b.css">',
        '<link rel="preload" as="font" href="/static/fonts/inter.woff2" crossorigin>',
        '<link rel="icon" href="/favicon.ico">',
        '<script async src="https://www.googletagmanager.com/gtag/js?id=G-XXXX"></script>',
        "<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}"
        "gtag('js',new Date());gtag('config','G-XXXX');"
        "document.write('<a href=\"/not-a-link\">x</a>');</script>",
        '<script type="application/ld+json">{"@context":"https://schema.org","@type":"Article",'
        '"headline":"Some article title","author":{"@type":"Person","name":"A. Writer"}}</script>',
        "<style>body{font-family:Inter,sans-serif}.nav-link{color:#333}</style>",
        "</head>",
    ]
    body = [
        '<body class="article"><!-- header start --><header class="site-header">',
        '<a href="/" class="logo"><img src="/static/logo.svg" alt="Example"></a>',
        "<nav>" + _nav(rng, 18, "topics") + "</nav></header>",
        '<main><article><h1>Some article title</h1><p class="byline">By <a href="/authors/a">'
        "A. Writer</a></p>",
    ]
    words = [
        "lorem",
        "ipsum",
        "dolor",
        "sit",
        "amet",
        "consectetur",
        "adipiscing",
        "elit",
        "sed",
        "do",
        "eiusmod",
        "tempor",
        "incididunt",
        "ut",
        "labore",
        "et",
        "dolore",
        "magna",
        "aliqua",
    ]
    for i in range(content_links):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(20, 45)))
        body.append(
            f'<p>{text} <a href="/blog/2023/{i:02d}/related-post-{i}?ref=article">related post '
            f"{i}</a> {text[:60]}.</p>"
        )
        if i % 10 == 5:
            body.append(f"<!-- ad slot {i}: <a href='/ads/{i}'>ad</a> -->")
    body.append("</article><aside>" + _nav(rng, 8, "popular") + "</aside></main>")
    body.append('<footer class="site-footer">' + _nav(rng, 14, "about"))
    body.append("<p>&copy; 2024 Example Inc.</p></footer>")
    body.append(
        "<script>(function(){var s=document.createElement('script');s.src='/x.js';"
        "document.body.appendChild(s)})();</script>"
    )
    page = "\n".join(head + body)
    filler = []
    size = len(page.encode())
    while size < TARGET_SIZE - 40:
        chunk = '<div class="spacer" data-x="' + "y" * rng.randint(50, 200) + '"></div>'
        filler.append(chunk)
        size += len(chunk) + 1
    return (page + "\n" + "\n".join(filler) + "\n</body></html>").encode()


def _rates(fn: Callable[[], object], seconds: float) -> tuple[float, float]:
    """(median, best) calls/s over ~0.2 s batches: the best batch is the figure least disturbed
    by whatever else the machine is doing; the median shows how noisy it was."""
    per_call: list[float] = []
    deadline = time.perf_counter() + seconds
    batch = 20
    while True:
        start = time.perf_counter()
        for _ in range(batch):
            fn()
        elapsed = time.perf_counter() - start
        per_call.append(elapsed / batch)
        if elapsed < 0.2:
            batch *= 2
        if time.perf_counter() >= deadline and len(per_call) >= 5:
            return 1 / statistics.median(per_call), 1 / min(per_call)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="per case")
    ap.add_argument("--content-links", type=int, default=40)
    args = ap.parse_args()

    page = make_page(content_links=args.content_links)
    latin1 = page.replace(b'<meta charset="utf-8">', b'<meta charset="iso-8859-1">')
    data = extract_page(page, "text/html; charset=utf-8", PAGE_URL)
    print(
        f"page: {len(page)} bytes, {len(data.links)} links "
        f"({sum(link.nofollow for link in data.links)} nofollow), "
        f"{len(data.alternates)} alternates, canonical={data.canonical is not None}"
    )
    from selectolax.lexbor import LexborHTMLParser

    cases = [
        ("lexbor parse only (bytes)", lambda: LexborHTMLParser(page)),
        ("decode_html, utf-8 header", lambda: decode_html(page, "text/html; charset=utf-8")),
        (
            "extract_page, utf-8 header",
            lambda: extract_page(page, "text/html; charset=utf-8", PAGE_URL),
        ),
        (
            "extract_page + content blocks",  # a crawl keeping a history (--state, #14)
            lambda: extract_page(page, "text/html; charset=utf-8", PAGE_URL, content=True),
        ),
        ("extract_page, no header (meta)", lambda: extract_page(page, None, PAGE_URL)),
        ("extract_page, latin-1 by meta", lambda: extract_page(latin1, "text/html", PAGE_URL)),
    ]
    for name, fn in cases:
        median, best = _rates(fn, args.seconds)
        print(
            f"{name:32s} best {best:8,.0f}/s ({1e6 / best:6.1f} us)   "
            f"median {median:8,.0f}/s ({1e6 / median:6.1f} us)"
        )


if __name__ == "__main__":
    main()
