"""The urlset (or text) part files of a run: exact rollover, scratch bodies, gzip.

Exact limits. A part file is rolled over *before* adding an entry would take it past
``max_urls`` or ``max_bytes`` uncompressed bytes, counted exactly: declaration, ``<urlset>``
start tag, every escaped ``<url>`` line and the closing tag. The start tag declares the
image/xhtml namespaces only when that file uses them, which is known only when the part
closes; so each part's body is streamed to a scratch file in the staging folder and, on
rollover, copied behind the header it turned out to need (through gzip when on). Memory
stays flat; the extra sequential copy costs about as much as the gzip pass it doubles as.
"""

from __future__ import annotations

import functools
import gzip as gziplib
import hashlib
import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import date, datetime
from pathlib import Path
from typing import BinaryIO, Final

from sitemap_out.entry import lastmod_key
from sitemap_out.errors import IndexLimitError
from sitemap_out.groups import DEFAULT_GROUP, part_prefix
from sitemap_out.limits import MAX_SITEMAPS_PER_INDEX
from sitemap_out.previous import part_digest
from sitemap_out.probe import changed
from sitemap_out.scratch import Rec
from sitemap_out.xml import (
    NS_ALL,
    URLSET_CLOSE,
    text_line,
    text_loc,
    url_element,
    url_loc,
    urlset_open_for,
)

__all__ = ["COPY_CHUNK", "OpenPart", "PartInfo", "Parts"]

COPY_CHUNK: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class PartInfo:
    """One finished part file; ``newest_lastmod`` feeds the index's ``<lastmod>``.
    ``kept``: a stable layout left the published file untouched (same entries, same bytes),
    and its index ``<lastmod>`` is the one the index gave it before."""

    name: str
    url_count: int
    uncompressed_bytes: int
    newest_lastmod: datetime | date | None
    kept: bool = False


class OpenPart:
    """A part being written: its scratch body file and the running exact counts."""

    __slots__ = ("body", "body_bytes", "count", "newest", "newest_key", "ns", "number")

    def __init__(self, number: int, body: BinaryIO) -> None:
        self.number = number
        self.body = body
        self.count = 0
        self.body_bytes = 0
        self.ns = 0  # the extension namespaces its entries use (xml.NS_* bits)
        self.newest: datetime | date | None = None
        self.newest_key: datetime | None = None


class Parts:
    """Writes ``sitemap-N`` files (``sitemap-<group>-N``: sitemap_out.groups) into the
    staging folder and keeps their PartInfo, in the order written. ``max_parts``: how many
    files one index may list; ``stylesheet``: the href of the XSL every XML header names
    (None: no stylesheet line)."""

    def __init__(
        self,
        staging: Path,
        *,
        xml: bool,
        gzip: bool,
        max_urls: int,
        max_bytes: int,
        compresslevel: int,
        max_parts: int = MAX_SITEMAPS_PER_INDEX,
        group: str = DEFAULT_GROUP,
        stylesheet: str | None = None,
    ) -> None:
        self.staging = staging
        self.group = group
        self._prefix = part_prefix(group)
        self.xml = xml
        self.gzip = gzip
        self.max_urls = max_urls
        self.max_bytes = max_bytes
        self.compresslevel = compresslevel
        self.max_parts = max_parts
        self.suffix = (".xml" if xml else ".txt") + (".gz" if gzip else "")
        self.serialise = url_element if xml else text_line
        self.loc_of = url_loc if xml else text_loc  # an entry's loc from its bytes
        if xml:
            self.headers = {
                ns: urlset_open_for(ns, stylesheet).encode() for ns in range(NS_ALL + 1)
            }
            self.footer = URLSET_CLOSE.encode()
        else:
            self.headers = dict.fromkeys(range(NS_ALL + 1), b"")
            self.footer = b""
        #: the bytes of a file but its entries, by the namespaces it declares
        self.fixed = {key: len(h) + len(self.footer) for key, h in self.headers.items()}
        self.done: list[PartInfo] = []
        self.next_number = 1
        self.digests: dict[str, bytes] = {}  # uncompressed SHA-256 of parts staged whole
        #: parts staged as a published file of another name (stage_published): by name
        self.unstaged: dict[str, Path] = {}
        self._part: OpenPart | None = None

    def name(self, number: int) -> str:
        return f"{self._prefix}{number}{self.suffix}"

    def append(self, data: bytes, own: int, lastmod: datetime | date | None) -> None:
        """Put one serialised entry in the open part, rolling over first at either limit."""
        size = len(data)
        part = self._part
        if part is None:
            part = self._new_part()
        ns = part.ns | own
        if part.count >= self.max_urls or self.fixed[ns] + part.body_bytes + size > self.max_bytes:
            self.close()
            part = self._new_part()
            ns = own
        part.body.write(data)
        part.body_bytes += size
        part.count += 1
        part.ns = ns
        if lastmod is not None:
            key = lastmod_key(lastmod)
            if part.newest_key is None or key > part.newest_key:
                part.newest_key = key
                part.newest = lastmod

    def holds(self, count: int, body: int, ns: int) -> bool:
        """Whether a part of count entries, body bytes and namespaces ns fits: then so does
        every part of its first entries (fewer, fewer bytes, no more namespaces, whose
        header is no longer), each added as fits() says."""
        return count <= self.max_urls and self.fixed[ns] + body <= self.max_bytes

    def fits(self, count: int, body: int, ns: int, rec: Rec) -> bool:
        """Whether rec fits in a part holding count entries of body bytes (exact rules)."""
        return (
            count < self.max_urls and self.fixed[ns | rec[2]] + body + len(rec[1]) <= self.max_bytes
        )

    def _new_part(self) -> OpenPart:
        number = self.next_number
        self.next_number += 1
        if len(self.done) + 1 > self.max_parts:
            written = sum(p.url_count for p in self.done)
            raise IndexLimitError(
                f"this run needs more than {self.max_parts} sitemap files, the most one "
                f"index may list (indexes must not nest); {written} URLs written so far"
            )
        body = open(self.staging / f"part-{self.group}-{number}.body", "wb", buffering=COPY_CHUNK)  # noqa: SIM115
        self._part = OpenPart(number, body)
        return self._part

    def close(self) -> None:
        """Write the open part: the header it needs, its body, the footer; fsync it."""
        part = self._part
        if part is None:
            return
        self._part = None
        body_path = Path(part.body.name)
        part.body.close()
        if part.count == 0:
            body_path.unlink()
            return
        name = self.name(part.number)
        header = self.headers[part.ns]
        self.write_body(name, header, body_path)
        self.done.append(
            PartInfo(
                name=name,
                url_count=part.count,
                uncompressed_bytes=len(header) + part.body_bytes + len(self.footer),
                newest_lastmod=part.newest,
            )
        )

    def stage(
        self,
        number: int,
        ns: int,
        chunks: Callable[[], Iterable[bytes]],
        count: int,
        body_bytes: int,
        newest: datetime | date | None,
        *,
        published: bytes | None = None,
    ) -> None:
        """Stage part ``number`` whole from serialised entries (``chunks()``: the stable
        layout's parts), keeping the digest that tells whether it is the part published
        before. ``published``: the digest of the file of that name published before; with
        gzip, the digest is taken first, and a part of those bytes is neither compressed
        nor written (the publish leaves the published file in place): compressing every
        part of an unchanged night, to throw it away, was most of a gzipped night's publish."""
        name = self.name(number)
        header = self.headers[ns]
        digest = None
        if published is not None and self.gzip:
            sha = hashlib.sha256(header)
            for chunk in chunks():
                sha.update(chunk)
            sha.update(self.footer)
            digest = sha.digest()
        if digest is None or digest != published:
            digest = self.write(name, header, chunks())
        self.digests[name] = digest
        size = len(header) + body_bytes + len(self.footer)
        self.done.append(PartInfo(name, count, size, newest))

    def stage_published(
        self,
        number: int,
        ns: int,
        count: int,
        body_bytes: int,
        newest: datetime | date | None,
        *,
        source: Path,
        digest: bytes,
    ) -> None:
        """Stage part ``number`` as the published file ``source``, whose bytes its entries
        are, byte for byte, and whose uncompressed SHA-256 is ``digest`` (sitemap_out.probe
        read them so): nothing is written, as stage() leaves a gzipped part of the
        published bytes. One staged under another name than the file's (a single
        sitemap.xml is sitemap-1.xml until the writer names it) is kept in `unstaged`: the
        writer renames nothing for it if the set stays a single file, else has it copied
        (materialise)."""
        name = self.name(number)
        if name != source.name:
            self.unstaged[name] = source
        self.digests[name] = digest
        size = len(self.headers[ns]) + body_bytes + len(self.footer)
        self.done.append(PartInfo(name, count, size, newest))

    def name_parts(self, single: str | None) -> None:
        """The part files' names made final: `single`, the entry file's name when the set is
        this one part (renamed to it), else None. A part staged as a published file of
        another name than its final one is copied now (materialise); one of its own name is
        left unwritten (the publish keeps the published file)."""
        final = {} if single is None else {self.done[0].name: single}
        for name, source in list(self.unstaged.items()):
            if source.name != final.get(name, name):
                self.materialise(name)
        if single is None:
            return
        info = self.done[0]
        if self.unstaged.pop(info.name, None) is None:  # (else it is the file published)
            os.replace(self.staging / info.name, self.staging / single)
        digest = self.digests.pop(info.name, None)
        if digest is not None:
            self.digests[single] = digest
        self.done[0] = replace(info, name=single)

    def materialise(self, name: str) -> None:
        """Write part ``name``, staged as a published file of another name, as a copy of
        that file, checked against the digest it was staged with: a SitemapOutError when
        the file is no longer those bytes (replaced since)."""
        source = self.unstaged.pop(name)
        target = self.staging / name
        try:
            with open(source, "rb") as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, COPY_CHUNK)
                dst.flush()
                os.fsync(dst.fileno())
        except OSError:
            raise changed(source) from None
        if part_digest(target) != self.digests[name]:
            raise changed(source)

    def restamp(self, when: datetime) -> None:
        """Give every part staged so far ``when`` as its index ``<lastmod>``."""
        self.done[:] = [replace(info, newest_lastmod=when) for info in self.done]

    def discard(self) -> None:
        """Close the open part's body file (an abort: the staging folder goes whole)."""
        if self._part is not None:
            self._part.body.close()
            self._part = None

    def write_body(self, name: str, header: bytes, body_path: Path) -> None:
        """The staged file name: header, the body streamed from body_path, footer; fsynced.
        The body file is deleted."""
        with open(body_path, "rb") as body:
            self.write(name, header, iter(functools.partial(body.read, COPY_CHUNK), b""))
        body_path.unlink()

    def write(self, name: str, header: bytes, chunks: Iterable[bytes]) -> bytes:
        """The staged file name: header, chunks, footer, through gzip when on (mtime 0, so
        the same entries make the same bytes); fsynced. The SHA-256 of its uncompressed
        bytes, which tells an unchanged part of a stable layout."""
        sha = hashlib.sha256(header)
        with open(self.staging / name, "wb") as raw:
            sink: BinaryIO = raw
            if self.gzip:
                sink = gziplib.GzipFile(  # type: ignore[assignment]
                    filename="", mode="wb", fileobj=raw, compresslevel=self.compresslevel, mtime=0
                )
            sink.write(header)
            for chunk in chunks:
                sink.write(chunk)
                sha.update(chunk)
            sink.write(self.footer)
            sha.update(self.footer)
            if sink is not raw:
                sink.close()
            raw.flush()
            os.fsync(raw.fileno())
        return sha.digest()
