"""The Scrapy peer: a minimal CrawlSpider, as a Scrapy user would write it for a sitemap.

Run by bench/crawl_bench.py inside the bench venv:
    scrapy runspider scrapy_spider.py -a start=URL -a out=FILE

It obeys robots.txt, keeps to the start URL's host and fetches 64 requests at once; every
crawled HTML page's URL is written to FILE, one a line (no feed exporter, to keep Scrapy's own
overhead the only overhead).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class BenchSpider(CrawlSpider):
    name = "bench"
    custom_settings = {  # noqa: RUF012 - Scrapy reads this class attribute
        "ROBOTSTXT_OBEY": True,
        "CONCURRENT_REQUESTS": 64,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 64,
        "CONCURRENT_REQUESTS_PER_IP": 0,
        "DOWNLOAD_DELAY": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "COOKIES_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "INFO",
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
    }

    def __init__(self, start: str, out: str, *args: object, **kwargs: object) -> None:
        parts = urlsplit(start)
        self.start_urls = [start]
        self.allowed_domains = [parts.hostname or ""]
        # allow_domains compares against the netloc, port included, so it rejects every link
        # of a site served on 127.0.0.1:PORT: restrict on the origin instead.
        origin = re.escape(f"{parts.scheme}://{parts.netloc}/")
        extractor = LinkExtractor(allow=(f"^{origin}",))
        self.rules = (Rule(extractor, callback="parse_page", follow=True),)
        self._out = open(out, "w")  # noqa: SIM115 - closed in closed()
        super().__init__(*args, **kwargs)

    def parse_start_url(self, response, **kwargs):
        return self.parse_page(response)

    def parse_page(self, response):
        self._out.write(response.url + "\n")
        return ()

    def closed(self, reason: str) -> None:
        self._out.close()
