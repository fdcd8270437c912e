"""config.example.toml documents every key with its real default; the loader checks types."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from crawler.config import Config, build, coerce, default_of, fields
from crawler.errors import ConfigError

EXAMPLE = Path(__file__).resolve().parents[1] / "config.example.toml"


def test_example_config_lists_every_key_with_its_default():
    text = EXAMPLE.read_text()
    values = tomllib.loads(text)
    for spec in fields():
        default = default_of(spec)
        if default is None:
            assert f"# {spec.name} =" in text, spec.name
        else:
            assert spec.name in values, spec.name
            assert coerce(spec.name, values[spec.name]) == default, spec.name
    assert set(values) <= {f.name for f in fields()}


def test_example_config_loads():
    values = {k: coerce(k, v) for k, v in tomllib.loads(EXAMPLE.read_text()).items()}
    config = build(values, {"url": "https://example.com/docs/"})
    assert config == Config(url="https://example.com/docs/").validate()


def test_cli_overrides_file():
    config = build({"url": "https://a.example/", "concurrency": 3}, {"concurrency": 5})
    assert config.concurrency == 5 and config.url == "https://a.example/"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("concurrency", True),
        ("timeout", "1"),
        ("listed_types", "text/html"),
        ("listed_types", [1]),
        ("output", ""),
        ("nope", 1),
    ],
)
def test_bad_types_rejected(key, value):
    with pytest.raises(ConfigError, match=key):
        coerce(key, value)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({}, "no start URL"),
        ({"url": "https://e.com/", "timeout": 0}, "timeout must be positive"),
        ({"url": "https://e.com/", "user_agent": "a\nb"}, "user_agent"),
        ({"url": "https://e.com/", "listed_types": ()}, "listed_types"),
        ({"url": "https://e.com/", "changefreq": "sometimes"}, "changefreq must be one of"),
        ({"url": "https://e.com/", "max_bytes_per_file": 10**9}, "may not exceed"),
        ({"url": "https://e.com/", "retries": -1}, "retries must be at least 0, got -1"),
    ],
)
def test_bad_values_rejected(values, message):
    with pytest.raises(ConfigError, match=message):
        build(values, {})


def test_retries_counts_retries_not_attempts():
    """Default 2 keeps the 3 requests per URL that the old `retries = 3` (attempts) meant."""
    assert Config(url="https://e.com/").validate().retries == 2
    assert build({"url": "https://e.com/", "retries": 0}, {}).retries == 0


def test_every_config_key_is_in_one_help_group() -> None:
    from crawler.cli import EXPLAIN_OPTIONS, GROUPS

    grouped = [name for _, names in GROUPS for name in names]
    assert len(grouped) == len(set(grouped))
    keys = {spec.name for spec in fields()} - {"url", "seeds"}
    assert keys <= set(grouped), keys - set(grouped)
    assert set(grouped) >= EXPLAIN_OPTIONS


def test_crawl_help_is_grouped_and_explain_help_has_only_its_options(capsys) -> None:
    import pytest

    from crawler.cli import main

    with pytest.raises(SystemExit):
        main(["crawl", "--help"])
    text = capsys.readouterr().out
    for title in ("scope and URLs:", "politeness:", "output:", "state and resume:",
                  "logging:", "advanced:", "examples:"):  # fmt: skip
        assert title in text
    assert text.startswith("usage: sitemap-crawler crawl [options] URL [URL ...]")
    with pytest.raises(SystemExit):
        main(["explain", "--help"])
    text = capsys.readouterr().out
    assert "--respect-noindex" in text
    for crawl_only in ("--output", "--gzip", "--state", "--resume", "--concurrency",
                       "--report", "--max-pages", "--workers", "--quiet"):  # fmt: skip
        assert crawl_only not in text
