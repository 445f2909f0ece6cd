"""The command protocol on ``sessiond.cmd.<verb>`` (docs/protocol.md "Commands"): request bodies,
typed success replies, and error replies as ``CommandError``.

  verb     request                                                   success reply
  admit    {sessionId, prompt, id?, delivery?, wake?, notBefore?}    {ok, receipt: AdmitReceipt}
  wake     {sessionId}                                               {ok, result: WakeResult}
  cancel   {sessionId, reason?, executionId?}                        {ok, result: CancelResult}
  status   {sessionId, pendingFrom?}                                 {ok, sessionId, state, seq, ..., execution}
  drop     {sessionId, inputIds?, reason?}                           {ok, result: DropResult}
  resolve  {sessionId, kind, name, outcome, reason?, data?}          {ok, result: ResolveResult}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

from .catalog import ABSENT
from .errors import CommandError
from .jsontext import decode_json, encode_json

COMMAND_PREFIX = "sessiond.cmd"
VERBS = ("admit", "wake", "cancel", "status", "drop", "resolve")
Verb = Literal["admit", "wake", "cancel", "status", "drop", "resolve"]
#: The fields each request may carry (workers refuse any other as a likely typo).
REQUEST_FIELDS: Mapping[str, tuple[str, ...]] = {
    "admit": ("sessionId", "prompt", "id", "delivery", "wake", "notBefore"),
    "wake": ("sessionId",),
    "cancel": ("sessionId", "reason", "executionId"),
    "status": ("sessionId", "pendingFrom"),
    "drop": ("sessionId", "inputIds", "reason"),
    "resolve": ("sessionId", "kind", "name", "outcome", "reason", "data"),
}


def command_subject(verb: str) -> str:
    return f"{COMMAND_PREFIX}.{verb}"


def _without_none(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def admit_request(
    session_id: str,
    prompt: str,
    *,
    id: str | None = None,
    delivery: str | None = None,
    wake: bool | None = None,
    not_before: int | None = None,
) -> dict[str, Any]:
    return _without_none(sessionId=session_id, prompt=prompt, id=id, delivery=delivery, wake=wake, notBefore=not_before)


def wake_request(session_id: str) -> dict[str, Any]:
    return {"sessionId": session_id}


def cancel_request(session_id: str, reason: str | None = None, execution_id: str | None = None) -> dict[str, Any]:
    return _without_none(sessionId=session_id, reason=reason, executionId=execution_id)


def status_request(session_id: str, pending_from: int | None = None) -> dict[str, Any]:
    return _without_none(sessionId=session_id, pendingFrom=pending_from or None)


def drop_request(session_id: str, input_ids: list[str] | None = None, reason: str | None = None) -> dict[str, Any]:
    return _without_none(sessionId=session_id, inputIds=input_ids, reason=reason)


def resolve_request(session_id: str, kind: str, name: str, outcome: str, reason: str | None = None, data: Any = ABSENT) -> dict[str, Any]:
    """A wait ended from outside: ``kind`` ``approval`` (``name``: the call id, ``outcome``
    ``approved`` or ``denied``, ``reason``: a person's words) or ``signal`` (``name``: the signal's,
    ``outcome`` ``delivered``, ``data``: its value; ``ABSENT`` sends none, ``None`` a null)."""
    body = _without_none(sessionId=session_id, kind=kind, name=name, outcome=outcome, reason=reason)
    if data is not ABSENT:
        body["data"] = data
    return body


def encode_request(body: Mapping[str, Any]) -> bytes:
    """The request's bytes exactly as the Node client sends them (JSON.stringify, UTF-8)."""
    return encode_json(dict(body))


# ---------------------------------------------------------------------------------------------
# Replies


@dataclass(frozen=True)
class AdmitReceipt:
    session_id: str
    input_id: str
    #: Seq of the ``input.admitted`` event.
    admitted_seq: int
    #: False when the id was admitted before (by an earlier call; an earlier attempt of this call counts as this call).
    created: bool
    wake: bool
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "AdmitReceipt":
        return cls(d["sessionId"], d["inputId"], d["admittedSeq"], d["created"], d["wake"], dict(d))


@dataclass(frozen=True)
class WakeResult:
    """``status``: started, running_here, nothing_pending, refused, failed, closed (or requested)."""

    status: str
    execution_id: str | None = None
    reason: str | None = None
    code: str | None = None
    message: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "WakeResult":
        return cls(d["status"], d.get("executionId"), d.get("reason"), d.get("code"), d.get("message"), dict(d))


@dataclass(frozen=True)
class CancelResult:
    cancelled: bool
    execution_id: str | None = None
    #: Why not, when not cancelled (e.g. ``nothing_to_cancel``).
    reason: str | None = None
    message: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "CancelResult":
        return cls(d["cancelled"], d.get("executionId"), d.get("reason"), d.get("message"), dict(d))


@dataclass(frozen=True)
class DropResult:
    session_id: str
    dropped: list[str]
    #: Seq of the ``input.dropped`` event (None when nothing was dropped).
    seq: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "DropResult":
        return cls(d["sessionId"], list(d["dropped"]), d.get("seq"), dict(d))


@dataclass(frozen=True)
class ResolveResult:
    session_id: str
    #: approval, signal (or timer)
    kind: str
    name: str
    #: approved, denied, delivered (or timed_out, elapsed)
    outcome: str
    #: False when the wait had already ended so (the same decision sent again): nothing changed.
    resolved: bool
    #: The input that resumes the turn, when this was its last open wait (the turn runs again).
    resume_input_id: str | None = None
    #: Seq of the ``wait.resolved`` event (None when nothing changed).
    seq: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "ResolveResult":
        return cls(d["sessionId"], d["kind"], d["name"], d["outcome"], d["resolved"], d.get("resumeInputId"), d.get("seq"), dict(d))


@dataclass(frozen=True)
class PendingInput:
    input_id: str
    delivery: str
    seq: int
    wake: bool
    source: str
    continues: dict[str, Any] | None = None
    #: A scheduled prompt's time (ms since the epoch): no turn takes it before then.
    not_before: int | None = None

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "PendingInput":
        return cls(d["inputId"], d["delivery"], d["seq"], d["wake"], d.get("source", "user"), d.get("continues"), d.get("notBefore"))


@dataclass(frozen=True)
class WaitInfo:
    """One wait of the session's turn, open (``outcome`` None) or resolved in this turn: ``kind``
    approval (a person's decision on call ``call_id`` of message ``message_id``, tool ``tool`` with
    ``input``; ``started`` once an approved call has started: it never runs twice), signal (a value
    from outside, ``data`` once delivered) or timer; ``name`` is its key within the turn (the call
    id, the signal's name, ``sleep-N``). ``since``: when the turn started to wait; ``until``: a
    timer's time or a signal's timeout."""

    kind: str
    name: str
    execution_id: str
    since: int
    until: int | None
    message_id: str | None
    call_id: str | None
    tool: str | None
    durable: bool
    idempotency_key: str | None
    #: approved, denied, delivered, timed_out, elapsed, cancelled; None while it is open.
    outcome: str | None
    resolved_at: int | None
    reason: str | None
    started: bool
    #: ``ABSENT`` when the call has no input.
    input: Any = ABSENT
    #: ``ABSENT`` until a value is delivered (``None`` is a value of null).
    data: Any = ABSENT
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "WaitInfo":
        return cls(
            d["kind"],
            d["name"],
            d["executionId"],
            d["since"],
            d.get("until"),
            d.get("messageId"),
            d.get("callId"),
            d.get("tool"),
            d.get("durable", False),
            d.get("idempotencyKey"),
            d.get("outcome"),
            d.get("resolvedAt"),
            d.get("reason"),
            d.get("started", False),
            d.get("input", ABSENT),
            d.get("data", ABSENT),
            dict(d),
        )


@dataclass(frozen=True)
class ExecutionInfo:
    id: str
    owner_id: str
    lease_ms: int
    expires_at: int
    assistant_seq: int
    claimed_seq: int
    phase: str
    started: bool
    cancelled: bool
    #: succeeded, failed, released, waiting, cancelled; None while it runs (the owner holds the session only then).
    outcome: str | None
    error: dict[str, Any] | None
    open_step: str | None
    input_ids: list[str]
    input_count: int
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "ExecutionInfo":
        return cls(
            d["id"],
            d["ownerId"],
            d["leaseMs"],
            d["expiresAt"],
            d["assistantSeq"],
            d["claimedSeq"],
            d["phase"],
            d["started"],
            d["cancelled"],
            d.get("outcome"),
            d.get("error"),
            d.get("openStep"),
            list(d.get("inputIds", [])),
            d.get("inputCount", len(d.get("inputIds", []))),
            dict(d),
        )


@dataclass(frozen=True)
class StatusReply:
    """The session as the answering worker sees it in the log."""

    session_id: str
    #: idle, claimed, running, recovering, settled
    state: str
    seq: int
    execution_id: str | None
    owner: str | None
    lease_expires_at: int | None
    lease_live: bool
    lease_left_ms: int
    phase: str | None
    #: How the last execution ended: succeeded, failed, released, waiting, cancelled (None while it runs, or before any).
    outcome: str | None
    pending: list[PendingInput]
    pending_from: int
    pending_count: int
    pending_bytes: int
    recovery: dict[str, Any] | None
    #: The turn's waits: open ones (the session waits when ``outcome`` is ``waiting``) and those resolved in this turn.
    waits: list[WaitInfo]
    executions: int
    usage: dict[str, int]
    execution: ExecutionInfo | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "StatusReply":
        body = {k: v for k, v in d.items() if k != "ok"}
        return cls(
            d["sessionId"],
            d["state"],
            d["seq"],
            d.get("executionId"),
            d.get("owner"),
            d.get("leaseExpiresAt"),
            d.get("leaseLive", False),
            d.get("leaseLeftMs", 0),
            d.get("phase"),
            d.get("outcome"),
            [PendingInput.from_wire(p) for p in d.get("pending", [])],
            d.get("pendingFrom", 0),
            d.get("pendingCount", len(d.get("pending", []))),
            d.get("pendingBytes", 0),
            d.get("recovery"),
            [WaitInfo.from_wire(w) for w in d.get("waits", [])],
            d.get("executions", 0),
            dict(d.get("usage") or {}),
            ExecutionInfo.from_wire(d["execution"]) if d.get("execution") else None,
            body,
        )


Reply = AdmitReceipt | WakeResult | CancelResult | DropResult | StatusReply | ResolveResult


def _not_sessiond(verb: str, subject: str, why: str) -> CommandError:
    return CommandError(
        verb, "internal", f"The reply to {verb} on {subject} {why}: is something other than a sessiond worker answering {subject}?"
    )


def parse_reply(verb: str, data: bytes | str) -> Any:
    """The typed result of a reply body, or raises the ``CommandError`` of an error reply
    (``.code``: the worker's code; its message and details)."""
    subject = command_subject(verb)
    try:
        reply = decode_json(data)
    except (ValueError, UnicodeDecodeError) as err:
        raise _not_sessiond(verb, subject, f"is not JSON ({err})") from err
    if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
        raise _not_sessiond(verb, subject, "is not a sessiond reply")
    if not reply["ok"]:
        error: dict[str, Any] = (
            reply["error"] if isinstance(reply.get("error"), dict) else {"code": "internal", "message": "no error given"}
        )
        return_code: str = error["code"] if isinstance(error.get("code"), str) else "internal"
        message: str = error["message"] if isinstance(error.get("message"), str) else "no error given"
        details: dict[str, Any] = error["details"] if isinstance(error.get("details"), dict) else {}
        raise CommandError(verb, return_code, message, details)
    try:
        if verb == "admit":
            return AdmitReceipt.from_wire(reply["receipt"])
        if verb == "wake":
            return WakeResult.from_wire(reply["result"])
        if verb == "cancel":
            return CancelResult.from_wire(reply["result"])
        if verb == "drop":
            return DropResult.from_wire(reply["result"])
        if verb == "status":
            return StatusReply.from_wire(reply)
        if verb == "resolve":
            return ResolveResult.from_wire(reply["result"])
    except (KeyError, TypeError, AttributeError) as err:
        raise _not_sessiond(verb, subject, f"lacks a field ({err})") from err
    raise CommandError(verb, "unknown_command", f"Unknown verb {verb!r}: use one of {', '.join(VERBS)}.")
