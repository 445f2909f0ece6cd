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
  list     {state?, waiting?, tags?, updatedSince?, calledBy?, limit?, after?}  {ok, sessions: [SessionListItem], next}
  fork     {sessionId (the new session), source, at?, tags?}         {ok, result: ForkResult}
  events   {sessionId, afterSeq?, limit?}                            {ok, events: [event as JSON], more}
  upload   {uploadId, offset, data, mediaType, size?, sha256?, owner?}  {ok, received, blob?}
  blob     {sessionId, sha256, offset?, seq?}                        {ok, sha256, size, mediaType, offset, data, more, seq}

``list`` and ``upload`` are the verbs without a session id.
"""

from __future__ import annotations

import base64
from typing import Any, Literal, Mapping, Sequence

from .catalog import ABSENT, MAX_TAG_VALUE, MAX_TAGS, TAG_KEY
from .errors import CommandError
from .generated_replies import REPLY_READERS
from .generated_replies import AdmitReceipt as AdmitReceipt
from .generated_replies import BudgetResult as BudgetResult
from .generated_replies import CancelResult as CancelResult
from .generated_replies import DropResult as DropResult
from .generated_replies import EventsPage as EventsPage
from .generated_replies import ExecutionInfo as ExecutionInfo
from .generated_replies import ForkResult as ForkResult
from .generated_replies import PendingInput as PendingInput
from .generated_replies import Reply as Reply
from .generated_replies import ResolveResult as ResolveResult
from .generated_replies import SessionListItem as SessionListItem
from .generated_replies import SessionPage as SessionPage
from .generated_replies import StatusReply as StatusReply
from .generated_replies import TagResult as TagResult
from .generated_replies import WaitInfo as WaitInfo
from .generated_replies import WakeResult as WakeResult
from .generated_replies import fork_point as fork_point
from .ids import is_valid_id, validate_tenant
from .jsontext import decode_json, encode_json, stringify
from .lengths import utf16_len, utf16_prefix
from .parts import wire_prompt

COMMAND_PREFIX = "sessiond.cmd"
#: Subjects of one tenant: ``sessiond.t.<tenant>.cmd.<verb>`` and ``sessiond.t.<tenant>.live.<session>.<type>``.
TENANT_PREFIX = "sessiond.t"
VERBS = ("admit", "wake", "cancel", "status", "drop", "resolve", "tag", "list", "fork", "events", "budget", "upload", "blob")
Verb = Literal["admit", "wake", "cancel", "status", "drop", "resolve", "tag", "list", "fork", "events", "budget", "upload", "blob"]
#: The fields each request may carry (workers refuse any other as a likely typo).
REQUEST_FIELDS: Mapping[str, tuple[str, ...]] = {
    "admit": ("sessionId", "prompt", "id", "delivery", "wake", "notBefore", "tags", "owner", "traceparent"),
    "wake": ("sessionId",),
    "cancel": ("sessionId", "reason", "executionId", "actor"),
    "status": ("sessionId", "pendingFrom"),
    "drop": ("sessionId", "inputIds", "reason", "actor"),
    "resolve": ("sessionId", "kind", "name", "outcome", "reason", "data", "actor"),
    "tag": ("sessionId", "tags"),
    "list": ("state", "waiting", "tags", "idPrefix", "updatedSince", "reachableBy", "calledBy", "limit", "after"),
    "fork": ("sessionId", "source", "at", "tags", "owner"),
    "events": ("sessionId", "afterSeq", "limit"),
    "budget": ("sessionId", "tokens", "costUsd", "reset", "actor"),
    "upload": ("uploadId", "offset", "data", "mediaType", "size", "sha256", "owner"),
    "blob": ("sessionId", "sha256", "offset", "seq"),
}
#: Most bytes of one upload chunk or ``blob`` reply (before base64): ``upload_blob`` sends chunks of exactly this size, the last shorter.
MAX_BLOB_CHUNK = 512 * 1024
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
    called_by: str | None = None,
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
        calledBy=called_by,
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


def upload_request(
    upload_id: str,
    offset: int,
    data: bytes,
    media_type: str,
    size: int | None = None,
    sha256: str | None = None,
    owner: str | None = None,
) -> dict[str, Any]:
    """One chunk of an upload (no session): ``data`` at ``offset`` under ``upload_id`` (random per
    upload); ``size``, the whole blob's bytes, when known; ``sha256`` on the last chunk only, with
    ``owner`` (who may reference the blob in admissions) when there is one."""

    return _without_none(
        uploadId=upload_id,
        offset=offset,
        data=base64.b64encode(data).decode("ascii"),
        mediaType=media_type,
        size=size,
        sha256=sha256,
        owner=owner,
    )


def blob_request(session_id: str, sha256: str, offset: int | None = None, seq: int | None = None) -> dict[str, Any]:
    """A chunk of the blob ``sha256`` that the session references, from ``offset`` (None or 0: the first byte);
    ``seq``: the event that references it, as a reply gave it."""
    return _without_none(sessionId=session_id, sha256=sha256, offset=offset or None, seq=seq)


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
    caller = body.get("calledBy")
    if caller is not None and not is_valid_id(caller):
        shown = stringify(utf16_prefix(caller, 80)) if isinstance(caller, str) else stringify(str(caller)[:80])
        return f"Invalid list filter: calledBy must be a session id, 1-128 characters from A-Z a-z 0-9 _ - : + = @, got {shown}."
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
# Replies (their types are generated_replies.py's)


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
    read = REPLY_READERS.get(verb)
    if read is None:
        raise CommandError(verb, "unknown_command", f"Unknown verb {verb!r}: use one of {', '.join(VERBS)}.")
    try:
        return read(reply)
    except (KeyError, TypeError, AttributeError) as err:
        raise _not_sessiond(verb, subject, f"lacks a field ({err})") from err
