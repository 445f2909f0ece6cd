"""Events and their three wire forms: stored batches (one msgpack array of event maps per stream
message), live messages (one msgpack map per message on ``sessiond.live.<session>.<type>``) and
export files (length-prefixed msgpack frames). Every decode checks the envelope and the payload as
sessiond's readers do (src/events/codec.ts ``eventFromFrame``) and raises ``EventError`` with the
protocol's code: decode_failed, unknown_event_type, invalid_id, unsupported_event_version,
invalid_payload, payload_too_large.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from . import catalog as c
from ._event import Event as Event
from .codec import is_whole, pack, unpack
from .errors import EventError, SessiondError
from .generated import *  # noqa: F403
from .generated import EVENT_CLASSES
from .ids import is_valid_id, validate_id
from .jsontext import stringify
from .lengths import utf16_len, utf16_prefix

EVENTS_PREFIX = "sessiond.events"
LIVE_PREFIX = "sessiond.live"
#: Largest encoded payload a reader accepts (a live frame may be this plus 4 KiB).
MAX_PAYLOAD_BYTES = 512 * 1024
EXPORT_FORMAT = "sessiond-export"
EXPORT_VERSION = 1
MAX_EXPORT_FRAME_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class UnknownEvent(Event):
    """An event of a type this client does not know (read only with ``allow_unknown``): the payload
    as a plain dict, unchecked."""

    payload: dict[str, Any]


assert set(EVENT_CLASSES) == set(c.CATALOG), "every catalog type has its event class"

_UNSET: Any = object()


def _number(value: Any) -> Any:
    """A position as sessiond's reader keeps it: any number (checked later where it matters), else none."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value) if is_whole(value) else value


def _preview(value: Any, limit: int = 120) -> str:
    try:
        text = stringify(value)
    except TypeError:
        text = repr(value)
    return text if utf16_len(text) <= limit else utf16_prefix(text, limit) + "..."  # as sessiond cuts (UTF-16 units)


def event_from_frame(
    frame: Any,
    *,
    describe: str = "Event frame",
    hint: str | None = None,
    session_id: str | None = None,
    seq_required: bool = True,
    position: Any = _UNSET,
    committed_at: Any = _UNSET,
    allow_unknown: bool = False,
) -> Event:
    """Checks one decoded frame (a map) and returns its event, in the order of sessiond's checks
    (so a frame wrong in several ways gets the same code): the envelope (decode_failed), the type
    (unknown_event_type), the ids (invalid_id), the version (unsupported_event_version), the
    payload (invalid_payload). ``position``/``committed_at``, when given (even None), are the
    reader's and override the frame's own."""

    def bad(code: str, why: str) -> EventError:
        return EventError(code, f"{describe} is not a valid sessiond event: {why}.{' ' + hint if hint else ''}", {"source": describe})

    if not isinstance(frame, dict):
        raise bad("decode_failed", "expected a map")
    f: dict[str, Any] = frame
    id_: Any = f.get("id")
    type_: Any = f.get("type")
    version: Any = f.get("version")
    sid: Any = f.get("sessionId")
    seq: Any = f.get("seq")
    time_: Any = f.get("time")
    own_committed: Any = f.get("committedAt")
    if not isinstance(id_, str) or not isinstance(sid, str):
        raise bad("decode_failed", "it lacks id or sessionId")
    if not is_whole(version) or version < 1:
        raise bad("decode_failed", f"version {_preview(version)} is not a whole number >= 1")
    if not is_whole(time_) or time_ < 0:
        raise bad("decode_failed", f"time {_preview(time_)} is not whole milliseconds since the epoch")
    if "seq" in frame or seq_required:
        if not is_whole(seq) or seq < 1:
            raise bad("decode_failed", f"seq {_preview(seq)} is not a whole number >= 1")
    if "committedAt" in frame and (not is_whole(own_committed) or own_committed < 0):
        raise bad("decode_failed", f"committedAt {_preview(own_committed)} is not whole milliseconds")
    if session_id is not None and sid != session_id:
        raise bad("decode_failed", f"it belongs to session {_preview(sid)}, not {session_id}")
    known = isinstance(type_, str) and type_ in c.CATALOG
    if not known and not allow_unknown:
        raise bad(
            "unknown_event_type",
            f"unknown event type {_preview(type_)} (event {id_}, session {sid}): upgrade sessiond, or skip the event",
        )
    for value, role in ((sid, "session id"), (id_, "event id")):
        if not is_valid_id(value):
            try:
                validate_id(value, role)
            except SessiondError as err:  # invalid_id, saying what is wrong with it
                raise bad("invalid_id", err.message) from err
    raw_payload = frame.get("payload", _UNSET)
    stored_position = frame.get("position") if position is _UNSET else position
    stored_committed = (own_committed if "committedAt" in frame else None) if committed_at is _UNSET else committed_at
    common: dict[str, Any] = {
        "id": id_,
        "session_id": sid,
        "time": int(time_),
        "seq": int(seq) if "seq" in frame else None,
        "position": _number(stored_position),
        "committed_at": int(stored_committed) if stored_committed is not None else None,
    }
    if not known:
        if not isinstance(type_, str):
            raise bad("unknown_event_type", f"unknown event type {_preview(type_)}")
        payload = raw_payload if raw_payload is not _UNSET else {}
        return UnknownEvent(
            type=type_, version=int(version), payload=payload, wire_payload=payload if isinstance(payload, dict) else {}, **common
        )
    entry = c.CATALOG[type_]
    if version > entry.version:
        raise bad(
            "unsupported_event_version",
            f"Event {type_} has version {int(version)}, but this client reads version {entry.version}. Upgrade the client "
            "(or read the log with the sessiond version that wrote it)",
        )
    for v in range(int(version), entry.version):
        up = c.UPCASTERS.get(type_, {}).get(v)
        if up is None:
            raise bad(
                "unsupported_event_version",
                f"Event {type_} has version {int(version)}, and this client has no upcaster from version {v} (it reads version {entry.version})",
            )
        if isinstance(raw_payload, dict):  # (anything else is refused as a payload below)
            raw_payload = up(raw_payload)
    cleaned, issues = c.check_payload(type_, None if raw_payload is _UNSET else raw_payload)
    if raw_payload is _UNSET:
        issues = ["(payload): expected object, received undefined"]
    if issues:
        raise bad("invalid_payload", f"Event {type_} has an invalid payload: {'; '.join(issues)}")
    cls = EVENT_CLASSES[type_]
    return cls(type=type_, version=entry.version, payload=c.typed_payload(type_, cleaned), wire_payload=cleaned, **common)


def decode_event(
    data: bytes, *, describe: str | None = None, hint: str | None = None, max_payload_bytes: int = MAX_PAYLOAD_BYTES, **options: Any
) -> Event:
    """Decodes and checks one msgpack event frame (an export file's, a live message's)."""
    where = describe or f"Event frame ({len(data)} bytes)"
    if len(data) > max_payload_bytes + 4096:
        raise EventError("payload_too_large", f"{where} is {len(data)} bytes, over the limit of {max_payload_bytes} bytes for a payload.")
    try:
        frame = unpack(data)
    except EventError as err:
        raise EventError("decode_failed", f"{where} is not a valid sessiond event: {err.message}.{' ' + hint if hint else ''}") from err
    return event_from_frame(frame, describe=where, hint=hint, **options)


_STORED_HINT = "Was it published by something other than sessiond? (an unknown type or version: upgrade the client to read it)"


def session_of_events_subject(subject: str) -> str | None:
    prefix = EVENTS_PREFIX + "."
    return subject[len(prefix) :] if subject.startswith(prefix) else None


def decode_batch(data: bytes, position: int, subject: str, committed_at: int | None = None, *, allow_unknown: bool = False) -> list[Event]:
    """Decodes and checks one stored message of ``SESSIOND_EVENTS`` (a non-empty msgpack array of
    one session's events with consecutive seqs); every event gets ``position`` (the message's stream
    sequence) and ``committed_at`` (the stored time, ms; frames never carry it)."""
    where = f"Message {position} on {subject}"
    try:
        raw = unpack(data)
    except EventError as err:
        raise EventError(
            "decode_failed",
            f"{where} cannot be read as a sessiond event batch: {err.message}. {_STORED_HINT}",
            {"position": position, "subject": subject},
        ) from err
    if not isinstance(raw, list) or len(raw) == 0:
        raise EventError(
            "decode_failed",
            f"{where} cannot be read as a sessiond event batch: expected a non-empty array of events. {_STORED_HINT}",
            {"position": position, "subject": subject},
        )
    sid = session_of_events_subject(subject)
    events: list[Event] = []
    for i, frame in enumerate(raw):
        try:
            events.append(
                event_from_frame(
                    frame,
                    describe=f"Frame {i} of message {position} on {subject}",
                    hint=_STORED_HINT,
                    session_id=sid,
                    position=position,
                    committed_at=committed_at,
                    allow_unknown=allow_unknown,
                )
            )
        except EventError as err:
            err.details["position"] = position
            raise
    live_only = next((e for e in events if e.type in c.CATALOG and not c.CATALOG[e.type].durable), None)
    if live_only is not None:
        # workers never store these; only something other than a worker could have
        raise EventError(
            "decode_failed",
            f"{where} cannot be read as a sessiond event batch: it holds a {live_only.type} event, which is live-only and never stored. {_STORED_HINT}",
            {"position": position, "subject": subject},
        )
    first = events[0].seq or 0
    for i, e in enumerate(events[1:], start=1):
        if e.seq != first + i:
            raise EventError(
                "decode_failed",
                f"{where} cannot be read as a sessiond event batch: frame {i} has seq {e.seq}, expected {first + i}. {_STORED_HINT}",
                {"position": position, "subject": subject},
            )
    return events


def encode_batch(events: list[Event]) -> bytes:
    """A stored message's body: the events' maps (no position, no stored time) in one array."""
    return pack([e.to_frame(committed_at=False) for e in events])


def live_subject(session_id: str, type_: str) -> str:
    return f"{LIVE_PREFIX}.{validate_id(session_id, 'session id')}.{type_}"


def parse_live_subject(subject: str) -> tuple[str, str] | None:
    tokens = subject.split(".")
    if len(tokens) != 5 or f"{tokens[0]}.{tokens[1]}" != LIVE_PREFIX:
        return None
    return tokens[2], f"{tokens[3]}.{tokens[4]}"


def _seq_of(data: bytes) -> int | None:
    try:
        raw = unpack(data)
    except EventError:
        return None
    if isinstance(raw, dict):
        seq: Any = raw.get("seq")
        if is_whole(seq) and seq >= 1:
            return int(seq)
    return None


def decode_live(data: bytes, subject: str, *, max_payload_bytes: int = MAX_PAYLOAD_BYTES, tenant: str | None = None) -> Event:
    """Decodes and checks one live message received on ``subject``: a msgpack map whose session and
    type match the subject (``sessiond.live.<session>.<type>``, or with ``tenant`` that tenant's
    copy ``sessiond.t.<tenant>.live.<session>.<type>``); ``seq``/``position`` present on committed
    events only. The error's ``details['seq']`` holds the frame's seq when it was readable that far."""
    live_prefix = LIVE_PREFIX if tenant is None else f"sessiond.t.{tenant}.live"
    hint = f"Only sessiond workers should publish on {live_prefix}.>."
    try:
        event = decode_event(
            data, describe=f"Live message on {subject}", hint=hint, seq_required=False, max_payload_bytes=max_payload_bytes
        )
    except EventError as err:
        err.details["subject"] = subject
        seq = _seq_of(data)
        if seq is not None:
            err.details["seq"] = seq
        raise

    def invalid(why: str) -> EventError:
        details: dict[str, Any] = {"subject": subject}
        if event.seq is not None:
            details["seq"] = event.seq
        return EventError("decode_failed", f"Live message on {subject} is not a valid sessiond event: {why}. {hint}", details)

    if event.position is not None and (not is_whole(event.position) or event.position < 1):
        raise invalid("position must be a whole number >= 1 when present")
    expected = f"{live_prefix}.{event.session_id}.{event.type}"
    if subject != expected:
        raise invalid(f"it says session {event.session_id} and type {event.type}, which belong on {expected}")
    return event


def encode_live(event: Event) -> bytes:
    return pack(event.to_live_frame())


# ---------------------------------------------------------------------------------------------
# Export files


@dataclass(frozen=True)
class ExportFile:
    """A whole export file: its header map and its events, in log order."""

    header: dict[str, Any]
    events: list[Event]


def split_frames(data: bytes) -> Iterator[tuple[int, bytes]]:
    """The frames of an export file: (byte offset of the frame's length prefix, body)."""
    at = 0
    frame = 0
    n = len(data)
    while at < n:
        if n - at < 4:
            raise EventError(
                "decode_failed", f"the export is damaged at byte {at} (frame {frame}): truncated frame length ({n - at} of 4 bytes)"
            )
        (length,) = struct.unpack_from(">I", data, at)
        if length == 0 or length > MAX_EXPORT_FRAME_BYTES:
            raise EventError("decode_failed", f"the export is damaged at byte {at} (frame {frame}): impossible frame length {length}")
        if n - at - 4 < length:
            raise EventError(
                "decode_failed", f"the export is damaged at byte {at + 4} (frame {frame}): truncated frame ({n - at - 4} of {length} bytes)"
            )
        yield at, data[at + 4 : at + 4 + length]
        at += 4 + length
        frame += 1


def read_export(source: bytes | str | Path) -> ExportFile:
    """Reads a whole export file (``sessiond export``): a header frame ``{format: "sessiond-export",
    version: 1, created, source, events}``, then one event frame each. A damaged frame raises
    ``EventError('decode_failed')`` naming its byte offset and number."""
    data = source if isinstance(source, (bytes, bytearray)) else Path(source).read_bytes()
    frames = split_frames(bytes(data))
    try:
        _, head = next(frames)
    except StopIteration:
        raise EventError("decode_failed", "the export is empty: no header frame") from None
    try:
        header = unpack(head)
    except EventError as err:
        raise EventError("decode_failed", f"the export's header is unreadable ({err.message})") from err
    if not isinstance(header, dict) or header.get("format") != EXPORT_FORMAT:
        raise EventError("decode_failed", "not a sessiond export (bad header)")
    if header.get("version") != EXPORT_VERSION:
        raise EventError(
            "unsupported_event_version",
            f"the export is format version {header.get('version')!r}; this client reads version {EXPORT_VERSION}. Use the sessiond that wrote it.",
        )
    events: list[Event] = []
    for number, (offset, body) in enumerate(frames, start=1):
        try:
            events.append(decode_event(body))
        except EventError as err:
            raise EventError(
                err.code,
                f"the export is damaged at byte {offset} (frame {number}): {err.message} The {number - 1} events before it were read.",
                err.details,
            ) from err
    return ExportFile(header, events)


def write_export(header: Mapping[str, Any], events: list[Event]) -> bytes:
    """An export file's bytes: ``header`` (format and version are set), then each event's frame."""
    head = {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, **{k: v for k, v in header.items() if k not in ("format", "version")}}
    parts = []
    for frame in [pack(head)] + [pack(e.to_frame()) for e in events]:
        parts.append(struct.pack(">I", len(frame)))
        parts.append(frame)
    return b"".join(parts)
