"""A published part read again beside the entries a stable layout routes to it.

While every entry routed to an old part is the next entry of its published file, byte for
byte, nothing is written for it: the layout keeps no scratch record of it, and a part whose
entries all were, and nothing more, is that file itself (staged as a copy of it, or not at
all where it keeps its name). On a night that changed nothing, routing every entry to a
scratch file, reading it back and staging it again came to a fifth of the publish (#26).

The first entry that differs ends the match for good; the entries matched before it are
read again from the published file when the part's records are read (`prefix`), so the
probe holds only their sizes and namespaces (5 bytes an entry), never the entries. The file
is opened for each chunk read, as scratch files are, so that a layout of thousands of parts
holds no descriptor between reads. It reads the file only while the file's size, mtime and
inode are those it had when the publish read it first (OldPart.stamp), so that the bytes
matched are those the part's digest is of.
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

from sitemap_out.errors import SitemapOutError
from sitemap_out.previous import file_stamp
from sitemap_out.scratch import Rec

__all__ = ["PartProbe"]

#: The first two bytes of a gzip member: a published part is read through gzip when it
#: starts so (as sitemap_out.previous reads it).
_GZIP_MAGIC: Final = b"\x1f\x8b"
#: The most bytes one read inflates, in chunks: a small gzipped chunk of the same bytes over
#: and over inflates a thousandfold
_INFLATED: Final = 4


class _Reader:
    """A file's bytes from its start, gunzipped when gzipped, a chunk at a time; the file
    opened for each chunk. `done` once the file (or its one gzip member) is read whole;
    `clean` then says whether nothing followed that member."""

    __slots__ = ("_chunk", "_inflate", "_path", "_pos", "clean", "done")

    def __init__(self, path: Path, chunk: int) -> None:
        self._path = path
        self._chunk = chunk
        self._pos = 0  # the file's bytes read so far
        self._inflate: Any = None  # a zlib decompressor, for a gzipped file
        self.done = False
        self.clean = True

    def read(self) -> bytes:
        """The next bytes (b"" once done): at most _INFLATED times the chunk a call."""
        while not self.done:
            inflate = self._inflate
            if inflate is not None and inflate.unconsumed_tail:
                raw = inflate.unconsumed_tail
            else:
                with open(self._path, "rb", buffering=0) as fh:
                    fh.seek(self._pos)
                    raw = fh.read(self._chunk)
                if self._pos == 0 and raw[:2] == _GZIP_MAGIC:
                    self._inflate = inflate = zlib.decompressobj(31)
                self._pos += len(raw)
                if inflate is None:
                    if not raw:
                        self.done = True
                    return raw
            out = inflate.decompress(raw, self._chunk * _INFLATED)
            if inflate.eof:  # one member, as our writer writes; anything after it is more
                self.done = True
                self.clean = not inflate.unused_data and not self._rest()
            elif not raw:  # the file ends inside the member
                self.done, self.clean = True, False
            if out:
                return out
        return b""

    def _rest(self) -> bool:
        with open(self._path, "rb", buffering=0) as fh:
            fh.seek(self._pos)
            return bool(fh.read(1))


class PartProbe:
    """Whether the entries routed to one old part are its published file's, in order.
    `stamp`: the file's when it was read first (None: not known, then nothing matches);
    `headers`: the header a part starts with, by the namespaces its entries use (one of
    them is the published file's, or the probe never matches); `loc_of`: an entry's loc
    from its serialised bytes (Parts.loc_of)."""

    __slots__ = (
        "_at",
        "_buffer",
        "_chunk",
        "_header",
        "_headers",
        "_loc_of",
        "_ns",
        "_path",
        "_reader",
        "_sizes",
        "_stamp",
        "count",
        "matching",
    )

    def __init__(
        self,
        path: Path,
        stamp: tuple[int, int, int] | None,
        headers: dict[int, bytes],
        loc_of: Callable[[bytes], str],
        chunk: int,
    ) -> None:
        self._path = path
        self._stamp = stamp
        self._headers = headers
        self._loc_of = loc_of
        self._chunk = chunk
        self._reader: _Reader | None = None
        self._buffer = b""
        self._at = 0  # where the bytes not yet matched start in _buffer
        self._header: bytes | None = None  # the published file's, once read
        self._sizes = array("I")  # each matched entry's size
        self._ns = bytearray()  # and its namespaces
        self.count = 0  # the entries matched
        self.matching = True

    def feed(self, data: bytes, ns: int) -> bool:
        """Whether `data`, the next entry routed to the part, is the next entry of its
        file (then it is matched); once one is not, no later one is."""
        if not self.matching:
            return False
        if self._reader is None and not self._start():
            return False
        size = len(data)
        if len(self._buffer) - self._at < size:
            try:
                self._fill(size)
            except OSError:  # (gone: the entries matched fail to be read again, if any)
                self._stop()
                return False
        if self._buffer.startswith(data, self._at):
            self._at += size
            self._sizes.append(size)
            self._ns.append(ns)
            self.count += 1
            return True
        self._stop()
        return False

    def complete(self, header: bytes, footer: bytes) -> bool:
        """Whether the published file is `header`, the entries matched and `footer`, and
        nothing else: then a part of these bytes is that file."""
        if not self.matching or self._reader is None or header != self._header:
            return False
        try:
            self._fill(len(footer) + 1)
            whole = (
                self._buffer[self._at :] == footer
                and self._reader.done
                and self._reader.clean
                and file_stamp(self._path) == self._stamp
            )
        except OSError:
            whole = False
        self._stop()  # (matching holds no more bytes: the file is known)
        self.matching = whole
        return whole

    def prefix(self) -> Iterator[Rec]:
        """The entries matched, as records, read again from the published file."""
        if not self.count:
            return
        assert self._header is not None
        if file_stamp(self._path) != self._stamp:
            raise SitemapOutError(f"{self._path.name} changed while this run published")
        reader = _Reader(self._path, self._chunk)
        buffer, at, skip = b"", 0, len(self._header)  # (before the first entry: the header)
        loc_of, ns = self._loc_of, self._ns
        for index, size in enumerate(self._sizes):
            while len(buffer) - at < skip + size:
                more = reader.read()
                if not more:
                    raise SitemapOutError(f"{self._path.name} changed while this run published")
                buffer, at = buffer[at:] + more, 0
            at, skip = at + skip, 0
            data = buffer[at : at + size]
            at += size
            yield loc_of(data), data, ns[index]

    def _start(self) -> bool:
        """Read the file's first bytes and find which header it starts with."""
        self._reader = _Reader(self._path, self._chunk)
        longest = max(map(len, self._headers.values()))
        try:
            if self._stamp is None or file_stamp(self._path) != self._stamp:
                raise OSError  # not the file read first: nothing is matched
            self._fill(longest)
        except OSError:
            self._stop()
            return False
        for header in self._headers.values():
            if self._buffer.startswith(header):
                self._header, self._at = header, len(header)
                return True
        self._stop()
        return False

    def _fill(self, size: int) -> None:
        """Read until `size` bytes past _at are held, or the file ends."""
        reader = self._reader
        assert reader is not None
        while len(self._buffer) - self._at < size and not reader.done:
            more = reader.read()
            if not more:
                break
            self._buffer = self._buffer[self._at :] + more
            self._at = 0

    def _stop(self) -> None:
        self.matching = False
        self._buffer, self._at = b"", 0
