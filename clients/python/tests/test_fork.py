"""Forks: ``session.forked`` checked as sessiond's catalog checks it (the same verdicts, and the same
cleaned payload, as its zod schema gives these) and its typed transcript; and against real
workers: a source's turn settled, forked (created, then the same again), the fork's status and its
first event read back live and from the stream, a point inside the turn refused with
``not_settled`` naming the nearest settled seqs, ``session_exists`` into the source's id and into
the fork at another point, and a prompt run in the fork."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from conftest import VECTORS, session_name
from test_live import Recorder, assert_equal_to_stream, assert_same_events, caught_up, turn_over
from world import World

from sessiond_client import (
    ABSENT,
    Client,
    CommandError,
    ForkPoint,
    ForkResult,
    RecordedError,
    SessionForked,
    SessionForkedEvent,
    TextCompletedEvent,
    ToolDecision,
    TranscriptAssistant,
    TranscriptSummary,
    TranscriptText,
    TranscriptTool,
    TranscriptUser,
    Usage,
    decode_live,
    encode_live,
)
from sessiond_client.catalog import check_payload, typed_payload

WORLD_WORKERS = 1


def texts(events: list[Any]) -> list[str]:
    return [e.payload.text for e in events if isinstance(e, TextCompletedEvent)]


#: ``session.forked`` payloads, and what sessiond's catalog reads each as (None: it refuses it).
#: Unknown keys are dropped at every level but a prompt part's, and keys are written in the
#: catalog's order. (The same cases as clients/go/transcript_test.go.)
VERDICTS: list[tuple[str, str | None]] = [
    ('{"from":{"sessionId":"ses_a","seq":1},"transcript":[]}', '{"from":{"sessionId":"ses_a","seq":1},"transcript":[]}'),
    (
        '{"from":{"sessionId":"ses_a","seq":3},"transcript":[],"tags":{}}',
        '{"from":{"sessionId":"ses_a","seq":3},"transcript":[],"tags":{}}',
    ),
    (
        '{"extra":1,"tags":{"branch":"alt"},"transcript":[{"summary":"s","executionId":"e","type":"summary","messageId":"m","text":"dropped"}],"from":{"seq":12,"x":true,"sessionId":"ses_a"}}',
        '{"from":{"sessionId":"ses_a","seq":12},"transcript":[{"type":"summary","messageId":"m","executionId":"e","summary":"s"}],"tags":{"branch":"alt"}}',
    ),
    (
        '{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"user","inputId":"i","executionId":"e","text":"hi","zzz":1,"delivery":"steer","parts":[],"continues":{"executionId":"e0","reason":"resumed","phase":"safe","inputIds":["i0"],"assistantMessageId":null,"retryTools":[{"callId":"c","messageId":"m","name":"t","idempotencyKey":"k","extra":2}],"more":3}}]}',
        '{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"user","inputId":"i","executionId":"e","text":"hi","parts":[],"delivery":"steer","continues":{"executionId":"e0","reason":"resumed","phase":"safe","inputIds":["i0"],"assistantMessageId":null,"retryTools":[{"callId":"c","messageId":"m","name":"t","idempotencyKey":"k"}]}}]}',
    ),
    (
        '{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"user","inputId":"i","executionId":"e","text":"[image https://example.com/a.png]","parts":[{"type":"image","url":"https://example.com/a.png"}]}]}',
        '{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"user","inputId":"i","executionId":"e","text":"[image https://example.com/a.png]","parts":[{"type":"image","url":"https://example.com/a.png"}]}]}',
    ),
    (
        '{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"assistant","messageId":"m","executionId":"e","status":"failed","parts":[{"text":"thinking","partId":"p1","type":"reasoning","extra":1},{"type":"tool","callId":"c","name":"n","input":null,"durable":false,"state":"denied","decision":{"outcome":"denied","reason":"no","y":1},"error":{"type":"denied","message":"m","z":1},"w":2}],"error":{"type":"boom","message":"failed","name":"Error"},"usage":{"inputTokens":1,"outputTokens":2,"cached":3},"finish":"error"}]}',
        '{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"assistant","messageId":"m","executionId":"e","status":"failed","parts":[{"type":"reasoning","partId":"p1","text":"thinking"},{"type":"tool","callId":"c","name":"n","input":null,"durable":false,"state":"denied","error":{"type":"denied","message":"m"},"decision":{"outcome":"denied","reason":"no"}}],"finish":"error","error":{"type":"boom","message":"failed","name":"Error"},"usage":{"inputTokens":1,"outputTokens":2}}]}',
    ),
    # a tool part's input is required (null is an input); a prompt part is a strict object
    (
        '{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"assistant","messageId":"m","executionId":"e","status":"completed","parts":[{"type":"tool","callId":"c","name":"n","durable":false,"state":"called"}]}]}',
        None,
    ),
    (
        '{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"user","inputId":"i","executionId":"e","text":"hi","parts":[{"type":"text","text":"hi","extra":1}]}]}',
        None,
    ),
    (
        '{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"user","inputId":"i","executionId":"e","text":"hi","delivery":"later"}]}',
        None,
    ),
    ('{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"user","inputId":"i","executionId":"e"}]}', None),
    ('{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"system","messageId":"m","executionId":"e","summary":"s"}]}', None),
    ('{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"messageId":"m","executionId":"e","summary":"s"}]}', None),
    (
        '{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"assistant","messageId":"m","executionId":"e","status":"done","parts":[]}]}',
        None,
    ),
    (
        '{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"assistant","messageId":"m","executionId":"e","status":"running"}]}',
        None,
    ),
    (
        '{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"assistant","messageId":"m","executionId":"e","status":"running","parts":[{"type":"tool","partId":"p","text":"t"}]}]}',
        None,
    ),
    (
        '{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"assistant","messageId":"m","executionId":"e","status":"running","parts":[{"type":"image","partId":"p","text":"t"}]}]}',
        None,
    ),
    (
        '{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"assistant","messageId":"m","executionId":"e","status":"running","parts":[{"type":"tool","callId":"c","name":"n","input":1,"durable":true,"state":"waiting"}]}]}',
        None,
    ),
    (
        '{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"assistant","messageId":"m","executionId":"e","status":"running","parts":[{"type":"tool","callId":"c","name":"","input":1,"durable":true,"state":"running"}]}]}',
        None,
    ),
    (
        '{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"assistant","messageId":"m","executionId":"e","status":"running","parts":[{"type":"tool","callId":"c","name":"n","input":1,"durable":true,"state":"cancelled","decision":{"outcome":"delivered"}}]}]}',
        None,
    ),
    ('{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"summary","messageId":"","executionId":"e","summary":"s"}]}', None),
    ('{"from":{"sessionId":"ses_a","seq":0},"transcript":[]}', None),
    ('{"from":{"sessionId":"ses_a"},"transcript":[]}', None),
    ('{"transcript":[]}', None),
    ('{"from":{"sessionId":"ses_a","seq":1}}', None),
    ('{"from":{"sessionId":"ses_a","seq":1},"transcript":{}}', None),
    ('{"from":{"sessionId":"ses_a","seq":1},"transcript":[null]}', None),
    ('{"from":{"sessionId":"ses_a","seq":1},"transcript":[],"tags":{"bad key":"v"}}', None),
    ('{"from":{"sessionId":"ses_a","seq":1.5},"transcript":[]}', None),
]


@pytest.mark.parametrize("payload, reads", VERDICTS)
def test_session_forked_is_checked_as_the_catalog_checks_it(payload: str, reads: str | None) -> None:
    cleaned, issues = check_payload("session.forked", json.loads(payload))
    if reads is None:
        assert issues, f"accepted {payload}"
        return
    assert issues == []
    assert json.dumps(cleaned) == json.dumps(json.loads(reads))  # the same keys, in the same order
    assert isinstance(typed_payload("session.forked", cleaned), SessionForked)


def test_a_refusal_names_the_fault_in_the_variant_its_type_names() -> None:
    def faults(payload: str) -> list[str]:
        return check_payload("session.forked", json.loads(payload))[1]

    assert faults(VERDICTS[6][0]) == ["transcript.0.parts.0.input: expected a value, received undefined"]
    assert faults('{"from":{"sessionId":"s","seq":1},"transcript":[{"type":"system"}]}') == [
        "transcript.0.type: expected one of 'user'|'assistant'|'summary'"
    ]
    assert faults('{"from":{"sessionId":"s","seq":1},"transcript":[7]}') == [
        "transcript.0: expected a transcript item (user, assistant or summary) (an object), received number"
    ]


def test_the_vectors_session_forked_reads_as_its_typed_transcript() -> None:
    case = next(
        c
        for c in json.loads((VECTORS / "msgpack.json").read_text(encoding="utf-8"))["cases"]
        if c["name"] == "live committed session.forked"
    )
    event = decode_live(bytes.fromhex(case["hex"]), case["subject"])
    assert isinstance(event, SessionForkedEvent) and encode_live(event).hex() == case["hex"]
    p = event.payload
    assert p == SessionForked(
        from_=ForkPoint("ses_source", 12),
        tags={"customer": "acme"},
        transcript=[
            TranscriptSummary(message_id="msg_sum", execution_id="exe_source_1", summary="They talked about invoices."),
            TranscriptUser(input_id="inp_s1", execution_id="exe_source_2", text="send it to bob", delivery="queue"),
            TranscriptAssistant(
                message_id="msg_s2",
                execution_id="exe_source_2",
                status="completed",
                parts=[
                    TranscriptText(type="text", part_id="prt_s1", text="Sending — ünïcode."),
                    TranscriptTool(
                        call_id="call_s1",
                        name="send_invoice",
                        input={"to": "bob"},
                        durable=True,
                        state="succeeded",
                        idempotency_key="exe_source_2:call_s1",
                        output={"ok": True},
                    ),
                ],
                finish="stop",
                usage=Usage(100, 20),
            ),
        ],
    )
    assert [item.type for item in p.transcript] == ["summary", "user", "assistant"]
    assistant = p.transcript[2]
    assert isinstance(assistant, TranscriptAssistant) and [part.type for part in assistant.parts] == ["text", "tool"]
    tool = assistant.parts[1]
    assert isinstance(tool, TranscriptTool) and tool.error is None and tool.decision is None and tool.output != ABSENT
    # a decision, an error and no output: typed too
    _, issues = check_payload("session.forked", json.loads(VERDICTS[5][0]))
    denied = typed_payload("session.forked", check_payload("session.forked", json.loads(VERDICTS[5][0]))[0]).transcript[0].parts[1]
    assert issues == [] and denied == TranscriptTool(
        call_id="c",
        name="n",
        input=None,
        durable=False,
        state="denied",
        error=RecordedError("denied", "m"),
        decision=ToolDecision("denied", "no"),
    )
    assert denied.output is ABSENT


# ---------------------------------------------------------------------------------------------
# against real workers


async def test_a_settled_session_is_forked_and_the_fork_lives_its_own_life(client: Client, world: World) -> None:
    source = session_name("ses_source")
    receipt = await client.admit(source, "fork me", tags={"side": "source"})
    await turn_over(client, source)
    status = await client.status(source)
    assert status.forked_from is None and status.pending_count == 0
    head = status.seq

    # forked at its last settled point (its head), with tags of its own
    fork = f"{source}_fork"
    result = await client.fork(source, fork, tags={"side": "fork", "branch": "alt"})
    assert isinstance(result, ForkResult)
    assert (result.session_id, result.from_, result.seq, result.created) == (fork, ForkPoint(source, head), 1, True)
    assert result.items >= 2
    # the same fork again (with and without its point): nothing written
    for at in (None, head):
        again = await client.fork(source, fork, at=at)
        assert (again.created, again.from_, again.seq, again.items) == (False, result.from_, 1, 0)
    forked_status = await client.status(fork)
    assert (forked_status.forked_from, forked_status.seq, forked_status.state, forked_status.pending_count, forked_status.tags) == (
        ForkPoint(source, head),
        1,
        "idle",
        0,
        {"side": "fork", "branch": "alt"},
    )
    after = await client.status(source)
    assert (after.seq, after.forked_from, after.tags) == (head, None, {"side": "source"})

    # its first event, followed (the stream, then live) and replayed: the source's conversation
    rec = Recorder()
    sub = await client.follow(fork, rec, on_invalid=rec.on_invalid, on_error=rec.on_error)
    try:
        stored = await caught_up(rec, world, fork)
        assert_same_events(rec.committed, stored)
        replayed = await client.replay(fork)
        assert_equal_to_stream(replayed, stored)
    finally:
        await sub.close()
    for events in (rec.committed, replayed):
        assert len(events) == 1 and isinstance(events[0], SessionForkedEvent) and events[0].seq == 1
        p = events[0].payload
        assert (p.from_, p.tags, len(p.transcript)) == (ForkPoint(source, head), {"branch": "alt", "side": "fork"}, result.items)
        user = p.transcript[0]
        assert isinstance(user, TranscriptUser)
        assert (user.input_id, user.text, user.delivery, user.parts, user.continues) == (receipt.input_id, "fork me", "queue", None, None)
        steps = p.transcript[1:]
        assert all(isinstance(s, TranscriptAssistant) and s.execution_id == user.execution_id and s.status == "completed" for s in steps)
        answered = [part.text for s in steps for part in s.parts if isinstance(part, TranscriptText) and part.type == "text"]  # type: ignore[union-attr]
        assert "".join(answered) == "".join(texts(await client.replay(source))) != ""
    assert rec.invalid == [] and rec.errors == []

    # inside the first turn: refused, naming the nearest settled points (1: the admission)
    with pytest.raises(CommandError) as caught:
        await client.fork(source, session_name("ses_fork_at_2"), at=2)
    err = caught.value
    assert (err.code, err.verb, err.details["nearestBefore"], err.details["sessionId"]) == ("not_settled", "fork", 1, source)
    nearest_after = err.details["nearestAfter"]
    assert 2 < nearest_after <= head and "inside a turn" in err.message and f"Fork at 1 or {nearest_after}" in err.message
    assert re.search(r"nearest settled sequences", err.message)

    # into a session that has events: the source's id, or the fork's at another point
    with pytest.raises(CommandError) as caught:
        await client.fork(fork, source)
    assert (caught.value.code, caught.value.details["sessionId"]) == ("session_exists", source) and "already has" in caught.value.message
    with pytest.raises(CommandError) as caught:
        await client.fork(source, fork, at=1)
    assert caught.value.code == "session_exists" and f"a fork of {source} at sequence {head}" in caught.value.message
    assert caught.value.details["forkedFrom"] == {"sessionId": source, "seq": head}

    # the fork lives its own life: the forked prompt's input id is taken in it, and a prompt runs there
    with pytest.raises(CommandError) as caught:
        await client.admit(fork, "something else", id=receipt.input_id)
    assert caught.value.code == "input_conflict"
    more = await client.admit(fork, "and then")
    assert more.admitted_seq == 2
    await turn_over(client, fork)
    assert (await client.status(source)).seq == head


async def test_forks_that_are_refused(client: Client) -> None:
    source = session_name("ses_refused")
    await client.admit(source, "so that it exists", wake=False)

    async def refusal(call: Any) -> CommandError:
        with pytest.raises(CommandError) as caught:
            await call
        assert caught.value.message and caught.value.verb == "fork"
        return caught.value

    # by the worker
    err = await refusal(client.fork(source, source))
    assert err.code == "invalid_option" and "into itself" in err.message
    err = await refusal(client.fork(source, session_name("ses_past"), at=99))
    assert err.code == "invalid_option" and "has 1 events" in err.message
    assert (await refusal(client.fork(session_name("ses_nobody"), session_name("ses_none")))).code == "unknown_session"
    assert (await refusal(client.fork(source, session_name("ses_badtag"), tags={"bad key": "v"}))).code == "invalid_option"
    # before it is sent
    for at in (0, -1, 1.5, True, 2**53):
        err = await refusal(client.fork(source, session_name("ses_bad_at"), at=at))  # type: ignore[arg-type]
        assert err.code == "invalid_option" and err.message.startswith("Invalid fork point"), at
    err = await refusal(client.fork("ses.dot", session_name("ses_dot")))
    assert err.code == "invalid_id" and "source session id" in err.message
    assert (await refusal(client.fork(source, "ses.dot"))).code == "invalid_id"
