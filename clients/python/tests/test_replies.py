"""The reply types (generated_replies.py, from commands.schema.json): the classes a caller builds
and reads keep their fields in their order, a reply lacking a field is refused as not sessiond's,
and what older workers left out reads as its default."""

from __future__ import annotations

import dataclasses
import json

import pytest

import sessiond_client
from sessiond_client import CommandError, StatusReply, parse_reply

#: Each reply class's fields, in the order its constructor takes them.
FIELDS = {
    "AdmitReceipt": "session_id input_id admitted_seq created wake raw",
    "WakeResult": "status execution_id reason code message raw",
    "CancelResult": "cancelled execution_id reason message raw",
    "DropResult": "session_id dropped seq raw",
    "ResolveResult": "session_id kind name outcome resolved resume_input_id seq raw",
    "TagResult": "session_id tags changed seq raw",
    "SessionListItem": "session_id state waiting pending_inputs seq created_at updated_at tags forked_from raw owned_by called_by child_count",
    "ForkResult": "session_id from_ seq created items raw",
    "SessionPage": "sessions next raw",
    "EventsPage": "events more raw",
    "PendingInput": "input_id delivery seq wake source continues not_before tags",
    "WaitInfo": "kind name execution_id since until message_id call_id tool durable idempotency_key outcome resolved_at reason started "
    "input data raw child",
    "ExecutionInfo": "id owner_id lease_ms expires_at assistant_seq claimed_seq phase started cancelled outcome error open_step input_ids "
    "input_count raw usage",
    "BudgetResult": "session_id budget spent usage changed seq raw",
    "StatusReply": "session_id state seq execution_id owner lease_expires_at lease_live lease_left_ms phase outcome pending pending_from "
    "pending_count pending_bytes pending_blob_bytes recovery waits executions usage execution raw tags forked_from owned_by budget tenant_budget called_by "
    "children",
}


@pytest.mark.parametrize("name", FIELDS)
def test_a_reply_class_keeps_its_fields_in_order(name: str) -> None:
    cls = getattr(sessiond_client, name)
    assert [f.name for f in dataclasses.fields(cls)] == FIELDS[name].split()
    assert cls.__dataclass_params__.frozen


def test_a_reply_class_is_built_by_position_as_before() -> None:
    result = sessiond_client.CancelResult(False, None, "nothing_to_cancel", "no execution")
    assert (result.cancelled, result.reason, result.message, result.raw) == (False, "nothing_to_cancel", "no execution", {})


@pytest.mark.parametrize(
    ("verb", "reply", "missing"),
    [
        ("admit", {"ok": True, "receipt": {"sessionId": "ses_1", "inputId": "inp_1", "admittedSeq": 1, "created": True}}, "wake"),
        (
            "fork",
            {"ok": True, "result": {"sessionId": "ses_2", "from": {"sessionId": "ses_1"}, "seq": 1, "created": True, "items": 0}},
            "seq",
        ),
        ("list", {"ok": True, "sessions": []}, "next"),
        ("status", {"ok": True, "sessionId": "ses_1", "state": "idle"}, "seq"),
    ],
)
def test_a_reply_lacking_a_field_is_refused_as_not_a_workers(verb: str, reply: dict[str, object], missing: str) -> None:
    with pytest.raises(CommandError) as caught:
        parse_reply(verb, json.dumps(reply))
    assert caught.value.code == "internal"
    assert f"lacks a field ('{missing}')" in caught.value.message


def test_an_events_reply_of_the_wrong_shape_is_refused() -> None:
    with pytest.raises(CommandError) as caught:
        parse_reply("events", json.dumps({"ok": True, "events": {}, "more": False}))
    assert "events must be a list and more a boolean" in caught.value.message


def test_an_older_workers_status_reads_with_defaults() -> None:
    status = StatusReply.from_wire(
        {
            "ok": True,
            "sessionId": "ses_old",
            "state": "idle",
            "seq": 2,
            "pending": [{"inputId": "inp_1", "delivery": "queue", "seq": 1, "wake": False}],
        }
    )
    assert (status.lease_live, status.lease_left_ms, status.pending_count, status.pending[0].source) == (False, 0, 1, "user")
    assert (status.tags, status.children, status.usage, status.execution, status.raw["seq"]) == ({}, [], {}, None, 2)
    assert "ok" not in status.raw
