"""The event: its envelope, its typed payload and its wire forms (generated.py subclasses it per type)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .jsontext import stringify


@dataclass(frozen=True, kw_only=True)
class Event:
    """One event. ``seq`` and ``position`` are set on committed events (``position``: the stream
    sequence of the message that holds it), absent (None) on live-only ones; ``committed_at`` is
    when the log stored it (ms), known for events read from the stream and some export frames.
    ``payload`` is the type's payload dataclass (a dict for ``UnknownEvent``); ``wire_payload`` the
    payload as on the wire (camelCase keys, checked and cleaned)."""

    id: str
    type: str
    version: int
    session_id: str
    time: int
    payload: Any
    seq: int | None = None
    position: int | None = None
    committed_at: int | None = None
    wire_payload: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def committed(self) -> bool:
        """A durable event from the log (it has a seq), not a live-only one."""
        return self.seq is not None

    def to_dict(self) -> dict[str, Any]:
        """The event as sessiond's readers give it (the Node client's SessionEvent / LiveMessage):
        the live frame's fields, then ``committedAt`` when known."""
        out = self.to_live_frame()
        if self.committed_at is not None:
            out["committedAt"] = self.committed_at
        return out

    def to_frame(self, *, committed_at: bool = True) -> dict[str, Any]:
        """The event map as stored and exported (``encodeEvent``/``encodeBatch``): no position."""
        out: dict[str, Any] = {"id": self.id, "type": self.type, "version": self.version, "sessionId": self.session_id}
        if self.seq is not None:
            out["seq"] = self.seq
        out["time"] = self.time
        out["payload"] = dict(self.wire_payload)
        if committed_at and self.committed_at is not None:
            out["committedAt"] = self.committed_at
        return out

    def to_live_frame(self) -> dict[str, Any]:
        """The map a worker publishes on its live subject (``encodeLiveEvent``)."""
        out: dict[str, Any] = {
            "id": self.id,
            "type": self.type,
            "version": self.version,
            "sessionId": self.session_id,
            "time": self.time,
            "payload": dict(self.wire_payload),
        }
        if self.seq is not None:
            out["seq"] = self.seq
        if self.position is not None:
            out["position"] = self.position
        return out

    def json(self) -> str:
        """``to_dict()`` as one line of JSON (as JSON.stringify writes it)."""
        return stringify(self.to_dict())
