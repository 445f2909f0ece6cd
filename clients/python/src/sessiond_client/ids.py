"""Ids as the protocol allows them: 1-128 characters of ``A-Z a-z 0-9 _ - : + = @``."""

from __future__ import annotations

import os
import re
import threading
import time

from .errors import SessiondError
from .jsontext import stringify
from .lengths import utf16_len

MAX_ID_LENGTH = 128
_ID = re.compile(r"[A-Za-z0-9_\-:+=@]{1,128}")


def is_valid_id(value: object) -> bool:
    return isinstance(value, str) and _ID.fullmatch(value) is not None


def _echo(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 200 else f"{text[:200]}…({len(text)} chars)"


def validate_id(value: object, role: str = "id") -> str:
    """Returns ``value`` when it is a valid id; raises ``SessiondError('invalid_id')`` naming the role and the fault."""
    if is_valid_id(value):
        return value  # type: ignore[return-value]
    if not isinstance(value, str):
        why = f"expected a string, got {type(value).__name__}"
    elif value == "":
        why = "it is empty"
    elif utf16_len(value) > MAX_ID_LENGTH:  # counted as sessiond counts (JavaScript's .length)
        why = f"it is {utf16_len(value)} characters long"
    else:
        bad = next(c for c in value if not _ID.fullmatch(c))
        why = f"it contains control character U+{ord(bad):04x}" if ord(bad) < 0x20 or ord(bad) == 0x7F else f"it contains {stringify(bad)}"
    raise SessiondError(
        "invalid_id",
        f"Invalid {role} {_echo(value)}: {why}. Use 1-{MAX_ID_LENGTH} characters from A-Z a-z 0-9 _ - : + = @ "
        "(no dots, spaces, wildcards or control characters).",
        {"role": role},
    )


_lock = threading.Lock()
_last_ms = 0
_counter = 0


def new_id(prefix: str) -> str:
    """``<prefix>_<32 hex digits>``: 12 of creation time in ms, a counter within the ms, random bits (as the Node client's ids)."""
    global _last_ms, _counter
    with _lock:
        now = int(time.time() * 1000)
        if now <= _last_ms:
            _counter = (_counter + 1) & 0xFFFF
            now = _last_ms
        else:
            _counter = 0
        _last_ms = now
        counter = _counter
    return f"{prefix}_{now & 0xFFFFFFFFFFFF:012x}{counter:04x}{os.urandom(8).hex()}"


_TENANT = re.compile(r"[A-Za-z0-9_-]{1,64}")


def validate_tenant(value: object) -> str:
    """Returns ``value`` when it is a tenant's name (1-64 letters, digits, _ or -: it becomes a NATS
    subject token and a user name); raises ``SessiondError('invalid_option')`` otherwise."""
    if isinstance(value, str) and _TENANT.fullmatch(value):
        return value
    raise SessiondError(
        "invalid_option", f"Invalid tenant {_echo(value)}: 1-64 letters, digits, _ or - (it becomes a NATS subject token)."
    )
