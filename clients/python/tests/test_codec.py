"""The encoders and readers on their own, for what the shared vectors do not spell out: integer
boundaries, JSON.stringify's escapes, how a frame wrong in several ways is refused, payloads
cleaned as sessiond's readers clean them."""

from __future__ import annotations

import struct

import msgpack
import pytest

from sessiond_client import (
    ABSENT,
    EventError,
    decode_batch,
    decode_event,
    decode_live,
    event_from_frame,
    pack,
    read_export,
    stringify,
    unpack,
    write_export,
)
from sessiond_client.client import _ack_tokens
from sessiond_client.commands import parse_reply


@pytest.mark.parametrize(
    "value, hex_",
    [
        (0, "00"),
        (127, "7f"),
        (128, "cc80"),
        (255, "ccff"),
        (256, "cd0100"),
        (65535, "cdffff"),
        (65536, "ce00010000"),
        (2**32 - 1, "ceffffffff"),
        (2**32, "d30000000100000000"),  # int64, never uint64
        (1796056745917, "d3000001a22d5307bd"),
        (-1, "ff"),
        (-32, "e0"),
        (-33, "d0df"),
        (-128, "d080"),
        (-129, "d1ff7f"),
        (-(2**15), "d18000"),
        (-(2**15) - 1, "d2ffff7fff"),
        (-(2**31), "d280000000"),
        (-(2**31) - 1, "d3ffffffff7fffffff"),
        (1.5, "cb3ff8000000000000"),
        (2.0, "02"),  # an integral number is an integer, as in JavaScript
        (True, "c3"),
        (None, "c0"),
        ("", "a0"),
        ("a" * 31, "bf" + "61" * 31),
        ("a" * 32, "d920" + "61" * 32),
        ("é", "a2c3a9"),
    ],
)
def test_pack_writes_the_canonical_form(value: object, hex_: str) -> None:
    assert pack(value).hex() == hex_
    assert unpack(bytes.fromhex(hex_)) == value


def test_the_stock_packer_differs_where_the_protocol_says() -> None:
    assert msgpack.packb(2**32).hex() == "cf0000000100000000"  # uint64: why this client has its own packer
    assert unpack(bytes.fromhex("cf0000000100000000")) == 2**32  # and reads any valid form


def test_container_headers_grow_with_their_size() -> None:
    assert pack(list(range(15)))[:1].hex() == "9f"
    assert pack(list(range(16)))[:3].hex() == "dc0010"
    assert pack({str(i): i for i in range(15)})[:1].hex() == "8f"
    assert pack({str(i): i for i in range(16)})[:3].hex() == "de0010"
    assert pack("x" * 256)[:3].hex() == "da0100"
    assert pack("x" * 65536)[:5].hex() == "db00010000"


def test_unpack_reads_values_as_javascript_does() -> None:
    assert unpack(struct.pack(">Bd", 0xCB, 1796056745917.0)) == 1796056745917
    assert type(unpack(struct.pack(">Bd", 0xCB, 1796056745917.0))) is int
    assert unpack(bytes.fromhex("8101a178")) == {"1": "x"}  # keys are strings
    with pytest.raises(EventError) as caught:
        unpack(bytes.fromhex("d40100"))  # an extension type
    assert caught.value.code == "decode_failed"
    with pytest.raises(EventError):
        unpack(b"\xc1")


def test_stringify_writes_what_json_stringify_writes() -> None:
    assert stringify({"b": 1, "a": [True, None, 1.5, 1e21, 1e-7, 100.0]}) == '{"b":1,"a":[true,null,1.5,1e+21,1e-7,100]}'
    assert stringify("<>&\u2028\u2029é😀") == '"<>&\u2028\u2029é😀"'
    assert stringify('"\\\b\f\n\r\t\x00\x1f\x7f') == '"\\"\\\\\\b\\f\\n\\r\\t\\u0000\\u001f\x7f"'
    assert stringify("\ud800 alone") == '"\\ud800 alone"'
    assert stringify("\ud83d\ude00") == '"😀"'  # a pair written as code points is one character
    assert stringify(float("nan")) == "null"


def frame(**overrides: object) -> dict[str, object]:
    f: dict[str, object] = {
        "id": "evt_1",
        "type": "tool.called",
        "version": 1,
        "sessionId": "ses_1",
        "seq": 1,
        "time": 5,
        "payload": {"executionId": "exe_1", "messageId": "msg_1", "callId": "call_1", "name": "search", "durable": False},
    }
    f.update(overrides)
    return f


def code_of(f: object, **options: object) -> str:
    with pytest.raises(EventError) as caught:
        event_from_frame(f, **options)  # type: ignore[arg-type]
    assert caught.value.message
    return caught.value.code


def test_a_frame_is_checked_in_sessiond_order() -> None:
    assert code_of([]) == "decode_failed"
    assert code_of(frame(id=7)) == "decode_failed"
    assert code_of(frame(version=0, type="nope")) == "decode_failed"  # the envelope before the type
    assert code_of(frame(time=-1)) == "decode_failed"
    assert code_of(frame(time=1.5)) == "decode_failed"
    assert code_of(frame(seq=0)) == "decode_failed"
    assert code_of(frame(committedAt="x")) == "decode_failed"
    assert code_of(frame(), session_id="ses_2") == "decode_failed"
    assert code_of(frame(type="nope", id="bad id")) == "unknown_event_type"  # the type before the ids
    assert code_of(frame(id="bad id", version=3)) == "invalid_id"  # the ids before the version
    assert code_of(frame(version=3, payload={})) == "unsupported_event_version"  # the version before the payload
    assert code_of(frame(version=2)) == "invalid_payload"  # version 2 has `started`; version 1 reads as started False
    called = event_from_frame(frame())  # type: ignore[arg-type]
    assert (called.version, called.payload.started) == (2, False)
    assert code_of(frame(payload={"executionId": ""})) == "invalid_payload"
    assert code_of(frame(payload=None)) == "invalid_payload"
    no_seq = frame()
    del no_seq["seq"]
    assert code_of(no_seq) == "decode_failed"
    assert event_from_frame(no_seq, seq_required=False).seq is None


def test_payloads_are_cleaned_as_sessiond_cleans_them() -> None:
    admitted = event_from_frame(
        frame(type="input.admitted", payload={"wake": True, "prompt": "hi", "inputId": "inp_1", "delivery": "queue", "extra": 1})
    )
    assert list(admitted.wire_payload) == ["inputId", "prompt", "delivery", "wake", "source"]  # the schema's order, the default set
    assert admitted.payload.source == "user" and "extra" not in admitted.wire_payload
    called = event_from_frame(frame())
    assert called.payload.input is ABSENT and "input" not in called.wire_payload
    with_null = event_from_frame(frame(payload={**frame()["payload"], "input": None}))  # type: ignore[dict-item]
    assert with_null.payload.input is None and with_null.wire_payload["input"] is None
    too_long = "x" * 1001
    assert code_of(frame(type="execution.cancelled", payload={"executionId": "exe_1", "reason": too_long})) == "invalid_payload"
    emoji = "😀" * 1000  # 1000 characters: at the limit, as zod counts (test_lengths.py has every limit)
    assert event_from_frame(frame(type="execution.cancelled", payload={"executionId": "exe_1", "reason": emoji})).payload.reason == emoji
    assert (
        code_of(
            frame(
                type="execution.claimed", payload={"executionId": "e", "ownerId": "o", "expiresAt": 2**60, "leaseMs": 1, "assistantSeq": -1}
            )
        )
        == "invalid_payload"
    )


def test_wait_payloads_are_checked_and_typed() -> None:
    started = event_from_frame(
        frame(
            type="wait.started",
            payload={"executionId": "exe_1", "kind": "approval", "name": "call_1", "messageId": "msg_1", "callId": "call_1", "tool": "deploy", "input": None},
        )
    )
    assert (started.payload.kind, started.payload.name, started.payload.tool, started.payload.until) == ("approval", "call_1", "deploy", None)
    assert started.payload.input is None and list(started.wire_payload) == ["executionId", "kind", "name", "messageId", "callId", "tool", "input"]
    timer = event_from_frame(frame(type="wait.started", payload={"executionId": "exe_1", "kind": "timer", "name": "sleep-1", "until": 1796056745917}))
    assert timer.payload.until == 1796056745917 and timer.payload.input is ABSENT and timer.payload.call_id is None
    assert event_from_frame(frame(type="wait.started", payload={"executionId": "e", "kind": "signal", "name": "😀" * 200})).payload.name  # 200 characters
    for bad in (
        {"executionId": "e", "kind": "signal", "name": "n" * 201},
        {"executionId": "e", "kind": "signal", "name": ""},
        {"executionId": "e", "kind": "nap", "name": "n"},
        {"executionId": "e", "kind": "approval", "name": "c", "tool": ""},
        {"executionId": "e", "kind": "timer", "name": "sleep-1", "until": -1},
    ):
        assert code_of(frame(type="wait.started", payload=bad)) == "invalid_payload", bad
    # a signal's value: absent, null and a value are three things
    base = {"executionId": "exe_1", "kind": "signal", "name": "payment", "outcome": "delivered"}
    assert event_from_frame(frame(type="wait.resolved", payload=base)).payload.data is ABSENT
    assert event_from_frame(frame(type="wait.resolved", payload={**base, "data": None})).payload.data is None
    delivered = event_from_frame(frame(type="wait.resolved", payload={**base, "data": {"amount": 12.5}}))
    assert delivered.payload.data == {"amount": 12.5} and delivered.wire_payload == {**base, "data": {"amount": 12.5}}
    assert code_of(frame(type="wait.resolved", payload={**base, "outcome": "maybe"})) == "invalid_payload"
    assert code_of(frame(type="wait.resolved", payload={**base, "reason": "r" * 1001})) == "invalid_payload"
    # a settled turn that waits, a scheduled prompt, a resumed continuation
    assert event_from_frame(frame(type="execution.settled", payload={"executionId": "e", "outcome": "waiting"})).payload.outcome == "waiting"
    admitted = {"inputId": "inp_1", "prompt": "later", "delivery": "queue", "wake": True, "notBefore": 1796056745917}
    assert event_from_frame(frame(type="input.admitted", payload=admitted)).payload.not_before == 1796056745917
    assert code_of(frame(type="input.admitted", payload={**admitted, "notBefore": -1})) == "invalid_payload"
    resume = {
        "inputId": "inp_resume_exe_1",
        "prompt": "Resume the turn of execution exe_1: signal payment delivered.",
        "delivery": "queue",
        "wake": True,
        "source": "recovery",
        "continues": {"executionId": "exe_1", "reason": "resumed", "phase": "safe", "inputIds": ["inp_1"], "assistantMessageId": None, "retryTools": []},
    }
    continues = event_from_frame(frame(type="input.admitted", payload=resume)).payload.continues
    assert continues is not None and continues.reason == "resumed" and continues.input_ids == ["inp_1"]


def test_stored_batches_need_consecutive_seqs_of_one_session() -> None:
    a, b = frame(seq=1), frame(seq=3, id="evt_2")
    with pytest.raises(EventError) as caught:
        decode_batch(pack([a, b]), 9, "sessiond.events.ses_1")
    assert caught.value.code == "decode_failed" and "expected 2" in caught.value.message
    events = decode_batch(pack([a, frame(seq=2, id="evt_2")]), 9, "sessiond.events.ses_1", 77)
    assert [(e.seq, e.position, e.committed_at) for e in events] == [(1, 9, 77), (2, 9, 77)]
    assert events[0].to_dict()["position"] == 9


def test_live_messages_carry_a_whole_position_and_match_their_subject() -> None:
    good = pack({**frame(), "position": 4})
    assert decode_live(good, "sessiond.live.ses_1.tool.called").position == 4
    with pytest.raises(EventError) as caught:
        decode_live(pack({**frame(), "position": 0}), "sessiond.live.ses_1.tool.called")
    assert caught.value.code == "decode_failed" and caught.value.details["seq"] == 1
    with pytest.raises(EventError) as caught:
        decode_live(b"\x81\xa3seq\x05", "sessiond.live.ses_1.tool.called")
    assert caught.value.details["seq"] == 5  # readable that far: the gap it reveals can be filled
    with pytest.raises(EventError) as caught:
        decode_event(b"\x80" * (600 * 1024))
    assert caught.value.code == "payload_too_large"


def test_an_export_file_written_here_reads_back() -> None:
    events = decode_batch(pack([frame(seq=1), frame(seq=2, id="evt_2")]), 3, "sessiond.events.ses_1", 1234)
    data = write_export({"created": 1, "source": "test", "events": 2}, events)
    back = read_export(data)
    assert back.header == {"format": "sessiond-export", "version": 1, "created": 1, "source": "test", "events": 2}
    assert [e.to_frame() for e in back.events] == [e.to_frame() for e in events]
    assert all(e.committed_at == 1234 and e.position is None for e in back.events)
    with pytest.raises(EventError) as caught:
        read_export(write_export({"created": 1, "source": "t", "events": 0}, [])[:4] + pack({"format": "other"}))
    assert caught.value.code == "decode_failed"


def test_ack_subjects_of_both_forms_are_read() -> None:
    assert _ack_tokens("$JS.ACK.SESSIOND_EVENTS.c1.1.42.7.1796056745917123456.3") == (42, 7, 1796056745917123456, 3)
    assert _ack_tokens("$JS.ACK.hub.ACC.SESSIOND_EVENTS.c1.1.42.7.1796056745917123456.0.xyz") == (42, 7, 1796056745917123456, 0)


def test_replies_that_are_not_sessiond_replies_are_internal_errors() -> None:
    for body in (b"not json", b"[1]", b'{"ok":"yes"}', b'{"ok":true}', b"\xff"):
        with pytest.raises(Exception) as caught:
            parse_reply("status", body)
        assert getattr(caught.value, "code", None) == "internal", body


def test_tag_payloads_are_checked_and_typed() -> None:
    admitted = {"inputId": "inp_1", "prompt": "hi", "delivery": "queue", "wake": True}
    tags = {"customer": "acme", "env/region": "😀" * 256}  # 256 characters: at the limit
    event = event_from_frame(frame(type="input.admitted", payload={**admitted, "tags": tags}))
    assert event.payload.tags == tags and event.wire_payload["tags"] == tags
    assert event_from_frame(frame(type="input.admitted", payload=admitted)).payload.tags is None
    tagged = event_from_frame(frame(type="session.tagged", payload={"tags": {"customer": "acme", "tier": None}}))
    assert type(tagged).__name__ == "SessionTaggedEvent" and tagged.payload.tags == {"customer": "acme", "tier": None}
    assert event_from_frame(frame(type="session.tagged", payload={"tags": {"k" * 64: "v"}})).payload.tags == {"k" * 64: "v"}
    for bad in (
        {"customer": None},
        {"customer": ""},
        {"customer": "v" * 257},
        {"bad key": "v"},
        {"_lead": "v"},
        {"k" * 65: "v"},
        {"k\n": "v"},
    ):
        assert code_of(frame(type="input.admitted", payload={**admitted, "tags": bad})) == "invalid_payload", bad
    for bad_payload in ({}, {"tags": ["customer"]}, {"tags": {"tier": 1}}, {"tags": {"bad key": None}}):
        assert code_of(frame(type="session.tagged", payload=bad_payload)) == "invalid_payload", bad_payload
