"""publish_to: where the published set goes in object storage, the headers each file is
served with, and which files a night uploads and deletes. Pure: the shell (crawler/shell/
upload.py) lists the bucket, reads back what it wrote, and sends what this module decides.

The order is the one the local publish keeps (sitemap_out.publish): every file the index
names (parts, then the news sitemap) and the feed first, the entry point after them, then
the deletions. A reader of the bucket at any moment sees an index whose every part is
there: an old index with parts of the same names (some already new, which a reader
accepts), or the new index with all of its own.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from crawler.errors import ConfigError
from sitemap_out.manifest import is_sitemap_file

#: The object storage schemes publish_to takes, and what each names after the scheme.
SCHEMES: Final = {
    "s3": "s3://BUCKET/PREFIX/ (Amazon S3, or MinIO, R2 and others with publish_endpoint)",
    "gs": "gs://BUCKET/PREFIX/ (Google Cloud Storage)",
    "az": "az://CONTAINER/PREFIX/ (Azure Blob Storage; the account from "
    "AZURE_STORAGE_ACCOUNT_NAME)",
}
#: The object (in the prefix) naming the files the last run dropped from the set: deleted by
#: the run after it, a run's grace for a CDN's cached index.
DROPPED: Final = ".sitemap-crawler-dropped"
#: The metadata key (x-amz-meta-*, x-goog-meta-*, x-ms-meta-*) holding a file's SHA-256:
#: what an object is compared by (an ETag is an MD5 on S3 only), and the mark of an object
#: this tool wrote, the only kind it ever deletes.
DIGEST_KEY: Final = "sitemap-crawler-sha256"

# S3's bucket rules (the strictest of the three; GCS and Azure names fit within them,
# Azure's container names are lowercase letters, digits and '-')
_BUCKET_RE = re.compile(r"[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]")


@dataclass(frozen=True, slots=True)
class Target:
    """A parsed publish_to: `prefix` is "" or ends with "/"."""

    scheme: str
    bucket: str
    prefix: str

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.bucket}/{self.prefix}"

    def key(self, name: str) -> str:
        """Where a file lands, as the one-line error names it."""
        return self.url + name


def parse_target(value: str) -> Target:
    """publish_to as a Target, or a ConfigError naming what is wrong (before any request).
    Credentials never go in it: a `user:secret@` part is refused without quoting it."""
    text = value.strip()
    scheme, sep, rest = text.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        kinds = "; ".join(SCHEMES.values())
        raise ConfigError(f"publish_to must be one of {kinds}, got {value!r}")
    scheme = scheme.lower()
    bucket, _, prefix = rest.partition("/")
    if "@" in bucket or ":" in bucket:
        raise ConfigError(
            "publish_to must not hold credentials (the value is not shown): they come from "
            "the provider's own environment variables or files (see the README)"
        )
    if "?" in rest or "#" in rest:
        raise ConfigError("publish_to takes no query or fragment (the value is not shown)")
    if not _BUCKET_RE.fullmatch(bucket) or ".." in bucket:
        raise ConfigError(
            f"publish_to: {bucket!r} is not a bucket name (3 to 222 lowercase letters, "
            f"digits, '.', '-' and '_'), in {value!r}"
        )
    segments = [s for s in prefix.split("/") if s]
    if any(s in (".", "..") for s in segments) or "//" in prefix.strip("/"):
        raise ConfigError(f"publish_to: the prefix {prefix!r} has an empty, . or .. segment")
    return Target(scheme, bucket, "".join(s + "/" for s in segments))


def check_endpoint(value: str, target: Target) -> str:
    """publish_endpoint: the http(s) origin of an S3-compatible store, without credentials."""
    text = value.strip().rstrip("/")
    if target.scheme != "s3":
        raise ConfigError(
            f"publish_endpoint is for S3-compatible stores (s3://); {target.scheme}:// uses "
            "its provider's own endpoint"
        )
    scheme, sep, rest = text.partition("://")
    if scheme.lower() not in ("http", "https") or not sep or not rest:
        raise ConfigError(f"publish_endpoint must be an http(s):// URL, got {value!r}")
    if "@" in rest.split("/", 1)[0]:
        raise ConfigError(
            "publish_endpoint must not hold credentials (the value is not shown): set "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        )
    return text


#: Cache-Control of the entry point (and the feed, llms.txt, the stylesheet): a CDN in front
#: of the bucket serves a new index within minutes, and an old one never names a part
#: deleted since (parts are deleted a run after they were dropped: see plan()).
SHORT_CACHE: Final = "public, max-age=300"
#: Cache-Control of a part the index names: the same names are rewritten each night, so an
#: hour's staleness at most.
PART_CACHE: Final = "public, max-age=3600"


def headers(name: str, *, entry: bool = False) -> dict[str, str]:
    """How a file is served. A .gz part is the gzip file itself (application/gzip, no
    Content-Encoding): every reader gets the bytes written, as a web server serves a .gz
    file; with Content-Encoding: gzip, browsers and HTTP libraries would inflate it and
    save XML under a .gz name, and S3 sends that encoding whatever the client accepts.
    `entry`: the entry point (the index), cached briefly."""
    cache = PART_CACHE if is_sitemap_file(name) and not entry else SHORT_CACHE
    if name.endswith(".gz"):
        kind = "application/gzip"
    elif name.endswith(".txt"):
        kind = "text/plain; charset=utf-8"
    elif name.endswith(".atom"):
        kind = "application/atom+xml"
    else:
        kind = "application/xml"
    return {"Content-Type": kind, "Cache-Control": cache}


@dataclass(frozen=True, slots=True)
class Found:
    """An object of the prefix's top level: its size, and its DIGEST_KEY when read (None:
    not read, or not written by this tool)."""

    size: int
    sha256: str | None = None


@dataclass(frozen=True, slots=True)
class LocalFile:
    """A published file as uploads compare it: its hash decides whether it is put again."""

    name: str
    size: int
    sha256: str


@dataclass(frozen=True, slots=True)
class Plan:
    """`puts` in upload order (the entry point last); `deletes` after it; `dropped`: the
    files this run's index no longer names, deleted by the next run (the DROPPED object)."""

    puts: tuple[str, ...]
    kept: tuple[str, ...]
    deletes: tuple[str, ...]
    dropped: tuple[str, ...] = ()


def worth_reading(local: Sequence[LocalFile], found: Mapping[str, Found]) -> list[str]:
    """The objects whose digest decides something: a local file's namesake of the same
    size (unchanged, if its digest is the local one's), and a sitemap file no longer in the
    set (deleted, if this tool wrote it)."""
    names = {f.name: f.size for f in local}
    return [
        name
        for name, obj in found.items()
        if (name in names and obj.size == names[name])
        or (name not in names and is_sitemap_file(name))
    ]


def plan(
    local: Sequence[LocalFile],
    found: Mapping[str, Found],
    dropped_before: Collection[str] | None = None,
) -> Plan:
    """`local` in the published order, the entry point last. A file is uploaded unless the
    bucket holds its bytes already (same size and SHA-256); a sitemap file this tool wrote
    that is not in the set any more is deleted once the new index is in place, a run after
    it was dropped (`dropped_before`: the previous run's `dropped`), so that an old index a
    CDN still serves never names a part gone. None: every such file is deleted now."""
    puts: list[str] = []
    kept: list[str] = []
    for file in local:
        obj = found.get(file.name)
        same = obj is not None and obj.size == file.size and obj.sha256 == file.sha256
        (kept if same else puts).append(file.name)
    names = {f.name for f in local}
    deletes = [
        name
        for name, obj in found.items()
        if name not in names and is_sitemap_file(name) and obj.sha256 is not None
    ]
    if dropped_before is None:
        return Plan(tuple(puts), tuple(kept), tuple(sorted(deletes)))
    due = sorted(name for name in deletes if name in dropped_before)
    later = sorted(name for name in deletes if name not in dropped_before)
    return Plan(tuple(puts), tuple(kept), tuple(due), tuple(later))


def dropped_text(names: Sequence[str]) -> bytes:
    """The DROPPED object's body: a name a line."""
    return "".join(f"{name}\n" for name in names).encode()


def dropped_names(body: bytes) -> frozenset[str]:
    """The DROPPED object's names (of sitemap files only: nothing else is ever deleted)."""
    lines = body.decode("utf-8", "replace").splitlines()
    return frozenset(line for line in lines if is_sitemap_file(line))
