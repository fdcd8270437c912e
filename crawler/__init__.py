"""sitemap-crawler: crawl a website and publish its XML sitemap."""

__version__ = "0.1.0"
PROJECT_URL = "https://github.com/sitemap-crawler/sitemap-crawler"
PRODUCT_TOKEN = "sitemap-crawler"
DEFAULT_USER_AGENT = f"{PRODUCT_TOKEN}/{__version__} (+{PROJECT_URL})"
