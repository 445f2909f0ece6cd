"""Errors of the sessiond client: every one carries one of the protocol's codes (docs/protocol.md)."""

from __future__ import annotations

from typing import Any, Mapping

#: Codes a worker answers with (the error reply's ``code``).
REPLY_CODES = (
    "bad_request",
    "invalid_id",
    "invalid_option",
    "unknown_session",
    "unknown_command",
    "input_conflict",
    "session_exists",
    "not_settled",
    "limit_exceeded",
    "command_refused",
    "sequence_conflict",
    "log_closed",
    "internal",
)
#: Codes the client reports when no reply came.
CLIENT_CODES = ("no_worker", "timeout", "permission_denied")
#: Codes a reader of frames refuses a frame with.
DECODE_CODES = ("decode_failed", "unknown_event_type", "invalid_payload", "unsupported_event_version", "invalid_id", "payload_too_large")


class SessiondError(Exception):
    """An error with a protocol code (``.code``) and a message that says what was wrong and what to do."""

    def __init__(self, code: str, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details: dict[str, Any] = dict(details or {})

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


class CommandError(SessiondError):
    """A command that failed: the worker's error reply (its code and message), or no reply at all
    (``no_worker``, ``timeout``, ``permission_denied``)."""

    def __init__(self, verb: str, code: str, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(code, message, details)
        self.verb = verb


class EventError(SessiondError):
    """A frame, stored message or live message that is not a valid sessiond event (decode_failed,
    unknown_event_type, invalid_payload, unsupported_event_version, invalid_id, payload_too_large)."""


class PermissionDenied(SessiondError):
    """nats.conf does not let this user do that (code ``permission_denied``)."""

    def __init__(self, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__("permission_denied", message, details)
