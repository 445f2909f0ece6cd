"""The event catalog (src/events/catalog.ts): every event type, its version, whether it is durable,
and its payload's schema, checked the way sessiond's readers check it (zod): unknown payload keys
are dropped, defaults applied (``input.admitted`` ``source``: ``user``), every fault listed.

Each type's payload reads into a frozen dataclass (``InputAdmitted``, ``TextCompleted``, ...). The
dataclasses, their rules and CATALOG are generated from the protocol schema (generated.py); the
checkers are _schema.py's. This module exports both, and the upcasters, which are code.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from . import _schema, generated
from ._schema import *  # noqa: F403
from .generated import *  # noqa: F403
from .generated import CATALOG

#: ``UPCASTERS[type][v]`` turns a stored version-v payload of ``type`` into a version-v+1 one, as
#: sessiond's catalog does (``x-sessiond-upcasters`` in clients/protocol/schema/events.schema.json).
UPCASTERS: Mapping[str, Mapping[int, Callable[[dict[str, Any]], dict[str, Any]]]] = {
    # none: a version-1 prompt is a string, which version 2 still reads (it adds prompts of parts)
    "input.admitted": {1: lambda p: p},
    # adds started: false (a version-1 call is followed by its tool.started)
    "tool.called": {1: lambda p: {**p, "started": False}},
}

EVENT_TYPES: tuple[str, ...] = tuple(CATALOG)
DURABLE_TYPES: tuple[str, ...] = tuple(t for t, e in CATALOG.items() if e.durable)
LIVE_ONLY_TYPES: tuple[str, ...] = tuple(t for t, e in CATALOG.items() if not e.durable)


__all__ = [
    *_schema.__all__,
    *generated.__all__,
    "UPCASTERS",
    "EVENT_TYPES",
    "DURABLE_TYPES",
    "LIVE_ONLY_TYPES",
    "is_event_type",
    "check_payload",
    "typed_payload",
]


def is_event_type(value: object) -> bool:
    return isinstance(value, str) and value in CATALOG


def check_payload(type_: str, payload: Any) -> tuple[dict[str, Any], list[str]]:
    """The payload cleaned as sessiond's readers clean it (unknown keys dropped, defaults set) and
    the faults found (empty when valid)."""
    issues: list[str] = []
    cleaned = CATALOG[type_].schema.check(payload, (), issues)
    return cleaned, issues


def typed_payload(type_: str, cleaned: dict[str, Any]) -> Any:
    """The payload dataclass of a cleaned, valid payload."""
    return CATALOG[type_].schema.typed(cleaned)
