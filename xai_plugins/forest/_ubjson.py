"""A decoder for the UBJSON document of XGBoost's ``save_raw(raw_format="ubj")``."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from ..errors import UnsupportedModelError

__all__: list[str] = []      # internal module: the public names are in the API reference

# UBJSON number markers -> big-endian struct and numpy codes (the format stores numbers big-endian)
_UBJ_NUMBERS = {ord(marker): code for marker, code in
                {"i": ">b", "U": ">B", "I": ">h", "l": ">i", "L": ">q", "d": ">f", "D": ">d"}.items()}
_UBJ_STRUCTS = {marker: struct.Struct(code) for marker, code in _UBJ_NUMBERS.items()}
_UBJ_CONSTANTS = {ord("T"): True, ord("F"): False, ord("Z"): None}


def decode_ubjson(data: Any, skip: frozenset[str] = frozenset(), *, views: bool = False):
    """Decode the UBJSON document of XGBoost's ``save_raw(raw_format="ubj")`` (any object exporting a
    byte buffer): objects as dicts, typed arrays (``[$d#…``) as numpy arrays read straight from the
    bytes (exact: float32 thresholds keep their bits), other arrays as lists. Members of any object
    named in ``skip`` are read past and left out. ``data`` is read in place (not copied); it is not
    held after the call, unless ``views``: then each typed array is a read-only big-endian view into
    ``data`` (no copy at all), valid as long as ``data``'s buffer is."""
    if views:
        return _decode(memoryview(data).cast("B"), skip, views)
    with memoryview(data).cast("B") as buf:
        return _decode(buf, skip, views)


def _decode(buf: memoryview, skip: frozenset[str], views: bool):
    """The value the document in ``buf`` holds (see :func:`decode_ubjson`)."""
    return _value(buf, 1, buf[0], skip, views)[0]


_STRING, _ARRAY, _OBJECT, _END_ARRAY, _END_OBJECT, _TYPE, _COUNT = map(ord, "S[{]}$#")


def _length(buf: memoryview, pos: int) -> tuple[int, int]:
    """The length stored at ``pos`` (a number with its marker) and the position after it."""
    packed = _UBJ_STRUCTS[buf[pos]]
    return packed.unpack_from(buf, pos + 1)[0], pos + 1 + packed.size


def _value(buf: memoryview, pos: int, marker: int, skip: frozenset[str], views: bool):
    """The value of type ``marker`` whose payload starts at ``pos``, and the position after it (module-level
    recursion: a nested closure would be a reference cycle holding ``buf`` until a garbage collection)."""
    packed = _UBJ_STRUCTS.get(marker)
    if packed is not None:
        return packed.unpack_from(buf, pos)[0], pos + packed.size
    if marker in _UBJ_CONSTANTS:
        return _UBJ_CONSTANTS[marker], pos
    if marker == _STRING:
        n, pos = _length(buf, pos)
        return str(buf[pos:pos + n], "utf-8"), pos + n
    if marker != _ARRAY and marker != _OBJECT:
        raise UnsupportedModelError(f"unexpected UBJSON marker {chr(marker)!r} in the XGBoost model")
    kind = count = None
    if buf[pos] == _TYPE:
        kind, pos = buf[pos + 1], pos + 2
    if buf[pos] == _COUNT:
        count, pos = _length(buf, pos + 1)
    if kind is not None and count is None:
        raise UnsupportedModelError("malformed UBJSON in the XGBoost model: a typed container without a count")
    if marker == _ARRAY and kind in _UBJ_NUMBERS and count is not None:        # a typed array: one numpy read
        dtype = np.dtype(_UBJ_NUMBERS[kind])
        out = np.frombuffer(buf, dtype=dtype, count=count, offset=pos)
        if views:
            out.flags.writeable = False
        else:
            out = out.astype(dtype.newbyteorder("="))
        return out, pos + count * dtype.itemsize
    items: list = []
    names: list = []
    read = 0
    while read != count and (count is not None or buf[pos] not in (_END_ARRAY, _END_OBJECT)):
        read += 1
        if marker == _OBJECT:
            n, pos = _length(buf, pos)
            names.append(str(buf[pos:pos + n], "utf-8"))
            pos += n
        if kind is None:
            item, pos = _value(buf, pos + 1, buf[pos], skip, views)
        else:
            item, pos = _value(buf, pos, kind, skip, views)
        if marker != _OBJECT or names[-1] not in skip:
            items.append(item)
        else:
            names.pop()
    pos += count is None                                     # the closing ] or }
    return (dict(zip(names, items)) if marker == _OBJECT else items), pos
