"""Prompts of parts: each part checked as sessiond's catalog checks it (the same verdicts as its zod
schema gives these), the text form (sessiond's ``promptText``), the admit body, the round trip
through the codec; and against real workers: a prompt of every kind of part admitted, run by the
echo worker, read back live and from the stream with its parts intact, resent, and bad parts
refused by the worker naming them; a 1.5 MB image admitted inline (uploaded first by ``admit``) and
read back with ``read_blob``; ``upload_blob`` from a stream, refused for a wrong media type, and for an owner."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import nats
import pytest
from conftest import session_name
from test_blobs import aiter_of, image_blob_ref, odd_pieces, png_bytes
from test_live import Recorder, assert_equal_to_stream, assert_same_events, caught_up, turn_over
from world import World

from sessiond_client import (
    MAX_PROMPT_PARTS,
    Client,
    CommandError,
    InputAdmittedEvent,
    TextCompletedEvent,
    decode_batch,
    encode_batch,
    encode_request,
    event_from_frame,
    file_bytes,
    file_url,
    image_blob,
    image_bytes,
    image_url,
    json_part,
    part_bytes,
    prompt_text,
    text_part,
)
from sessiond_client._prompt_parts import extname
from sessiond_client.commands import MAX_BLOB_CHUNK, admit_request

WORLD_WORKERS = 1

EMOJI = "\U0001f600"

#: One part each, and whether sessiond's catalog takes it (the Go client's tests have the same).
_SHA = "3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a3a"
PART_VERDICTS: list[tuple[Any, bool]] = [
    ({"type": "image", "blob": {"sha256": _SHA, "size": 6291456, "mediaType": "image/png"}}, True),
    ({"type": "file", "blob": {"sha256": _SHA, "size": 0, "mediaType": "application/pdf"}, "filename": "a.pdf"}, True),
    ({"type": "image", "blob": {"sha256": "ABC", "size": 1, "mediaType": "image/png"}}, False),
    ({"type": "image", "blob": {"sha256": _SHA, "size": -1, "mediaType": "image/png"}}, False),
    ({"type": "image", "blob": {"sha256": _SHA, "size": 1}}, False),
    ({"type": "image", "blob": {"sha256": _SHA, "size": 1, "mediaType": "image/png"}, "mediaType": "image/png"}, False),
    ({"type": "text", "text": "hi"}, True),
    ({"type": "text", "text": ""}, True),
    ({"type": "image", "url": "https://example.com/a.png"}, True),
    ({"type": "image", "url": "http://example.com/a.png", "mediaType": "image/png"}, True),
    ({"type": "image", "url": "data:image/png;base64,AAAA"}, True),
    ({"type": "image", "data": "iVBORw==", "mediaType": "image/svg+xml"}, True),
    ({"type": "image", "data": "", "mediaType": "image/png"}, True),  # no bytes is base64 too
    ({"mediaType": "image/png", "url": "https://example.com/a.png", "type": "image"}, True),
    ({"type": "file", "url": "https://example.com/r.csv", "mediaType": "text/csv"}, True),
    ({"type": "file", "data": "JVBERi0xLjQ=", "mediaType": "application/pdf", "filename": "invoice.pdf"}, True),
    ({"type": "file", "data": "AAAA", "mediaType": "application/vnd.ms-excel", "filename": EMOJI * 256}, True),  # 256 code points
    ({"type": "json", "value": None}, True),
    ({"type": "json", "value": [1, "two", None, True, {"b": 2.5}]}, True),
    ({"type": "json", "value": "a string"}, True),
    ({"type": "text"}, False),
    ({"type": "text", "text": 1}, False),
    ({"type": "text", "text": "x", "extra": 1}, False),  # a part is a strict object
    ({"type": "image"}, False),
    ({"type": "image", "url": "ftp://example.com/a.png"}, False),
    ({"type": "image", "url": "HTTPS://example.com/a.png"}, False),
    ({"type": "image", "url": "https://example.com/a.png", "mediaType": "PNG"}, False),
    ({"type": "image", "url": "https://example.com/a.png", "mediaType": "image/"}, False),
    ({"type": "image", "url": "https://example.com/a.png", "mediaType": "image/png\n"}, False),  # JavaScript's $ ends the string
    ({"type": "image", "url": "https://example.com/a.png", "mediaType": None}, False),
    ({"type": "image", "data": "iVBORw=="}, False),  # bytes need their media type
    ({"type": "image", "data": "abc", "mediaType": "image/png"}, False),
    ({"type": "image", "data": "iVBORw", "mediaType": "image/png"}, False),
    ({"type": "image", "url": "https://example.com/a.png", "data": "AAAA", "mediaType": "image/png"}, False),
    ({"type": "image", "url": "https://example.com/a.png", "filename": "a.png"}, False),
    ({"type": "file", "url": "https://example.com/r.csv"}, False),  # a file needs its media type
    ({"type": "file", "data": "AAAA", "mediaType": "text/csv", "filename": ""}, False),
    ({"type": "file", "data": "AAAA", "mediaType": "text/csv", "filename": EMOJI * 256 + "x"}, False),
    ({"type": "file", "data": "AAAA", "mediaType": "text/csv", "filename": "n" * 257}, False),
    ({"type": "json"}, False),
    ({"type": "json", "value": 1, "text": "x"}, False),
    ({"type": "json", "value": float("nan")}, False),
    ({"type": "json", "value": [{"n": float("inf")}]}, False),
    ({"type": "json", "value": b"\x01"}, False),  # msgpack bin: not JSON
    ({"type": "video", "url": "https://example.com/a.mp4"}, False),
    ({"url": "https://example.com/a.png"}, False),
    ("text", False),
    (None, False),
    ([], False),
]


def admitted_frame(prompt: Any, version: int = 2) -> dict[str, Any]:
    return {
        "id": "evt_1",
        "type": "input.admitted",
        "version": version,
        "sessionId": "ses_1",
        "seq": 1,
        "time": 5,
        "payload": {"inputId": "inp_1", "prompt": prompt, "delivery": "queue", "wake": True},
    }


def refusal(prompt: Any) -> str:
    from sessiond_client import EventError

    with pytest.raises(EventError) as caught:
        event_from_frame(admitted_frame(prompt))
    assert caught.value.code == "invalid_payload"
    return caught.value.message


@pytest.mark.parametrize("part, ok", PART_VERDICTS, ids=[json.dumps(p, default=repr)[:90] for p, _ in PART_VERDICTS])
@pytest.mark.parametrize("version", [1, 2])  # a version-1 payload reads through the (identity) upcaster
def test_each_part_is_checked_as_the_catalog_checks_it(part: Any, ok: bool, version: int) -> None:
    prompt = [text_part("first"), part]
    if not ok:
        assert "prompt.1: " in refusal(prompt)
        return
    event = event_from_frame(admitted_frame(prompt, version))
    assert isinstance(event, InputAdmittedEvent) and event.version == 2
    # read, then written in the catalog's key order: the same part
    assert event.payload.prompt == prompt and event.wire_payload["prompt"][1] == part
    assert list(event.wire_payload["prompt"][1]) == [
        k for k in ("type", "text", "url", "data", "mediaType", "blob", "filename", "value") if k in part
    ]


def test_a_prompt_is_a_string_or_at_least_one_part() -> None:
    assert "prompt: too small" in refusal([])
    assert "prompt: expected a string or a list of parts, received number" in refusal(5)
    assert "prompt: expected a string or a list of parts, received null" in refusal(None)
    assert 'prompt.0: "image" is not a valid part: an image is { "type": "image", "url": "https://..." }' in refusal([{"type": "image"}])
    assert 'type must be "text", "image", "file" or "json"' in refusal([{"type": "video"}])
    assert 'prompt.0: expected an object like { "type": "text", "text": "..." }, received string' in refusal(["text"])
    # the catalog has no limit on the number of parts (an admission does: MAX_PROMPT_PARTS)
    many = [text_part("x")] * (MAX_PROMPT_PARTS + 1)
    assert event_from_frame(admitted_frame(many)).payload.prompt == many
    plain = event_from_frame(admitted_frame("plain", 1))
    assert plain.payload.prompt == "plain" and prompt_text(plain.payload.prompt) == "plain" and plain.version == 2


def test_prompt_text_is_sessiond_s_text_form() -> None:
    # test/input/prompt.test.ts gives the same text
    prompt = [
        text_part("look:"),
        image_url("https://example.com/cat.png"),
        image_url("data:image/png;base64,AAAA"),
        image_bytes(b"12345", "image/png"),
        file_bytes(b"123456", "application/pdf", "a.pdf"),
        json_part({"n": 1}),
    ]
    assert prompt_text(prompt) == (
        'look:\n[image https://example.com/cat.png]\n[image data URL]\n[image image/png, 5 bytes]\n[file a.pdf application/pdf, 6 bytes]\n{"n":1}'
    )
    assert prompt_text("as is") == "as is"
    for part, text in (
        (file_url("https://example.com/r.csv", "text/csv"), "[file https://example.com/r.csv text/csv]"),
        (file_url("https://example.com/r.csv", "text/csv", "r.csv"), "[file r.csv https://example.com/r.csv text/csv]"),
        (image_url("https://example.com/a.png", "image/png"), "[image https://example.com/a.png image/png]"),
        (image_bytes(b"", "image/png"), "[image image/png, 0 bytes]"),
        (image_bytes(b"1234", "image/png"), "[image image/png, 4 bytes]"),
        (json_part(None), "null"),
        (json_part({"b": 1, "a": "x"}), '{"b":1,"a":"x"}'),
    ):
        assert prompt_text([part]) == text, part
    assert part_bytes(image_bytes(b"\x89PNG", "image/png")) == b"\x89PNG"
    blob = {"type": "image", "blob": {"sha256": _SHA, "size": 6291456, "mediaType": "image/png"}}
    assert prompt_text([blob]) == "[image image/png, 6291456 bytes, stored as blob 3a3a3a3a3a3a]"


def test_the_admit_body_writes_each_part_s_keys_in_sessiond_s_order() -> None:
    body = admit_request(
        "ses_1",
        [
            {"text": "what is this?", "type": "text"},
            image_bytes(b"\x89PNG", "image/png"),
            {"filename": "r.csv", "mediaType": "text/csv", "url": "https://example.com/r.csv", "type": "file"},
            {"value": {"order": 42, "note": None}, "type": "json"},
            {"type": "image", "colour": "red"},  # a key sessiond does not know: sent last, for the worker to refuse
        ],
        id="inp_1",
    )
    assert encode_request(body) == (
        b'{"sessionId":"ses_1","prompt":[{"type":"text","text":"what is this?"},{"type":"image","data":"iVBORw==","mediaType":"image/png"},'
        b'{"type":"file","url":"https://example.com/r.csv","mediaType":"text/csv","filename":"r.csv"},{"type":"json","value":{"order":42,"note":null}},'
        b'{"type":"image","colour":"red"}],"id":"inp_1"}'
    )
    assert encode_request(admit_request("ses_1", "hello")) == b'{"sessionId":"ses_1","prompt":"hello"}'


def test_a_stored_prompt_of_parts_reads_and_writes_back_byte_for_byte() -> None:
    prompt = [
        text_part("a"),
        image_url("https://example.com/a.png", "image/png"),
        file_bytes(b"%PDF", "application/pdf", "x.pdf"),
        json_part([1, 2.5, "x", None, {"k": True}]),
    ]
    data = encode_batch([event_from_frame(admitted_frame(prompt))])
    events = decode_batch(data, 1, "sessiond.events.ses_1")
    assert events[0].payload.prompt == prompt and encode_batch(events) == data


# ---------------------------------------------------------------------------------------------
# against real workers

SAMPLE = [
    text_part("What is in these? — ünïcode"),
    image_url("https://example.com/cat.png", "image/png"),
    image_bytes(bytes([0x89, 0x50, 0x4E, 0x47]), "image/png"),
    file_bytes(b"%PDF-1.4", "application/pdf", "invoice.pdf"),
    file_url("https://example.com/report.csv", "text/csv"),
    json_part({"order": 42, "lines": [{"sku": "A-1", "qty": 2, "price": 9.5}], "note": None}),
]


async def test_a_prompt_of_parts_is_admitted_run_and_read_back_intact(client: Client, world: World) -> None:
    session = session_name("ses_parts")
    input_id = f"inp_{session}"
    rec = Recorder()
    sub = await client.subscribe(session, rec, 0, rec.on_invalid, on_error=rec.on_error)
    try:
        receipt = await client.admit(session, SAMPLE, id=input_id)
        assert (receipt.created, receipt.admitted_seq, receipt.input_id) == (True, 1, input_id)
        await turn_over(client, session)
        stored = await caught_up(rec, world, session)
        # live, and from the stream: the events the Node client reads, the parts as they were sent
        assert_same_events(rec.committed, stored)
        replayed = await client.replay(session)
        assert_equal_to_stream(replayed, stored)
        assert stored[0]["payload"]["prompt"] == SAMPLE
        for events in (rec.committed, replayed):
            admitted = events[0]
            assert isinstance(admitted, InputAdmittedEvent) and admitted.version == 2 and admitted.payload.input_id == input_id
            assert admitted.payload.prompt == SAMPLE and admitted.wire_payload["prompt"] == SAMPLE
            assert part_bytes(admitted.payload.prompt[2]) == bytes([0x89, 0x50, 0x4E, 0x47])
        # the echo worker's runner saw the prompt's text form, as prompt_text writes it
        echoed = [w for e in replayed if isinstance(e, TextCompletedEvent) for w in e.payload.text.removeprefix("echo: ").split()]
        assert echoed == prompt_text(SAMPLE).split()
        assert rec.invalid == [] and rec.errors == []
    finally:
        await sub.close()

    # the same admission again is no change, from this client or (keys in another order) the Node
    # client's; other parts under the same id are a conflict
    again = await client.admit(session, [dict(reversed(list(p.items()))) for p in SAMPLE], id=input_id)
    assert (again.created, again.admitted_seq) == (False, 1)
    node = await world.acall("admit", sessionId=session, prompt=[dict(reversed(list(p.items()))) for p in SAMPLE], id=input_id)
    assert node["receipt"]["created"] is False
    with pytest.raises(CommandError) as caught:
        await client.admit(session, SAMPLE[:1], id=input_id)
    assert caught.value.code == "input_conflict"

    # refused by the worker, naming the part
    for prompt, words in (
        ([{"type": "image"}], 'Invalid input: prompt part 0 ("image") is not a valid part: an image is'),
        ([text_part("ok"), {"type": "file", "url": "https://example.com/r.csv"}], 'prompt part 1 ("file") is not a valid part: a file is'),
        ([{"type": "video", "url": "https://example.com/a.mp4"}], 'type must be "text", "image", "file" or "json"'),
        ([image_url("ftp://example.com/a.png")], 'prompt part 0 ("image")'),
        ([text_part("x")] * (MAX_PROMPT_PARTS + 1), "over the limit of 64"),
        ([], "prompt has no parts"),
    ):
        with pytest.raises(CommandError) as caught:
            await client.admit(session_name("ses_bad_parts"), prompt, wake=False)
        assert caught.value.code == "invalid_option" and words in caught.value.message, (prompt, caught.value.message)


async def test_a_large_image_is_stored_as_a_blob_and_read_back(client: Client, world: World, tmp_path: Path) -> None:
    """A 1.5 MB image admitted inline with ``admit`` (which uploads it first, in chunks) to the
    world's worker, whose blob bucket ``sessiond setup`` made: the session's events hold its
    reference, and ``read_blob`` as the client user gives the exact bytes, in three chunks."""
    admin = await nats.connect(world.url, user="admin", password=world.creds("admin")[1], inbox_prefix="_INBOX_admin")
    try:
        js = admin.jetstream()
        await js.stream_info("OBJ_SESSIOND_BLOBS")  # the bucket is there (raises when it is not)

        image = png_bytes(1536 * 1024)
        session = session_name("ses_blob")
        prompt = [text_part("what is in this photo?"), image_bytes(image, "image/png")]
        await client.admit(session, prompt)
        assert "data" in prompt[1] and "blob" not in prompt[1]  # the caller's prompt as it was

        ref = image_blob_ref(await client.events(session))
        assert ref == {"sha256": hashlib.sha256(image).hexdigest(), "size": len(image), "mediaType": "image/png"}
        # the bytes are in the bucket, one object named by their hash
        info = await (await js.object_store("SESSIOND_BLOBS")).get_info(ref["sha256"])
        assert info.size == len(image)
    finally:
        await admin.close()

    assert await client.read_blob(session, ref["sha256"]) == image
    assert len(image) > 2 * MAX_BLOB_CHUNK  # so the read above took three chunks

    # through a session that does not reference it, or none: not_found
    other = session_name("ses_blob_none")
    await client.admit(other, "no image here")
    for s in (other, session_name("ses_blob_missing")):
        with pytest.raises(CommandError) as err:
            await client.read_blob(s, ref["sha256"])
        assert err.value.code == "not_found"


async def test_upload_blob_sends_a_stream_and_the_worker_checks_it(client: Client, world: World, tmp_path: Path) -> None:
    """``upload_blob`` of a stream of odd-sized pieces (and of a file) gives the reference of its
    bytes, which an admission then carries and ``read_blob`` reads back; PNG bytes declared
    image/jpeg are refused with the worker's ``invalid_payload``, by ``upload_blob`` and by
    ``admit``; a trusted client admitting for an owner uploads for that owner, so the admission may
    reference the blob."""
    image = png_bytes(1536 * 1024 + 321)
    ref = await client.upload_blob(aiter_of(odd_pieces(image, (3, 65537, 999, 200003))), "image/png")
    assert ref == {"sha256": hashlib.sha256(image).hexdigest(), "size": len(image), "mediaType": "image/png"}
    path = tmp_path / "photo.png"
    path.write_bytes(image)
    with path.open("rb") as f:
        assert await client.upload_blob(f, "image/png", size=len(image)) == ref
    session = session_name("ses_upload")
    await client.admit(session, [text_part("this one"), image_blob(ref)])
    assert await client.read_blob(session, ref["sha256"]) == image

    # PNG bytes declared a JPEG: the worker's invalid_payload, from upload_blob and from admit
    with pytest.raises(CommandError) as err:
        await client.upload_blob(png_bytes(700 * 1024), "image/jpeg")
    assert err.value.code == "invalid_payload", err.value.message
    with pytest.raises(CommandError) as err:
        await client.admit(session_name("ses_upload_jpeg"), [image_bytes(png_bytes(100 * 1024), "image/jpeg")])
    assert err.value.code == "invalid_payload" and "Prompt part 0" in err.value.message, err.value.message

    # admitting for an owner: the upload is that owner's, so the admission may use it
    owned = png_bytes(300 * 1024)
    mine = session_name("ses_upload_owned")
    await client.admit(mine, [file_bytes(owned, "image/png", "scan.png")], owner="alice")
    admitted = (await client.events(mine))[0]
    assert isinstance(admitted, InputAdmittedEvent) and isinstance(admitted.payload.prompt, list)
    part = admitted.payload.prompt[0]
    assert part["type"] == "file" and part["filename"] == "scan.png" and "data" not in part
    assert await client.read_blob(mine, part["blob"]["sha256"]) == owned


@pytest.mark.parametrize(
    "path, ext",
    [
        ("cat.png", ".png"),
        (".png", ""),
        ("..png", ".png"),
        ("a.", "."),
        ("a.png/", ".png"),
        ("x/.hidden.PNG", ".PNG"),
        ("a.tar.gz", ".gz"),
        ("dir\\cat.png", ".png"),
        ("..", ""),
        (".", ""),
        ("", ""),
        ("dir.d/file", ""),
        ("/a/b.c/", ".c"),
    ],
)
def test_the_prompt_program_reads_an_extension_as_node_does(path: str, ext: str) -> None:
    """The prompt program tells a part's type from its name as ``sessiond prompt`` does, with Node's
    ``path.extname`` (these are Node 20's answers)."""
    assert extname(path) == ext
