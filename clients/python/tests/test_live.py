"""Live subscriptions and replay against a real stream and real workers: whole and in order,
repeats dropped, gaps filled from the stream, invalid messages reported and skipped, across a
worker's SIGKILL and a nats-server restart; replay equal to the stream; the observer user."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import nats
import pytest
from conftest import VECTORS, connect, eventually, session_name
from world import World

from sessiond_client import (
    Client,
    CommandError,
    Event,
    EventError,
    InvalidMessage,
    PermissionDenied,
    SessiondError,
    TextDeltaEvent,
    decode_batch,
    encode_batch,
    encode_live,
    event_from_frame,
)
from sessiond_client.codec import pack

WORLD_WORKERS = 1
WORLD_ECHO_DELAY_MS = 300  # a turn of about a second: long enough to kill a worker in

LONG_PROMPT = "one two three four five six seven eight nine ten eleven twelve"


class Recorder:
    """What a subscription delivered, and what it reported."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.invalid: list[InvalidMessage] = []
        self.errors: list[BaseException] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def on_invalid(self, invalid: InvalidMessage) -> None:
        self.invalid.append(invalid)

    def on_error(self, err: BaseException) -> None:
        self.errors.append(err)

    @property
    def committed(self) -> list[Event]:
        return [e for e in self.events if e.seq is not None]

    def has(self, type_: str, **payload: Any) -> bool:
        return any(e.type == type_ and all(e.wire_payload.get(k) == v for k, v in payload.items()) for e in self.events)


def assert_same_events(delivered: list[Event], stored: list[dict[str, Any]]) -> None:
    """Each stored event delivered once, in order, with the same id, type, payload and position."""
    assert [e.seq for e in delivered] == [e["seq"] for e in stored]
    assert [e.id for e in delivered] == [e["id"] for e in stored]
    assert [(e.type, dict(e.wire_payload), e.position) for e in delivered] == [(e["type"], e["payload"], e["position"]) for e in stored]
    assert [e.seq for e in delivered] == list(range(1, len(stored) + 1))


def assert_equal_to_stream(read: list[Event], stored: list[dict[str, Any]]) -> None:
    """Read from the stream: the same events as the Node client reads, committedAt included (±1 ms:
    the Node client rounds the stored time's nanoseconds through a double)."""
    assert len(read) == len(stored)
    for mine, theirs in zip(read, stored):
        d = mine.to_dict()
        assert abs(d.pop("committedAt") - theirs["committedAt"]) <= 1
        assert d == {k: v for k, v in theirs.items() if k != "committedAt"}


async def turn_over(client: Client, session: str, timeout: float = 30.0) -> None:
    """Waits until the session has no turn running and nothing pending (asked with status; an
    outage or a worker starting up answers errors meanwhile)."""

    async def check() -> bool:
        try:
            s = await client.status(session)
        except CommandError:
            return False
        return s.pending_count == 0 and s.execution is not None and s.execution.outcome in ("succeeded", "failed", "cancelled")

    await eventually(check, f"the turns of {session} to end", timeout, every=0.2)


async def caught_up(rec: Recorder, world: World, session: str, timeout: float = 20.0) -> list[dict[str, Any]]:
    """Waits until the subscription delivered the stream's last event of the session; returns the stream's events."""
    stored = await world.events(session)
    await eventually(
        lambda: rec.committed and rec.committed[-1].seq == stored[-1]["seq"], f"the subscription to reach seq {stored[-1]['seq']}", timeout
    )
    return stored


async def test_subscribe_delivers_a_turn_whole_and_in_order_with_its_live_text(client: Client, world: World) -> None:
    session = session_name("ses_live")
    rec = Recorder()
    sub = await client.subscribe(session, rec, 0, rec.on_invalid, on_error=rec.on_error)
    try:
        await client.admit(session, "hello live world", id="inp_live")
        await eventually(lambda: rec.has("execution.settled", outcome="succeeded"), "the turn's end", 20)
        stored = await caught_up(rec, world, session)
        assert_same_events(rec.committed, stored)
        deltas = [e for e in rec.events if isinstance(e, TextDeltaEvent)]
        assert deltas and all(e.seq is None and e.position is None for e in deltas)
        assert " ".join(e.payload.delta.strip() for e in deltas) == "hello live world"
        assert rec.invalid == [] and rec.errors == []
        assert sub.last_seq == stored[-1]["seq"] and sub.stats.delivered == len(rec.events)
    finally:
        await sub.close()


async def test_repeats_are_dropped_gaps_filled_and_invalid_messages_skipped(client: Client, world: World) -> None:
    session = session_name("ses_gaps")
    await world.acall("admit", sessionId=session, prompt="fill my gaps", id="inp_gaps")
    await turn_over(client, session)
    stored = await client.replay(session)
    assert len(stored) > 5
    rec = Recorder()
    sub = await client.subscribe(session, rec, 0, rec.on_invalid, on_error=rec.on_error)
    publisher = await nats.connect(world.url, user="worker", password=world.creds("worker")[1], inbox_prefix="_INBOX_worker")
    try:
        subject = lambda e: f"sessiond.live.{session}.{e.type}"  # noqa: E731
        # the last event alone: everything before it comes from the stream first
        await publisher.publish(subject(stored[-1]), encode_live(stored[-1]))
        await eventually(lambda: len(rec.committed) == len(stored), "the gap to be filled", 10)
        assert_same_events(rec.committed, [e.to_dict() for e in stored])
        assert sub.stats.backfilled == len(stored) - 1
        # repeats, an undecodable message, an array, a frame on the wrong subject: skipped
        await publisher.publish(subject(stored[2]), encode_live(stored[2]))
        await publisher.publish(f"sessiond.live.{session}.input.admitted", b"\xc1")
        await publisher.publish(subject(stored[0]), encode_batch([stored[0]]))
        await publisher.publish(f"sessiond.live.{session}.step.started", encode_live(stored[0]))
        # then a live-only event, delivered as it comes
        delta = event_from_frame(
            {
                "id": "evt_delta_1",
                "type": "text.delta",
                "version": 1,
                "sessionId": session,
                "time": 1,
                "payload": {"executionId": "exe_1", "messageId": "msg_1", "partId": "prt_1", "delta": "hi"},
            },
            seq_required=False,
        )
        await publisher.publish(subject(delta), encode_live(delta))
        await eventually(lambda: any(e.id == "evt_delta_1" for e in rec.events), "the live-only event", 10)
        assert len(rec.committed) == len(stored) and sub.stats.duplicates == 1
        assert [i.error.code for i in rec.invalid] == ["decode_failed"] * 3
        assert [i.seq for i in rec.invalid] == [None, None, 1]
        assert all("Live message on sessiond.live." in i.error.message for i in rec.invalid)
        assert rec.errors == []
    finally:
        await publisher.close()
        await sub.close()


async def test_the_invalid_live_vectors_are_reported_and_skipped(client: Client, world: World) -> None:
    import json

    invalid = [c for c in json.loads((VECTORS / "invalid.json").read_text())["cases"] if c["kind"] == "live"]
    valid = [c for c in json.loads((VECTORS / "msgpack.json").read_text())["cases"] if c["kind"] == "live" and "text.delta" in c["subject"]]
    rec = Recorder()
    sub = await client.subscribe(None, rec, on_invalid=rec.on_invalid, on_error=rec.on_error)
    publisher = await nats.connect(world.url, user="worker", password=world.creds("worker")[1], inbox_prefix="_INBOX_worker")
    try:
        for case in invalid:
            await publisher.publish(case["subject"], bytes.fromhex(case["hex"]))
        await publisher.publish(valid[0]["subject"], bytes.fromhex(valid[0]["hex"]))
        await eventually(lambda: any(e.session_id == "ses_vectors" for e in rec.events), "the valid message after the invalid ones", 10)
        mine = [i for i in rec.invalid if i.subject in {c["subject"] for c in invalid}]
        assert [(i.subject, i.error.code) for i in mine] == [(c["subject"], c["code"]) for c in invalid]
        assert [e.id for e in rec.events if e.session_id in ("ses_vectors", "ses_other")] == [valid[0]["value"]["id"]]
    finally:
        await publisher.close()
        await sub.close()


async def test_quarantined_stored_messages_are_skipped_and_reported(client: Client, world: World) -> None:
    import json

    invalid = [c for c in json.loads((VECTORS / "invalid.json").read_text())["cases"] if c["kind"] == "stored_batch"]
    session = session_name("ses_quarantine")
    frame = lambda seq: {  # noqa: E731
        "id": f"evt_q{seq}",
        "type": "input.admitted",
        "version": 1,
        "sessionId": session,
        "seq": seq,
        "time": 1796056745917 + seq,
        "payload": {"inputId": f"inp_q{seq}", "prompt": "quiet", "delivery": "queue", "wake": False, "source": "user"},
    }
    publisher = await nats.connect(world.url, user="worker", password=world.creds("worker")[1], inbox_prefix="_INBOX_worker")
    js = publisher.jetstream()
    try:
        ack1 = await js.publish(f"sessiond.events.{session}", pack([frame(1)]), stream="SESSIOND_EVENTS")
        await js.publish(f"sessiond.events.{session}", b"\xc1 not msgpack", stream="SESSIOND_EVENTS")
        ack3 = await js.publish(f"sessiond.events.{session}", pack([frame(2)]), stream="SESSIOND_EVENTS")
        for case in invalid:  # the shared invalid batches, stored where they say (session ses_vectors)
            await js.publish(case["subject"], bytes.fromhex(case["hex"]), stream="SESSIOND_EVENTS")
    finally:
        await publisher.close()
    reported: list[InvalidMessage] = []
    events = await client.replay(session, on_invalid=reported.append)
    assert [(e.seq, e.position) for e in events] == [(1, ack1.seq), (2, ack3.seq)]
    assert len(reported) == 1 and reported[0].error.code == "decode_failed" and reported[0].position == ack1.seq + 1
    vectors_reported: list[InvalidMessage] = []
    assert await client.replay("ses_vectors", on_invalid=vectors_reported.append) == []
    assert [i.error.code for i in vectors_reported] == [c["code"] for c in invalid]
    # a live subscription that must read over the damaged message to fill a gap
    rec = Recorder()
    sub = await client.subscribe(session, rec, 0, rec.on_invalid, on_error=rec.on_error)
    try:
        sub.catch_up()
        await eventually(lambda: len(rec.committed) == 2, "the catch-up to read both valid events", 10)
        assert [e.seq for e in rec.committed] == [1, 2] and len(rec.invalid) == 1
    finally:
        await sub.close()


async def test_replay_equals_the_stream(client: Client, world: World) -> None:
    session = session_name("ses_replay")
    await world.acall("admit", sessionId=session, prompt="replay me please", id="inp_r1")
    await world.acall("admit", sessionId=session, prompt="and again", id="inp_r2")
    await turn_over(client, session)
    stored = await world.events(session)
    assert_equal_to_stream(await client.replay(session), stored)
    assert_equal_to_stream(await client.replay(session, after_seq=4), stored[4:])
    everything = await client.replay(on_invalid=lambda i: None)
    positions = [e.position for e in everything]
    assert positions == sorted(positions)
    assert_equal_to_stream([e for e in everything if e.session_id == session], stored)
    last = await client.last_event(session)
    assert last is not None and last.id == stored[-1]["id"] and last.seq == stored[-1]["seq"]
    assert await client.last_event(session_name("ses_never")) is None
    assert await client.replay(session_name("ses_never")) == []


async def test_the_observer_subscribes_and_replays(world: World) -> None:
    observer = await connect(world, "observer")
    rec = Recorder()
    session = session_name("ses_observed")
    try:
        sub = await observer.subscribe(session, rec, 0, rec.on_invalid, on_error=rec.on_error)
        await world.acall("admit", sessionId=session, prompt="watch this", id="inp_o")
        await eventually(lambda: rec.has("execution.settled"), "the turn's end, seen by the observer", 20)
        stored = await caught_up(rec, world, session)
        assert_same_events(rec.committed, stored)
        assert_equal_to_stream(await observer.replay(session), stored)
        await sub.close()
    finally:
        await observer.close()


@pytest.mark.parametrize("user", ["worker", "admin"])
async def test_users_without_live_rights_are_refused(world: World, user: str) -> None:
    refused = await connect(world, user)
    try:
        with pytest.raises(PermissionDenied) as caught:
            await refused.subscribe("ses_any", lambda e: None)
        assert caught.value.code == "permission_denied" and "sessiond.live.ses_any.>" in caught.value.message
    finally:
        await refused.close()


async def test_a_subscription_across_a_worker_sigkill_misses_nothing(client: Client, world: World) -> None:
    session = session_name("ses_kill")
    rec = Recorder()
    sub = await client.subscribe(session, rec, 0, rec.on_invalid, on_error=rec.on_error)
    try:
        await client.admit(session, LONG_PROMPT, id="inp_kill")
        await eventually(lambda: rec.has("text.completed"), "the first step's text", 20, every=0.01)
        index = next(i for i, pid in enumerate(world.workers) if pid is not None)
        await world.kill_worker(index)  # mid-turn: the turn's owner is gone
        started = time.monotonic()
        with pytest.raises(CommandError) as caught:
            await client.status(session)  # no worker at all now: asked again for 3 s, then no_worker
        assert caught.value.code == "no_worker" and "start one" in caught.value.message
        assert time.monotonic() - started >= client.no_worker_retry - 0.6  # sent again with backoff (at most 0.5 s) meanwhile
        await world.start_worker()  # recovers the turn once its lease has run out
        await turn_over(client, session, timeout=40)
        stored = await caught_up(rec, world, session)
        types = [e["type"] for e in stored]
        assert "recovery.started" in types and "recovery.completed" in types and types[-1] == "execution.settled"
        assert_same_events(rec.committed, stored)
        assert rec.invalid == []
    finally:
        await sub.close()


async def test_a_subscription_across_a_nats_server_restart_misses_nothing(world: World) -> None:
    reconnected = asyncio.Event()

    async def on_reconnect() -> None:
        reconnected.set()

    client = await connect(world, reconnected_cb=on_reconnect)
    session = session_name("ses_restart")
    rec = Recorder()
    sub = await client.subscribe(session, rec, 0, rec.on_invalid, on_error=rec.on_error)
    try:
        await client.admit(session, LONG_PROMPT, id="inp_restart_1")
        await eventually(lambda: rec.has("text.completed"), "the first step's text", 20, every=0.01)
        await world.acall("restart_nats")
        await asyncio.wait_for(reconnected.wait(), 30)
        await turn_over(client, session, timeout=40)
        # live messages published while this client was away are lost; the next turn's events
        # reveal any gap, which the stream fills
        await client.admit(session, "after the restart", id="inp_restart_2")
        await eventually(lambda: rec.has("input.admitted", inputId="inp_restart_2"), "the second prompt's admission", 20)
        await turn_over(client, session, timeout=40)
        stored = await caught_up(rec, world, session)
        assert [e["payload"]["inputId"] for e in stored if e["type"] == "input.admitted" and e["payload"]["source"] == "user"] == [
            "inp_restart_1",
            "inp_restart_2",
        ]
        assert_same_events(rec.committed, stored)
        assert rec.invalid == []
        assert_equal_to_stream(await client.replay(session), stored)
    finally:
        await sub.close()
        await client.close()


def test_decode_errors_keep_their_codes_when_events_are_read_back() -> None:
    # a reader's typed error: the code, and the message names the message and what to do
    with pytest.raises(EventError) as caught:
        decode_batch(b"\x90", 3, "sessiond.events.ses_x")
    assert caught.value.code == "decode_failed" and "Message 3 on sessiond.events.ses_x" in caught.value.message
    assert isinstance(caught.value, SessiondError)
