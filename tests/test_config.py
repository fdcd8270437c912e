"""config.example.toml documents every key with its real default; the loader checks types."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from crawler.config import Config, build, coerce, default_of, fields, load_toml
from crawler.errors import ConfigError

EXAMPLE = Path(__file__).resolve().parents[1] / "config.example.toml"


def test_example_config_lists_every_key_with_its_default():
    text = EXAMPLE.read_text()
    values = tomllib.loads(text)
    for spec in fields():
        default = default_of(spec)
        if default is None or spec.name in TABLES:  # unset, or tables at the file's end
            assert f"# {spec.name} =" in text, spec.name
        else:
            assert spec.name in values, spec.name
            assert coerce(spec.name, values[spec.name]) == default, spec.name
    assert set(values) <= {f.name for f in fields()}


def test_example_config_loads():
    values = {k: coerce(k, v) for k, v in tomllib.loads(EXAMPLE.read_text()).items()}
    config = build(values, {"url": "https://example.com/docs/"})
    assert config == Config(url="https://example.com/docs/").validate()


#: keys the file writes as tables ([[groups]]), which TOML wants after every top-level key
TABLES = ("groups",)


def _uncommented_tables() -> str:
    """The example with its closing tables uncommented, as its comments tell a user to."""
    head, tail = EXAMPLE.read_text().split("\n# Tables.", 1)
    lines = [
        line[2:] if line.startswith("# [") or (line.startswith("# ") and " = " in line) else line
        for line in tail.splitlines()
    ]
    return head + "\n# Tables." + "\n".join(lines) + "\n"


def test_the_examples_groups_tables_load_once_uncommented(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text(_uncommented_tables())
    values = load_toml(config)
    assert values["groups"] == ("blog=/blog/*", "blog=/news/*", "docs=re:^/docs/")
    assert values["include"] == ()  # the top-level key, not the group's


@pytest.mark.parametrize("where", ["in place of a key", "after a key"])
def test_groups_tables_among_the_keys_get_a_hint(tmp_path, where):
    text = EXAMPLE.read_text()
    table = '[[groups]]\nname = "blog"\ninclude = ["/blog/*"]\n'
    at = text.index("# groups = (none)")
    if where == "after a key":
        text = text[:at] + "groups = []\n" + text[at:] + "\n" + table
    else:
        text = text[:at] + table + text[at:]
    config = tmp_path / "c.toml"
    config.write_text(text)
    with pytest.raises(ConfigError, match=r"put \[\[groups\]\] .*tables at the end of the file"):
        load_toml(config)
    # a top-level key that is not also a group's lands in the table: named
    config.write_text('[[groups]]\nname = "blog"\ninclude = ["/blog/*"]\nconcurrency = 4\n')
    with pytest.raises(ConfigError, match="concurrency is inside a \\[\\[groups\\]\\] table"):
        load_toml(config)


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
        ({"url": "https://e.com/", "user_agent": "a\x00b"}, "without control characters"),
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
