"""msgpack as the protocol writes it, and reading it back.

``pack`` is the canonical encoder (msgpackr's output as sessiond configures it): the smallest form of
every integer, except that an integer outside the 32-bit range (>= 2^32 or < -2^31) is always int64
(0xd3, 9 bytes), never uint64 (an integer above the int64 range, which sessiond never writes, is
uint64); integers beyond 2^53 that are floats, and every non-integral number, as float64 (0xcb);
strings, arrays and maps in their smallest header; map keys in their order; no bin, no ext. The
stock ``msgpack`` packer writes uint64 for integers >= 2^32, hence this one.

``unpack`` reads with the ``msgpack`` package and then gives values the meaning they have in the
protocol (JavaScript's): an integral float64 within the safe-integer range reads as that integer
(old frames hold ``time`` that way), map keys are strings, extension types are refused.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import msgpack  # type: ignore[import-untyped]

from .errors import EventError

_SAFE = 2**53 - 1


def _pack(v: Any, out: bytearray) -> None:
    if v is None:
        out.append(0xC0)
    elif v is True:
        out.append(0xC3)
    elif v is False:
        out.append(0xC2)
    elif isinstance(v, int):
        _int(v, out)
    elif isinstance(v, float):
        if v.is_integer() and abs(v) <= _SAFE:
            _int(int(v), out)  # a JavaScript number that is an integer packs as one
        else:
            out.append(0xCB)
            out += struct.pack(">d", v)
    elif isinstance(v, str):
        b = v.encode("utf-8", "surrogatepass")
        n = len(b)
        if n < 0x20:
            out.append(0xA0 | n)
        elif n < 0x100:
            out += bytes((0xD9, n))
        elif n < 0x10000:
            out.append(0xDA)
            out += struct.pack(">H", n)
        else:
            out.append(0xDB)
            out += struct.pack(">I", n)
        out += b
    elif isinstance(v, dict):
        n = len(v)
        if n < 0x10:
            out.append(0x80 | n)
        elif n < 0x10000:
            out.append(0xDE)
            out += struct.pack(">H", n)
        else:
            out.append(0xDF)
            out += struct.pack(">I", n)
        for k, item in v.items():
            if not isinstance(k, str):
                raise TypeError(f"map keys must be strings, got {type(k).__name__}")
            _pack(k, out)
            _pack(item, out)
    elif isinstance(v, (list, tuple)):
        n = len(v)
        if n < 0x10:
            out.append(0x90 | n)
        elif n < 0x10000:
            out.append(0xDC)
            out += struct.pack(">H", n)
        else:
            out.append(0xDD)
            out += struct.pack(">I", n)
        for item in v:
            _pack(item, out)
    else:
        raise TypeError(f"cannot pack {type(v).__name__}: frames hold only maps, arrays, strings, numbers, booleans and nil")


def _int(v: int, out: bytearray) -> None:
    if 0 <= v:
        if v < 0x80:
            out.append(v)
        elif v < 0x100:
            out += bytes((0xCC, v))
        elif v < 0x10000:
            out.append(0xCD)
            out += struct.pack(">H", v)
        elif v < 0x100000000:
            out.append(0xCE)
            out += struct.pack(">I", v)
        elif v < 2**63:
            out.append(0xD3)
            out += struct.pack(">q", v)
        elif v < 2**64:
            out.append(0xCF)
            out += struct.pack(">Q", v)
        else:
            raise OverflowError(f"integer {v} does not fit in 64 bits")
    else:
        if v >= -0x20:
            out.append(v & 0xFF)
        elif v >= -0x80:
            out.append(0xD0)
            out += struct.pack(">b", v)
        elif v >= -0x8000:
            out.append(0xD1)
            out += struct.pack(">h", v)
        elif v >= -0x80000000:
            out.append(0xD2)
            out += struct.pack(">i", v)
        elif v >= -(2**63):
            out.append(0xD3)
            out += struct.pack(">q", v)
        else:
            raise OverflowError(f"integer {v} does not fit in 64 bits")


def pack(value: Any) -> bytes:
    """The canonical msgpack bytes of a JSON-like value (dict keys in their order)."""
    out = bytearray()
    _pack(value, out)
    return bytes(out)


def _ext(code: int, data: bytes) -> Any:
    raise ValueError(f"msgpack extension type {code} (frames hold no extension types)")


def _js_key(k: Any) -> str:
    if isinstance(k, str):
        return k
    if k is True:
        return "true"
    if k is False:
        return "false"
    if k is None:
        return "null"
    if isinstance(k, float) and k.is_integer() and abs(k) <= _SAFE:
        return str(int(k))
    if isinstance(k, (int, float)):
        from .jsontext import js_number

        return js_number(k)
    raise ValueError(f"a map key of type {type(k).__name__}")


def normalize(v: Any) -> Any:
    """A decoded value as JavaScript sees it: integral floats (within 2^53) as ints, keys as strings."""
    if isinstance(v, float):
        return int(v) if v.is_integer() and abs(v) <= _SAFE else v
    if isinstance(v, dict):
        return {_js_key(k): normalize(item) for k, item in v.items()}
    if isinstance(v, list):
        return [normalize(item) for item in v]
    return v


def unpack_raw(data: bytes) -> Any:
    """The msgpack package's reading of ``data`` (one whole value; trailing bytes are an error)."""
    return msgpack.unpackb(
        data,
        raw=False,
        strict_map_key=False,
        use_list=True,
        ext_hook=_ext,
        unicode_errors="replace",
        timestamp=0,
    )


def unpack(data: bytes) -> Any:
    """Reads one msgpack value, normalized (see ``normalize``). Raises ``EventError('decode_failed')``."""
    try:
        raw = unpack_raw(bytes(data))
    except Exception as err:  # msgpack raises several kinds: all mean the bytes are not a value
        raise EventError("decode_failed", f"invalid msgpack ({type(err).__name__}: {err})") from err
    if isinstance(raw, msgpack.Timestamp):
        raise EventError("decode_failed", "invalid msgpack (a timestamp extension, frames hold no extension types)")
    try:
        return normalize(_no_timestamps(raw))
    except ValueError as err:
        raise EventError("decode_failed", f"invalid msgpack ({err})") from err


def _no_timestamps(v: Any) -> Any:
    if isinstance(v, msgpack.Timestamp):
        raise ValueError("a timestamp extension: frames hold no extension types")
    if isinstance(v, dict):
        for k, item in v.items():
            _no_timestamps(k)
            _no_timestamps(item)
    elif isinstance(v, list):
        for item in v:
            _no_timestamps(item)
    return v


def is_whole(value: Any) -> bool:
    """JavaScript's ``Number.isInteger`` (bools are not numbers)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()


def is_safe_int(value: Any) -> bool:
    """``Number.isSafeInteger`` (what zod's ``int()`` accepts)."""
    return is_whole(value) and abs(value) <= _SAFE
