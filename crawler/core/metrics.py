"""--metrics FILE: a run's figures in the Prometheus text format, for the node exporter's
textfile collector.

Pure: the report's figures in, the file's text out (prometheus_client formats it); and the
time of the last successful publish read back from the previous file's text, so a run that
did not publish carries it forward. The CLI reads and writes the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from prometheus_client import CollectorRegistry, Gauge, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from crawler.core.decide import LISTED, REASONS

PREFIX: Final = "sitemap_crawler"
LAST_PUBLISH: Final = f"{PREFIX}_last_publish_timestamp_seconds"


def render(
    figures: dict[str, Any],
    *,
    exit_code: int,
    seconds: float,
    ended: float,
    last_publish: float | None,
    labels: Mapping[str, str] | None = None,
) -> str:
    """The metrics text. `figures`: the report's (empty when the run stopped before its
    crawl began); `seconds`: the run's duration; `ended`, `last_publish`: Unix times.
    `labels`: on every sample (`site`, the start URL; `index`, a fleet job's line), so that
    the files of several jobs in one textfile folder are told apart once collected."""
    registry = CollectorRegistry()
    own = dict(labels or {})

    def family(name: str, doc: str, *names: str) -> Gauge:
        return Gauge(f"{PREFIX}_{name}", doc, [*own, *names], registry=registry)

    def gauge(name: str, doc: str, value: float) -> None:
        metric = family(name, doc)
        (metric.labels(**own) if own else metric).set(value)

    gauge("pages_fetched", "pages fetched by this run", figures.get("pages_fetched_this_run", 0))
    gauge("urls_listed", "URLs the sitemap lists (or would have)", figures.get("urls_listed", 0))
    gauge(
        "requests_failed",
        "requests failed with a 5xx or no answer, after retries",
        figures.get("requests_failed", 0),
    )
    excluded = family("urls_excluded", "URLs met but not listed, by reason", "reason")
    reasons = figures.get("reasons") or {}
    for reason in REASONS:
        if reason != LISTED:
            excluded.labels(**own, reason=reason).set(reasons.get(reason, 0))
    changes = figures.get("changes")
    if changes:  # published: what changed against the sitemap published before
        changed = family(
            "urls_changed",
            "URLs added, removed or changed (a new lastmod) against the last published sitemap",
            "change",
        )
        for kind in ("added", "removed", "changed"):
            changed.labels(**own, change=kind).set(changes.get(kind, 0))
    groups = figures.get("groups")
    if groups:  # grouped sitemaps: Search Console's view, one sitemap per group
        listed = family("group_urls_listed", "URLs the sitemap lists, by group", "group")
        files = family("group_sitemap_files", "sitemap files of each group", "group")
        moved = family(
            "group_urls_changed",
            "URLs added, removed or changed against the last published sitemap, by group",
            "group",
            "change",
        )
        for name, figures_of in groups.items():
            listed.labels(**own, group=name).set(figures_of.get("urls", 0))
            files.labels(**own, group=name).set(figures_of.get("files", 0))
            for kind in ("added", "removed", "changed"):
                if kind in figures_of:
                    moved.labels(**own, group=name, change=kind).set(figures_of[kind])
    gauge("published", "1 when this run published the sitemap", bool(figures.get("published")))
    gauge("duration_seconds", "how long the run took", seconds)
    gauge("exit_code", "the run's exit code (0: published)", exit_code)
    gauge("last_run_timestamp_seconds", "when this run ended (Unix time)", ended)
    if "on_publish_exit_code" in figures:
        gauge(
            "on_publish_exit_code",
            "the --on-publish command's exit code (127: not found, -1: timed out)",
            figures["on_publish_exit_code"],
        )
    if last_publish is not None:  # never published: no sample, rather than a 1970 one
        gauge(
            "last_publish_timestamp_seconds",
            "when a run last published the sitemap (Unix time), carried across runs",
            last_publish,
        )
    return generate_latest(registry).decode()


def last_publish_of(text: str) -> float | None:
    """The last publish time a previous metrics file holds; None when it holds none or is
    not the Prometheus text format."""
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == LAST_PUBLISH:
                    return float(sample.value)
    except ValueError:
        return None
    return None
