"""JSON text exactly as JavaScript's ``JSON.stringify`` writes it (what the Node client sends), and
a strict reader (``JSON.parse`` of UTF-8).

``JSON.stringify``: no spaces, keys in their given order, non-ASCII as UTF-8 (not escaped), ``<>&``
and U+2028/U+2029 as they are, ``"`` and ``\\`` escaped, control characters as ``\\b \\f \\n \\r \\t``
or ``\\u00XX`` (lowercase), an unpaired UTF-16 surrogate as ``\\udXXX``; numbers in JavaScript's
shortest form (``1e+21``, ``1e-7``, ``100``); NaN and infinities as ``null``.
"""

from __future__ import annotations

import json
import math
from typing import Any

_SHORT = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"}


def _string(s: str, out: list[str]) -> None:
    out.append('"')
    i = 0
    n = len(s)
    start = 0
    while i < n:
        c = ord(s[i])
        if c < 0x20 or c == 0x22 or c == 0x5C:
            out.append(s[start:i])
            out.append(_SHORT.get(c) or f"\\u{c:04x}")
            start = i + 1
        elif 0xD800 <= c <= 0xDFFF:
            # a Python str may hold surrogates as code points (from "\ud83d\ude00" built by hand, or
            # a lone one decoded from JSON): a high one followed by a low one is one character to
            # JavaScript, written as UTF-8; any other is unpaired and escaped.
            if c <= 0xDBFF and i + 1 < n and 0xDC00 <= ord(s[i + 1]) <= 0xDFFF:
                out.append(s[start:i])
                out.append(chr(0x10000 + ((c - 0xD800) << 10) + (ord(s[i + 1]) - 0xDC00)))
                i += 2
                start = i
                continue
            out.append(s[start:i])
            out.append(f"\\u{c:04x}")
            start = i + 1
        i += 1
    out.append(s[start:])
    out.append('"')


def js_number(value: float | int) -> str:
    """A number as JavaScript's ``String(number)`` (and so ``JSON.stringify``) writes it."""
    if isinstance(value, bool):
        raise TypeError("a bool is not a number")
    if isinstance(value, int):
        return str(value)
    if math.isnan(value) or math.isinf(value):
        return "null"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    r = repr(abs(value))  # the shortest round-trip digits, as JavaScript picks them
    if "e" in r:
        mant, exp_s = r.split("e")
        exp = int(exp_s)
    else:
        mant, exp = r, 0
    if "." in mant:
        whole, frac = mant.split(".")
    else:
        whole, frac = mant, ""
    digits = (whole + frac).lstrip("0")
    # position of the decimal point relative to the start of `digits`
    lead_zeros = len(whole + frac) - len((whole + frac).lstrip("0"))
    point = len(whole) - lead_zeros + exp
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    n = point  # value = 0.digits * 10^n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        text = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + text


def _value(v: Any, out: list[str]) -> None:
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, str):
        _string(v, out)
    elif isinstance(v, (int, float)):
        out.append(js_number(v))
    elif isinstance(v, dict):
        out.append("{")
        first = True
        for k, item in v.items():
            if not isinstance(k, str):
                raise TypeError(f"JSON object keys must be strings, got {type(k).__name__}")
            if not first:
                out.append(",")
            first = False
            _string(k, out)
            out.append(":")
            _value(item, out)
        out.append("}")
    elif isinstance(v, (list, tuple)):
        out.append("[")
        for i, item in enumerate(v):
            if i:
                out.append(",")
            _value(item, out)
        out.append("]")
    else:
        raise TypeError(f"cannot write {type(v).__name__} as JSON")


def stringify(value: Any) -> str:
    """``JSON.stringify(value)`` for JSON values (dict keys in their order)."""
    out: list[str] = []
    _value(value, out)
    return "".join(out)


def encode_json(value: Any) -> bytes:
    """The UTF-8 bytes of ``stringify(value)``: a request body as the Node client sends it."""
    return stringify(value).encode("utf-8")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decode_json(data: bytes | str) -> Any:
    """Parses UTF-8 JSON strictly (invalid UTF-8, NaN and Infinity are refused, as ``JSON.parse`` of a
    fatal UTF-8 decode does). Raises ValueError saying why."""
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray, memoryview)) else data
    return json.loads(text, parse_constant=_no_constant)
