"""The event catalog (src/events/catalog.ts): every event type, its version, whether it is durable,
and its payload's schema, checked the way sessiond's readers check it (zod): unknown payload keys
are dropped, defaults applied (``input.admitted`` ``source``: ``user``), every fault listed.

Each type's payload reads into a frozen dataclass (``InputAdmitted``, ``TextCompleted``, ...).
"""

from __future__ import annotations

import builtins
import functools
import math
import re
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Literal, Mapping, Sequence

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

# ---------------------------------------------------------------------------------------------
# Payload dataclasses

Delivery = Literal["steer", "queue"]
ExecutionPhase = Literal["safe", "unknown"]
#: ``waiting``: the turn ended its execution to wait (an approval, a signal, a timer); it resumes when its waits resolve.
SettleOutcome = Literal["succeeded", "failed", "released", "waiting"]
#: What a turn may wait for: a person's decision on a tool call, a value from outside, a time.
WaitKind = Literal["approval", "signal", "timer", "session"]
#: How a wait ended: an approval approved/denied, a signal delivered/timed_out, a timer elapsed; any of them cancelled.
WaitOutcome = Literal["approved", "denied", "delivered", "timed_out", "elapsed", "cancelled"]


@dataclass(frozen=True)
class RecordedError:
    type: str
    message: str
    name: str | None = None


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int
    #: Part of ``input_tokens`` read from the provider's cache, when the server reported it.
    cached_input_tokens: int | None = None
    #: Part of ``output_tokens`` spent reasoning, when the server reported it.
    reasoning_tokens: int | None = None
    #: What the call cost in US dollars, priced when it ended (the worker's ``--prices``), where its model had a price.
    cost_usd: float | None = None


@dataclass(frozen=True)
class RetryTool:
    call_id: str
    message_id: str
    name: str
    idempotency_key: str


@dataclass(frozen=True)
class Continuation:
    """What a continuation input continues: an interrupted or handed-back execution, or one that waited (``resumed``)."""

    execution_id: str
    reason: Literal["interrupted", "handed_back", "resumed"]
    phase: ExecutionPhase
    input_ids: list[str]
    assistant_message_id: str | None
    retry_tools: list[RetryTool]
    #: The W3C trace context of the turn continued (the continuation's turn links to it).
    traceparent: str | None = None


@dataclass(frozen=True)
class ExecutionClaimed:
    execution_id: str
    owner_id: str
    expires_at: int
    lease_ms: int
    assistant_seq: int


@dataclass(frozen=True)
class ExecutionRenewed:
    execution_id: str
    expires_at: int


@dataclass(frozen=True)
class ExecutionStarted:
    execution_id: str
    #: The turn's span (W3C trace context), and its parent's: the caller's, when one was given.
    traceparent: str | None = None
    parent_traceparent: str | None = None


@dataclass(frozen=True)
class ExecutionPhaseChanged:
    execution_id: str
    phase: ExecutionPhase


@dataclass(frozen=True)
class ExecutionCancelled:
    execution_id: str
    reason: str | None = None
    #: Who cancelled (a gateway token's name, a JWT's subject, what a NATS client said).
    actor: str | None = None


@dataclass(frozen=True)
class ExecutionSettled:
    execution_id: str
    outcome: SettleOutcome
    error: RecordedError | None = None


#: One part of a prompt, as the wire has it: ``{"type": "text", "text"}``, ``{"type": "image", "url",
#: "mediaType"?}``, ``{"type": "image", "data" (base64), "mediaType"}``, ``{"type": "file", "url" |
#: "data", "mediaType", "filename"?}``, ``{"type": "json", "value"}`` (the ``parts`` module builds them).
PromptPart = dict[str, Any]
#: A prompt: a string, or a list of parts (``input.admitted`` version 2; version 1 always holds a string).
Prompt = str | list[PromptPart]


@dataclass(frozen=True)
class InputAdmitted:
    input_id: str
    #: A string, or a list of part dicts as the wire has them (``prompt_text`` is its text form).
    prompt: Prompt
    delivery: Delivery
    wake: bool
    source: Literal["user", "recovery"] = "user"
    continues: Continuation | None = None
    #: A scheduled prompt: no turn takes it before this time (ms since the epoch).
    not_before: int | None = None
    #: Tags the admission gives its session (merged into those it has; None when it gives none).
    tags: dict[str, str] | None = None
    #: The session's owner, on the admission that created it only (None otherwise).
    owner: str | None = None
    #: The caller's W3C trace context: the turn that runs the input is its child.
    traceparent: str | None = None


@dataclass(frozen=True)
class InputPromoted:
    input_id: str
    execution_id: str


@dataclass(frozen=True)
class InputDropped:
    input_ids: list[str]
    reason: str | None = None
    #: Who dropped them.
    actor: str | None = None


@dataclass(frozen=True)
class StepStarted:
    execution_id: str
    message_id: str
    step: int


@dataclass(frozen=True)
class StepEnded:
    execution_id: str
    message_id: str
    finish: str
    usage: Usage | None = None


@dataclass(frozen=True)
class StepFailed:
    execution_id: str
    message_id: str
    error: RecordedError


@dataclass(frozen=True)
class StepRecovered:
    execution_id: str
    message_id: str
    reason: str


@dataclass(frozen=True)
class TextDelta:
    execution_id: str
    message_id: str
    part_id: str
    delta: str


@dataclass(frozen=True)
class TextStreamed:
    """Text of a part as it streamed: appended to what was recorded of it, or starting it again (``restart``)."""

    execution_id: str
    message_id: str
    part_id: str
    text: str
    restart: bool


@dataclass(frozen=True)
class TextCompleted:
    execution_id: str
    message_id: str
    part_id: str
    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    execution_id: str
    message_id: str
    part_id: str
    delta: str


@dataclass(frozen=True)
class ReasoningCompleted:
    execution_id: str
    message_id: str
    part_id: str
    text: str


@dataclass(frozen=True)
class ModelRetryScheduled:
    execution_id: str
    message_id: str
    attempt: int
    delay_ms: int
    error: RecordedError


@dataclass(frozen=True)
class ToolProgressed:
    """How far a running tool call got (live only; at most one every 100 ms per call)."""

    execution_id: str
    message_id: str
    call_id: str
    progress: float
    total: float | None = None
    message: str | None = None


@dataclass(frozen=True)
class ToolCalled:
    execution_id: str
    message_id: str
    call_id: str
    name: str
    durable: bool
    #: True when the call started in the same append (no ``tool.started`` follows); False for a
    #: call recorded before it may start, and for every call of a version-1 log.
    started: bool
    #: ``ABSENT`` when the call had no input (``None`` is an input of null).
    input: Any = ABSENT
    idempotency_key: str | None = None


@dataclass(frozen=True)
class ToolStarted:
    execution_id: str
    message_id: str
    call_id: str


@dataclass(frozen=True)
class ToolSucceeded:
    execution_id: str
    message_id: str
    call_id: str
    #: ``ABSENT`` when the tool returned nothing.
    output: Any = ABSENT


@dataclass(frozen=True)
class ToolFailed:
    execution_id: str
    message_id: str
    call_id: str
    error: RecordedError


@dataclass(frozen=True)
class WaitChild:
    """A session call's child: the session called and the input admitted into it, whose turn's end
    the parent's wait is given as its data."""

    session_id: str
    input_id: str


@dataclass(frozen=True)
class WaitStarted:
    """A turn waits (written before its execution settles ``waiting``). ``name`` is the wait's key
    within the turn: an approval's call id, a signal's name, a timer's ``sleep-N``; ``until``: when a
    timer elapses or a signal times out. An approval carries its call (``call_id``, ``tool``,
    ``input``), whose ``tool.called`` (not started) is in the same append."""

    execution_id: str
    kind: WaitKind
    name: str
    message_id: str | None = None
    call_id: str | None = None
    tool: str | None = None
    #: ``ABSENT`` when the wait has no call input (``None`` is an input of null).
    input: Any = ABSENT
    until: int | None = None
    #: A session call's child (kind ``session``): the session and the input admitted into it.
    child: WaitChild | None = None


@dataclass(frozen=True)
class WaitResolved:
    """A wait ended (``execution_id``: the execution that waited). ``reason``: a person's words on
    an approval or a denial, or why it was cancelled; ``data``: a delivered signal's value;
    ``actor``: who decided, delivered or cancelled."""

    execution_id: str
    kind: WaitKind
    name: str
    outcome: WaitOutcome
    message_id: str | None = None
    call_id: str | None = None
    reason: str | None = None
    #: ``ABSENT`` when no value was delivered (``None`` is a value of null).
    data: Any = ABSENT
    actor: str | None = None


@dataclass(frozen=True)
class CompactionStarted:
    execution_id: str
    message_id: str
    reason: str


@dataclass(frozen=True)
class CompactionCompleted:
    execution_id: str
    message_id: str
    summary: str
    usage: Usage | None = None


@dataclass(frozen=True)
class BudgetSet:
    """The session's budget set (the admin's ``Client.budget``): its limits from now on (None: none),
    ``reset`` when its spend counts from this event on, ``actor`` who."""

    tokens: int | None
    cost_usd: float | None
    reset: bool
    actor: str | None = None


@dataclass(frozen=True)
class SessionTagged:
    """The session's tags changed (``Client.tag``): each key set to its value, or removed where None."""

    tags: dict[str, str | None]


@dataclass(frozen=True)
class ForkPoint:
    """The session and seq a session was forked from (``session.forked``'s ``from``, ``Client.fork``'s
    ``from_``, ``forked_from`` in status and list)."""

    session_id: str
    seq: int


#: The states of a tool call in a transcript.
ToolState = Literal["called", "awaiting_approval", "approved", "denied", "cancelled", "running", "succeeded", "failed"]


@dataclass(frozen=True)
class ToolDecision:
    """A person's decision on a tool call: ``outcome`` approved, denied or cancelled, and their ``reason``."""

    outcome: Literal["approved", "denied", "cancelled"]
    reason: str | None = None


@dataclass(frozen=True)
class TranscriptText:
    """A part of an assistant message: text (``type`` ``text``) or the model's reasoning (``reasoning``)."""

    type: Literal["text", "reasoning"]
    part_id: str
    text: str


@dataclass(frozen=True)
class TranscriptTool:
    """A tool call of an assistant message: ``input`` its input (always there: ``None`` is an input
    of null; a call without one is refused, as sessiond's reader refuses it), run with
    ``idempotency_key`` when ``durable``; ``state`` how far it got; ``output`` what it returned
    (``ABSENT``: nothing), ``error`` how it failed, ``decision`` a person's decision on it."""

    type: ClassVar[Literal["tool"]] = "tool"
    call_id: str
    name: str
    input: Any
    durable: bool
    state: ToolState
    idempotency_key: str | None = None
    output: Any = ABSENT
    error: RecordedError | None = None
    decision: ToolDecision | None = None


#: A part of an assistant message in a transcript.
TranscriptPart = TranscriptText | TranscriptTool


@dataclass(frozen=True)
class TranscriptUser:
    """A prompt of the conversation: ``text`` its text form (``prompt_text``), ``parts`` the prompt's
    part dicts when it was a list of them (None for a string prompt), ``delivery`` how it was
    admitted (None when the item does not say), ``continues`` what a continuation continues."""

    type: ClassVar[Literal["user"]] = "user"
    input_id: str
    execution_id: str
    text: str
    parts: list[PromptPart] | None = None
    delivery: Delivery | None = None
    continues: Continuation | None = None


@dataclass(frozen=True)
class TranscriptAssistant:
    """An assistant message (a model step): ``status`` running, completed, failed or recovered;
    ``parts`` its text, reasoning and tool calls in order; ``finish`` the model's finish reason,
    ``error`` a failed step's error, ``usage`` its tokens."""

    type: ClassVar[Literal["assistant"]] = "assistant"
    message_id: str
    execution_id: str
    status: Literal["running", "completed", "failed", "recovered"]
    parts: list[TranscriptPart]
    finish: str | None = None
    error: RecordedError | None = None
    usage: Usage | None = None


@dataclass(frozen=True)
class TranscriptSummary:
    """A compaction's summary of the conversation before it."""

    type: ClassVar[Literal["summary"]] = "summary"
    message_id: str
    execution_id: str
    summary: str


#: An item of a transcript (the conversation a fork starts with, as the model runner folds it).
TranscriptItem = TranscriptUser | TranscriptAssistant | TranscriptSummary


@dataclass(frozen=True)
class SessionForked:
    """The first event of a session forked from another (``Client.fork``): ``from_``, the source and
    the seq it was forked at; ``transcript``, the source's conversation up to there (what the
    fork's runner history and message rows start from); ``tags``, those the fork was given (None
    when none)."""

    from_: ForkPoint
    transcript: list[TranscriptItem]
    tags: dict[str, str] | None = None
    #: The fork's owner: the source's (None when it has none).
    owner: str | None = None


@dataclass(frozen=True)
class RecordedPart:
    """How much of a part's text the log holds (``length`` in UTF-16 code units: ``len(text.encode('utf-16-le')) // 2``)."""

    part_id: str
    length: int


@dataclass(frozen=True)
class TurnInterrupted:
    """Live only: the turn's owner is gone; of ``message_id`` keep ``recorded`` of each part, discard the rest."""

    execution_id: str
    owner_id: str
    reason: Literal["lease_expired", "handed_back"]
    message_id: str | None
    recorded: list[RecordedPart]
    continuation_input_id: str | None


@dataclass(frozen=True)
class RecoveryStarted:
    execution_id: str


@dataclass(frozen=True)
class RecoveryCompleted:
    execution_id: str
    assistant_message_id: str | None
    continuation_input_id: str | None
    phase: ExecutionPhase
    error: RecordedError | None = None


@dataclass(frozen=True)
class RecoveryWakeRequested:
    execution_id: str
    attempt: int


@dataclass(frozen=True)
class RecoveryWakeDelivered:
    execution_id: str
    by_execution_id: str


@dataclass(frozen=True)
class RecoveryWakeFailed:
    execution_id: str
    attempt: int
    error: RecordedError
    parked: bool


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
#: it (src/sessions/tags.ts: an emoji is two there).
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
        "image": 'an image is { "type": "image", "url": "https://..." } (mediaType optional) or { "type": "image", "data": "<base64>", "mediaType": "image/png" }',
        "file": 'a file is { "type": "file", "url": "https://...", "mediaType": "application/pdf" } or { "type": "file", "data": "<base64>", "mediaType": "...", "filename": "..." } (filename optional)',
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
TIME = Int(0)
SEQ = Int(-1)
POS = Int(0, exclusive_min=True)
NONNEG = Int(0)
PHASE = Enum(("safe", "unknown"))
WAIT_KIND = Enum(("approval", "signal", "timer", "session"))
WAIT_NAME = Str(1, 200)
TAG_VALUE = Str(1, MAX_TAG_VALUE)
TAGS = Record(TAG_VALUE)
OWNER = Str(1, 128)
#: A W3C trace context as sessiond stores it (version 00).
TRACEPARENT = Pattern("^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")
ERROR = Obj((F("type", "type", Str(1)), F("message", "message", Str()), F("name", "name", Str(), optional=True)), RecordedError)
USAGE = Obj(
    (
        F("inputTokens", "input_tokens", NONNEG),
        F("outputTokens", "output_tokens", NONNEG),
        F("cachedInputTokens", "cached_input_tokens", NONNEG, optional=True),
        F("reasoningTokens", "reasoning_tokens", NONNEG, optional=True),
        F("costUsd", "cost_usd", Num(0), optional=True),
    ),
    Usage,
)
CONTINUATION = Obj(
    (
        F("executionId", "execution_id", ID),
        F("reason", "reason", Enum(("interrupted", "handed_back", "resumed"))),
        F("phase", "phase", PHASE),
        F("inputIds", "input_ids", Array(ID)),
        F("assistantMessageId", "assistant_message_id", Nullable(ID)),
        F(
            "retryTools",
            "retry_tools",
            Array(
                Obj(
                    (
                        F("callId", "call_id", ID),
                        F("messageId", "message_id", ID),
                        F("name", "name", Str(1)),
                        F("idempotencyKey", "idempotency_key", Str()),
                    ),
                    RetryTool,
                )
            ),
        ),
        F("traceparent", "traceparent", TRACEPARENT, optional=True),
    ),
    Continuation,
)

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
#: A prompt part: one of these shapes, in the catalog's order (its keys written in that order).
PROMPT_PART = Part(
    (
        _part("text", F("text", "text", Str())),
        _part("image", _URL, F("mediaType", "mediaType", Pattern(PART_MEDIA_TYPE), optional=True)),
        _part("image", _DATA, _MEDIA_TYPE),
        _part("file", _URL, _MEDIA_TYPE, _FILENAME),
        _part("file", _DATA, _MEDIA_TYPE, _FILENAME),
        _part("json", F("value", "value", JsonValue())),
    )
)
PROMPT = PromptSchema(Str(), Array(PROMPT_PART, 1))

EXE = F("executionId", "execution_id", ID)
MSG = F("messageId", "message_id", ID)
PART = F("partId", "part_id", ID)
CALL = F("callId", "call_id", ID)

FORK_POINT = Obj((F("sessionId", "session_id", ID), F("seq", "seq", POS)), ForkPoint)
#: A part of an assistant message in a transcript: text or reasoning, or a tool call.
TRANSCRIPT_PART = OneOf(
    (
        Obj((F("type", "type", Enum(("text", "reasoning"))), PART, F("text", "text", Str())), TranscriptText),
        Obj(
            (
                F("type", "", Const("tool")),
                CALL,
                F("name", "name", Str(1)),
                F("input", "input", AnyValue()),
                F("durable", "durable", Bool()),
                F("idempotencyKey", "idempotency_key", Str(), optional=True),
                F(
                    "state",
                    "state",
                    Enum(("called", "awaiting_approval", "approved", "denied", "cancelled", "running", "succeeded", "failed")),
                ),
                F("output", "output", AnyValue(), optional=True),
                F("error", "error", ERROR, optional=True),
                F(
                    "decision",
                    "decision",
                    Obj(
                        (F("outcome", "outcome", Enum(("approved", "denied", "cancelled"))), F("reason", "reason", Str(), optional=True)),
                        ToolDecision,
                    ),
                    optional=True,
                ),
            ),
            TranscriptTool,
        ),
    ),
    "a part (text, reasoning or tool)",
)
#: An item of a transcript (src/runner/transcript.ts, the catalog's TranscriptItemSchema).
TRANSCRIPT_ITEM = OneOf(
    (
        Obj(
            (
                F("type", "", Const("user")),
                F("inputId", "input_id", ID),
                EXE,
                F("text", "text", Str()),
                F("parts", "parts", Array(PROMPT_PART), optional=True),
                F("delivery", "delivery", Enum(("steer", "queue")), optional=True),
                F("continues", "continues", CONTINUATION, optional=True),
            ),
            TranscriptUser,
        ),
        Obj(
            (
                F("type", "", Const("assistant")),
                MSG,
                EXE,
                F("status", "status", Enum(("running", "completed", "failed", "recovered"))),
                F("parts", "parts", Array(TRANSCRIPT_PART)),
                F("finish", "finish", Str(), optional=True),
                F("error", "error", ERROR, optional=True),
                F("usage", "usage", USAGE, optional=True),
            ),
            TranscriptAssistant,
        ),
        Obj((F("type", "", Const("summary")), MSG, EXE, F("summary", "summary", Str())), TranscriptSummary),
    ),
    "a transcript item (user, assistant or summary)",
)


@dataclass(frozen=True)
class EventType:
    """A catalog entry: the type, its current schema version, durable (stored) or live-only, its payload schema and class."""

    type: str
    version: int
    durable: bool
    schema: Obj
    payload_class: builtins.type[Any]


def _t(type_: str, cls: type[Any], fields: Sequence[F], durable: bool = True, version: int = 1) -> EventType:
    # the dataclass takes keyword arguments, so field order there need not follow the wire order
    return EventType(type_, version, durable, Obj(tuple(fields), cls), cls)


CATALOG: Mapping[str, EventType] = {
    e.type: e
    for e in (
        _t(
            "execution.claimed",
            ExecutionClaimed,
            [
                EXE,
                F("ownerId", "owner_id", ID),
                F("expiresAt", "expires_at", TIME),
                F("leaseMs", "lease_ms", POS),
                F("assistantSeq", "assistant_seq", SEQ),
            ],
        ),
        _t("execution.renewed", ExecutionRenewed, [EXE, F("expiresAt", "expires_at", TIME)]),
        _t(
            "execution.started",
            ExecutionStarted,
            [EXE, F("traceparent", "traceparent", TRACEPARENT, optional=True), F("parentTraceparent", "parent_traceparent", TRACEPARENT, optional=True)],
        ),
        _t("execution.phase", ExecutionPhaseChanged, [EXE, F("phase", "phase", PHASE)]),
        _t(
            "execution.cancelled",
            ExecutionCancelled,
            [EXE, F("reason", "reason", Str(0, 1000), optional=True), F("actor", "actor", Str(1, 200), optional=True)],
        ),
        _t(
            "execution.settled",
            ExecutionSettled,
            [EXE, F("outcome", "outcome", Enum(("succeeded", "failed", "released", "waiting"))), F("error", "error", ERROR, optional=True)],
        ),
        _t(
            "input.admitted",
            InputAdmitted,
            [
                F("inputId", "input_id", ID),
                F("prompt", "prompt", PROMPT),
                F("delivery", "delivery", Enum(("steer", "queue"))),
                F("wake", "wake", Bool()),
                F("source", "source", Enum(("user", "recovery")), default="user"),
                F("continues", "continues", CONTINUATION, optional=True),
                F("notBefore", "not_before", TIME, optional=True),
                F("tags", "tags", TAGS, optional=True),
                F("owner", "owner", OWNER, optional=True),
                F("traceparent", "traceparent", TRACEPARENT, optional=True),
            ],
            version=2,
        ),
        _t("input.promoted", InputPromoted, [F("inputId", "input_id", ID), EXE]),
        _t(
            "input.dropped",
            InputDropped,
            [
                F("inputIds", "input_ids", Array(ID, 1)),
                F("reason", "reason", Str(0, 1000), optional=True),
                F("actor", "actor", Str(1, 200), optional=True),
            ],
        ),
        _t("step.started", StepStarted, [EXE, MSG, F("step", "step", NONNEG)]),
        _t("step.ended", StepEnded, [EXE, MSG, F("finish", "finish", Str(1)), F("usage", "usage", USAGE, optional=True)]),
        _t("step.failed", StepFailed, [EXE, MSG, F("error", "error", ERROR)]),
        _t("step.recovered", StepRecovered, [EXE, MSG, F("reason", "reason", Str())]),
        _t("text.delta", TextDelta, [EXE, MSG, PART, F("delta", "delta", Str())], durable=False),
        _t("text.streamed", TextStreamed, [EXE, MSG, PART, F("text", "text", Str()), F("restart", "restart", Bool())]),
        _t("text.completed", TextCompleted, [EXE, MSG, PART, F("text", "text", Str())]),
        _t("reasoning.delta", ReasoningDelta, [EXE, MSG, PART, F("delta", "delta", Str())], durable=False),
        _t("reasoning.completed", ReasoningCompleted, [EXE, MSG, PART, F("text", "text", Str())]),
        _t(
            "model.retry_scheduled",
            ModelRetryScheduled,
            [EXE, MSG, F("attempt", "attempt", POS), F("delayMs", "delay_ms", NONNEG), F("error", "error", ERROR)],
            durable=False,
        ),
        _t(
            "tool.progressed",
            ToolProgressed,
            [
                EXE,
                MSG,
                CALL,
                F("progress", "progress", Num(0)),
                F("total", "total", Num(0), optional=True),
                F("message", "message", Str(0, 1000), optional=True),
            ],
            durable=False,
        ),
        _t(
            "tool.called",
            ToolCalled,
            [
                EXE,
                MSG,
                CALL,
                F("name", "name", Str(1)),
                F("input", "input", AnyValue(), optional=True),
                F("durable", "durable", Bool()),
                F("idempotencyKey", "idempotency_key", Str(), optional=True),
                F("started", "started", Bool()),
            ],
            version=2,
        ),
        _t("tool.started", ToolStarted, [EXE, MSG, CALL]),
        _t("tool.succeeded", ToolSucceeded, [EXE, MSG, CALL, F("output", "output", AnyValue(), optional=True)]),
        _t("tool.failed", ToolFailed, [EXE, MSG, CALL, F("error", "error", ERROR)]),
        _t(
            "wait.started",
            WaitStarted,
            [
                EXE,
                F("kind", "kind", WAIT_KIND),
                F("name", "name", WAIT_NAME),
                F("messageId", "message_id", ID, optional=True),
                F("callId", "call_id", ID, optional=True),
                F("tool", "tool", Str(1), optional=True),
                F("input", "input", AnyValue(), optional=True),
                F("until", "until", TIME, optional=True),
                F("child", "child", Obj((F("sessionId", "session_id", ID), F("inputId", "input_id", ID)), WaitChild), optional=True),
            ],
        ),
        _t(
            "wait.resolved",
            WaitResolved,
            [
                EXE,
                F("kind", "kind", WAIT_KIND),
                F("name", "name", WAIT_NAME),
                F("outcome", "outcome", Enum(("approved", "denied", "delivered", "timed_out", "elapsed", "cancelled"))),
                F("messageId", "message_id", ID, optional=True),
                F("callId", "call_id", ID, optional=True),
                F("reason", "reason", Str(0, 1000), optional=True),
                F("data", "data", AnyValue(), optional=True),
                F("actor", "actor", Str(1, 200), optional=True),
            ],
        ),
        _t("compaction.started", CompactionStarted, [EXE, MSG, F("reason", "reason", Str())]),
        _t(
            "compaction.completed",
            CompactionCompleted,
            [EXE, MSG, F("summary", "summary", Str()), F("usage", "usage", USAGE, optional=True)],
        ),
        _t(
            "budget.set",
            BudgetSet,
            [
                F("tokens", "tokens", Nullable(NONNEG)),
                F("costUsd", "cost_usd", Nullable(Num(0))),
                F("reset", "reset", Bool()),
                F("actor", "actor", Str(1, 200), optional=True),
            ],
        ),
        _t("session.tagged", SessionTagged, [F("tags", "tags", Record(Nullable(TAG_VALUE)))]),
        _t(
            "session.forked",
            SessionForked,
            [
                F("from", "from_", FORK_POINT),
                F("transcript", "transcript", Array(TRANSCRIPT_ITEM)),
                F("tags", "tags", TAGS, optional=True),
                F("owner", "owner", OWNER, optional=True),
            ],
        ),
        _t(
            "turn.interrupted",
            TurnInterrupted,
            [
                EXE,
                F("ownerId", "owner_id", ID),
                F("reason", "reason", Enum(("lease_expired", "handed_back"))),
                F("messageId", "message_id", Nullable(ID)),
                F("recorded", "recorded", Array(Obj((PART, F("length", "length", NONNEG)), RecordedPart))),
                F("continuationInputId", "continuation_input_id", Nullable(ID)),
            ],
            durable=False,
        ),
        _t("recovery.started", RecoveryStarted, [EXE]),
        _t(
            "recovery.completed",
            RecoveryCompleted,
            [
                EXE,
                F("assistantMessageId", "assistant_message_id", Nullable(ID)),
                F("continuationInputId", "continuation_input_id", Nullable(ID)),
                F("phase", "phase", PHASE),
                F("error", "error", ERROR, optional=True),
            ],
        ),
        _t("recovery.wake_requested", RecoveryWakeRequested, [EXE, F("attempt", "attempt", POS)]),
        _t("recovery.wake_delivered", RecoveryWakeDelivered, [EXE, F("byExecutionId", "by_execution_id", ID)]),
        _t(
            "recovery.wake_failed",
            RecoveryWakeFailed,
            [EXE, F("attempt", "attempt", POS), F("error", "error", ERROR), F("parked", "parked", Bool())],
        ),
    )
}

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
