"""The asyncio client of sessiond over NATS: commands (request/reply to the workers), live events
(core subjects, deduplicated and gap-filled from the stream) and replay (the durable stream, read
with ordered consumers). It behaves as the Node client (src/client/client.ts) does.

    client = await Client.connect("nats://127.0.0.1:4222", "client", "client-dev-secret")
    sub = await client.subscribe("ses_1", lambda e: print(e.seq, e.type, e.wire_payload))
    receipt = await client.admit("ses_1", "hello")
    history = await client.replay("ses_1")
    await sub.close(); await client.close()
"""

from __future__ import annotations

import asyncio
import base64
import builtins
import hashlib
import inspect
import logging
import random
import re
import sys
import time
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, AsyncGenerator, Awaitable, Callable, Mapping, Sequence

import nats
import nats.errors
import nats.js.api as jsapi
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from .catalog import ABSENT
from .commands import (
    EVENTS_PAGE,
    TENANT_PREFIX,
    AdmitReceipt,
    BudgetResult,
    CancelResult,
    DropResult,
    EventsPage,
    ForkResult,
    ResolveResult,
    SessionPage,
    StatusReply,
    TagResult,
    WakeResult,
    admit_request,
    blob_request,
    budget_request,
    cancel_request,
    command_subject,
    drop_request,
    encode_request,
    events_request,
    fork_request,
    list_filter_problem,
    list_request,
    parse_reply,
    resolve_request,
    status_request,
    tag_request,
    wake_request,
)
from .errors import CommandError, EventError, PermissionDenied, SessiondError
from .events import EVENTS_PREFIX, LIVE_PREFIX, Event, decode_batch, decode_live
from .generated_replies import UploadReply
from .ids import new_id, validate_id, validate_tenant
from .uploads import UploadSource, upload_chunks, upload_large_parts

log = logging.getLogger("sessiond_client")

STREAM_NAME = "SESSIOND_EVENTS"
#: How long a command waits for a reply over all its attempts (s).
DEFAULT_REQUEST_TIMEOUT = 10.0
#: How long one attempt waits before the same body is sent again (s).
DEFAULT_ATTEMPT_TIMEOUT = 2.0
#: How long a command is sent again while no worker serves its subject (s).
DEFAULT_NO_WORKER_RETRY = 3.0
#: Admissions sent again at most this often when a worker answered sequence_conflict.
ADMIT_CONFLICT_ATTEMPTS = 5
#: Messages per pull of a read.
READ_BATCH = 256
#: A read that makes no progress for this long (outage, stalled consumer) fails with log_closed (s).
READ_STALL_LIMIT = 20.0
#: One pull waits this long for messages before the consumer is started again from where it was (s).
READ_PULL_TIMEOUT = 3.0
#: Sessions whose last delivered seq a live subscription remembers.
DEDUPE_SESSIONS = 10_000

Handler = Callable[[Event], Any]


@dataclass
class InvalidMessage:
    """A live or stored message that is not a valid sessiond event; it was skipped."""

    subject: str
    error: EventError
    #: The event's seq, when the frame was readable that far.
    seq: int | None = None
    #: The stream sequence, for a stored message.
    position: int | None = None


@dataclass
class SubscriptionStats:
    delivered: int = 0
    invalid: int = 0
    duplicates: int = 0
    backfilled: int = 0


_VIOLATION = re.compile(r"Permissions Violation for (Publish|Subscription) to \"([^\"]+)\"", re.I)


class _Permissions:
    """Counts the server's permission violations by (kind, subject): NATS answers a refused
    publish or subscribe with an -ERR on the connection, not on the request."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}
        self.publishes = 0

    def record(self, text: str) -> bool:
        m = _VIOLATION.search(text)
        if not m:
            return False
        kind = "pub" if m.group(1).lower() == "publish" else "sub"
        key = (kind, m.group(2))
        self.counts[key] = self.counts.get(key, 0) + 1
        if kind == "pub":
            self.publishes += 1
        return True

    def count(self, kind: str, subject: str) -> int:
        return self.counts.get((kind, subject), 0)


class _NoReply(Exception):
    def __init__(self, kind: str, cause: BaseException | None = None) -> None:
        super().__init__(kind)
        self.kind = kind  # timeout | no_worker | denied | closed
        self.cause = cause


async def _call(fn: Callable[..., Any], *args: Any) -> None:
    result = fn(*args)
    if inspect.isawaitable(result):
        await result


def _stderr_invalid(invalid: InvalidMessage) -> None:
    sys.stderr.write(f"sessiond: skipped a message on {invalid.subject}: {invalid.error.message}\n")


def _stderr_error(err: BaseException) -> None:
    sys.stderr.write(f"sessiond: {err}\n")


def _ack_tokens(reply: str) -> tuple[int, int, int, int]:
    """(stream seq, consumer seq, stored time in ns, pending) from a JetStream delivery's ack subject."""
    t = reply.split(".")
    if len(t) == 9:  # $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>
        return int(t[5]), int(t[6]), int(t[7]), int(t[8])
    if len(t) >= 11:  # $JS.ACK.<domain>.<account>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>[.<token>]
        return int(t[7]), int(t[8]), int(t[9]), int(t[10])
    raise ValueError(f"not a JetStream delivery: {reply!r}")


class Client:
    """A sessiond client on one NATS connection (see the module's doc)."""

    def __init__(
        self,
        nc: NATS,
        user: str | None,
        permissions: _Permissions,
        *,
        owns_connection: bool,
        request_timeout: float,
        attempt_timeout: float,
        no_worker_retry: float,
        stream: str,
        tenant: str | None = None,
    ) -> None:
        self.nc = nc
        self.user = user
        #: The tenant this client acts as (``connect(tenant=...)``), or None.
        self.tenant = tenant
        self._perms = permissions
        self._owns = owns_connection
        self.request_timeout = request_timeout
        self.attempt_timeout = min(attempt_timeout, request_timeout)
        self.no_worker_retry = no_worker_retry
        self.stream = stream
        self._js = nc.jetstream(timeout=5.0)
        self._subscriptions: set[Subscription] = set()
        self._reconnect_listeners: set[Callable[[], None]] = set()
        self._tasks: set[asyncio.Future[None]] = set()
        self._closed = False

    # -----------------------------------------------------------------------------------------
    # connecting

    @classmethod
    async def connect(
        cls,
        servers: str | Sequence[str] = "nats://127.0.0.1:4222",
        user: str = "client",
        password: str | None = None,
        *,
        name: str = "sessiond-client-py",
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        attempt_timeout: float = DEFAULT_ATTEMPT_TIMEOUT,
        no_worker_retry: float = DEFAULT_NO_WORKER_RETRY,
        stream: str = STREAM_NAME,
        connect_attempts: int = 8,
        tenant: str | None = None,
        **nats_options: Any,
    ) -> "Client":
        """Connects as ``user`` with the inbox prefix ``_INBOX_<user>`` (each user may read only its
        own inboxes). ``servers``: a URL, comma-separated URLs, or a list. The first connection is
        tried ``connect_attempts`` times per server (0.25 s apart); once connected it reconnects
        forever (``max_reconnect_attempts`` says otherwise). Other keyword arguments go to
        ``nats.connect``.

        ``tenant``: act as this tenant, with a user made by ``sessiond setup --tenant NAME``
        (docs/nats.md, "Tenants"): the inbox prefix is ``_INBOX_t.<tenant>``, commands go to
        ``sessiond.t.<tenant>.cmd.<verb>`` (the worker keeps them to the tenant's own sessions),
        ``replay``/``follow`` of a session read it with the ``events`` command (a tenant's user has
        no JetStream) and ``subscribe`` listens on ``sessiond.t.<tenant>.live.>``."""
        if tenant is not None:
            tenant = validate_tenant(tenant)
        if isinstance(servers, str):
            servers = [s.strip() for s in servers.split(",") if s.strip()]
        permissions = _Permissions()
        client_ref: list[Client] = []
        user_error_cb = nats_options.pop("error_cb", None)
        user_reconnected_cb = nats_options.pop("reconnected_cb", None)

        last_error: list[Exception] = []

        async def error_cb(err: Exception) -> None:
            last_error[:] = [err]
            if permissions.record(str(err)):
                log.debug("permission violation: %s", err)
            elif isinstance(err, nats.errors.SlowConsumerError):
                log.warning("sessiond: a subscription fell behind and the server dropped messages for it (%s)", err)
            else:
                log.debug("nats: %s", err)
            if user_error_cb:
                await user_error_cb(err)

        async def reconnected_cb() -> None:
            if client_ref:
                client_ref[0]._reconnected()
            if user_reconnected_cb:
                await user_reconnected_cb()

        reconnect_attempts = nats_options.pop("max_reconnect_attempts", -1)
        options: dict[str, Any] = {
            "name": name,
            "allow_reconnect": True,
            "reconnect_time_wait": 0.25,
            "connect_timeout": 2,
            **nats_options,
            # nats-py would try the first connection forever with -1: bounded here, forever after
            "max_reconnect_attempts": max(1, connect_attempts),
        }
        try:
            nc = await nats.connect(
                servers=list(servers),
                user=user,
                password=password,
                inbox_prefix=f"_INBOX_{user}" if tenant is None else f"_INBOX_t.{tenant}",
                error_cb=error_cb,
                reconnected_cb=reconnected_cb,
                **options,
            )
        except nats.errors.NoServersError as err:
            last = last_error[0] if last_error else err
            if isinstance(last, nats.errors.AuthorizationError) or "authorization" in str(last).lower():
                raise PermissionDenied(
                    f"NATS at {', '.join(servers)} refused user {user}: wrong user or password ({last}). "
                    "Set the user and password nats.conf gives (SESSIOND_NATS_USER / SESSIOND_NATS_PASS for the programs)."
                ) from err
            raise SessiondError(
                "log_closed",
                f"Cannot connect to NATS at {', '.join(servers)} as {user}: {type(last).__name__ if not str(last) else last}. Is nats-server running there?",
            ) from err
        except Exception as err:
            raise SessiondError("log_closed", f"Cannot connect to NATS at {', '.join(servers)} as {user}: {err}") from err
        nc.options["max_reconnect_attempts"] = reconnect_attempts
        client = cls(
            nc,
            user,
            permissions,
            owns_connection=True,
            request_timeout=request_timeout,
            attempt_timeout=attempt_timeout,
            no_worker_retry=no_worker_retry,
            stream=stream,
            tenant=tenant,
        )
        client_ref.append(client)
        return client

    def _background(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _reconnected(self) -> None:
        for listener in list(self._reconnect_listeners):
            try:
                listener()
            except Exception as err:  # a listener must not stop the others
                log.debug("reconnect listener: %s", err)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for sub in list(self._subscriptions):
            await sub.close()
        if self._tasks:  # consumers being deleted: a moment, then the server removes the rest itself
            await asyncio.wait(list(self._tasks), timeout=1.0)
        if self._owns and not self.nc.is_closed:
            try:
                await self.nc.close()
            except Exception:
                pass

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def _assert_open(self) -> None:
        if self._closed or self.nc.is_closed:
            raise SessiondError("log_closed", "This sessiond client is closed: connect a new one.")

    # -----------------------------------------------------------------------------------------
    # commands

    async def admit(
        self,
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
    ) -> AdmitReceipt:
        """Admits a prompt (idempotent by input id: one is generated when none is given, so every
        resend is the same admission) and, unless ``wake=False``, wakes the session. ``prompt`` is a
        string or a list of 1 to 64 parts (``sessiond_client.parts``: text, an image or a file by URL
        or by its bytes, JSON data); the worker refuses a part that is not valid with
        ``invalid_option`` naming it. ``not_before``
        (ms since the epoch) schedules it: no turn takes it before then, and a worker's recovery
        sweep wakes the session when it is due. ``tags`` are given to the session (merged into those
        it has). ``owner``: who admits (a trusted client admitting for a person or a tenant; the
        session's owner when this creates it). ``traceparent``: the caller's W3C trace context
        (``00-<trace>-<span>-<flags>``): the turn that runs the prompt is its child, on whichever
        worker, through crashes. An image or a file part given by its bytes over
        ``INLINE_PART_BYTES`` (64 KiB) is uploaded first (``upload_blob``, for ``owner``) and sent
        as its reference."""
        input_id = id if id is not None else new_id("inp")
        try:
            validate_id(session_id, "session id")
        except SessiondError as err:
            raise CommandError("admit", "invalid_id", err.message) from None

        async def upload(data: bytes, media_type: str) -> dict[str, Any]:
            return await self.upload_blob(data, media_type, owner=owner)

        body = admit_request(
            session_id,
            await upload_large_parts(prompt, upload),
            id=input_id,
            delivery=delivery,
            wake=wake,
            not_before=not_before,
            tags=tags,
            owner=owner,
            traceparent=traceparent,
        )
        resent_ever = False
        for attempt in range(1, ADMIT_CONFLICT_ATTEMPTS + 1):
            try:
                sent: tuple[AdmitReceipt, bool] = await self._send("admit", body)
                receipt, resent = sent
            except CommandError as err:
                if err.code != "sequence_conflict" or attempt >= ADMIT_CONFLICT_ATTEMPTS:
                    raise
                resent_ever = True
                await asyncio.sleep((attempt * 10 + random.random() * attempt * 20) / 1000)
                continue
            resent_ever = resent_ever or resent
            if resent_ever and not receipt.created:
                # an earlier attempt of this call, taken by a worker that did not answer in time, admitted it
                return AdmitReceipt(
                    receipt.session_id, receipt.input_id, receipt.admitted_seq, True, receipt.wake, {**receipt.raw, "created": True}
                )
            return receipt
        raise AssertionError("unreachable")

    async def wake(self, session_id: str) -> WakeResult:
        """Asks a worker to run the session's pending inputs; says what happened."""
        result: WakeResult = (await self._send("wake", wake_request(session_id)))[0]
        return result

    async def cancel(
        self, session_id: str, reason: str | None = None, execution_id: str | None = None, actor: str | None = None
    ) -> CancelResult:
        """Cancels the session's execution in progress. The cancel names that execution (asked with
        ``status`` first unless given), so a resent or late attempt never stops a later turn."""
        target = execution_id
        if target is None:
            try:
                execution = (await self.status(session_id)).execution
            except CommandError:
                execution = None  # the cancel itself says why
            if execution is not None and execution.outcome is not None:
                return CancelResult(False, None, "nothing_to_cancel", f"session {session_id} has no execution in progress to cancel")
            target = execution.id if execution else None
        sent: tuple[CancelResult, bool] = await self._send("cancel", cancel_request(session_id, reason, target, actor))
        result, resent = sent
        if result.cancelled or not resent or result.reason != "nothing_to_cancel":
            return result
        execution = (await self.status(session_id)).execution
        if execution is not None and execution.cancelled:
            return CancelResult(True, execution.id)
        return result

    async def status(self, session_id: str, pending_from: int | None = None) -> StatusReply:
        """The session's state, seq, execution and pending inputs (one page from ``pending_from``)."""
        result: StatusReply = (await self._send("status", status_request(session_id, pending_from)))[0]
        return result

    async def upload_blob(
        self, source: UploadSource, media_type: str, *, size: int | None = None, owner: str | None = None
    ) -> dict[str, Any]:
        """Uploads ``source`` (bytes, a file opened ``"rb"``, or an iterable or async iterable of byte
        chunks of any size) as one blob through the workers (the ``upload`` command, in chunks of
        ``MAX_BLOB_CHUNK`` under a random upload id) and returns its reference, ``{"sha256", "size",
        "mediaType"}``, for a prompt part: ``image_blob(ref)``, ``file_blob(ref, filename)``.
        ``size``: the whole's bytes when known ahead (bytes give it), so that one over the workers'
        limit is refused at the first chunk. ``owner``: who will reference it in admissions (a
        trusted client admitting for an owner; a tenant's uploads are its own). The worker refuses
        bytes whose signature contradicts ``media_type`` (``invalid_payload``) and a blob over its
        limit (``payload_too_large``)."""
        self._assert_open()

        async def send(body: dict[str, Any]) -> UploadReply:
            reply: UploadReply = (await self._send("upload", body))[0]
            return reply

        return await upload_chunks(source, new_id("upl"), media_type, send, size=size, owner=owner)

    async def read_blob(self, session_id: str, sha256: str) -> bytes:
        """The bytes of a blob that the session references (a prompt part's or tool result's
        ``blob["sha256"]``), read chunk by chunk with the ``blob`` command and checked against the
        hash. A session this user may not read, or one that does not reference the blob, answers
        ``not_found`` (the same either way)."""
        if not isinstance(sha256, str) or re.fullmatch(r"[0-9a-f]{64}", sha256) is None:
            raise CommandError("blob", "invalid_id", f"Invalid blob hash {sha256!r}: give the reference's sha256, 64 lower-case hex characters.")

        async def chunk_at(offset: int, seq: int | None) -> Any:
            return (await self._send("blob", blob_request(session_id, sha256, offset, seq)))[0]

        return await read_blob_chunks(sha256, chunk_at)

    async def drop(
        self, session_id: str, input_ids: list[str] | None = None, reason: str | None = None, actor: str | None = None
    ) -> DropResult:
        """Drops pending inputs unrun (all the users' inputs still waiting, or those named)."""
        result: DropResult = (await self._send("drop", drop_request(session_id, input_ids, reason, actor)))[0]
        return result

    async def approve(self, session_id: str, call_id: str, reason: str | None = None, actor: str | None = None) -> ResolveResult:
        """A person approves the call ``call_id`` the session's turn waits for: it runs once when the
        turn resumes. Idempotent (approving it again: ``resolved`` False); a call already denied is
        refused (``command_refused``, reason ``already_resolved``), as is one the turn does not wait
        for (``no_such_wait``)."""
        return await self._resolve(resolve_request(session_id, "approval", call_id, "approved", reason, actor=actor))

    async def deny(self, session_id: str, call_id: str, reason: str | None = None, actor: str | None = None) -> ResolveResult:
        """A person denies the call ``call_id`` the session's turn waits for: it never runs, and the
        model is told why (``reason``). Idempotent as ``approve``."""
        return await self._resolve(resolve_request(session_id, "approval", call_id, "denied", reason, actor=actor))

    async def resolve(self, session_id: str, name: str, data: Any = ABSENT, actor: str | None = None) -> ResolveResult:
        """Delivers the value of the signal ``name`` the session's turn waits for (``ctx.waitFor(name)``
        in its runner): the turn resumes with it (``ABSENT``, the default, delivers none; ``None`` a
        null). Idempotent as ``approve``."""
        return await self._resolve(resolve_request(session_id, "signal", name, "delivered", data=data, actor=actor))

    async def _resolve(self, body: dict[str, Any]) -> ResolveResult:
        result: ResolveResult = (await self._send("resolve", body))[0]
        return result

    async def tag(self, session_id: str, tags: Mapping[str, str | None]) -> TagResult:
        """Changes the session's tags in one ``session.tagged`` event: a value sets the key, ``None``
        removes it. Idempotent: ``changed`` is False when the session had these tags already (as
        when an earlier attempt of this call changed them). A session with no events is
        ``unknown_session``.

            await client.tag("ses_1", {"tier": "gold", "trial": None})
        """
        result: TagResult = (await self._send("tag", tag_request(session_id, tags)))[0]
        return result

    async def budget(
        self,
        session_id: str,
        *,
        tokens: int | str | None = None,
        cost_usd: float | str | None = None,
        reset: bool = False,
        actor: str | None = None,
    ) -> BudgetResult:
        """The session's budget and spend; with ``tokens``, ``cost_usd`` (``CLEAR`` removes a limit)
        or ``reset``, changes it first (one ``budget.set`` event). A turn whose session has spent its
        budget stops before its next model call and settles failed with error type
        ``budget_exceeded`` (``BUDGET_EXCEEDED``). For the admin and trusted connections: a tenant's
        change is ``permission_denied``. A negative limit is ``invalid_option``.

            result = await client.budget("ses_1", tokens=100_000)
        """
        body = budget_request(session_id, tokens=tokens, cost_usd=cost_usd, reset=reset, actor=actor)
        result: BudgetResult = (await self._send("budget", body))[0]
        return result

    async def fork(self, source_id: str, session_id: str, *, at: int | None = None, tags: Mapping[str, str] | None = None) -> ForkResult:
        """Starts ``session_id`` as a fork of ``source_id``: one ``session.forked`` event holding the
        source's conversation up to the settled seq ``at`` (a seq after which nothing runs or waits;
        None: the source's last settled point), and the fork's own ``tags`` (the source's are not
        copied). The source is only read; its pending inputs, waits and executions are not carried
        (the fork starts idle, and lives its own life). Idempotent: the same fork sent again answers
        ``created`` False. A seq inside a turn is ``not_settled`` (the message and ``details``
        ``nearestBefore``/``nearestAfter`` name the nearest settled seqs); a ``session_id`` that has
        events (other than the same fork) ``session_exists``; a source with no events
        ``unknown_session``; a session into itself, or a seq past the source's head, ``invalid_option``.

            result = await client.fork("ses_1", "ses_1_alt", tags={"branch": "alt"})
            # result.from_: ForkPoint(session_id="ses_1", seq=13), result.items: 4, result.created: True
        """
        try:
            validate_id(source_id, "source session id")
        except SessiondError as err:
            raise CommandError("fork", "invalid_id", err.message) from None
        if at is not None and (isinstance(at, bool) or not isinstance(at, int) or not 1 <= at <= 2**53 - 1):
            raise CommandError(
                "fork",
                "invalid_option",
                f"Invalid fork point {at!r}: fork at a sequence (a whole number >= 1), or None for the source's last settled point.",
            )
        result: ForkResult = (await self._send("fork", fork_request(source_id, session_id, at=at, tags=tags)))[0]
        return result

    async def list(
        self,
        *,
        state: str | None = None,
        waiting: bool | None = None,
        tags: Mapping[str, str] | None = None,
        id_prefix: str | None = None,
        updated_since: int | None = None,
        called_by: str | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> SessionPage:
        """One page of the sessions the filters select (all optional), newest first (by creation
        time, then session id), from a worker's projection, which follows the stream: a session
        admitted a moment ago may not be listed yet. ``state``: idle, claimed, running, recovering
        or settled; ``waiting``: True for sessions whose turn waits, False for those that do not;
        ``tags``: every one of these; ``id_prefix``: ids that start with this (1 to 128 of the
        characters an id holds); ``updated_since``: an event at or after this time (ms since
        the epoch); ``called_by``: the children of this session (those its turn last called);
        ``limit``: sessions per page (1 to 1000, default 50); ``after``: the ``next`` of
        the page before. Each session is on one page only, however sessions change meanwhile. A
        filter that is not valid is refused before it is sent (``invalid_option``, in the worker's
        words).

            page = await client.list(tags={"customer": "acme"})
            while True:
                for s in page.sessions: print(s.session_id, s.state)
                if page.next is None: break
                page = await client.list(tags={"customer": "acme"}, after=page.next)
        """
        body = list_request(
            state=state, waiting=waiting, tags=tags, id_prefix=id_prefix, updated_since=updated_since, called_by=called_by, limit=limit, after=after
        )
        problem = list_filter_problem(body)
        if problem is not None:
            raise CommandError("list", "invalid_option", problem)
        result: SessionPage = (await self._send("list", body))[0]
        return result

    async def events(self, session_id: str, *, after_seq: int = 0, limit: int | None = None) -> builtins.list[Event]:
        """The session's committed events after ``after_seq``, in order, at most ``limit`` (None:
        every one), read from the workers with the ``events`` command, ``EVENTS_PAGE`` (500) a page
        (fewer when a page would pass the server's max_payload), asking again after the last seq
        while the worker says there is ``more``. They are the events ``replay(session_id)`` reads
        from the stream, without a JetStream consumer. A session with no events raises
        ``unknown_session``; an ``after_seq`` that is not a whole number >= 0, or a ``limit`` not
        one >= 1, ``invalid_option`` before anything is sent.

            history = await client.events("ses_1")
            newer = await client.events("ses_1", after_seq=history[-1].seq, limit=100)
        """
        if isinstance(after_seq, bool) or not isinstance(after_seq, int) or not 0 <= after_seq <= 2**53 - 1:
            raise CommandError(
                "events", "invalid_option", f"Invalid afterSeq {after_seq!r}: give a whole number >= 0 (the seq of the last event already read)."
            )
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise CommandError(
                "events", "invalid_option", f"Invalid limit {limit!r}: give a whole number >= 1, or leave it out for every event."
            )
        events: builtins.list[Event] = []
        last = after_seq
        while True:
            want = EVENTS_PAGE if limit is None else min(EVENTS_PAGE, limit - len(events))
            page: EventsPage = (await self._send("events", events_request(session_id, last, want)))[0]
            for e in page.events:
                if e.session_id != session_id or e.seq is None or e.seq <= last:
                    raise CommandError(
                        "events",
                        "internal",
                        f"The reply to events on {command_subject('events', self.tenant)} holds event {e.id} (session {e.session_id}, seq {e.seq}) where "
                        f"session {session_id}'s events after seq {last} belong: is something other than a sessiond worker answering?",
                    )
                last = e.seq
                events.append(e)
            if not page.more or not page.events or (limit is not None and len(events) >= limit):
                return events if limit is None else events[:limit]

    async def _send(self, verb: str, body: dict[str, Any]) -> tuple[Any, bool]:
        """Sends the request and waits ``attempt_timeout`` for a reply, then sends the same body
        again until the unanswered attempts add up to ``request_timeout``; while no worker serves
        the subject, sends it again with backoff for ``no_worker_retry``. Returns the typed result
        and whether an earlier attempt went unanswered (it may have run)."""
        self._assert_open()
        if verb not in ("list", "upload"):  # the verbs without a session
            try:
                validate_id(body.get("sessionId"), "session id")
            except SessiondError as err:
                raise CommandError(verb, "invalid_id", err.message) from None
        subject = command_subject(verb, self.tenant)
        data = encode_request(body)
        started = time.monotonic()
        attempts = 0
        unanswered = 0.0
        wait = 0.01
        while True:
            attempts += 1
            timeout = min(self.attempt_timeout, self.request_timeout - unanswered)
            try:
                msg = await self._attempt(subject, data, timeout)
                break
            except _NoReply as no:
                if no.kind == "denied":
                    if self.tenant is not None:
                        raise CommandError(
                            verb,
                            "permission_denied",
                            f"NATS user {self.user} may not send {verb} as tenant {self.tenant}: nats.conf refuses publishing to {subject}. "
                            f"Connect as the tenant's user (sessiond setup --tenant {self.tenant} prints its block), made with a scope that allows {verb}.",
                        ) from None
                    raise CommandError(
                        verb,
                        "permission_denied",
                        f"NATS user {self.user} may not send sessiond commands: nats.conf refuses publishing to {subject}. "
                        "Connect as a user allowed to publish sessiond.cmd.> (the client user in nats.conf; workers' own users may not).",
                    ) from None
                if no.kind == "closed" or self.nc.is_closed:
                    raise CommandError(verb, "log_closed", f"The NATS connection is closed: connect a new client to send {verb}.") from None
                if no.kind == "timeout":
                    unanswered += timeout
                    if unanswered < self.request_timeout - 1e-6:
                        continue
                    sent = f"within {self.request_timeout:g} s (sent {attempts} time{'s' if attempts > 1 else ''})"
                    if verb == "list":
                        raise CommandError(
                            verb, "timeout", f"No reply to list {sent}: the workers may be busy or gone. It only reads: send it again."
                        ) from None
                    if verb == "upload":
                        raise CommandError(
                            verb, "timeout", f"No reply to upload {sent}: the workers may be busy or gone. Upload the blob again (a chunk sent again is harmless)."
                        ) from None
                    if verb in ("events", "blob"):
                        raise CommandError(
                            verb,
                            "timeout",
                            f"No reply to {verb} for session {body['sessionId']} {sent}: the workers may be busy or gone. It only reads: send it again.",
                        ) from None
                    if verb == "admit" and body.get("id"):
                        retry = f"admit again with the same input id {body['id']} (it is idempotent)"
                    elif verb == "tag":
                        retry = "send the same tag again (it is idempotent)"
                    elif verb == "fork":
                        retry = "send the same fork again (it is idempotent: the fork made answers created false)"
                    else:
                        retry = f"check with status before sending {verb} again"
                    raise CommandError(
                        verb,
                        "timeout",
                        f"No reply to {verb} for session {body['sessionId']} {sent}: the workers may be busy or gone, so the command "
                        f"may or may not have run. To be sure, {retry}.",
                    ) from None
                # no responders: nobody received it, sending it again is safe
                # sent again until the retry window is spent (the last pause is what is left of it)
                left = started + self.no_worker_retry - time.monotonic()
                if left <= 0:
                    raise CommandError(
                        verb,
                        "no_worker",
                        f"No sessiond worker is serving {subject} on {self._server()}"
                        f"{f' (asked again for {self.no_worker_retry:g} s)' if self.no_worker_retry > 0 else ''}: start one "
                        "(sessiond start --nats <url> --nats-user worker --nats-pass <secret>) and retry.",
                    ) from None
                await asyncio.sleep(min(wait / 2 + random.random() * wait / 2, left))
                wait = min(wait * 2, 0.5)
        return parse_reply(verb, msg.data), unanswered > 0

    async def _roundtrip(self, timeout: float) -> None:
        """Waits until the server has read everything sent so far and answered it: a refused
        publish or subscribe is answered (-ERR) before the PONG. nats-py writes a flush's PING
        straight to the socket, ahead of commands still buffered, so those are written first."""
        if self.nc.is_connected:
            await self.nc._flush_pending(force_flush=True)
        await self.nc.flush(timeout=timeout)  # type: ignore[arg-type]  # a float works; nats-py says int

    def _server(self) -> str:
        url = self.nc.connected_url
        return url.geturl() if url else "(not connected)"

    async def _attempt(self, subject: str, data: bytes, timeout: float) -> Msg:
        """One request: a reply inbox of our own, the body, a flush (the server answers a refused
        publish before the PONG), then the reply or a timeout."""
        if self.nc.is_closed:
            raise _NoReply("closed")
        deadline = time.monotonic() + timeout
        inbox = self.nc.new_inbox()
        try:
            sub = await self.nc.subscribe(inbox, max_msgs=1)
        except nats.errors.ConnectionClosedError as err:
            raise _NoReply("closed", err) from err
        try:
            before = self._perms.count("pub", subject)
            try:
                await self.nc.publish(subject, data, reply=inbox)  # buffered while reconnecting
                if self.nc.is_connected:
                    await self._roundtrip(max(0.05, deadline - time.monotonic()))
            except nats.errors.ConnectionClosedError as err:
                raise _NoReply("closed", err) from err
            except Exception as err:  # disconnected meanwhile, or slow: the reply may still come within the attempt
                log.debug("request on %s: %r", subject, err)
            if self._perms.count("pub", subject) > before:
                raise _NoReply("denied")
            left = deadline - time.monotonic()
            if left <= 0:
                raise _NoReply("timeout")
            try:
                msg = await sub.next_msg(timeout=left)
            except (nats.errors.TimeoutError, asyncio.TimeoutError) as err:
                if self._perms.count("pub", subject) > before:
                    raise _NoReply("denied") from err
                raise _NoReply("timeout", err) from err
            except nats.errors.ConnectionClosedError as err:
                raise _NoReply("closed", err) from err
            if msg.headers and msg.headers.get(jsapi.Header.STATUS) == "503":
                raise _NoReply("no_worker")
            return msg
        finally:
            try:
                await sub.unsubscribe()
            except Exception:
                pass

    # -----------------------------------------------------------------------------------------
    # the durable stream

    async def _js_call(self, what: str, coro: Awaitable[Any]) -> Any:
        before = self._perms.publishes
        try:
            return await coro
        except (nats.errors.TimeoutError, asyncio.TimeoutError):
            if self._perms.publishes > before:
                raise PermissionDenied(
                    f"NATS user {self.user} may not {what} on stream {self.stream}: nats.conf lets the client and observer users "
                    "create ordered consumers on SESSIOND_EVENTS."
                ) from None
            raise

    async def _stored(self, start: int | str, filter_subject: str | None) -> AsyncGenerator[tuple[Msg, int, int], None]:
        """The stream's messages from stream sequence ``start`` (or ``"last"``: the filter's last
        message), through an ordered consumer (ephemeral, no acks, in memory, one at a time, started
        again from the next sequence whenever it stalls, loses a message or the connection drops),
        until none is pending. Yields (message, stream seq, stored time in ms)."""
        self._assert_open()
        from_seq: int | str = start
        progress_at = time.monotonic()
        backoff = 0.05
        while True:
            name = self.nc._nuid.next().decode()
            config = jsapi.ConsumerConfig(
                name=name,
                ack_policy=jsapi.AckPolicy.NONE,
                filter_subject=filter_subject,
                mem_storage=True,
                num_replicas=1,
                inactive_threshold=60.0,
                max_deliver=1,
            )
            if from_seq == "last":
                config.deliver_policy = jsapi.DeliverPolicy.LAST
            else:
                config.deliver_policy = jsapi.DeliverPolicy.BY_START_SEQUENCE
                config.opt_start_seq = max(1, int(from_seq))
            psub = None
            restart = False
            try:
                try:
                    info = await self._js_call("create a consumer", self._js.add_consumer(self.stream, config=config, timeout=5.0))
                except PermissionDenied:
                    raise
                except nats.js.errors.NotFoundError as err:
                    raise SessiondError(
                        "not_found", f"Stream {self.stream} does not exist on {self._server()}: run sessiond setup (as admin) first."
                    ) from err
                if info.num_pending == 0:
                    return
                psub = await self._js.pull_subscribe_bind(consumer=name, stream=self.stream)
                expected_cseq = 1
                while not restart:
                    try:
                        msgs = await psub.fetch(batch=READ_BATCH, timeout=READ_PULL_TIMEOUT)
                    except (nats.errors.TimeoutError, asyncio.TimeoutError):
                        restart = True  # stalled though messages are pending: start again from the next one
                        break
                    for m in msgs:
                        sseq, cseq, ts_ns, pending = _ack_tokens(m.reply)
                        if cseq != expected_cseq:
                            restart = True  # a delivery was lost: start again after the last one we have
                            break
                        expected_cseq += 1
                        from_seq = sseq + 1
                        progress_at = time.monotonic()
                        backoff = 0.05
                        yield m, sseq, ts_ns // 1_000_000
                        if pending == 0:
                            return
            except (SessiondError, GeneratorExit, asyncio.CancelledError):
                raise
            except Exception as err:  # the connection dropped, the consumer vanished (server restart), ...
                if self._closed or self.nc.is_closed:
                    raise SessiondError(
                        "log_closed", f"The NATS connection closed while reading {self.stream}: connect again and retry."
                    ) from err
                log.debug("read of %s restarts from %s: %r", self.stream, from_seq, err)
                restart = True
            finally:
                if psub is not None:
                    try:
                        await psub.unsubscribe()
                    except Exception:
                        pass
                self._background(self._delete_consumer(name))
            if time.monotonic() - progress_at > READ_STALL_LIMIT:
                raise SessiondError(
                    "log_closed",
                    f"Reading {self.stream} stalled: no message arrived for {READ_STALL_LIMIT:g} s though the stream has more "
                    f"(consumers were started again from stream sequence {from_seq}). Check that nats-server is reachable, then retry.",
                )
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 1.0)

    async def _delete_consumer(self, name: str) -> None:
        if self.nc.is_closed:
            return
        try:
            await self._js.delete_consumer(self.stream, name)
        except Exception:
            pass  # an idle ordered consumer is removed by the server anyway

    async def iter_replay(
        self,
        session_id: str | None = None,
        *,
        after_seq: int = 0,
        after_position: int = 0,
        before_seq: int | None = None,
        on_invalid: Callable[[InvalidMessage], Any] | None = None,
    ) -> AsyncGenerator[Event, None]:
        """The committed events in the stream, in order (one session's with ``session_id``, every
        session's in commit order without), read with an ordered consumer until none is pending.
        ``after_seq``: only seqs above it (with a session); ``after_position``: start after that
        stream sequence; ``before_seq``: stop at that seq. A message that is not a valid event batch
        is skipped and reported to ``on_invalid`` (default: a line on stderr).

        As a tenant (``connect(tenant=...)``) one session's events are read with the ``events``
        command (none for a session the tenant does not own or that has none); the whole log cannot
        be read (``PermissionDenied``: a tenant's user has no JetStream)."""
        if self.tenant is not None:
            async for e in self._tenant_replay(session_id, after_seq, after_position, before_seq):
                yield e
            return
        report = on_invalid or _stderr_invalid
        if session_id is not None:
            subject = f"{EVENTS_PREFIX}.{validate_id(session_id, 'session id')}"
        else:
            subject = None
        async with aclosing(self._stored(after_position + 1, subject)) as stored:
            async for m, position, committed_at in stored:
                try:
                    events = decode_batch(m.data, position, m.subject, committed_at)
                except EventError as err:
                    await _call(report, InvalidMessage(m.subject, err, position=position))
                    continue
                for e in events:
                    if session_id is not None and e.seq is not None and e.seq <= after_seq:
                        continue
                    if before_seq is not None and e.seq is not None and e.seq >= before_seq:
                        return
                    yield e

    async def _tenant_replay(
        self, session_id: str | None, after_seq: int, after_position: int, before_seq: int | None
    ) -> AsyncGenerator[Event, None]:
        if session_id is None:
            self._assert_not_tenant("replay the whole log (name a session: replay(session_id))")
        try:
            events = await self.events(session_id, after_seq=after_seq)  # type: ignore[arg-type]
        except CommandError as err:
            if err.code == "unknown_session":
                return
            raise
        for e in events:
            if e.position is not None and e.position <= after_position:
                continue
            if before_seq is not None and e.seq is not None and e.seq >= before_seq:
                return
            yield e

    def _assert_not_tenant(self, what: str) -> None:
        if self.tenant is not None:
            raise PermissionDenied(
                f"A client acting as tenant {self.tenant} cannot {what}: a tenant's NATS user has no JetStream (the stream holds every "
                "tenant's sessions). It reads its own sessions with events, replay(session_id), follow and subscribe (docs/nats.md, \"Tenants\")."
            )

    async def replay(
        self,
        session_id: str | None = None,
        *,
        after_seq: int = 0,
        after_position: int = 0,
        on_invalid: Callable[[InvalidMessage], Any] | None = None,
    ) -> builtins.list[Event]:  # (the list command shadows the builtin in this class)
        """``iter_replay`` as a list."""
        return [e async for e in self.iter_replay(session_id, after_seq=after_seq, after_position=after_position, on_invalid=on_invalid)]

    async def last_event(self, session_id: str) -> Event | None:
        """The session's last committed event (read with one consumer on its last message), or None.
        As a tenant, the last of its events read with the ``events`` command."""
        if self.tenant is not None:
            events = await self.replay(session_id)
            return events[-1] if events else None
        subject = f"{EVENTS_PREFIX}.{validate_id(session_id, 'session id')}"
        last: Event | None = None
        async with aclosing(self._stored("last", subject)) as stored:
            async for m, position, committed_at in stored:
                try:
                    last = decode_batch(m.data, position, m.subject, committed_at)[-1]
                except EventError:
                    last = None
        if last is None:
            events = await self.replay(session_id)  # the last message is quarantined: the last valid one
            return events[-1] if events else None
        return last

    # -----------------------------------------------------------------------------------------
    # live events

    async def subscribe(
        self,
        session_id: str | None,
        handler: Handler,
        after_seq: int | None = 0,
        on_invalid: Callable[[InvalidMessage], Any] | None = None,
        *,
        after_position: int = 0,
        on_error: Callable[[BaseException], Any] | None = None,
        backfill: bool = True,
        committed_only: bool = False,
        catch_up: bool = False,
        catch_up_on_reconnect: bool = False,
    ) -> "Subscription":
        """Live events of one session (``sessiond.live.<session>.>``; every session's with None),
        decoded and checked, delivered to ``handler`` one at a time in arrival order (an async
        handler is awaited before the next). Committed events are delivered once and in order: a
        seq at or below the last delivered is dropped, and a seq past the last + 1 is a gap, filled
        from the stream before the event that revealed it. ``after_seq`` (with a session): events
        up to it count as delivered, so the first live event brings everything after it (default 0:
        the whole session); None: start with the first event that arrives. ``after_position``: the
        stream sequence of event ``after_seq``, where gap fills start reading (default: the start).
        Live-only events (text.delta, ...) are delivered as they come (not with
        ``committed_only``). An invalid message is skipped and reported to ``on_invalid``.

        ``catch_up``: read the stream once right away (a quiet session produces no live event);
        ``catch_up_on_reconnect``: again after every reconnect (live messages published while
        disconnected are lost). Both go beyond the Node client's ``subscribe`` (its ``follow`` does
        the first)."""
        self._assert_open()
        live_prefix = LIVE_PREFIX if self.tenant is None else f"{TENANT_PREFIX}.{self.tenant}.live"
        if session_id is None:
            subject = f"{live_prefix}.*.>"
            if after_seq:
                raise SessiondError("invalid_option", f"after_seq ({after_seq}) needs a session id.")
            after_seq = None
        else:
            subject = f"{live_prefix}.{validate_id(session_id, 'session id')}.>"
        if after_seq is not None and (not isinstance(after_seq, int) or after_seq < 0):
            raise SessiondError("invalid_option", f"after_seq ({after_seq!r}) needs a whole number >= 0.")
        sub = Subscription(
            self,
            subject,
            session_id,
            handler,
            after_seq=after_seq,
            after_position=after_position,
            on_invalid=on_invalid or _stderr_invalid,
            on_error=on_error or _stderr_error,
            backfill=backfill,
            committed_only=committed_only,
        )
        await sub._start()
        self._subscriptions.add(sub)
        if catch_up:
            sub.catch_up()
        if catch_up_on_reconnect:
            listener = sub.catch_up
            self._reconnect_listeners.add(listener)
            sub._on_close.append(lambda: self._reconnect_listeners.discard(listener))
        return sub

    async def follow(
        self,
        session_id: str,
        handler: Handler,
        after_seq: int = 0,
        *,
        on_invalid: Callable[[InvalidMessage], Any] | None = None,
        on_error: Callable[[BaseException], Any] | None = None,
    ) -> "Subscription":
        """Every committed event of the session after ``after_seq``, in order, each once: what the
        stream holds first, then live (listening starts before the read, so nothing in between is
        missed), caught up from the stream again after each reconnect."""
        return await self.subscribe(
            session_id,
            handler,
            after_seq,
            on_invalid,
            on_error=on_error,
            committed_only=True,
            catch_up=True,
            catch_up_on_reconnect=True,
        )


_CATCH_UP = object()
_CLOSE = object()


@dataclass
class _SessionMark:
    seq: int
    position: int  # stream sequence of the event at seq (0: unknown)


class Subscription:
    """A live subscription (``Client.subscribe``): ``subject``, ``stats``, ``last_seq``, ``close()``."""

    def __init__(
        self,
        client: Client,
        subject: str,
        session_id: str | None,
        handler: Handler,
        *,
        after_seq: int | None,
        after_position: int,
        on_invalid: Callable[[InvalidMessage], Any],
        on_error: Callable[[BaseException], Any],
        backfill: bool,
        committed_only: bool,
    ) -> None:
        self.client = client
        self.subject = subject
        self.session_id = session_id
        self.stats = SubscriptionStats()
        self._handler = handler
        self._on_invalid = on_invalid
        self._on_error = on_error
        self._backfill = backfill
        self._committed_only = committed_only
        self._marks: dict[str, _SessionMark] = {}
        if session_id is not None and after_seq is not None:
            self._marks[session_id] = _SessionMark(after_seq, after_position)
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._sub: Any = None
        self._task: asyncio.Task[None] | None = None
        self._on_close: list[Callable[[], Any]] = []
        self._closed = False
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def last_seq(self) -> int | None:
        """The seq of the last committed event delivered (of this subscription's session)."""
        if self.session_id is None:
            return None
        mark = self._marks.get(self.session_id)
        return mark.seq if mark else None

    @property
    def done(self) -> asyncio.Task[None]:
        assert self._task is not None
        return self._task

    async def _start(self) -> None:
        client = self.client

        async def on_msg(msg: Msg) -> None:
            self._idle.clear()
            self._queue.put_nowait(msg)

        before = client._perms.count("sub", self.subject)
        self._sub = await client.nc.subscribe(self.subject, cb=on_msg)
        try:
            await client._roundtrip(5)
        except Exception:
            pass
        if client._perms.count("sub", self.subject) > before:
            try:
                await self._sub.unsubscribe()
            except Exception:
                pass
            if client.tenant is not None:
                raise PermissionDenied(
                    f"NATS user {client.user} may not subscribe to {self.subject}: a tenant's user reads its live events when made with the "
                    f"read scope (sessiond setup --tenant {client.tenant}), whose block allows {TENANT_PREFIX}.{client.tenant}.live.>."
                )
            raise PermissionDenied(
                f"NATS user {client.user} may not subscribe to {self.subject}: nats.conf lets the client and observer users subscribe to sessiond.live.>."
            )
        self._task = asyncio.ensure_future(self._run())

    def catch_up(self) -> None:
        """Reads the stream after the last delivered event (of the subscription's session) and
        delivers what is there, in the order of the live messages (queued behind those already in)."""
        if not self._closed:
            self._idle.clear()
            self._queue.put_nowait(_CATCH_UP)

    async def wait_idle(self, timeout: float | None = None) -> None:
        """Waits until every message received so far has been handled."""
        await asyncio.wait_for(self._idle.wait(), timeout)

    async def close(self) -> None:
        if self._closed:
            if self._task and self._task is not asyncio.current_task():
                await asyncio.shield(self._task)
            return
        self._closed = True
        self.client._subscriptions.discard(self)
        for fn in self._on_close:
            fn()
        try:
            if self._sub is not None:
                await self._sub.unsubscribe()
        except Exception:
            pass
        self._queue.put_nowait(_CLOSE)
        if self._task and self._task is not asyncio.current_task():
            await self._task

    async def __aenter__(self) -> "Subscription":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def _deliver(self, event: Event) -> None:
        self.stats.delivered += 1
        try:
            await _call(self._handler, event)
        except Exception as err:
            await self._report(err)

    async def _report(self, err: BaseException) -> None:
        try:
            await _call(self._on_error, err)
        except Exception:
            pass

    def _mark(self, event: Event) -> None:
        assert event.seq is not None
        self._marks.pop(event.session_id, None)
        self._marks[event.session_id] = _SessionMark(event.seq, event.position or 0)
        if len(self._marks) > DEDUPE_SESSIONS:
            self._marks.pop(next(iter(self._marks)))

    async def _read_after(self, session_id: str, mark: _SessionMark | None, before: int | None) -> None:
        """Delivers the session's stored events after ``mark`` (and below ``before``), retrying
        through an outage for up to the read's stall limit."""
        last = mark.seq if mark else 0
        start = mark.position if mark and mark.position else 0
        deadline = time.monotonic() + READ_STALL_LIMIT
        while True:
            try:
                reading = self.client.iter_replay(
                    session_id, after_seq=last, after_position=start, before_seq=before, on_invalid=self._invalid_stored
                )
                async with aclosing(reading) as events:
                    async for e in events:
                        if self._closed:
                            return
                        current = self._marks.get(session_id)
                        if e.seq is None or (current is not None and e.seq <= current.seq):
                            continue
                        if before is not None:
                            self.stats.backfilled += 1
                        self._mark(e)
                        last, start = e.seq, e.position or start
                        await self._deliver(e)
                return
            except SessiondError as err:
                if err.code == "permission_denied" or time.monotonic() > deadline or self._closed or self.client._closed:
                    raise
                await asyncio.sleep(0.2)

    async def _invalid_stored(self, invalid: InvalidMessage) -> None:
        self.stats.invalid += 1
        await _call(self._on_invalid, invalid)

    async def _run(self) -> None:
        while True:
            if self._queue.empty():
                self._idle.set()
            item = await self._queue.get()
            if item is _CLOSE:
                self._idle.set()
                return
            if self._closed:
                continue
            if item is _CATCH_UP:
                if self.session_id is not None:
                    try:
                        await self._read_after(self.session_id, self._marks.get(self.session_id), None)
                    except Exception as err:
                        await self._report(
                            SessiondError(
                                "log_closed",
                                f"Could not read session {self.session_id} from the stream to catch up ({err}); it is read again on the next gap or reconnect.",
                            )
                        )
                continue
            msg: Msg = item
            try:
                event = decode_live(msg.data, msg.subject, tenant=self.client.tenant)
            except EventError as err:
                self.stats.invalid += 1
                seq = err.details.get("seq")
                try:
                    await _call(self._on_invalid, InvalidMessage(msg.subject, err, seq=seq if isinstance(seq, int) else None))
                except Exception as cb_err:
                    await self._report(cb_err)
                continue
            if event.seq is None:
                if not self._committed_only:
                    await self._deliver(event)
                continue
            mark = self._marks.get(event.session_id)
            last = mark.seq if mark else 0
            if event.seq <= last:
                self.stats.duplicates += 1
                continue
            if self._backfill and mark is not None and event.seq > last + 1:
                try:
                    await self._read_after(event.session_id, mark, event.seq)
                except Exception as err:
                    await self._report(
                        SessiondError(
                            "log_closed",
                            f"Live events {last + 1}..{event.seq - 1} of session {event.session_id} were missed and could not be read from the stream "
                            f"({err}); read them with replay({event.session_id!r}, after_seq={last}).",
                            {"sessionId": event.session_id, "afterSeq": last, "beforeSeq": event.seq},
                        )
                    )
                mark = self._marks.get(event.session_id)
                if mark is not None and event.seq <= mark.seq:
                    continue  # the read brought it (and maybe more)
            self._mark(event)
            await self._deliver(event)


async def read_blob_chunks(sha256: str, chunk_at: Callable[[int, int | None], Awaitable[Any]]) -> bytes:
    """Asks ``chunk_at`` for chunks from offset 0 until one says no more follow; checks the whole against ``sha256``.
    Each request after the first names the event (``seq``) the first reply found the reference in."""

    out = bytearray()
    seq: int | None = None
    while True:
        chunk = await chunk_at(len(out), seq)
        seq = chunk.seq
        try:
            data = base64.b64decode(chunk.data, validate=True)
        except ValueError as err:
            raise CommandError("blob", "internal", f"The blob reply at offset {len(out)} is not base64 ({err}).") from None
        if chunk.offset != len(out):
            raise CommandError("blob", "internal", f"The blob reply at offset {len(out)} starts at {chunk.offset}: do the worker and this client speak the same protocol?")
        out += data
        if not chunk.more:
            break
        if not data:
            raise CommandError("blob", "internal", f"The blob reply at offset {len(out)} is empty, with more to come.")
    got = hashlib.sha256(out).hexdigest()
    if got != sha256:
        raise CommandError("blob", "decode_failed", f"Blob {sha256} as read hashes to {got} ({len(out)} bytes): read it again.")
    return bytes(out)
