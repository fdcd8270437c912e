"""The fleet of the nightly job: one site per line of a sites file, the one a run takes by
its index (Kubernetes' Indexed Job: JOB_COMPLETION_INDEX), and the folder its output and
state live in. Pure: the CLI reads the file and the environment."""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from crawler.core.words import plural
from crawler.errors import ConfigError

#: The environment variable Kubernetes sets in each pod of an Indexed Job.
INDEX_ENV = "JOB_COMPLETION_INDEX"

_UNSAFE = re.compile(r"[^A-Za-z0-9.-]+")


def parse_sites(text: str) -> list[tuple[int, str]]:
    """The sites of a sites file as (line number, start URL): one URL a line; blank lines
    and `#` comments (a line's rest from a `#` after a space) are skipped."""
    sites = []
    for number, line in enumerate(text.splitlines(), 1):
        url = re.split(r"\s#", line.strip(), maxsplit=1)[0].strip()
        if url and not url.startswith("#"):
            sites.append((number, url))
    return sites


def site_folder(url: str) -> str:
    """The folder name of a site: host[_port][_path], safe characters only
    (`https://Example.com:8443/docs/en/` -> `example.com_8443_docs_en`)."""
    parts = urlsplit(url.strip())
    try:
        port = parts.port
    except ValueError:
        port = None
    pieces = [parts.hostname or "", str(port) if port is not None else "", parts.path]
    name = "_".join(_UNSAFE.sub("_", p).strip("_") for p in pieces if p.strip("/"))
    name = name.strip("._")
    if not name or not parts.hostname:
        raise ConfigError(f"sites file: {url!r} is not an http(s) URL with a host")
    return name


def index_of(given: int | None, environ: Mapping[str, str]) -> int:
    """The index a run takes: --index, else JOB_COMPLETION_INDEX."""
    if given is not None:
        return given
    text = environ.get(INDEX_ENV, "").strip()
    if not text:
        raise ConfigError(f"--sites needs --index N (or the {INDEX_ENV} environment variable)")
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"{INDEX_ENV} must be a whole number, got {text!r}") from None


def pick(sites: list[tuple[int, str]], index: int, name: str) -> tuple[str, str]:
    """The start URL and folder name of the site at `index` of the sites file `name`; two
    lines that would share a folder are an error, as their crawls would overwrite each other."""
    if not sites:
        raise ConfigError(f"sites file {name} lists no site")
    if not 0 <= index < len(sites):
        raise ConfigError(
            f"index {index} is past the end of the sites file {name}: it lists "
            f"{plural(len(sites), 'site')}, indexes 0 to {len(sites) - 1}"
        )
    seen: dict[str, int] = {}
    for line, url in sites:
        folder = site_folder(url)
        if folder in seen:
            raise ConfigError(
                f"sites file {name}: lines {seen[folder]} and {line} would share the folder "
                f"{folder}"
            )
        seen[folder] = line
    url = sites[index][1]
    return url, site_folder(url)
