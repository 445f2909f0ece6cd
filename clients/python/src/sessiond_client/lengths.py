"""How long a string is, and where it is cut, as sessiond counts: its schemas (zod 4's string min and
max) count Unicode code points; its hand-written checks and the text its messages show of a value
count UTF-16 units (JavaScript's ``.length`` and ``.slice``). A str may hold surrogates as code
points: a lone one (from a JSON ``"\\ud800"``), or a high one then a low one, which JavaScript reads as
one character."""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")


def utf16_len(s: str) -> int:
    """A string's length in UTF-16 units, as JavaScript's ``.length`` counts it: what sessiond's
    hand-written command checks measure (a tag value's 256 in src/events/tags.ts), unlike its
    schemas (``code_points``)."""
    return sum(2 if ord(c) > 0xFFFF else 1 for c in s)


def code_points(s: str) -> int:
    """A string's length as zod 4's string min and max measure it (the catalog's schemas): Unicode
    code points of the string JavaScript holds, so a character outside the BMP (an emoji) is one, not
    the two UTF-16 units of its ``.length``. A lone surrogate is one; a high surrogate followed by a
    low one is one, the character JavaScript makes of them."""
    n = len(s)
    if not _SURROGATE.search(s):
        return n
    i = 0
    while i < len(s) - 1:
        if 0xD800 <= ord(s[i]) <= 0xDBFF and 0xDC00 <= ord(s[i + 1]) <= 0xDFFF:
            n -= 1
            i += 2
        else:
            i += 1
    return n


def utf16_prefix(s: str, n: int) -> str:
    """``s`` cut to its first ``n`` UTF-16 units, as JavaScript's ``s.slice(0, n)`` cuts it (the text
    sessiond's messages show of a long value): a pair cut in half leaves its high surrogate (which
    ``stringify`` writes as ``\\uXXXX``, as JSON.stringify does)."""
    if len(s) <= n // 2:
        return s
    units = 0
    for i, c in enumerate(s):
        w = 2 if ord(c) > 0xFFFF else 1
        if units + w > n:
            if units < n:  # half of a pair fits: its high surrogate
                return s[:i] + chr(0xD800 + ((ord(c) - 0x10000) >> 10))
            return s[:i]
        units += w
    return s
