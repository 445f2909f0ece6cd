"""Waits against real workers: ``approve``, ``deny`` and ``resolve`` on the resolve verb. A session
that waits for nothing refuses them (``no_such_wait``); with the world's echo worker replaced by one
whose runner waits (clients/testing/waits-runner.ts), turns wait for a signal and for a person's decision on
a call, are resolved, and resume; ``prompt`` follows a turn through its wait."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
from conftest import connect, eventually, session_name
from world import REPO_ROOT, World

from sessiond_client import (
    ABSENT,
    Client,
    CommandError,
    Event,
    ExecutionSettledEvent,
    InputAdmittedEvent,
    ResolveResult,
    StatusReply,
    TextCompletedEvent,
    ToolCalledEvent,
    ToolStartedEvent,
    ToolSucceededEvent,
    WaitInfo,
    WaitResolvedEvent,
    WaitStartedEvent,
)

WORLD_WORKERS = 1
RUNNER = Path(__file__).resolve().parents[3] / "clients" / "testing" / "waits-runner.ts"


def refused(caught: pytest.ExceptionInfo[CommandError], reason: str, mentions: str) -> None:
    err = caught.value
    assert (err.code, err.verb, err.details.get("reason")) == ("command_refused", "resolve", reason), err
    assert mentions in err.message, err.message


async def test_approve_deny_and_resolve_are_refused_where_nothing_waits(client: Client, world: World) -> None:
    session = session_name("ses_nowait")
    await world.acall("admit", sessionId=session, prompt="nothing to wait for", id="inp_nowait")
    await settled(client, session, "succeeded")
    for call, name in (
        (client.approve(session, "call_none", "looks right"), "call_none"),
        (client.deny(session, "call_none"), "call_none"),
        (client.resolve(session, "payment", {"amount": 12.5}), "payment"),
    ):
        with pytest.raises(CommandError) as caught:
            await call
        refused(caught, "no_such_wait", name)
    status = await client.status(session)
    assert status.waits == [] and status.outcome == "succeeded"
    # what the worker refuses as a bad request, and what is refused before it is sent
    with pytest.raises(CommandError) as caught:
        await client.resolve(session, "n" * 201)
    assert caught.value.code == "bad_request" and "name" in caught.value.message
    with pytest.raises(CommandError) as caught:
        await client.deny(session, "call_none", "r" * 1001)
    assert caught.value.code == "bad_request" and "reason" in caught.value.message
    with pytest.raises(CommandError) as caught:
        await client.approve("ses.with.dots", "call_none")
    assert caught.value.code == "invalid_id"


@pytest.mark.parametrize("user", ["observer", "worker", "admin", "commands"])
async def test_users_other_than_client_may_not_resolve(world: World, user: str) -> None:
    other = await connect(world, user)
    try:
        with pytest.raises(CommandError) as caught:
            await other.approve(session_name("ses_other"), "call_x")
        assert caught.value.code == "permission_denied" and "sessiond.cmd.resolve" in caught.value.message
    finally:
        await other.close()


@pytest.fixture
async def waiting_worker(world: World, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """The world's workers replaced, for the test, by one sessiond worker whose runner waits
    (clients/testing/waits-runner.ts); an echo worker of the world's takes over after it."""
    for index, pid in enumerate(world.workers):
        if pid is not None:
            await world.kill_worker(index)
    log = tmp_path / "worker.log"
    worker_user, worker_pass = world.creds("worker")
    commands_user, commands_pass = world.creds("commands")
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                "node",
                "bin/sessiond.js",
                "start",
                "--nats",
                world.url,
                "--nats-user",
                worker_user,
                "--nats-commands-user",
                commands_user,
                "--db",
                str(tmp_path / "waits.db"),
                "--runner",
                str(RUNNER.relative_to(REPO_ROOT)),
                "--lease-ms",
                "2000",
                "--heartbeat-ms",
                "500",
                "--sweep-ms",
                "300",
            ],
            cwd=REPO_ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={
                **os.environ,
                "FORCE_COLOR": "0",
                "SESSIOND_LOG_FORMAT": "text",
                "SESSIOND_NATS_PASS": worker_pass,
                "SESSIOND_NATS_COMMANDS_PASS": commands_pass,
            },
        )
    failed_before = request.session.testsfailed
    try:
        deadline = time.monotonic() + 60
        while "send it a prompt" not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the waiting worker did not start (exit code {proc.poll()}):\n{log.read_text(errors='replace')[-4000:]}")
            await asyncio.sleep(0.05)
        yield
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.to_thread(proc.wait, 15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if request.session.testsfailed > failed_before:
            sys.stderr.write(f"\n--- the waiting worker's output (last part) ---\n{log.read_text(errors='replace')[-4000:]}\n")
        await world.start_worker()


async def settled(client: Client, session: str, outcome: str, timeout: float = 20) -> StatusReply:
    async def check() -> StatusReply | None:
        s = await client.status(session)
        return s if s.pending_count == 0 and s.execution is not None and s.execution.outcome == outcome else None

    return await eventually(check, f"session {session}'s turn to end {outcome}", timeout, every=0.1)


async def waiting(client: Client, session: str) -> tuple[StatusReply, WaitInfo]:
    async def check() -> StatusReply | None:
        try:
            s = await client.status(session)
        except CommandError as err:
            if err.code == "unknown_session":
                return None  # not admitted yet
            raise
        return s if s.outcome == "waiting" and len(s.waits) == 1 and s.waits[0].outcome is None else None

    status: StatusReply = await eventually(check, f"session {session} to wait", 20, every=0.1)
    return status, status.waits[0]


def one(events: list[Event], cls: type[Any]) -> Any:
    found = [e for e in events if isinstance(e, cls)]
    assert len(found) == 1, f"{len(found)} events of class {cls.__name__}"
    return found[0].payload


def texts(events: list[Event]) -> list[str]:
    return [e.payload.text for e in events if isinstance(e, TextCompletedEvent)]


@pytest.mark.usefixtures("waiting_worker")
async def test_a_signal_delivered_resumes_the_turn_with_its_value(client: Client) -> None:
    session = session_name("ses_signal")
    admitted = await client.admit(session, "wait for payment", id="inp_signal")
    status, wait = await waiting(client, session)
    assert (wait.kind, wait.name, wait.execution_id, wait.until, wait.call_id, wait.tool, wait.started) == (
        "signal",
        "payment",
        status.execution_id,
        None,
        None,
        None,
        False,
    )
    assert wait.since > 0 and wait.data is ABSENT and wait.input is ABSENT and wait.resolved_at is None
    assert status.execution is not None and status.execution.outcome == "waiting" and status.pending_count == 0
    with pytest.raises(CommandError) as caught:
        await client.approve(session, "payment")  # an approval of that name: the turn waits for none
    refused(caught, "no_such_wait", "payment")
    result = await client.resolve(session, "payment", {"amount": 12.5, "ok": True})
    assert isinstance(result, ResolveResult)
    assert (result.session_id, result.kind, result.name, result.outcome, result.resolved) == (session, "signal", "payment", "delivered", True)
    assert result.seq is not None and result.seq > status.seq and result.resume_input_id
    again = await client.resolve(session, "payment", {"amount": 12.5, "ok": True})
    assert (again.resolved, again.seq, again.resume_input_id) == (False, None, None)
    done = await settled(client, session, "succeeded")
    assert done.waits == [] and done.execution is not None and done.execution.id != wait.execution_id
    events = await client.replay(session)
    started, resolved = one(events, WaitStartedEvent), one(events, WaitResolvedEvent)
    assert (started.kind, started.name, started.execution_id) == ("signal", "payment", wait.execution_id)
    assert (resolved.outcome, resolved.execution_id, resolved.data, resolved.reason) == ("delivered", wait.execution_id, {"amount": 12.5, "ok": True}, None)
    assert events[result.seq - 1].type == "wait.resolved"
    resume = next(e.payload for e in events if isinstance(e, InputAdmittedEvent) and e.payload.input_id == result.resume_input_id)
    assert resume.source == "recovery" and resume.continues is not None
    assert (resume.continues.reason, resume.continues.execution_id, resume.continues.input_ids) == ("resumed", wait.execution_id, [admitted.input_id])
    assert texts(events) == ['got payment: {"amount":12.5,"ok":true}']
    assert [e.payload.outcome for e in events if isinstance(e, ExecutionSettledEvent)] == ["waiting", "succeeded"]


@pytest.mark.usefixtures("waiting_worker")
async def test_an_approved_call_runs_once_when_the_turn_resumes(client: Client) -> None:
    session = session_name("ses_approve")
    await client.admit(session, "ask to run deploy", id="inp_approve")
    _, wait = await waiting(client, session)
    assert (wait.kind, wait.name, wait.tool, wait.input, wait.durable, wait.started) == (
        "approval",
        wait.call_id,
        "deploy",
        {"asked": "ask to run deploy"},
        False,
        False,
    )
    assert wait.call_id and wait.message_id
    result = await client.approve(session, wait.call_id, "looks right")
    assert (result.kind, result.name, result.outcome, result.resolved) == ("approval", wait.call_id, "approved", True) and result.resume_input_id
    assert (await client.approve(session, wait.call_id, "looks right")).resolved is False
    with pytest.raises(CommandError) as caught:
        await client.deny(session, wait.call_id, "changed my mind")  # a second, different decision
    refused(caught, "already_resolved", "approved")
    await settled(client, session, "succeeded")
    events = await client.replay(session)
    called = one(events, ToolCalledEvent)
    assert (called.call_id, called.name, called.started) == (wait.call_id, "deploy", False)
    resolved = one(events, WaitResolvedEvent)
    assert (resolved.outcome, resolved.call_id, resolved.message_id, resolved.reason) == ("approved", wait.call_id, wait.message_id, "looks right")
    started = one(events, ToolStartedEvent)
    assert (started.call_id, started.message_id) == (wait.call_id, wait.message_id)
    assert one(events, ToolSucceededEvent).output == {"tool": "deploy", "callId": wait.call_id}
    assert texts(events) == ["ran deploy"]


@pytest.mark.usefixtures("waiting_worker")
async def test_a_denied_call_never_runs_and_the_turn_is_told_why(client: Client) -> None:
    session = session_name("ses_deny")
    await client.admit(session, "ask to run drop_tables", id="inp_deny")
    _, wait = await waiting(client, session)
    assert wait.call_id
    result = await client.deny(session, wait.call_id, "not today")
    assert (result.outcome, result.resolved) == ("denied", True) and result.resume_input_id
    with pytest.raises(CommandError) as caught:
        await client.approve(session, wait.call_id)
    refused(caught, "already_resolved", "denied")
    await settled(client, session, "succeeded")
    events = await client.replay(session)
    assert (one(events, WaitResolvedEvent).outcome, one(events, WaitResolvedEvent).reason) == ("denied", "not today")
    assert not any(isinstance(e, ToolStartedEvent) for e in events)
    assert texts(events) == ["denied drop_tables: not today"]


@pytest.mark.usefixtures("waiting_worker")
async def test_prompt_follows_a_turn_through_its_wait(client: Client, world: World) -> None:
    session = session_name("ses_prompt_wait")
    name, password = world.creds("client")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sessiond_client.prompt",
        session,
        "wait for go_ahead",
        "--nats",
        world.url,
        "--id",
        "inp_prompt_wait",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "SESSIOND_NATS_USER": name, "SESSIOND_NATS_PASS": password, "PYTHONUNBUFFERED": "1"},
    )
    try:
        await waiting(client, session)
        await asyncio.sleep(0.5)  # the program goes on waiting through the turn's wait
        assert proc.returncode is None
        await client.resolve(session, "go_ahead", "now")
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()
    assert out.decode().splitlines() == ['got go_ahead: "now"']
