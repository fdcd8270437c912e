"""Throughput of crawler.core.robots on a realistic robots.txt and URL mix; prints figures only.

Run: python3 bench/robots_bench.py
"""

from __future__ import annotations

import random
import time

from crawler import DEFAULT_USER_AGENT
from crawler.core.robots import parse_robots

# Shaped after the robots.txt of a large shop/news site: several groups, ~50 rules for the
# star group, a handful of wildcard and anchored rules, comments and sitemaps.
ROBOTS_TXT = """\
# robots.txt for https://www.shop.example/
User-agent: Googlebot
User-agent: Bingbot
Disallow: /checkout/
Disallow: /cart
Allow: /

User-agent: GPTBot
Disallow: /

User-agent: *
Crawl-delay: 1
Disallow: /account/
Disallow: /admin/
Disallow: /api/
Disallow: /basket
Disallow: /cart
Disallow: /checkout/
Disallow: /cgi-bin/
Disallow: /compare/
Disallow: /customer/
Disallow: /download/
Disallow: /exports/
Disallow: /includes/
Disallow: /internal/
Disallow: /login
Disallow: /logout
Disallow: /my-account/
Disallow: /newsletter/confirm
Disallow: /order/
Disallow: /password-reset
Disallow: /preview/
Disallow: /print/
Disallow: /private/
Disallow: /register
Disallow: /search
Disallow: /staging/
Disallow: /tmp/
Disallow: /track/
Disallow: /wishlist/
Disallow: /wp-admin/
Disallow: /wp-includes/
Disallow: /xmlrpc.php
Disallow: /*?sort=
Disallow: /*&sort=
Disallow: /*?sessionid=
Disallow: /*.pdf$
Disallow: /*/print$
Disallow: /products/*/reviews?page=
Disallow: /blog/*?replytocom=
Disallow: /%E3%82%AB%E3%83%BC%E3%83%88/
Allow: /wp-admin/admin-ajax.php
Allow: /search/help
Allow: /download/catalogue.pdf$
Allow: /api/public/
Allow: /account/login-help
Allow: /*.css$
Allow: /*.js$
Allow: /products/*/reviews$
Allow: /blog/
Allow: /products/
Allow: /categories/

Sitemap: https://www.shop.example/sitemap_index.xml
Sitemap: https://www.shop.example/news-sitemap.xml
"""

PATHS = [
    "/",
    "/products/blue-widget-123",
    "/products/blue-widget-123/reviews",
    "/products/blue-widget-123/reviews?page=2",
    "/products/blue-widget-123?sort=price",
    "/categories/garden/tools?page=3&sort=name",
    "/categories/garden/tools?page=3",
    "/blog/2024/05/spring-sale",
    "/blog/2024/05/spring-sale?replytocom=991",
    "/blog/2024/05/spring-sale/print",
    "/search?q=widget",
    "/search/help",
    "/account/orders",
    "/account/login-help",
    "/static/app.3f9a.js",
    "/static/site.css",
    "/download/catalogue.pdf",
    "/download/manual-x1.pdf",
    "/wp-admin/admin-ajax.php",
    "/about-us",
    "/contact?ref=footer",
    "/カート/items",
    "/caf%c3%a9/menu",
    "/page?sessionid=ab12cd34",
    "/news/2024/election-results-live#latest",
]
HOSTS = ["https://www.shop.example", "http://shop.example:8080"]


def _urls(count: int) -> list[str]:
    rng = random.Random(9309)
    return [rng.choice(HOSTS) + rng.choice(PATHS) for _ in range(count)]


def _rate(label: str, checks: int, seconds: float) -> None:
    print(
        f"{label:<44} {checks / seconds:>12,.0f} checks/s  ({seconds * 1e6 / checks:.2f} µs each)"
    )


def main() -> None:
    urls = _urls(200_000)
    robots = parse_robots(ROBOTS_TXT)
    start = time.perf_counter()
    for _ in range(200):
        parse_robots(ROBOTS_TXT).can_fetch("/", DEFAULT_USER_AGENT)
    parse_ms = (time.perf_counter() - start) / 200 * 1000
    print(
        f"robots.txt: {len(ROBOTS_TXT.encode())} bytes, {len(robots.groups)} groups, "
        f"{sum(len(g.rules) for g in robots.groups)} rules"
    )
    print(f"{'parse + compile for one agent':<44} {parse_ms:>12.3f} ms")

    can_fetch = robots.can_fetch
    start = time.perf_counter()
    allowed = sum(can_fetch(url, DEFAULT_USER_AGENT) for url in urls)
    _rate("can_fetch, absolute URLs (* group)", len(urls), time.perf_counter() - start)

    paths = [url.split("://", 1)[1].split("/", 1)[1] for url in urls]
    paths = ["/" + path for path in paths]
    start = time.perf_counter()
    for path in paths:
        can_fetch(path, DEFAULT_USER_AGENT)
    _rate("can_fetch, bare paths (* group)", len(paths), time.perf_counter() - start)

    verdict = robots.verdict
    start = time.perf_counter()
    for url in urls:
        verdict(url, "Googlebot/2.1")
    _rate("verdict, absolute URLs (named group)", len(urls), time.perf_counter() - start)
    print(f"allowed share of the URL mix: {allowed / len(urls):.0%}")

    # #26: a fetched URL is judged for us (when found) and for the search engines (when
    # judged), one verdicts() pass for both engines; the per-URL figure is the crawl's.
    engines = ("googlebot", "bingbot")
    star_only = parse_robots("User-agent: *\nDisallow: /drafts/\nDisallow: /print/\nAllow: /\n")
    for label, parsed in (("this file", robots), ("a * group only", star_only)):
        one, both = parsed.verdict, parsed.verdicts
        start = time.perf_counter()
        for url in urls:
            one(url, DEFAULT_USER_AGENT)
            both(url, engines)
        _rate(f"ours + googlebot + bingbot, {label}", len(urls), time.perf_counter() - start)


if __name__ == "__main__":
    main()
