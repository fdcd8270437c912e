"""A published part read again beside the entries a stable layout routes to it.

While every entry routed to an old part is the next entry of its published file, byte for
byte, nothing is written for it: the layout keeps no scratch record of it, and a part whose
entries all were, and nothing more, is that file itself, not staged again (a single
sitemap.xml that becomes an index's first part is copied: Parts.materialise). On a night
that changed nothing, routing every entry to a scratch file, reading it back and staging it
again came to a fifth of the publish (#26).

The bytes read are hashed as they are read: a part is the published file only if they are
the bytes its digest (OldPart.digest, which the manifest records) is of, so a file replaced
or rewritten since the publish read it first is never taken for the part, and one merely
touched still is. The first entry that differs ends the match for good; the entries matched
before it are read again from the file when the part's records are needed (`prefix`), each
stretch checked by the CRC-32 it had (or the publish fails rather than list other bytes).
The probe holds their sizes and namespaces only (5 bytes an entry matched), never the
entries. Its reading window and decompressor go once its part's last entry matched (its URL
count is known) or the match ended, and the layout lets at most a few read at once, stopping
the one begun first for a new one. The file is opened for each chunk read, as scratch files
are, so that a layout of thousands of parts holds no descriptor between reads.
"""

from __future__ import annotations

import hashlib
import zlib
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

from sitemap_out.errors import SitemapOutError
from sitemap_out.scratch import Rec

__all__ = ["PartProbe", "changed"]

#: The first two bytes of a gzip member: a published part is read through gzip when it
#: starts so (as sitemap_out.previous reads it).
_GZIP_MAGIC: Final = b"\x1f\x8b"
#: One read inflates to at most this many chunks: a small gzipped chunk of the same bytes
#: over and over inflates a thousandfold
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
        """The next bytes (b"" once done). OSError, zlib.error: as the file's reading says."""
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


def changed(path: Path) -> SitemapOutError:
    """The error of a published file that is no longer the bytes a publish read first."""
    return SitemapOutError(
        f"{path.name} changed while this run published: run again (the published set is as it was)"
    )


class PartProbe:
    """Whether the entries routed to one old part are its published file's, in order.
    `digest`: the SHA-256 of the file's bytes as the publish first read them, and `count`
    its entries (OldPart's); `headers`: the header a part starts with, by the namespaces its
    entries use (one of them is the file's, or nothing matches), and `footer` its end;
    `loc_of`: an entry's loc from its serialised bytes (Parts.loc_of)."""

    __slots__ = (
        "_at",
        "_buffer",
        "_chunk",
        "_count",
        "_digest",
        "_footer",
        "_header",
        "_headers",
        "_loc_of",
        "_ns",
        "_path",
        "_reader",
        "_segments",
        "_sha",
        "_sizes",
        "_whole",
        "count",
        "matching",
    )

    def __init__(
        self,
        path: Path,
        digest: bytes,
        count: int,
        headers: dict[int, bytes],
        footer: bytes,
        loc_of: Callable[[bytes], str],
        chunk: int,
    ) -> None:
        self._path = path
        self._digest = digest
        self._count = count
        self._headers = headers
        self._footer = footer
        self._loc_of = loc_of
        self._chunk = chunk
        self._reader: _Reader | None = None
        self._buffer = b""
        self._at = 0  # where the bytes not yet matched start in _buffer
        self._header: bytes | None = None  # the published file's, once read
        self._sha = hashlib.sha256()  # of the bytes the window moved past
        self._sizes = array("I")  # each matched entry's size
        self._ns = bytearray()  # and its namespaces
        #: the bytes the window moved past (the header, then entries matched, whole), a
        #: stretch at a time: its size and CRC-32, by which prefix() checks them again
        self._segments = array("I")
        self._whole = False  # the file is its header, the entries matched and the footer
        self.count = 0  # the entries matched
        self.matching = True

    def feed(self, data: bytes, ns: int) -> bool:
        """Whether `data`, the next entry routed to the part, is the next entry of its
        file (then it is matched); once one is not, no later one is."""
        if not self.matching or (self._reader is None and not self._start()):
            return False
        size = len(data)
        try:
            if len(self._buffer) - self._at < size:
                self._fill(size)
        except (OSError, zlib.error):  # (unreadable now: the entries matched must be read
            self.stop()  # again, and prefix says so if they cannot)
            return False
        if not self._buffer.startswith(data, self._at):
            self.stop()
            return False
        self._at += size
        self._sizes.append(size)
        self._ns.append(ns)
        self.count += 1
        if self.count == self._count:  # its last entry, unless more come: read the end
            try:
                self._finish()
            except (OSError, zlib.error):  # matched all the same, but not the whole file
                self.stop()
        return True

    def complete(self, header: bytes) -> bool:
        """Whether the published file is `header`, the entries matched and the footer, and
        nothing else, and those are the bytes of its digest: then a part of these entries,
        under that header, is that file."""
        return self._whole and header == self._header and self.count == self._count

    def stop(self) -> None:
        """No more entries are matched: the reading window and the decompressor go."""
        self._passed()
        self.matching = False
        self._reader = None
        self._buffer, self._at = b"", 0

    @property
    def reading(self) -> bool:
        """Whether it holds a reading window (the layout bounds how many do)."""
        return self._reader is not None

    def prefix(self) -> Iterator[Rec]:
        """The entries matched, as records, read again from the published file, each
        stretch checked by its CRC-32 before its entries are given: a SitemapOutError at
        the first that is not the bytes matched (the file rewritten since)."""
        if not self.count:
            return
        if self.matching:
            self.stop()
        assert self._header is not None
        reader = _Reader(self._path, self._chunk)
        pending, entry, skip = b"", 0, len(self._header)  # (the header opens the first)
        sizes, ns, loc_of, segments = self._sizes, self._ns, self._loc_of, self._segments
        for at in range(0, len(segments), 2):
            length = segments[at]
            try:
                while len(pending) < length:
                    more = reader.read()
                    if not more:
                        raise EOFError
                    pending += more
                stretch, pending = pending[:length], pending[length:]
                if zlib.crc32(stretch) != segments[at + 1]:
                    raise EOFError
            except (OSError, EOFError, zlib.error):
                raise changed(self._path) from None
            here, skip = skip, 0
            while here < length:
                size = sizes[entry]
                data = stretch[here : here + size]
                here += size
                try:
                    rec = (loc_of(data), data, ns[entry])
                except ValueError:  # (UnicodeDecodeError too: never, its CRC said so)
                    raise changed(self._path) from None
                entry += 1
                yield rec

    def _passed(self) -> None:
        """The window moves past the bytes before _at (matched): hashed, and kept as a
        stretch for prefix() to check."""
        passed = self._buffer[: self._at]
        if passed:
            self._sha.update(passed)
            self._segments.append(len(passed))
            self._segments.append(zlib.crc32(passed))

    def _start(self) -> bool:
        """Read the file's first bytes and find which header it starts with."""
        self._reader = _Reader(self._path, self._chunk)
        try:
            self._fill(max(map(len, self._headers.values())))
        except (OSError, zlib.error):
            self.stop()
            return False
        for header in self._headers.values():
            if self._buffer.startswith(header):
                self._header, self._at = header, len(header)
                return True
        self.stop()
        return False

    def _finish(self) -> None:
        """Every entry the file had is matched: read its end now, and let the reading go."""
        footer = self._footer
        self._fill(len(footer) + 1)
        reader = self._reader
        assert reader is not None
        self._passed()
        rest = self._buffer[self._at :]
        whole = self._sha.copy()
        whole.update(rest)  # the file: its header, the entries matched, and what follows
        self._whole = (
            rest == footer and reader.done and reader.clean and whole.digest() == self._digest
        )
        self._buffer, self._at = b"", 0  # (passed already)
        self.stop()

    def _fill(self, size: int) -> None:
        """Read until `size` bytes past _at are held, or the file ends; the bytes matched
        before _at are hashed as the window moves past them."""
        reader = self._reader
        assert reader is not None
        while len(self._buffer) - self._at < size and not reader.done:
            more = reader.read()
            if not more:
                break
            self._passed()
            self._buffer = self._buffer[self._at :] + more
            self._at = 0
