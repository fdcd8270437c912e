"""Dataclasses across a pipe or a file, encoded from their fields.

A record that crosses a process or a file is a dataclass, packed here as a tag and its field
values in declaration order, and unpacked by the same class: a field added to the class is
carried by both sides at once, and a reader of another shape refuses the data instead of
reading one field as another (as positional tuples did). The tag is a digest of the class's
name and field names, nested records' included, so it also tells which record a message is.
Values are marshal-able (None, bool, int, float, str, bytes, lists and tuples of them),
dataclasses (or None) of such values, or tuples of such dataclasses (`tuple[Record, ...]`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import marshal
import operator
import types
import typing
from typing import Any, TypeVar

__all__ = ["WireError", "pack", "tag", "unpack", "unpack_any"]

T = TypeVar("T")


class WireError(ValueError):
    """Data packed by another shape of the record (another version of the program)."""


#: A field holding records: their class, and whether a tuple of them (else one, or None).
Nested = tuple[type, bool]
# class -> (field names, tag, records per field or None)
_shapes: dict[type, tuple[tuple[str, ...], int, tuple[Nested | None, ...]]] = {}


def _nested(hint: Any) -> Nested | None:
    """The dataclass a field holds, when it holds one (or None: `X | None`), or a tuple of
    (`tuple[X, ...]`). Any other collection of dataclasses is refused when the shape is
    made, so it fails at once in any test, not when a worker first meets one."""
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return hint, False
    args = typing.get_args(hint)
    if typing.get_origin(hint) is tuple and len(args) == 2 and args[1] is Ellipsis:
        kind = args[0]
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            return kind, True
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        found = [a for a in args if isinstance(a, type) and dataclasses.is_dataclass(a)]
        others = [a for a in args if a not in found and a is not type(None)]
        if found and (len(found) > 1 or others):
            raise TypeError(f"only `Record | None` can hold a record: {hint}")
        for arg in others:
            _nested(arg)  # a collection of records inside, refused
        return (found[0], False) if found else None
    if any(_holds_record(arg) for arg in args):
        raise TypeError(f"a collection of dataclasses cannot be packed: {hint}")
    return None


def _holds_record(hint: Any) -> bool:
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return True
    return any(_holds_record(arg) for arg in typing.get_args(hint))


def _shape(cls: type) -> tuple[tuple[str, ...], int, tuple[Nested | None, ...]]:
    shape = _shapes.get(cls)
    if shape is None:
        hints = typing.get_type_hints(cls)
        if type in hints.values():  # mypyc's native classes keep `type` for `X | None`
            raise TypeError(f"{cls.__qualname__}'s annotations are gone: is its module compiled?")
        names = tuple(f.name for f in dataclasses.fields(cls))
        nested = tuple(_nested(hints[name]) for name in names)
        inner = [f"{_shape(n[0])[1]}{'*' if n[1] else ''}" for n in nested if n is not None]
        words = [cls.__name__, *names, *inner]
        digest = hashlib.sha256(" ".join(words).encode()).digest()
        shape = _shapes[cls] = names, int.from_bytes(digest[:4], "little"), nested
    return shape


def tag(cls: type) -> int:
    """The 32-bit tag packed records of cls start with."""
    return _shape(cls)[1]


# class -> a getter of its field values as a tuple (operator.attrgetter: in C), and its
# nested records' fields: (position, class, a tuple of them, the field's shared default and
# its packed values); a flat record (most) is packed and built in one call each
Inner = tuple[int, type, bool, Any, Any]
_access: dict[type, tuple[Any, tuple[Inner, ...]]] = {}


def _shared(field: dataclasses.Field[Any]) -> tuple[Any, Any]:
    """A field's default when it is a record that can be shared (frozen, hashable: e.g.
    `NO_DIRECTIVES`, which nearly every page's two Directives are), and its packed values:
    packed by identity and built back as that one instance, not made again per record."""
    default = field.default
    if not dataclasses.is_dataclass(default) or isinstance(default, type):
        return None, None
    if not type(default).__dataclass_params__.frozen:  # type: ignore[attr-defined]
        return None, None
    try:
        hash(default)
    except TypeError:  # a frozen record holding a list: not shared
        return None, None
    return default, _values(default)


def _accessors(cls: type) -> tuple[Any, tuple[Inner, ...]]:
    access = _access.get(cls)
    if access is None:
        names, _, nested = _shape(cls)
        get = operator.attrgetter(*names) if len(names) > 1 else (lambda r: (getattr(r, names[0]),))
        fields = dataclasses.fields(cls)
        inner = tuple(
            (i, kind[0], kind[1], *((None, None) if kind[1] else _shared(fields[i])))
            for i, kind in enumerate(nested)
            if kind is not None
        )
        access = _access[cls] = get, inner
    return access


def _values(record: Any) -> tuple[Any, ...]:
    get, inner = _accessors(type(record))
    values: tuple[Any, ...] = get(record)
    if inner:
        listed = list(values)
        for i, _, many, shared, packed in inner:
            value = listed[i]
            if value is None:
                continue
            if value is shared:
                listed[i] = packed
            else:
                listed[i] = tuple(map(_values, value)) if many else _values(value)
        values = tuple(listed)
    return values


def _build(cls: type[T], values: Any) -> T:
    names = _shape(cls)[0]
    if not isinstance(values, tuple) or len(values) != len(names):
        raise WireError(f"not a packed {cls.__name__} of this version")
    inner = _accessors(cls)[1]
    if inner:
        listed = list(values)
        for i, kind, many, shared, packed in inner:
            value = listed[i]
            if value is None:
                continue
            if many:
                if not isinstance(value, tuple):
                    raise WireError(f"not a packed {cls.__name__} of this version")
                listed[i] = tuple(_build(kind, item) for item in value)
            elif shared is not None and value == packed:
                listed[i] = shared
            else:
                listed[i] = _build(kind, value)
        return cls(*listed)
    return cls(*values)


def pack(record: Any) -> bytes:
    """The record as bytes: its shape's tag, then its field values."""
    return marshal.dumps((tag(type(record)), _values(record)))


def _load(data: bytes) -> tuple[int, Any]:
    try:
        message = marshal.loads(data)
    except (EOFError, ValueError, TypeError) as exc:
        raise WireError(f"not a packed record: {exc}") from None
    if not isinstance(message, tuple) or len(message) != 2:
        raise WireError("not a packed record")
    return message[0], message[1]


def unpack(cls: type[T], data: bytes) -> T:
    """The record `pack` made of an instance of cls; WireError if it was another shape."""
    got, values = _load(data)
    if got != tag(cls):
        raise WireError(f"not a packed {cls.__name__} of this version")
    return _build(cls, values)


def unpack_any(classes: tuple[type, ...], data: bytes) -> Any:
    """The record `pack` made of an instance of one of classes, whichever its tag names."""
    got, values = _load(data)
    for cls in classes:
        if tag(cls) == got:
            return _build(cls, values)
    raise WireError(f"not a packed {' or '.join(c.__name__ for c in classes)}")
