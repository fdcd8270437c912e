"""Scratch files of records in a staging folder: what a stable layout routes to each part.

A record is ``RECORD`` (loc length, serialised length, namespaces) then the loc then the
serialised ``<url>``. A layout of thousands of parts cannot keep a file open per part (the
descriptors, and 64 KiB of buffer each), so at most ``max_open`` are open for writing at a
time, the least recently used closed first; the input comes in loc order and old parts
hold ranges of it, so few are busy at a time. Reading opens a file for each chunk, so a
merge of thousands of them holds no descriptor between reads.
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Final

from sitemap_out.errors import SitemapOutError

__all__ = ["CHUNK", "MAX_OPEN", "Bucket", "Rec", "Scratch", "loc_of", "read_chunks", "tagged_merge"]

#: A routed entry in a scratch file: loc length, serialised length, namespaces (xml.NS_*).
RECORD: Final = struct.Struct("<IIB")
MAX_OPEN: Final = 64
CHUNK: Final = 1 << 16

#: A routed entry read back: loc, serialised bytes, namespaces.
Rec = tuple[str, bytes, int]


def read_chunks(path: Path, size: int = CHUNK) -> Iterator[bytes]:
    """A file's bytes a chunk at a time, opening it for each chunk."""
    pos = 0
    while True:
        with open(path, "rb", buffering=0) as fh:
            fh.seek(pos)
            chunk = fh.read(size)
        if not chunk:
            return
        pos += len(chunk)
        yield chunk


class Scratch:
    """The scratch files of one run, and the shared rule on how many are open at once."""

    __slots__ = ("chunk", "folder", "max_open", "open")

    def __init__(self, folder: Path, max_open: int = MAX_OPEN, chunk: int = CHUNK) -> None:
        self.folder = folder
        self.max_open = max_open
        self.chunk = chunk
        self.open: dict[Bucket, None] = {}  # the buckets open for writing, oldest first

    def bucket(self, name: str) -> Bucket:
        return Bucket(self.folder / name, self)

    def records(self, path: Path, skip: int = 0) -> Iterator[Rec]:
        """The records of a bucket file in order, after the first ``skip``."""
        head = RECORD.size
        unpack = RECORD.unpack_from
        buffer = b""
        at = 0
        n = 0
        chunks = read_chunks(path, self.chunk)
        while True:
            if len(buffer) - at >= head:
                loc_len, size, ns = unpack(buffer, at)
                end = at + head + loc_len + size
                if len(buffer) >= end:
                    if n >= skip:
                        loc = buffer[at + head : at + head + loc_len].decode()
                        yield loc, buffer[end - size : end], ns
                    n += 1
                    at = end
                    continue
            chunk = next(chunks, None)
            if chunk is None:
                if at != len(buffer):
                    raise SitemapOutError(f"scratch file {path.name} ends inside a record")
                return
            buffer = buffer[at:] + chunk
            at = 0

    def close_all(self) -> None:
        for bucket in list(self.open):
            bucket.close()


class Bucket:
    """The entries routed to one part of a stable layout, in loc order. Opened when
    written to, and closed by the least recently used rule of its Scratch."""

    __slots__ = ("count", "fh", "ns", "path", "scratch", "size")

    def __init__(self, path: Path, scratch: Scratch) -> None:
        self.path = path
        self.scratch = scratch
        self.fh: BinaryIO | None = None
        self.count = 0
        self.size = 0  # the serialised entries' bytes, all told
        self.ns = 0  # the namespaces they use, all told
        path.touch()

    def write(self, loc: str, data: bytes, ns: int) -> None:
        fh = self.fh
        opened = self.scratch.open
        if fh is None:
            if len(opened) >= self.scratch.max_open:
                next(iter(opened)).close()
            fh = self.fh = open(self.path, "ab", buffering=self.scratch.chunk)  # noqa: SIM115
        else:
            del opened[self]
        opened[self] = None  # the most recently used, last
        raw = loc.encode()
        fh.write(RECORD.pack(len(raw), len(data), ns) + raw + data)
        self.count += 1
        self.size += len(data)
        self.ns |= ns

    def held(self, size: int, ns: int) -> None:
        """One more entry routed here that is not written (sitemap_out.probe holds it)."""
        self.count += 1
        self.size += size
        self.ns |= ns

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()
            self.fh = None
            self.scratch.open.pop(self, None)


def loc_of(rec: Rec) -> str:
    return rec[0]


def tagged_merge(first: Iterator[Rec], second: Iterator[Rec]) -> Iterator[tuple[int, Rec]]:
    """Two record streams in loc order merged, each record tagged 0 or 1 by its source."""
    return heapq.merge(
        ((0, rec) for rec in first), ((1, rec) for rec in second), key=lambda t: t[1][0]
    )
