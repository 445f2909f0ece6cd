"""Commands against real workers: each verb as the client user, the workers' error codes, the
users nats.conf refuses (permission_denied), and resends reaching a running worker while another
one is frozen with requests in hand."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest
from conftest import connect, eventually, session_name
from world import World

from sessiond_client import AdmitReceipt, CancelResult, Client, CommandError, DropResult, StatusReply, WakeResult
from sessiond_client.ids import is_valid_id

WORLD_WORKERS = 2
WORLD_ECHO_DELAY_MS = 250  # a turn of about a second: long enough to cancel


async def settled(client: Client, session: str, outcome: str = "succeeded", timeout: float = 20) -> StatusReply:
    async def check() -> StatusReply | None:
        s = await client.status(session)
        return s if s.execution is not None and s.execution.outcome == outcome and s.pending_count == 0 else None

    return await eventually(check, f"session {session}'s turn to end {outcome}", timeout, every=0.1)


async def test_admit_runs_a_turn_and_is_idempotent_by_id(client: Client, world: World) -> None:
    session = session_name("ses_admit")
    receipt = await client.admit(session, "hello from python", id="inp_py_1")
    assert isinstance(receipt, AdmitReceipt)
    assert (receipt.session_id, receipt.input_id, receipt.admitted_seq, receipt.created, receipt.wake) == (
        session,
        "inp_py_1",
        1,
        True,
        True,
    )
    again = await client.admit(session, "hello from python", id="inp_py_1")
    assert (again.created, again.admitted_seq) == (False, 1)
    status = await settled(client, session)
    events = await world.events(session)
    assert [e["payload"]["inputId"] for e in events if e["type"] == "input.admitted"] == ["inp_py_1"]
    assert status.seq == events[-1]["seq"] and status.state == "settled" and status.outcome == "succeeded"
    assert status.execution is not None and status.execution.input_ids == ["inp_py_1"] and status.execution.started
    texts = [e["payload"]["text"] for e in events if e["type"] == "text.completed"]
    assert " ".join(t.removeprefix("echo: ") for t in texts) == "hello from python"


async def test_admit_makes_an_input_id_when_none_is_given(client: Client) -> None:
    session = session_name("ses_noid")
    receipt = await client.admit(session, "x", wake=False)
    assert receipt.input_id.startswith("inp_") and is_valid_id(receipt.input_id) and receipt.wake is False
    other = await client.admit(session, "x", wake=False)
    assert other.input_id != receipt.input_id and other.admitted_seq == receipt.admitted_seq + 1


async def test_wake_status_and_drop_of_pending_inputs(client: Client) -> None:
    session = session_name("ses_pending")
    a = await client.admit(session, "first", id="inp_a", wake=False)
    b = await client.admit(session, "second", id="inp_b", wake=False, delivery="queue")
    status = await client.status(session)
    assert status.state == "idle" and status.seq == 2 and status.execution is None
    assert [(p.input_id, p.seq, p.wake, p.source) for p in status.pending] == [
        ("inp_a", a.admitted_seq, False, "user"),
        ("inp_b", b.admitted_seq, False, "user"),
    ]
    assert status.pending_count == 2 and status.pending_bytes == len("first") + len("second")
    page = await client.status(session, pending_from=1)
    assert page.pending_from == 1 and [p.input_id for p in page.pending] == ["inp_b"]
    dropped = await client.drop(session, ["inp_a"], reason="not needed")
    assert isinstance(dropped, DropResult) and dropped.dropped == ["inp_a"] and dropped.seq == 3
    rest = await client.drop(session)
    assert rest.dropped == ["inp_b"] and rest.seq == 4
    nothing = await client.drop(session)
    assert nothing.dropped == [] and nothing.seq is None
    woken = await client.wake(session)
    assert isinstance(woken, WakeResult) and woken.status == "nothing_pending"


async def test_drop_records_who_dropped_it(client: Client) -> None:
    session = session_name("ses_actor")
    await client.admit(session, "later", wake=False)
    dropped = await client.drop(session, reason="stale", actor="ops@example.com")
    assert len(dropped.dropped) == 1
    drops = [e for e in await client.replay(session) if e.type == "input.dropped"]
    assert [(e.payload.reason, e.payload.actor) for e in drops] == [("stale", "ops@example.com")]


async def test_wake_starts_a_turn_of_inputs_admitted_without_waking(client: Client) -> None:
    session = session_name("ses_wake")
    await client.admit(session, "wake me", id="inp_w", wake=False)
    woken = await client.wake(session)
    assert woken.status in ("started", "running_here") and woken.execution_id
    status = await settled(client, session)
    assert status.execution is not None and status.execution.id == woken.execution_id


async def test_cancel_stops_the_running_turn_and_only_that_one(client: Client, world: World) -> None:
    session = session_name("ses_cancel")
    await client.admit(session, "a long answer that takes a while to echo back", id="inp_c")

    async def running() -> StatusReply | None:
        s = await client.status(session)
        return s if s.execution is not None and s.execution.started and s.execution.outcome is None else None

    status = await eventually(running, "the turn to start", 10, every=0.02)
    result = await client.cancel(session, "changed my mind")
    assert isinstance(result, CancelResult) and result.cancelled and result.execution_id == status.execution.id  # type: ignore[union-attr]
    await settled(client, session, "cancelled")
    events = await world.events(session)
    cancelled = [e for e in events if e["type"] == "execution.cancelled"]
    assert len(cancelled) == 1 and cancelled[0]["payload"] == {"executionId": result.execution_id, "reason": "changed my mind"}
    # the cancel's append ends the turn: the open step failed with it, and nothing of the turn follows
    last_append = [e for e in events if e["position"] == cancelled[0]["position"]]
    assert events[-len(last_append) :] == last_append
    assert {e["type"] for e in last_append} <= {"execution.cancelled", "step.failed", "tool.failed"}
    again = await client.cancel(session)
    assert not again.cancelled and again.reason == "nothing_to_cancel" and again.message
    stale = await client.cancel(session, execution_id="exe_not_this_one")
    assert not stale.cancelled and stale.reason == "nothing_to_cancel"


async def test_workers_errors_carry_their_codes_and_messages(client: Client) -> None:
    session = session_name("ses_errors")

    async def code_of(call: object) -> CommandError:
        with pytest.raises(CommandError) as caught:
            await call  # type: ignore[misc]
        assert caught.value.message
        return caught.value

    err = await code_of(client.status(session_name("ses_nobody")))
    assert err.code == "unknown_session" and err.verb == "status"
    assert (await code_of(client.wake(session_name("ses_nobody")))).code == "unknown_session"
    await client.admit(session, "one prompt", id="inp_same", wake=False)
    err = await code_of(client.admit(session, "another prompt", id="inp_same", wake=False))
    assert err.code == "input_conflict" and "inp_same" in err.message
    assert (await code_of(client.admit(session, "x", delivery="sideways"))).code == "invalid_option"
    err = await code_of(client.admit(session, "bad \ud800 text", wake=False))
    assert err.code == "invalid_option" and "surrogate" in err.message
    assert (await code_of(client.admit(session, "x", id="inp with spaces"))).code == "invalid_id"
    err = await code_of(client.drop(session, ["bad.id"]))  # the worker checks the list as a whole
    assert err.code == "bad_request" and "inputIds" in err.message
    err = await code_of(client.status("ses.with.dots"))  # refused before it is sent
    assert err.code == "invalid_id" and "ses.with.dots" in err.message


@pytest.mark.parametrize("user", ["observer", "worker", "admin", "commands"])
async def test_users_other_than_client_are_refused_with_permission_denied(world: World, user: str) -> None:
    refused = await connect(world, user)
    try:
        session = session_name("ses_refused")
        started = time.monotonic()
        for call in (
            refused.admit(session, "x", id="inp_x"),
            refused.wake(session),
            refused.cancel(session, execution_id="exe_x"),
            refused.status(session),
            refused.drop(session),
            refused.tag(session, {"k": "v"}),
            refused.list(),
        ):
            with pytest.raises(CommandError) as caught:
                await call
            assert caught.value.code == "permission_denied", caught.value
            assert user in caught.value.message and "sessiond.cmd." in caught.value.message
        assert time.monotonic() - started < refused.attempt_timeout  # refused at once, not after an attempt timed out
    finally:
        await refused.close()
    client = await connect(world)
    try:
        with pytest.raises(CommandError) as caught:
            await client.status(session)
        assert caught.value.code == "unknown_session"  # none of them reached a worker
    finally:
        await client.close()


async def test_requests_held_by_a_frozen_worker_are_sent_again_and_reach_the_other(client: Client, world: World) -> None:
    frozen = world.workers[0]
    assert frozen is not None
    sessions = [session_name(f"ses_frozen{i}") for i in range(8)]
    os.kill(frozen, signal.SIGSTOP)
    try:
        started = time.monotonic()
        receipts = await asyncio.gather(*(client.admit(s, "held?", id=f"inp_held_{i}", wake=False) for i, s in enumerate(sessions)))
        statuses = await asyncio.gather(*(client.status(s) for s in sessions))
        elapsed = time.monotonic() - started
    finally:
        os.kill(frozen, signal.SIGCONT)
    assert all(r.created and r.admitted_seq == 1 for r in receipts)
    assert all(s.pending_count == 1 and s.seq == 1 for s in statuses)
    assert elapsed < 2 * client.request_timeout
    for i, s in enumerate(sessions):
        again = await client.admit(s, "held?", id=f"inp_held_{i}", wake=False)
        assert (again.created, again.admitted_seq) == (False, 1)
        events = await world.events(s)
        assert [e["type"] for e in events] == ["input.admitted"]


def test_status_reply_names_the_calling_session_and_the_children() -> None:
    status = StatusReply.from_wire(
        {"ok": True, "sessionId": "ses_child", "state": "idle", "seq": 4, "calledBy": "ses_parent", "children": ["ses_a", "ses_b"]}
    )
    assert (status.called_by, status.children) == ("ses_parent", ["ses_a", "ses_b"])
    older = StatusReply.from_wire({"ok": True, "sessionId": "ses_old", "state": "idle", "seq": 1})
    assert (older.called_by, older.children) == (None, [])
