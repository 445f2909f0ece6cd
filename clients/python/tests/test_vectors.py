"""The shared protocol vectors (clients/protocol/vectors) and schema: every case decodes to its
value, every roundtrip case encodes to exactly its bytes, every invalid frame is refused with its
code, the export file reads whole, every command request is the exact text, every reply reads
into its typed result or error; and the catalog here agrees with events.schema.json."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import SCHEMA, VECTORS

from sessiond_client import (
    CATALOG,
    EVENT_CLASSES,
    CommandError,
    EventError,
    UnknownEvent,
    decode_batch,
    decode_event,
    decode_live,
    encode_batch,
    encode_live,
    encode_request,
    pack,
    parse_reply,
    parts,
    read_export,
    unpack,
    write_export,
)
from sessiond_client import catalog as cat
from sessiond_client.codec import unpack_raw
from sessiond_client.commands import (
    REQUEST_FIELDS,
    VERBS,
    AdmitReceipt,
    BudgetResult,
    CancelResult,
    DropResult,
    EventsPage,
    ForkResult,
    ResolveResult,
    SessionListItem,
    SessionPage,
    StatusReply,
    TagResult,
    WaitInfo,
    WakeResult,
)
from sessiond_client.generated_replies import BlobChunk, UploadReply


def load(name: str) -> Any:
    return json.loads((VECTORS / name).read_text(encoding="utf-8"))


MSGPACK = load("msgpack.json")["cases"]
INVALID = load("invalid.json")["cases"]
EXPORT = load("export.json")
COMMANDS = load("commands.json")["cases"]
EVENTS_SCHEMA = json.loads((SCHEMA / "events.schema.json").read_text(encoding="utf-8"))
COMMANDS_SCHEMA = json.loads((SCHEMA / "commands.schema.json").read_text(encoding="utf-8"))


def strict(a: Any, b: Any, path: str = "$") -> None:
    """Equal as JSON values, with integers, floats and booleans told apart."""
    assert type(a) is type(b), f"{path}: {type(a).__name__} {a!r} != {type(b).__name__} {b!r}"
    if isinstance(a, dict):
        assert list(a) == list(b), f"{path}: keys {list(a)} != {list(b)}"
        for k in a:
            strict(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), f"{path}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            strict(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def by_name(cases: list[dict[str, Any]]) -> dict[str, Any]:
    return {"argvalues": cases, "ids": [c["name"] for c in cases]}


def test_the_vectors_cover_every_event_type() -> None:
    seen: set[str] = set()
    for case in MSGPACK:
        value = case["value"]
        for frame in value if isinstance(value, list) else [value]:
            seen.add(frame["type"])
    assert seen == set(CATALOG)


@pytest.mark.parametrize("case", **by_name(MSGPACK))
def test_msgpack_case_decodes_to_its_value(case: dict[str, Any]) -> None:
    data = bytes.fromhex(case["hex"])
    strict(unpack(data), case["value"])
    if case["roundtrip"]:
        assert pack(case["value"]).hex() == case["hex"]
    else:
        assert unpack_raw(data) == case["value"]  # the stock decoder reads the same values (floats where the old writer wrote them)


@pytest.mark.parametrize("case", **by_name([c for c in MSGPACK if c["kind"] == "stored_batch"]))
def test_stored_batch_reads_into_events(case: dict[str, Any]) -> None:
    data = bytes.fromhex(case["hex"])
    events = decode_batch(data, 42, case["subject"], 1796056799000)
    frames = case.get("read", case["value"])  # an older version reads as the current one
    assert len(events) == len(frames)
    for event, frame in zip(events, frames):
        assert type(event) is EVENT_CLASSES[frame["type"]]
        assert (event.id, event.type, event.version, event.session_id, event.seq, event.time) == (
            frame["id"],
            frame["type"],
            frame["version"],
            frame["sessionId"],
            frame["seq"],
            frame["time"],
        )
        assert event.position == 42 and event.committed_at == 1796056799000
        strict(event.to_frame(committed_at=False), frame)
        assert isinstance(event.time, int)
    if case["roundtrip"]:
        assert encode_batch(events).hex() == case["hex"]
    else:
        assert encode_batch(events) == pack(frames)  # written today as integers (int64), at the current version


@pytest.mark.parametrize("case", **by_name([c for c in MSGPACK if c["kind"] == "live"]))
def test_live_message_reads_into_an_event(case: dict[str, Any]) -> None:
    event = decode_live(bytes.fromhex(case["hex"]), case["subject"])
    frame = case["value"]
    assert type(event) is EVENT_CLASSES[frame["type"]]
    assert event.seq == frame.get("seq") and event.position == frame.get("position")
    assert event.committed == ("seq" in frame) and event.committed_at is None
    assert CATALOG[event.type].durable == event.committed
    strict(event.to_live_frame(), frame)
    assert encode_live(event).hex() == case["hex"]


@pytest.mark.parametrize("case", **by_name([c for c in MSGPACK if c["kind"] == "export_frame"]))
def test_export_frame_reads_into_an_event(case: dict[str, Any]) -> None:
    event = decode_event(bytes.fromhex(case["hex"]))
    frame = case["value"]
    assert event.committed_at == frame.get("committedAt") and event.position == frame.get("position")
    strict(event.to_frame(), frame)
    assert pack(event.to_frame()).hex() == case["hex"]


@pytest.mark.parametrize("case", **by_name(INVALID))
def test_invalid_frame_is_refused_with_its_code(case: dict[str, Any]) -> None:
    data = bytes.fromhex(case["hex"])
    with pytest.raises(EventError) as caught:
        if case["kind"] == "stored_batch":
            decode_batch(data, 7, case["subject"])
        elif case["kind"] == "live":
            decode_live(data, case["subject"])
        elif case["kind"] == "export_frame":
            decode_event(data)
        else:
            raise AssertionError(f"unknown kind {case['kind']}")
    assert caught.value.code == case["code"], caught.value.message
    assert caught.value.message  # says what is wrong


def test_an_unknown_type_reads_as_a_generic_event_when_asked() -> None:
    case = next(c for c in INVALID if c["code"] == "unknown_event_type" and c["kind"] == "stored_batch")
    events = decode_batch(bytes.fromhex(case["hex"]), 7, case["subject"], allow_unknown=True)
    unknown = [e for e in events if isinstance(e, UnknownEvent)]
    assert len(unknown) == 1 and unknown[0].type not in CATALOG and isinstance(unknown[0].payload, dict)


def test_export_file_reads_whole_and_writes_back_byte_for_byte() -> None:
    data = bytes.fromhex(EXPORT["hex"])
    export = read_export(data)
    header, *frames = EXPORT["frames"]
    strict(export.header, header)
    assert len(export.events) == len(frames) == header["events"]
    for event, frame in zip(export.events, frames):
        strict(event.to_frame(), frame)
        assert event.committed_at == frame.get("committedAt")
    assert write_export(export.header, export.events).hex() == EXPORT["hex"]


def test_a_damaged_export_file_is_refused_saying_where() -> None:
    data = bytes.fromhex(EXPORT["hex"])
    with pytest.raises(EventError) as caught:
        read_export(data[:-3])
    assert caught.value.code == "decode_failed" and "truncated" in caught.value.message
    with pytest.raises(EventError) as caught:
        read_export(b"")
    assert caught.value.code == "decode_failed"


REQUESTS = [c for c in COMMANDS if c["direction"] == "request"]
REPLIES = [c for c in COMMANDS if c["direction"] == "reply"]


@pytest.mark.parametrize("case", **by_name(REQUESTS))
def test_command_request_is_exactly_its_text(case: dict[str, Any]) -> None:
    assert encode_request(case["json"]) == case["text"].encode("utf-8")


def _vector_sha(name_start: str) -> str:
    sha: str = next(x for x in REQUESTS if x["name"].startswith(name_start))["json"]["sha256"]
    return sha


def test_the_client_builds_each_verbs_request_as_the_vectors_spell_it() -> None:
    from sessiond_client import commands as c

    built = {
        "admit with every field": c.admit_request(
            "ses_cmd",
            next(x for x in REQUESTS if x["name"] == "admit with every field")["json"]["prompt"],
            id="inp_cmd_1",
            delivery="queue",
            wake=False,
        ),
        "admit with only the required fields and an id": c.admit_request("ses_cmd", "hi", id="inp_cmd_2"),
        "admit with tags": c.admit_request("ses_cmd", "hi", id="inp_cmd_5", tags={"customer": "acme", "env/region": "eu-west-1"}),
        # as the part builders make them, keys in any order
        "admit a prompt of parts": c.admit_request("ses_cmd", SAMPLE_PARTS, id="inp_cmd_6"),
        # as tag and list build them (None removes a tag)
        "tag: set one, remove another": c.tag_request("ses_cmd", {"tier": "gold", "env": None}),
        "budget: set tokens, remove the cost limit, reset": c.budget_request("ses_cmd", tokens=200_000, cost_usd=c.CLEAR, reset=True, actor="ops"),
        "list with every filter": c.list_request(
            state="settled",
            waiting=False,
            tags={"customer": "acme"},
            id_prefix="ses_",
            updated_since=1796056745917,
            limit=20,
            after="MTc2NDU5MDQwMDAwMC5zZXNfMQ",
        ),
        "list everything (an empty body)": c.list_request(),
        # as fork builds it
        "fork at a sequence, with tags": c.fork_request("ses_cmd", "ses_cmd_fork", at=9, tags={"branch": "alt"}),
        # as events builds them (after_seq 0 is sent as none)
        "events after a seq, a page of at most 50": c.events_request("ses_cmd", 3, 50),
        "events from the first": c.events_request("ses_cmd", 0),
        "wake": c.wake_request("ses_cmd"),
        "cancel with a reason and an execution id": c.cancel_request("ses_cmd", "stop, please", "exe_x"),
        "status with pendingFrom": c.status_request("ses_cmd", 100),
        "drop named inputs with a reason": c.drop_request("ses_cmd", ["inp_a", "inp_b"], "cleanup"),
        # as approve, deny and resolve build them
        "resolve: approve a call, with a reason": c.resolve_request("ses_cmd", "approval", "call_x", "approved", "looks right"),
        "resolve: deny a call": c.resolve_request("ses_cmd", "approval", "call_y", "denied"),
        "resolve: deliver a signal with data": c.resolve_request("ses_cmd", "signal", "payment", "delivered", data={"amount": 12.5, "ok": True}),
        # as the blob calls build them
        "upload a small blob in one request (the last chunk: with sha256 and size)": c.upload_request(
            "upl_vectors_1", 0, bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + b"sessiond", "image/png", 16, _vector_sha("upload a small blob")
        ),
        "upload a chunk that is not the last (no sha256)": c.upload_request("upl_vectors_2", 524288, bytes(3), "image/png", 2000000),
        "blob: a chunk from an offset": c.blob_request("ses_cmd", _vector_sha("blob: a chunk"), 8),
    }
    for case in REQUESTS:
        assert encode_request(built[case["name"]]) == case["text"].encode("utf-8"), case["name"]
    assert {case["verb"] for case in REQUESTS} == set(VERBS)
    # the filters of the vectors pass the client's own checks
    for case in REQUESTS:
        if case["verb"] == "list":
            assert c.list_filter_problem(case["json"]) is None


#: The vectors' prompt of every kind of part, as the builders make it (a JSON value's keys in its order).
SAMPLE_PARTS = [
    parts.text_part("What is in these? — ünïcode"),
    {"mediaType": "image/png", "url": "https://example.com/cat.png", "type": "image"},
    parts.image_bytes(bytes([0x89, 0x50, 0x4E, 0x47]), "image/png"),
    parts.file_bytes(b"%PDF-1.4", "application/pdf", "invoice.pdf"),
    parts.file_url("https://example.com/report.csv", "text/csv"),
    parts.json_part({"order": 42, "lines": [{"sku": "A-1", "qty": 2, "price": 9.5}], "note": None}),
]


def test_the_sample_parts_are_the_vectors() -> None:
    case = next(x for x in REQUESTS if x["name"] == "admit a prompt of parts")
    assert [dict(sorted(p.items())) for p in SAMPLE_PARTS] == [dict(sorted(p.items())) for p in case["json"]["prompt"]]


def test_the_verbs_and_their_fields_are_the_schemas() -> None:
    verbs = COMMANDS_SCHEMA["x-sessiond-verbs"]
    assert list(verbs) == list(VERBS)
    for verb, spec in verbs.items():
        assert spec["subject"] == f"sessiond.cmd.{verb}"
        assert list(spec["request"]["properties"]) == list(REQUEST_FIELDS[verb]), verb
    assert "sessionId" not in verbs["list"]["request"]["properties"]
    # an admission's prompt is the catalog's
    assert without_annotations(verbs["admit"]["request"]["properties"]["prompt"]) == as_json_schema(cat.PROMPT)


def test_list_filters_and_tags_are_checked_as_a_worker_checks_them() -> None:
    from sessiond_client import commands as c

    assert c.list_filter_problem(c.list_request(state="settled", waiting=True, tags={"k": "v" * 256}, limit=1000)) is None
    for body, words in (
        (c.list_request(state="asleep"), "state must be one of idle, claimed, running, recovering, settled"),
        (c.list_request(limit=0), "limit must be a whole number from 1 to 1000, got 0"),
        (c.list_request(limit=1001), "limit must be a whole number from 1 to 1000"),
        (c.list_request(updated_since=-1), "updatedSince must be a time in whole milliseconds"),
        (c.list_request(tags={"bad key": "v"}), 'the filter has the tag key "bad key"'),
        (c.list_request(tags={"k": ""}), "a value is a string of 1 to 256 characters"),
        (c.list_request(tags={"k": "v" * 257}), "a value is a string of 1 to 256 characters"),
        (c.list_request(tags={"k": "a\nb"}), "without control characters"),
        (c.list_request(tags={f"k{i}": "v" for i in range(33)}), "over the limit of 32 tags"),
        (c.list_request(id_prefix="a b"), 'idPrefix must be the start of a session id, 1-128 characters from A-Z a-z 0-9 _ - : + = @, got "a b"'),
        (c.list_request(id_prefix=""), "idPrefix must be the start of a session id"),
        (c.list_request(id_prefix="x" * 129), "idPrefix must be the start of a session id"),
        (c.list_request(called_by="ses lead"), 'calledBy must be a session id, 1-128 characters from A-Z a-z 0-9 _ - : + = @, got "ses lead"'),
        (c.list_request(called_by="a.b"), "calledBy must be a session id"),
    ):
        problem = c.list_filter_problem(body)
        assert problem is not None and words in problem and problem.startswith("Invalid "), (body, problem)


REPLY_TYPES = {
    "admit": AdmitReceipt,
    "wake": WakeResult,
    "cancel": CancelResult,
    "drop": DropResult,
    "status": StatusReply,
    "resolve": ResolveResult,
    "tag": TagResult,
    "budget": BudgetResult,
    "list": SessionPage,
    "fork": ForkResult,
    "events": EventsPage,
    "upload": UploadReply,
    "blob": BlobChunk,
}


@pytest.mark.parametrize("case", **by_name(REPLIES))
def test_command_reply_reads_into_its_result_or_error(case: dict[str, Any]) -> None:
    data = case["text"].encode("utf-8")
    expected = case["json"]
    assert json.loads(data) == expected
    if expected["ok"]:
        result = parse_reply(case["verb"], data)
        assert isinstance(result, REPLY_TYPES[case["verb"]])
        body = {k: v for k, v in expected.items() if k != "ok"}
        wire = body if case["verb"] in ("status", "list", "events", "upload", "blob") else body.get("receipt", body.get("result"))
        assert result.raw == wire
        if case["verb"] == "admit":
            assert (result.session_id, result.input_id, result.admitted_seq, result.created, result.wake) == (
                wire["sessionId"],
                wire["inputId"],
                wire["admittedSeq"],
                wire["created"],
                wire["wake"],
            )
        elif case["verb"] == "status":
            assert (result.state, result.seq, result.pending_count, len(result.pending)) == (
                wire["state"],
                wire["seq"],
                wire["pendingCount"],
                len(wire["pending"]),
            )
            assert (result.execution is None) == (wire["execution"] is None)
            if result.execution:
                assert result.execution.id == wire["execution"]["id"] and result.execution.outcome == wire["execution"]["outcome"]
            assert all(isinstance(w, WaitInfo) for w in result.waits) and [w.raw for w in result.waits] == wire["waits"]
            assert result.tags == wire["tags"] and [p.tags for p in result.pending] == [p.get("tags") for p in wire["pending"]]
            assert result.forked_from == (
                None if wire["forkedFrom"] is None else cat.ForkPoint(wire["forkedFrom"]["sessionId"], wire["forkedFrom"]["seq"])
            )
            for w, want in zip(result.waits, wire["waits"]):
                assert (w.kind, w.name, w.execution_id, w.since, w.until, w.call_id, w.outcome, w.started) == (
                    want["kind"],
                    want["name"],
                    want["executionId"],
                    want["since"],
                    want["until"],
                    want["callId"],
                    want["outcome"],
                    want["started"],
                )
                assert w.data == want.get("data", cat.ABSENT) and w.input == want.get("input", cat.ABSENT)
        elif case["verb"] == "wake":
            assert result.status == wire["status"] and result.execution_id == wire.get("executionId")
        elif case["verb"] == "cancel":
            assert result.cancelled == wire["cancelled"] and result.reason == wire.get("reason")
        elif case["verb"] == "drop":
            assert result.dropped == wire["dropped"] and result.seq == wire.get("seq")
        elif case["verb"] == "tag":
            assert (result.session_id, result.tags, result.changed, result.seq) == (
                wire["sessionId"],
                wire["tags"],
                wire["changed"],
                wire.get("seq"),
            )
        elif case["verb"] == "fork":
            assert (result.session_id, result.from_, result.seq, result.created, result.items) == (
                wire["sessionId"],
                cat.ForkPoint(wire["from"]["sessionId"], wire["from"]["seq"]),
                wire["seq"],
                wire["created"],
                wire["items"],
            )
        elif case["verb"] == "list":
            assert result.next == wire["next"] and all(isinstance(s, SessionListItem) for s in result.sessions)
            assert [s.raw for s in result.sessions] == wire["sessions"]
            for s, want in zip(result.sessions, wire["sessions"]):
                assert (s.session_id, s.state, s.waiting, s.pending_inputs, s.seq, s.created_at, s.updated_at, s.tags, s.forked_from) == (
                    want["sessionId"],
                    want["state"],
                    want["waiting"],
                    want["pendingInputs"],
                    want["seq"],
                    want["createdAt"],
                    want["updatedAt"],
                    want["tags"],
                    None if want["forkedFrom"] is None else cat.ForkPoint(want["forkedFrom"]["sessionId"], want["forkedFrom"]["seq"]),
                )
        elif case["verb"] == "events":
            assert result.more == wire["more"] and len(result.events) == len(wire["events"])
            for e, want in zip(result.events, wire["events"]):
                assert type(e) is EVENT_CLASSES[want["type"]]
                assert (e.id, e.session_id, e.seq, e.time, e.position, e.committed_at) == (
                    want["id"],
                    want["sessionId"],
                    want["seq"],
                    want["time"],
                    want.get("position"),
                    want.get("committedAt"),
                )
                strict(e.to_dict(), want)  # read back as the Node client's SessionEvent
        elif case["verb"] == "resolve":
            assert (result.session_id, result.kind, result.name, result.outcome, result.resolved, result.resume_input_id, result.seq) == (
                wire["sessionId"],
                wire["kind"],
                wire["name"],
                wire["outcome"],
                wire["resolved"],
                wire.get("resumeInputId"),
                wire.get("seq"),
            )
    else:
        with pytest.raises(CommandError) as caught:
            parse_reply(case["verb"], data)
        error = expected["error"]
        assert caught.value.code == error["code"]
        assert caught.value.message == error["message"]
        assert caught.value.details == error.get("details", {})
        assert caught.value.verb == case["verb"]


def test_every_error_code_a_worker_sends_has_a_vector() -> None:
    codes = {c["json"]["error"]["code"] for c in REPLIES if not c["json"]["ok"]}
    from sessiond_client.errors import CLIENT_CODES, REPLY_CODES

    assert set(REPLY_CODES) <= codes
    assert list(COMMANDS_SCHEMA["x-sessiond-client-error-codes"]) == list(CLIENT_CODES)


# ---------------------------------------------------------------------------------------------
# the catalog against events.schema.json


def as_json_schema(s: cat.Schema) -> dict[str, Any]:
    if isinstance(s, cat.Str):
        out: dict[str, Any] = {"type": "string"}
        if s.min:
            out["minLength"] = s.min
        if s.max is not None:
            out["maxLength"] = s.max
        return out
    if isinstance(s, cat.Pattern):
        out = {"type": "string", "pattern": s.source}
        return {**out, "format": "base64", "contentEncoding": "base64"} if s.base64 else out
    if isinstance(s, cat.Const):
        return {"type": "string", "const": s.value}
    if isinstance(s, cat.JsonValue):
        return {}
    if isinstance(s, cat.Part):
        return {"anyOf": [as_json_schema(shape) for shape in s.shapes]}
    if isinstance(s, cat.OneOf):
        return {"anyOf": [as_json_schema(variant) for variant in s.variants]}
    if isinstance(s, cat.PromptSchema):
        return {"anyOf": [as_json_schema(s.text), as_json_schema(s.parts)]}
    if isinstance(s, cat.Int):
        out = {"type": "integer", ("exclusiveMinimum" if s.exclusive_min else "minimum"): s.min, "maximum": 2**53 - 1}
        return out
    if isinstance(s, cat.Num):
        return {"type": "number", "minimum": s.min}
    if isinstance(s, cat.Bool):
        return {"type": "boolean"}
    if isinstance(s, cat.Enum):
        return {"type": "string", "enum": list(s.values)}
    if isinstance(s, cat.AnyValue):
        return {}
    if isinstance(s, cat.Nullable):
        return {"anyOf": [as_json_schema(s.inner), {"type": "null"}]}
    if isinstance(s, cat.Record):
        return {
            "type": "object",
            "propertyNames": {"type": "string", "pattern": cat.TAG_KEY.pattern},
            "additionalProperties": as_json_schema(s.value),
        }
    if isinstance(s, cat.Array):
        out = {"type": "array", "items": as_json_schema(s.item)}
        if s.min:
            out["minItems"] = s.min
        return out
    if isinstance(s, cat.Obj):
        props: dict[str, Any] = {}
        for f in s.fields:
            props[f.wire] = as_json_schema(f.schema)
            if f.default is not cat.ABSENT:
                props[f.wire] = {"default": f.default, **props[f.wire]}
        required = [f.wire for f in s.fields if not f.optional and f.default is cat.ABSENT]
        return {"type": "object", "properties": props, "required": required, **({"additionalProperties": False} if s.strict else {})}
    raise AssertionError(type(s))


def without_annotations(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: without_annotations(x) for k, x in v.items() if not k.startswith("x-") and k not in ("description", "title")}
    if isinstance(v, list):
        return [without_annotations(x) for x in v]
    return v


def test_the_catalog_agrees_with_the_schema() -> None:
    payloads = EVENTS_SCHEMA["$defs"]["payloads"]
    assert list(payloads) == list(CATALOG)
    for type_, schema in payloads.items():
        entry = CATALOG[type_]
        assert schema["x-sessiond-version"] == entry.version, type_
        assert schema["x-sessiond-durable"] == entry.durable, type_
        assert without_annotations(schema) == as_json_schema(entry.schema), type_


def test_every_upcaster_the_schema_names_is_written_and_no_other() -> None:
    named = {(t, int(v)) for t, s in EVENTS_SCHEMA["$defs"]["payloads"].items() for v in s.get("x-sessiond-upcasters", {})}
    assert named == {(t, v) for t, ups in cat.UPCASTER_DESCRIPTIONS.items() for v in ups}
    assert named == {(t, v) for t, ups in cat.UPCASTERS.items() for v in ups}
