"""The checkers the event catalog's rules are made of (generated.py holds the rules, from
clients/protocol/schema): each checks a value the way sessiond's readers check it (zod), returns it
cleaned (unknown payload keys dropped, defaults set) and lists every fault; ``typed`` turns a clean
value into its dataclass. Prompts and their parts are checked here too (their shapes are fixed).
"""

from __future__ import annotations

import builtins
import functools
import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .codec import is_safe_int
from .lengths import code_points


class _Absent:
    """An optional field of any type that the frame left out (``tool.called`` ``input``, ``tool.succeeded`` ``output``)."""

    _instance: "_Absent | None" = None

    def __new__(cls) -> "_Absent":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Any = _Absent()


#: One part of a prompt, as the wire has it: ``{"type": "text", "text"}``, ``{"type": "image", "url",
#: "mediaType"?}``, ``{"type": "image", "data" (base64), "mediaType"}``, ``{"type": "file", "url" |
#: "data", "mediaType", "filename"?}``, ``{"type": "image" | "file", "blob": {"sha256", "size", "mediaType"}}``
#: (bytes stored beside the log), ``{"type": "json", "value"}`` (the ``parts`` module builds them).
PromptPart = dict[str, Any]
#: A prompt: a string, or a list of parts (``input.admitted`` version 2; version 1 always holds a string).
Prompt = str | list[PromptPart]


# ---------------------------------------------------------------------------------------------
# Schemas: each checks a value and returns it cleaned (wire form) or adds issues.

Issues = list[str]
Path = tuple[str | int, ...]


def _where(path: Path) -> str:
    return ".".join(str(p) for p in path) if path else "(payload)"


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


class Schema:
    def check(self, v: Any, path: Path, issues: Issues) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def typed(self, v: Any) -> Any:
        return v


@dataclass(frozen=True)
class Str(Schema):
    min: int = 0
    max: int | None = None

    def check(self, v: Any, path: Path, issues: Issues) -> Any:
        if not isinstance(v, str):
            issues.append(f"{_where(path)}: expected string, received {_kind(v)}")
            return v
        if self.min == 0 and self.max is None:
            return v
        n = code_points(v)  # as zod counts (an emoji is one character)
        if n < self.min:
            issues.append(f"{_where(path)}: too small: expected string to have >={self.min} characters")
        if self.max is not None and n > self.max:
            issues.append(f"{_where(path)}: too big: expected string to have <={self.max} characters")
        return v


@functools.lru_cache(maxsize=None)
def _js_regex(source: str) -> re.Pattern[str]:
    # a JavaScript regex without flags: ``$`` ends the string (Python's ``$`` also matches before a final newline)
    return re.compile(source.replace("$", r"\Z"))


@dataclass(frozen=True)
class Pattern(Schema):
    """A string in which the JavaScript regex ``source`` finds a match (zod's ``regex``); ``base64``:
    zod's ``base64()``, which the schema also marks as such."""

    source: str
    base64: bool = False

    def check(self, v: Any, path: Path, issues: Issues) -> Any:
        if not isinstance(v, str):
            issues.append(f"{_where(path)}: expected string, received {_kind(v)}")
        elif not _js_regex(self.source).search(v):
            issues.append(f"{_where(path)}: invalid string: must match pattern {self.source}")
        return v


@dataclass(frozen=True)
class Const(Schema):
    """Exactly this string (zod's ``literal``)."""

    value: str

    def check(self, v: Any, path: Path, issues: Issues) -> Any:
        if v != self.value or not isinstance(v, str):
            issues.append(f"{_where(path)}: invalid input: expected {self.value!r}")
        return v


def is_json_value(v: Any) -> bool:
    """Null, a boolean, a finite number, a string, a list or a map of them (what a JSON part may hold)."""
    if v is None or isinstance(v, (bool, str, int)):
        return True
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, list):
        return all(is_json_value(x) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and is_json_value(x) for k, x in v.items())
    return False


@dataclass(frozen=True)
class JsonValue(Schema):
    """Any JSON value (a JSON part's ``value``): required, and no bytes or non-finite numbers."""

    def check(self, v: Any, path: Path, issues: Issues) -> Any:
        if not is_json_value(v):
            issues.append(f"{_where(path)}: must be a JSON value (null, a boolean, a finite number, a string, a list or a map of them)")
        return v


@dataclass(frozen=True)
class Int(Schema):
    min: int | None = None
    exclusive_min: bool = False

    def check(self, v: Any, path: Path, issues: Issues) -> Any:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            issues.append(f"{_where(path)}: expected number, received {_kind(v)}")
            return v
        if not is_safe_int(v):
            issues.append(f"{_where(path)}: expected int, received number")
            return v
        if self.min is not None and (v <= self.min if self.exclusive_min else v < self.min):
            issues.append(f"{_where(path)}: too small: expected number to be {'>' if self.exclusive_min else '>='}{self.min}")
        return int(v)


@dataclass(frozen=True)
class Num(Schema):
    """A finite number, whole or not (JSON's number), at least ``min``."""

    min: float | None = None

    def check(self, v: Any, path: Path, issues: Issues) -> Any:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
            issues.append(f"{_where(path)}: expected number, received {_kind(v)}")
            return v
        if self.min is not None and v < self.min:
            issues.append(f"{_where(path)}: too small: expected number to be >={self.min}")
        return v  # as sent: a whole number stays an int (JSON does not tell 10 from 10.0)


@dataclass(frozen=True)
class Bool(Schema):
    def check(self, v: Any, path: Path, issues: Issues) -> Any:
        if not isinstance(v, bool):
            issues.append(f"{_where(path)}: expected boolean, received {_kind(v)}")
        return v


@dataclass(frozen=True)
class Enum(Schema):
    values: tuple[str, ...]

    def check(self, v: Any, path: Path, issues: Issues) -> Any:
        if not isinstance(v, str) or v not in self.values:
            issues.append(f"{_where(path)}: expected one of {'|'.join(repr(x) for x in self.values)}")
        return v


@dataclass(frozen=True)
class AnyValue(Schema):
    def check(self, v: Any, path: Path, issues: Issues) -> Any:
        return v


@dataclass(frozen=True)
class Nullable(Schema):
    inner: Schema

    def check(self, v: Any, path: Path, issues: Issues) -> Any:
        return None if v is None else self.inner.check(v, path, issues)

    def typed(self, v: Any) -> Any:
        return None if v is None else self.inner.typed(v)


@dataclass(frozen=True)
class Array(Schema):
    item: Schema
    min: int = 0

    def check(self, v: Any, path: Path, issues: Issues) -> Any:
        if not isinstance(v, list):
            issues.append(f"{_where(path)}: expected array, received {_kind(v)}")
            return v
        if len(v) < self.min:
            issues.append(f"{_where(path)}: too small: expected array to have >={self.min} items")
        return [self.item.check(x, (*path, i), issues) for i, x in enumerate(v)]

    def typed(self, v: Any) -> Any:
        return [self.item.typed(x) for x in v]


#: A tag key: letters, digits and ``_ . : / -``, 1 to 64 characters, starting with a letter or digit.
TAG_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,63}$")
#: Longest tag value, and most tags a session carries. An event's value is counted in code points
#: (the catalog's zod schema); a command's, before it is sent, in UTF-16 units, as a worker counts
#: it (src/events/tags.ts: an emoji is two there).
MAX_TAG_VALUE = 256
MAX_TAGS = 32


@dataclass(frozen=True)
class Record(Schema):
    """An object of tags: every key a tag key (``TAG_KEY``), every value checked by ``value``."""

    value: Schema

    def check(self, v: Any, path: Path, issues: Issues) -> Any:
        if not isinstance(v, dict):
            issues.append(f"{_where(path)}: expected record, received {_kind(v)}")
            return v
        out: dict[str, Any] = {}
        for k, x in v.items():
            if not isinstance(k, str) or not TAG_KEY.fullmatch(k):
                issues.append(f"{_where((*path, str(k)))}: invalid key: expected a tag key")
                continue
            out[k] = self.value.check(x, (*path, k), issues)
        return out

    def typed(self, v: Any) -> Any:
        return {k: self.value.typed(x) for k, x in v.items()}


@dataclass(frozen=True)
class F:
    """A field: its wire name, its Python name, its schema, whether it may be left out, its default.
    A Python name of ``""``: checked and written, but not given to the class (a variant's constant
    ``type``, which the class holds as a class variable)."""

    wire: str
    py: str
    schema: Schema
    optional: bool = False
    default: Any = ABSENT


@dataclass(frozen=True)
class Obj(Schema):
    fields: tuple[F, ...]
    cls: Callable[..., Any] | None = None
    #: Refuse keys the schema does not name (zod's ``strictObject``) instead of dropping them.
    strict: bool = False

    def check(self, v: Any, path: Path, issues: Issues) -> Any:
        if not isinstance(v, dict):
            issues.append(f"{_where(path)}: expected object, received {_kind(v)}")
            return v
        if self.strict:
            names = {f.wire for f in self.fields}
            for k in v:
                if k not in names:
                    issues.append(f"{_where((*path, str(k)))}: unrecognized key")
        out: dict[str, Any] = {}
        for f in self.fields:
            if f.wire not in v:
                if f.default is not ABSENT:
                    out[f.wire] = f.default
                elif not f.optional:
                    issues.append(f"{_where((*path, f.wire))}: expected {_expected(f.schema)}, received undefined")
                continue
            out[f.wire] = f.schema.check(v[f.wire], (*path, f.wire), issues)
        return out  # keys the schema does not name are dropped, as zod does

    def typed(self, v: Any) -> Any:
        args = {f.py: f.schema.typed(v[f.wire]) for f in self.fields if f.wire in v and f.py}
        return self.cls(**args) if self.cls else args


@dataclass(frozen=True)
class OneOf(Schema):
    """One of ``variants`` (zod's ``union`` of objects), told apart by their first field, ``type``:
    the first a value fits, cleaned as that variant cleans it (unknown keys dropped). A value of a
    known type that does not fit is refused with that variant's faults."""

    variants: tuple[Obj, ...]
    #: What a value is, for messages ("a transcript item").
    what: str

    def check(self, v: Any, path: Path, issues: Issues) -> Any:
        if not isinstance(v, dict):
            issues.append(f"{_where(path)}: expected {self.what} (an object), received {_kind(v)}")
            return v
        faults: Issues | None = None
        for variant in self.variants:
            found: Issues = []
            cleaned = variant.check(v, path, found)
            if not found:
                return cleaned
            if faults is None and self._typed_as(variant, v):
                faults = found
        if faults is not None:
            issues.extend(faults)
        else:
            issues.append(f"{_where((*path, 'type'))}: expected one of {'|'.join(repr(t) for t in self.types())}")
        return v

    def types(self) -> list[str]:
        out: list[str] = []
        for variant in self.variants:
            s = variant.fields[0].schema
            out.extend([s.value] if isinstance(s, Const) else list(s.values) if isinstance(s, Enum) else [])
        return out

    @staticmethod
    def _typed_as(variant: Obj, v: Mapping[str, Any]) -> bool:
        found: Issues = []
        variant.fields[0].schema.check(v.get("type"), ("type",), found)
        return not found

    def typed(self, v: Any) -> Any:
        for variant in self.variants:
            if self._typed_as(variant, v):
                return variant.typed(v)
        raise ValueError(f"not {self.what}: {v!r}")  # pragma: no cover - v was checked


def part_rule(type_: Any) -> str:
    """What a part of this type must hold (sessiond's words for an invalid one)."""
    return {
        "text": 'a text part is { "type": "text", "text": "..." } and nothing else',
        "image": 'an image is { "type": "image", "url": "https://..." } (mediaType optional), { "type": "image", "data": "<base64>", "mediaType": "image/png" } or { "type": "image", "blob": { "sha256": "<64 hex digits>", "size": <bytes>, "mediaType": "image/png" } }',
        "file": 'a file is { "type": "file", "url": "https://...", "mediaType": "application/pdf" }, { "type": "file", "data": "<base64>", "mediaType": "...", "filename": "..." } or { "type": "file", "blob": { "sha256": "...", "size": <bytes>, "mediaType": "..." }, "filename": "..." } (filename optional)',
        "json": 'a JSON part is { "type": "json", "value": <any JSON value> }',
    }.get(type_ if isinstance(type_, str) else "", 'type must be "text", "image", "file" or "json"')


@dataclass(frozen=True)
class Part(Schema):
    """A prompt part: the first of ``shapes`` (strict objects) it fits, written in that shape's key order."""

    shapes: tuple[Obj, ...]

    def check(self, v: Any, path: Path, issues: Issues) -> Any:
        if not isinstance(v, dict):
            issues.append(f'{_where(path)}: expected an object like {{ "type": "text", "text": "..." }}, received {_kind(v)}')
            return v
        for shape in self.shapes:
            found: Issues = []
            cleaned = shape.check(v, path, found)
            if not found:
                return cleaned
        type_ = v.get("type")
        shown = f'"{type_}"' if isinstance(type_, str) else _kind(type_)
        issues.append(f"{_where(path)}: {shown} is not a valid part: {part_rule(type_)}")
        return v

    def typed(self, v: Any) -> Any:
        return dict(v)


@dataclass(frozen=True)
class PromptSchema(Schema):
    """A prompt: a string (``text``), or a list of parts (``parts``)."""

    text: Schema
    parts: Array

    def check(self, v: Any, path: Path, issues: Issues) -> Any:
        if isinstance(v, str):
            return self.text.check(v, path, issues)
        if isinstance(v, list):
            return self.parts.check(v, path, issues)
        issues.append(f"{_where(path)}: expected a string or a list of parts, received {_kind(v)}")
        return v

    def typed(self, v: Any) -> Any:
        return v if isinstance(v, str) else self.parts.typed(v)


def _expected(s: Schema) -> str:
    return {Str: "string", Int: "number", Bool: "boolean", Enum: "one of the values", Array: "array", Obj: "object", Record: "record"}.get(
        type(s), "a value"
    )


ID = Str(1, 128)
TAG_VALUE = Str(1, MAX_TAG_VALUE)
TAGS = Record(TAG_VALUE)
#: A W3C trace context as sessiond stores it (version 00).
TRACEPARENT = Pattern("^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")

#: The patterns of prompt parts (JavaScript regex sources, as clients/protocol/schema gives them).
PART_URL = r"^(https?:\/\/|data:)"
PART_MEDIA_TYPE = r"^[a-z]+\/[A-Za-z0-9.+-]+$"
PART_BASE64 = r"^$|^(?:[0-9a-zA-Z+/]{4})*(?:(?:[0-9a-zA-Z+/]{2}==)|(?:[0-9a-zA-Z+/]{3}=))?$"
#: Longest file name of a file part (code points).
MAX_FILENAME = 256


def _part(type_: str, *fields: F) -> Obj:
    return Obj((F("type", "type", Const(type_)), *fields), strict=True)


_URL = F("url", "url", Pattern(PART_URL))
_DATA = F("data", "data", Pattern(PART_BASE64, base64=True))
_MEDIA_TYPE = F("mediaType", "mediaType", Pattern(PART_MEDIA_TYPE))
_FILENAME = F("filename", "filename", Str(1, MAX_FILENAME), optional=True)
#: A blob stored beside the log (an image or a file over 64 KiB on the embedded log): its bytes' SHA-256, size and media type.
BLOB_REF = Obj(
    (
        F("sha256", "sha256", Pattern("^[0-9a-f]{64}$")),
        F("size", "size", Int(0)),
        F("mediaType", "mediaType", Pattern(PART_MEDIA_TYPE)),
    ),
)
_BLOB = F("blob", "blob", BLOB_REF)
#: A prompt part: one of these shapes, in the catalog's order (its keys written in that order).
PROMPT_PART = Part(
    (
        _part("text", F("text", "text", Str())),
        _part("image", _URL, F("mediaType", "mediaType", Pattern(PART_MEDIA_TYPE), optional=True)),
        _part("image", _DATA, _MEDIA_TYPE),
        _part("image", _BLOB),
        _part("file", _URL, _MEDIA_TYPE, _FILENAME),
        _part("file", _DATA, _MEDIA_TYPE, _FILENAME),
        _part("file", _BLOB, _FILENAME),
        _part("json", F("value", "value", JsonValue())),
    )
)
PROMPT = PromptSchema(Str(), Array(PROMPT_PART, 1))


@dataclass(frozen=True)
class EventType:
    """A catalog entry: the type, its current schema version, durable (stored) or live-only, its payload schema and class."""

    type: str
    version: int
    durable: bool
    schema: Obj
    payload_class: builtins.type[Any]


__all__ = [
    "ABSENT",
    "PromptPart",
    "Prompt",
    "Schema",
    "Str",
    "Pattern",
    "Const",
    "is_json_value",
    "JsonValue",
    "Int",
    "Num",
    "Bool",
    "Enum",
    "AnyValue",
    "Nullable",
    "Array",
    "TAG_KEY",
    "MAX_TAG_VALUE",
    "MAX_TAGS",
    "Record",
    "F",
    "Obj",
    "OneOf",
    "part_rule",
    "Part",
    "PromptSchema",
    "ID",
    "TAG_VALUE",
    "TAGS",
    "TRACEPARENT",
    "PART_URL",
    "PART_MEDIA_TYPE",
    "PART_BASE64",
    "MAX_FILENAME",
    "PROMPT_PART",
    "PROMPT",
    "EventType",
]
