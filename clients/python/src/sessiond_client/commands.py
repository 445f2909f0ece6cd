"""The command protocol on ``sessiond.cmd.<verb>`` (docs/protocol.md "Commands"): request bodies,
typed success replies, and error replies as ``CommandError``.

  verb     request                                                   success reply
  admit    {sessionId, prompt, id?, delivery?, wake?, notBefore?, tags?, owner?, traceparent?}  {ok, receipt: AdmitReceipt}
  wake     {sessionId}                                               {ok, result: WakeResult}
  cancel   {sessionId, reason?, executionId?}                        {ok, result: CancelResult}
  status   {sessionId, pendingFrom?}                                 {ok, sessionId, state, seq, ..., tags, forkedFrom, execution}
  drop     {sessionId, inputIds?, reason?}                           {ok, result: DropResult}
  resolve  {sessionId, kind, name, outcome, reason?, data?}          {ok, result: ResolveResult}
  tag      {sessionId, tags: {key: value | null}}                    {ok, result: TagResult}
  list     {state?, waiting?, tags?, updatedSince?, limit?, after?}  {ok, sessions: [SessionListItem], next}
  fork     {sessionId (the new session), source, at?, tags?}         {ok, result: ForkResult}
  events   {sessionId, afterSeq?, limit?}                            {ok, events: [event as JSON], more}

``list`` is the only verb without a session id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

from .catalog import ABSENT, MAX_TAG_VALUE, MAX_TAGS, TAG_KEY, ForkPoint
from .errors import CommandError
from .events import Event, event_from_frame
from .ids import is_valid_id, validate_tenant
from .jsontext import decode_json, encode_json, stringify
from .lengths import utf16_len, utf16_prefix
from .parts import wire_prompt

COMMAND_PREFIX = "sessiond.cmd"
#: Subjects of one tenant: ``sessiond.t.<tenant>.cmd.<verb>`` and ``sessiond.t.<tenant>.live.<session>.<type>``.
TENANT_PREFIX = "sessiond.t"
VERBS = ("admit", "wake", "cancel", "status", "drop", "resolve", "tag", "list", "fork", "events", "budget")
Verb = Literal["admit", "wake", "cancel", "status", "drop", "resolve", "tag", "list", "fork", "events", "budget"]
#: The fields each request may carry (workers refuse any other as a likely typo).
REQUEST_FIELDS: Mapping[str, tuple[str, ...]] = {
    "admit": ("sessionId", "prompt", "id", "delivery", "wake", "notBefore", "tags", "owner", "traceparent"),
    "wake": ("sessionId",),
    "cancel": ("sessionId", "reason", "executionId", "actor"),
    "status": ("sessionId", "pendingFrom"),
    "drop": ("sessionId", "inputIds", "reason", "actor"),
    "resolve": ("sessionId", "kind", "name", "outcome", "reason", "data", "actor"),
    "tag": ("sessionId", "tags"),
    "list": ("state", "waiting", "tags", "idPrefix", "updatedSince", "reachableBy", "limit", "after"),
    "fork": ("sessionId", "source", "at", "tags", "owner"),
    "events": ("sessionId", "afterSeq", "limit"),
    "budget": ("sessionId", "tokens", "costUsd", "reset", "actor"),
}
#: The states a session may be in (``list``'s ``state`` filter, ``StatusReply.state``).
SESSION_STATES = ("idle", "claimed", "running", "recovering", "settled")
#: Sessions a page holds unless ``limit`` says otherwise, and the most it may say.
DEFAULT_LIST_LIMIT = 50
MAX_LIST_LIMIT = 1000
#: Most events of one ``events`` reply (and its ``limit``'s most).
EVENTS_PAGE = 500


def command_subject(verb: str, tenant: str | None = None) -> str:
    """``sessiond.cmd.<verb>``, or ``sessiond.t.<tenant>.cmd.<verb>`` when sent as a tenant."""
    if tenant is not None:
        return f"{TENANT_PREFIX}.{validate_tenant(tenant)}.cmd.{verb}"
    return f"{COMMAND_PREFIX}.{verb}"


def _without_none(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def admit_request(
    session_id: str,
    prompt: str | Sequence[Mapping[str, Any]],
    *,
    id: str | None = None,
    delivery: str | None = None,
    wake: bool | None = None,
    not_before: int | None = None,
    tags: Mapping[str, str] | None = None,
    owner: str | None = None,
    traceparent: str | None = None,
) -> dict[str, Any]:
    """An admission: ``prompt`` a string or a list of parts (``sessiond_client.parts``; each part's
    keys written in sessiond's order). ``owner``: who admits (the session's owner when this creates
    it; another owner's session answers not_found); trusted users leave it out. ``traceparent``:
    the caller's W3C trace context; the turn that runs the prompt is its child (a malformed one is
    ignored by the worker, never refused)."""
    return _without_none(
        sessionId=session_id,
        prompt=wire_prompt(prompt),
        id=id,
        delivery=delivery,
        wake=wake,
        notBefore=not_before,
        tags=dict(tags) if tags is not None else None,
        owner=owner,
        traceparent=traceparent,
    )


def wake_request(session_id: str) -> dict[str, Any]:
    return {"sessionId": session_id}


def cancel_request(session_id: str, reason: str | None = None, execution_id: str | None = None, actor: str | None = None) -> dict[str, Any]:
    return _without_none(sessionId=session_id, reason=reason, executionId=execution_id, actor=actor)


def status_request(session_id: str, pending_from: int | None = None) -> dict[str, Any]:
    return _without_none(sessionId=session_id, pendingFrom=pending_from or None)


def drop_request(
    session_id: str, input_ids: list[str] | None = None, reason: str | None = None, actor: str | None = None
) -> dict[str, Any]:
    return _without_none(sessionId=session_id, inputIds=input_ids, reason=reason, actor=actor)


def resolve_request(
    session_id: str, kind: str, name: str, outcome: str, reason: str | None = None, data: Any = ABSENT, actor: str | None = None
) -> dict[str, Any]:
    """A wait ended from outside: ``kind`` ``approval`` (``name``: the call id, ``outcome``
    ``approved`` or ``denied``, ``reason``: a person's words) or ``signal`` (``name``: the signal's,
    ``outcome`` ``delivered``, ``data``: its value; ``ABSENT`` sends none, ``None`` a null); ``actor``:
    who, recorded in the event (a trusted client says whom it acts for)."""
    body = _without_none(sessionId=session_id, kind=kind, name=name, outcome=outcome, reason=reason)
    if data is not ABSENT:
        body["data"] = data
    if actor is not None:
        body["actor"] = actor
    return body


def tag_request(session_id: str, tags: Mapping[str, str | None]) -> dict[str, Any]:
    """A change of the session's tags: a value sets the key, ``None`` removes it (keys in the order given)."""
    return {"sessionId": session_id, "tags": dict(tags)}


#: The error type of a turn stopped before a model call because its session (or tenant) spent its budget.
BUDGET_EXCEEDED = "budget_exceeded"
#: A limit ``budget_request`` removes (pass it as ``tokens`` or ``cost_usd``); None keeps the limit.
CLEAR = "clear"


def budget_request(
    session_id: str,
    *,
    tokens: int | str | None = None,
    cost_usd: float | str | None = None,
    reset: bool = False,
    actor: str | None = None,
) -> dict[str, Any]:
    """A budget request: ``tokens`` or ``cost_usd`` set a limit (``CLEAR`` removes it, None keeps it),
    ``reset`` counts the spend from now on. With none of them it only asks for the budget."""
    body: dict[str, Any] = {"sessionId": session_id}
    if tokens is not None:
        body["tokens"] = None if tokens == CLEAR else tokens
    if cost_usd is not None:
        body["costUsd"] = None if cost_usd == CLEAR else cost_usd
    if reset:
        body["reset"] = True
    if actor is not None:
        body["actor"] = actor
    return body


def list_request(
    *,
    state: str | None = None,
    waiting: bool | None = None,
    tags: Mapping[str, str] | None = None,
    id_prefix: str | None = None,
    updated_since: int | None = None,
    reachable_by: str | None = None,
    limit: int | None = None,
    after: str | None = None,
) -> dict[str, Any]:
    """A page of sessions: every filter optional (``None`` sends none)."""
    return _without_none(
        state=state,
        waiting=waiting,
        tags=dict(tags) if tags is not None else None,
        idPrefix=id_prefix,
        updatedSince=updated_since,
        reachableBy=reachable_by,
        limit=limit,
        after=after,
    )


def fork_request(
    source_id: str, session_id: str, *, at: int | None = None, tags: Mapping[str, str] | None = None, owner: str | None = None
) -> dict[str, Any]:
    """A fork of ``source_id`` into ``session_id`` at the settled seq ``at`` (None: the source's last
    settled point), with the new session's ``tags``; ``owner``: who forks (the fork keeps the source's owner)."""
    return _without_none(sessionId=session_id, source=source_id, at=at, tags=dict(tags) if tags is not None else None, owner=owner)


def events_request(session_id: str, after_seq: int | None = None, limit: int | None = None) -> dict[str, Any]:
    """A page of the session's committed events after ``after_seq`` (None or 0: from the first), at
    most ``limit`` (1 to ``EVENTS_PAGE``; None: the worker's most)."""
    return _without_none(sessionId=session_id, afterSeq=after_seq or None, limit=limit)


def tags_problem(tags: Any, what: str) -> str | None:
    """What is wrong with ``tags`` (at most ``MAX_TAGS`` valid keys and values), as sessiond words it; None when they are valid."""
    if not isinstance(tags, Mapping):
        return f'Invalid tags: {what} must be an object of tags like {{ "customer": "acme" }}, got {type(tags).__name__}.'
    if len(tags) > MAX_TAGS:
        return f"Invalid tags: {what} has {len(tags)} tags, over the limit of {MAX_TAGS} tags per session."
    for key in sorted(tags, key=str):
        value = tags[key]
        if not isinstance(key, str) or not TAG_KEY.fullmatch(key):
            return (
                f"Invalid tags: {what} has the tag key {stringify(utf16_prefix(str(key), 80))}: a key is 1 to 64 letters, "
                "digits or _ . : / -, starting with a letter or digit."
            )
        if (
            not isinstance(value, str)
            or not 1 <= utf16_len(value) <= MAX_TAG_VALUE
            or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value)
        ):
            shown = stringify(utf16_prefix(value, 80)) if isinstance(value, str) else "null" if value is None else repr(value)
            return (
                f"Invalid tags: {what} has tag {key} = {shown}: a value is a string of 1 to {MAX_TAG_VALUE} characters "
                "without control characters."
            )
    return None


def list_filter_problem(body: Mapping[str, Any]) -> str | None:
    """What is wrong with a list request's filter, in the words a worker would use (None when it is
    valid; the cursor is the worker's to check)."""
    state, waiting, limit, since = body.get("state"), body.get("waiting"), body.get("limit"), body.get("updatedSince")
    if state is not None and state not in SESSION_STATES:
        return f"Invalid list filter: state must be one of {', '.join(SESSION_STATES)}, got {stringify(state)}."
    if waiting is not None and not isinstance(waiting, bool):
        return "Invalid list filter: waiting must be true or false."
    if "tags" in body and (problem := tags_problem(body["tags"], "the filter")):
        return problem
    prefix = body.get("idPrefix")
    if prefix is not None and not is_valid_id(prefix):
        shown = stringify(utf16_prefix(prefix, 80)) if isinstance(prefix, str) else stringify(str(prefix)[:80])
        return (
            "Invalid list filter: idPrefix must be the start of a session id, 1-128 characters from "
            f"A-Z a-z 0-9 _ - : + = @, got {shown}."
        )
    if since is not None and (isinstance(since, bool) or not isinstance(since, int) or not 0 <= since <= 2**53 - 1):
        return f"Invalid list filter: updatedSince must be a time in whole milliseconds since the epoch, got {since!r}."
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIST_LIMIT):
        return f"Invalid list filter: limit must be a whole number from 1 to {MAX_LIST_LIMIT}, got {limit!r}."
    after = body.get("after")
    if after is not None and not isinstance(after, str):
        return f'Invalid list filter: after {after!r} is not a cursor: pass the "next" of the page before, as it was given.'
    return None


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
class TagResult:
    session_id: str
    #: The session's tags after the change.
    tags: dict[str, str]
    #: False when the session had these tags already (nothing was written).
    changed: bool
    #: Seq of the ``session.tagged`` event (None when nothing changed).
    seq: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "TagResult":
        return cls(d["sessionId"], dict(d["tags"]), d["changed"], d.get("seq"), dict(d))


@dataclass(frozen=True)
class SessionListItem:
    """A session in a list page: what the answering worker's projection knows of it (``status`` has the whole of it, from the log)."""

    session_id: str
    #: idle, claimed, running, recovering, settled
    state: str
    #: Whether a wait of its turn is open (an approval, a signal, a timer).
    waiting: bool
    #: Inputs admitted and not yet run (nor dropped).
    pending_inputs: int
    #: Seq of its last event.
    seq: int
    #: Times of its first event and of its last (ms since the epoch).
    created_at: int
    updated_at: int
    tags: dict[str, str]
    #: The source and seq it was forked from; None when it is not a fork.
    forked_from: ForkPoint | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: Who it belongs to (fixed by its first admission); None when no one.
    owned_by: str | None = None

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "SessionListItem":
        return cls(
            d["sessionId"],
            d["state"],
            d["waiting"],
            d["pendingInputs"],
            d["seq"],
            d["createdAt"],
            d["updatedAt"],
            dict(d.get("tags") or {}),
            fork_point(d.get("forkedFrom")),
            dict(d),
            d.get("ownedBy"),
        )


def fork_point(d: Any) -> ForkPoint | None:
    """A reply's ``{"sessionId", "seq"}`` (``forkedFrom``, a fork's ``from``) as a ``ForkPoint``; None for null."""
    return None if d is None else ForkPoint(d["sessionId"], d["seq"])


@dataclass(frozen=True)
class ForkResult:
    session_id: str
    #: The source and the seq the fork holds the conversation up to.
    from_: ForkPoint
    #: Seq of the new session's ``session.forked`` (1).
    seq: int
    #: False when the same fork was made before (the same source, and the same ``at`` when given):
    #: nothing was written. As in the Node client, a call whose first attempt went unanswered and
    #: whose resend found the fork that attempt made answers so too.
    created: bool
    #: How many conversation items (prompts, steps, summaries) the fork starts with (0 when not created).
    items: int
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "ForkResult":
        return cls(d["sessionId"], ForkPoint(d["from"]["sessionId"], d["from"]["seq"]), d["seq"], d["created"], d["items"], dict(d))


@dataclass(frozen=True)
class SessionPage:
    """A page of sessions, newest first (by creation time, then session id); ``next`` is the cursor
    of the next page (``list(after=page.next)``), None when this page is the last."""

    sessions: list[SessionListItem]
    next: str | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "SessionPage":
        return cls([SessionListItem.from_wire(s) for s in d["sessions"]], d["next"], {k: v for k, v in d.items() if k != "ok"})


_EVENTS_HINT = "A worker read it from the log: is this client older than the workers? (upgrade it)"


@dataclass(frozen=True)
class EventsPage:
    """A page of a session's committed events, in order (each read and checked as the stream's
    are); ``more``: a next page may follow (ask again after the last seq). A worker cuts a page
    short to fit the server's max_payload."""

    events: list[Event]
    more: bool
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "EventsPage":
        frames, more = d["events"], d["more"]
        if not isinstance(frames, list) or not isinstance(more, bool):
            raise TypeError("events must be a list and more a boolean")
        events = [event_from_frame(f, describe=f"Event {i} of the events reply", hint=_EVENTS_HINT) for i, f in enumerate(frames)]
        return cls(events, more, {k: v for k, v in d.items() if k != "ok"})


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
    #: The tags its admission gave the session (None when it gave none).
    tags: dict[str, str] | None = None

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "PendingInput":
        return cls(
            d["inputId"], d["delivery"], d["seq"], d["wake"], d.get("source", "user"), d.get("continues"), d.get("notBefore"), d.get("tags")
        )


@dataclass(frozen=True)
class WaitInfo:
    """One wait of the session's turn, open (``outcome`` None) or resolved in this turn: ``kind``
    approval (a person's decision on call ``call_id`` of message ``message_id``, tool ``tool`` with
    ``input``; ``started`` once an approved call has started: it never runs twice), signal (a value
    from outside, ``data`` once delivered), timer, or session (another session's turn: ``child``
    names it, ``data`` is how it ended once delivered); ``name`` is its key within the turn (the call
    id, the signal's name, ``sleep-N``, the session call's name). ``since``: when the turn started to
    wait; ``until``: a timer's time or a signal's timeout."""

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
    #: A session call's child: ``{"sessionId", "inputId"}`` (None for other kinds).
    child: dict[str, str] | None = None

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
            d.get("child"),
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
    #: What this execution's model calls used (None before its first).
    usage: dict[str, Any] | None = None

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
            d.get("usage"),
        )


@dataclass(frozen=True)
class BudgetResult:
    """A session's budget after a ``budget`` call: its limits and spend since the latest reset (``budget``
    None: none set), its usage totals, and whether a ``budget.set`` event was written (``seq``)."""

    session_id: str
    #: ``{"tokens": int | None, "costUsd": float | None, "spent": {"tokens": int, "costUsd": float}}``, or None.
    budget: dict[str, Any] | None
    spent: dict[str, Any]
    usage: dict[str, Any]
    changed: bool
    seq: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "BudgetResult":
        return cls(d["sessionId"], d.get("budget"), dict(d["spent"]), dict(d["usage"]), d["changed"], d.get("seq"), dict(d))


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
    #: Tokens (and ``costUsd``, where priced) of the session's model calls.
    usage: dict[str, Any]
    execution: ExecutionInfo | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: The session's tags (empty when it has none).
    tags: dict[str, str] = field(default_factory=dict)
    #: The source and seq of a fork (None when the session is not one).
    forked_from: ForkPoint | None = None
    #: Who the session belongs to (fixed by its first admission; None when no one). ``owner`` is the worker holding the lease.
    owned_by: str | None = None
    #: The session's budget and spend since its latest reset (None: none set), as ``BudgetResult.budget``.
    budget: dict[str, Any] | None = None
    #: The budget of the session's tenant (``owned_by``), when it has one: ``tokens``, ``costUsd``
    #: (None: no limit), ``spent`` by all of its sessions since ``since`` (ms). Set by the admin:
    #: ``sessiond budget --tenant T``.
    tenant_budget: dict[str, Any] | None = None
    #: The session whose turn last called this one (``ctx.callSession``; None when none has).
    called_by: str | None = None
    #: The sessions this session's turn waits on now (its open session calls).
    children: list[str] = field(default_factory=list)

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
            dict(d.get("tags") or {}),
            fork_point(d.get("forkedFrom")),
            d.get("ownedBy"),
            d.get("budget"),
            d.get("tenantBudget"),
            d.get("calledBy"),
            list(d.get("children") or []),
        )


Reply = (
    AdmitReceipt
    | WakeResult
    | CancelResult
    | DropResult
    | StatusReply
    | ResolveResult
    | TagResult
    | BudgetResult
    | SessionPage
    | ForkResult
    | EventsPage
)


def _not_sessiond(verb: str, subject: str, why: str) -> CommandError:
    return CommandError(
        verb, "internal", f"The reply to {verb} on {subject} {why}: is something other than a sessiond worker answering {subject}?"
    )


def parse_reply(verb: str, data: bytes | str) -> Any:
    """The typed result of a reply body, or raises the ``CommandError`` of an error reply
    (``.code``: the worker's code; its message and details). An events reply holding an event this
    client cannot read (a newer type or version) raises its ``EventError``."""
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
        if verb == "tag":
            return TagResult.from_wire(reply["result"])
        if verb == "budget":
            return BudgetResult.from_wire(reply["result"])
        if verb == "list":
            return SessionPage.from_wire(reply)
        if verb == "fork":
            return ForkResult.from_wire(reply["result"])
        if verb == "events":
            return EventsPage.from_wire(reply)
    except (KeyError, TypeError, AttributeError) as err:
        raise _not_sessiond(verb, subject, f"lacks a field ({err})") from err
    raise CommandError(verb, "unknown_command", f"Unknown verb {verb!r}: use one of {', '.join(VERBS)}.")
