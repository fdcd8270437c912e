"""Dataclasses across a pipe or a file, encoded from their fields.

A record that crosses a process or a file is a dataclass, packed here as a version and its
field values in declaration order, with the field names' digest, and unpacked by the same
class: a field added to the class is carried by both sides at once, and a reader of another
shape refuses the data instead of reading one field as another (as positional tuples did).
Values must be marshal-able (None, bool, int, float, str, bytes and lists/tuples of them).
"""

from __future__ import annotations

import dataclasses
import hashlib
import marshal
from typing import Any, TypeVar

__all__ = ["WireError", "pack", "unpack"]

T = TypeVar("T")


class WireError(ValueError):
    """Data packed by another shape of the record (another version of the program)."""


_shapes: dict[type, tuple[tuple[str, ...], int]] = {}


def _shape(cls: type) -> tuple[tuple[str, ...], int]:
    """The field names of a dataclass, and a 32-bit tag of them (its wire version)."""
    shape = _shapes.get(cls)
    if shape is None:
        names = tuple(f.name for f in dataclasses.fields(cls))
        tag = int.from_bytes(hashlib.sha256(" ".join(names).encode()).digest()[:4], "little")
        shape = _shapes[cls] = names, tag
    return shape


def pack(record: Any) -> bytes:
    """The record as bytes: its shape's tag, then its field values."""
    names, tag = _shape(type(record))
    return marshal.dumps((tag, *[getattr(record, name) for name in names]))


def unpack(cls: type[T], data: bytes) -> T:
    """The record `pack` made of an instance of cls; WireError if it was another shape."""
    names, tag = _shape(cls)
    try:
        values = marshal.loads(data)
    except (EOFError, ValueError, TypeError) as exc:
        raise WireError(f"not a packed {cls.__name__}: {exc}") from None
    if not isinstance(values, tuple) or len(values) != len(names) + 1 or values[0] != tag:
        raise WireError(f"not a packed {cls.__name__} of this version")
    return cls(*values[1:])
