"""Reading a blob: chunks asked for from each offset until none follows, the whole checked against
the hash; a reply out of place, an empty chunk with more to come and bytes of another hash are refused.
Uploading one: chunks of exactly ``MAX_BLOB_CHUNK`` from any source, offsets in order, the last with
the size, hash and owner; an admission's large inline parts uploaded first and replaced by their
references. The helpers at the end serve the tests against real workers (test_parts.py,
test_tenants.py: their worlds)."""

from __future__ import annotations

import base64
import hashlib
import io
import os
from typing import Any, AsyncIterator, Callable

import pytest

from sessiond_client import Event, InputAdmittedEvent, file_blob, file_bytes, image_blob, image_bytes, image_url, text_part
from sessiond_client.client import read_blob_chunks
from sessiond_client.commands import MAX_BLOB_CHUNK
from sessiond_client.errors import CommandError
from sessiond_client.generated_replies import BlobChunk, UploadReply
from sessiond_client.parts import INLINE_PART_BYTES
from sessiond_client.uploads import UploadSource, upload_chunks, upload_large_parts

BLOB = bytes((i * 31) & 255 for i in range(2 * MAX_BLOB_CHUNK + 123))
SHA = hashlib.sha256(BLOB).hexdigest()


def chunks(
    mutate: Callable[[int, dict[str, Any]], None] | None = None, asked: list[tuple[int, int | None]] | None = None
) -> Callable[[int, int | None], Any]:
    async def chunk_at(offset: int, seq: int | None) -> BlobChunk:
        if asked is not None:
            asked.append((offset, seq))
        end = min(offset + MAX_BLOB_CHUNK, len(BLOB))
        wire: dict[str, Any] = {
            "sha256": SHA,
            "size": len(BLOB),
            "mediaType": "image/png",
            "offset": offset,
            "data": base64.b64encode(BLOB[offset:end]).decode(),
            "more": end < len(BLOB),
            "seq": 7,
        }
        if mutate:
            mutate(offset, wire)
        return BlobChunk.from_wire(wire)

    return chunk_at


async def test_a_blob_is_read_chunk_by_chunk_and_checked() -> None:
    asked: list[tuple[int, int | None]] = []
    assert await read_blob_chunks(SHA, chunks(asked=asked)) == BLOB
    # after the first, each request names the event the first reply found the reference in
    assert asked == [(0, None), (MAX_BLOB_CHUNK, 7), (2 * MAX_BLOB_CHUNK, 7)]


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda o, w: w.update(data=base64.b64encode(b"forged").decode(), more=False), "decode_failed"),
        (lambda o, w: w.update(offset=o + 1), "internal"),
        (lambda o, w: w.update(data="", more=True), "internal"),
        (lambda o, w: w.update(data="%%%"), "internal"),
    ],
    ids=["another hash", "out of place", "empty with more", "not base64"],
)
async def test_a_wrong_reply_is_refused(mutate: Callable[[int, dict[str, Any]], None], code: str) -> None:
    with pytest.raises(CommandError) as err:
        await read_blob_chunks(SHA, chunks(mutate))
    assert err.value.code == code


def odd_pieces(data: bytes, sizes: tuple[int, ...] = (1, 7777, 300001, 13)) -> list[bytes]:
    """``data`` cut in pieces of the given sizes, in turn (a file stream's odd reads)."""
    out: list[bytes] = []
    at = 0
    while at < len(data):
        n = sizes[len(out) % len(sizes)]
        out.append(data[at : at + n])
        at += n
    return out


async def aiter_of(pieces: list[bytes]) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


async def sent_chunks(
    source: UploadSource, size: int | None = None, owner: str | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """What ``upload_chunks`` sends for ``source``, to a send that answers as a worker does, and the reference it returns."""
    sent: list[dict[str, Any]] = []

    async def send(body: dict[str, Any]) -> UploadReply:
        sent.append(body)
        end = body["offset"] + len(base64.b64decode(body["data"]))
        blob = {"sha256": body["sha256"], "size": body["size"], "mediaType": body["mediaType"]} if "sha256" in body else None
        return UploadReply.from_wire({"received": end, **({"blob": blob} if blob else {})})

    ref = await upload_chunks(source, "upl_test_1", "image/png", send, size=size, owner=owner)
    return sent, ref


DATA = bytes((i * 7) & 255 for i in range(3 * MAX_BLOB_CHUNK + 5))


@pytest.mark.parametrize(
    ("make", "n", "size", "owner", "size_on_each"),
    [
        (lambda d: d, len(DATA), None, "alice", True),  # bytes: their size on every chunk
        (lambda d: aiter_of(odd_pieces(d)), len(DATA), len(DATA), None, True),
        (lambda d: odd_pieces(d), 2 * MAX_BLOB_CHUNK, None, None, False),  # whole chunks: the last is full
        (lambda d: io.BytesIO(d), 100, None, None, False),
        (lambda d: b"", 0, None, None, True),  # no bytes: one empty chunk
    ],
    ids=["bytes", "async pieces", "whole chunks", "file", "empty"],
)
async def test_an_upload_is_sent_in_whole_chunks_in_order(
    make: Callable[[bytes], Any], n: int, size: int | None, owner: str | None, size_on_each: bool
) -> None:
    data = DATA[:n]
    sent, ref = await sent_chunks(make(data), size, owner)
    assert ref == {"sha256": hashlib.sha256(data).hexdigest(), "size": n, "mediaType": "image/png"}
    lengths = [len(base64.b64decode(b["data"])) for b in sent]
    assert lengths == [MAX_BLOB_CHUNK] * (n // MAX_BLOB_CHUNK) + ([n % MAX_BLOB_CHUNK] if n % MAX_BLOB_CHUNK or n == 0 else [])
    assert [b["offset"] for b in sent] == [i * MAX_BLOB_CHUNK for i in range(len(sent))]
    assert b"".join(base64.b64decode(b["data"]) for b in sent) == data
    assert {b["uploadId"] for b in sent} == {"upl_test_1"}
    *first, last = sent
    assert (last["size"], last["sha256"], last.get("owner")) == (n, ref["sha256"], owner)
    for b in first:
        assert "sha256" not in b and "owner" not in b
        assert b.get("size") == (n if size_on_each else None)


async def test_an_upload_without_a_media_type_or_with_bad_chunks_is_refused() -> None:
    for source, media_type, words in (
        (b"x", "", "needs media_type"),
        (["not bytes"], "image/png", "chunks must be bytes"),
        (io.StringIO("text"), "image/png", "binary mode"),
        (42, "image/png", "takes bytes, a binary file"),
    ):
        with pytest.raises(CommandError) as err:
            await upload_chunks(source, "upl_test_2", media_type, lambda b: None)  # type: ignore[arg-type, return-value]
        assert err.value.code == "invalid_option" and words in err.value.message, err.value.message


async def test_large_inline_parts_are_uploaded_first() -> None:
    big, small = png_bytes(INLINE_PART_BYTES + 1), png_bytes(INLINE_PART_BYTES)
    ref = {"sha256": "a" * 64, "size": 1, "mediaType": "x/y"}
    prompt = [
        text_part("hi"),
        image_bytes(small, "image/png"),
        image_bytes(big, "image/png"),
        image_url("https://example.com/a.png"),
        file_bytes(big, "application/pdf", "a.pdf"),
        image_blob(ref),
        file_blob(ref),
    ]
    original = [dict(p) for p in prompt]
    uploaded: list[tuple[bytes, str]] = []

    async def upload(data: bytes, media_type: str) -> dict[str, Any]:
        uploaded.append((data, media_type))
        return {"sha256": "b" * 64, "size": len(data), "mediaType": media_type}

    out = await upload_large_parts(prompt, upload)
    assert uploaded == [(big, "image/png"), (big, "application/pdf")]
    assert out[2] == {"type": "image", "blob": {"sha256": "b" * 64, "size": len(big), "mediaType": "image/png"}}
    assert out[4] == {"type": "file", "blob": {"sha256": "b" * 64, "size": len(big), "mediaType": "application/pdf"}, "filename": "a.pdf"}
    assert [out[i] for i in (0, 1, 3, 5, 6)] == [prompt[i] for i in (0, 1, 3, 5, 6)]
    assert prompt == original  # the caller's prompt is not changed
    # none that large: the same prompt; a string as it is
    few = prompt[:2]
    assert await upload_large_parts(few, upload) is few
    assert await upload_large_parts("text", upload) == "text"

    async def refuse(data: bytes, media_type: str) -> dict[str, Any]:
        raise CommandError("upload", "invalid_payload", "not a PNG")

    with pytest.raises(CommandError) as err:
        await upload_large_parts(prompt, refuse)
    assert err.value.code == "invalid_payload" and "Prompt part 2 (image/png" in err.value.message


PNG_SIGNATURE = bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])


def png_bytes(n: int) -> bytes:
    """``n`` bytes of a PNG: its signature, then random bytes (each test's blob is new)."""
    return PNG_SIGNATURE + os.urandom(n - len(PNG_SIGNATURE))


def image_blob_ref(events: list[Event]) -> dict[str, Any]:
    """The blob reference of the first image part of the session's ``input.admitted``."""
    for e in events:
        if isinstance(e, InputAdmittedEvent) and isinstance(e.payload.prompt, list):
            for part in e.payload.prompt:
                if part["type"] == "image":
                    assert "blob" in part, (
                        f"the image part was kept inline ({len(part.get('data', ''))} base64 characters), not stored as a blob"
                    )
                    ref: dict[str, Any] = part["blob"]
                    return ref
    raise AssertionError(f"no input.admitted with an image part among {len(events)} events")
