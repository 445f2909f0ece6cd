"""Forks: ``session.forked`` checked as sessiond's catalog checks it (the same verdicts, and the same
cleaned payload, as its zod schema gives these) and its typed transcript."""

from __future__ import annotations

import json

import pytest
from conftest import VECTORS

from sessiond_client import (
    ABSENT,
    ForkPoint,
    RecordedError,
    SessionForked,
    SessionForkedEvent,
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
